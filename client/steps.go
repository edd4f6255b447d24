package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/planserver/planserver/api"
)

// StepQuery filters a plan's steps. Zero values do not filter.
type StepQuery struct {
	Status, Owner string
	// Ready true keeps the steps a worker may take now; false the others.
	Ready *bool
}

func (q StepQuery) values() url.Values {
	v := url.Values{}
	set(v, "status", q.Status)
	set(v, "owner", q.Owner)
	if q.Ready != nil {
		v.Set("ready", strconv.FormatBool(*q.Ready))
	}
	return v
}

// ListSteps reads a plan's steps in plan order, with the plan revision.
func (c *Client) ListSteps(ctx context.Context, plan string, q StepQuery, opts ...CallOption) (*api.StepList, error) {
	return doJSON[api.StepList](ctx, c, request{method: "GET", path: planPath(plan, "steps"), query: q.values()}, opts)
}

// GetStep reads one step with the plan revision.
func (c *Client) GetStep(ctx context.Context, plan, stepID string, opts ...CallOption) (*api.StepResult, error) {
	return doJSON[api.StepResult](ctx, c, request{method: "GET", path: planPath(plan, "steps", esc(stepID))}, opts)
}

// PatchStep sets a step's status or owner. Starting or completing a step
// whose deps are not complete is ErrDepsIncomplete. IfMatch names the plan
// revision.
func (c *Client) PatchStep(ctx context.Context, plan, stepID string, patch api.StepPatch, opts ...CallOption) (*api.StepResult, error) {
	return doJSON[api.StepResult](ctx, c, request{method: "PATCH", path: planPath(plan, "steps", esc(stepID)), body: patch}, opts)
}

// ClaimNextStep takes the first ready step (of req.Owner, when set) under
// a lease, atomically: concurrent claimers never get the same step. When
// nothing is ready it returns ErrNoStepReady and writes nothing.
func (c *Client) ClaimNextStep(ctx context.Context, plan string, req api.ClaimRequest, opts ...CallOption) (*api.StepResult, error) {
	var out api.StepResult
	status, err := c.call(ctx, request{method: "POST", path: planPath(plan, "steps", "claim"), body: req}, opts, &out)
	if err != nil {
		return nil, err
	}
	if status == http.StatusNoContent {
		return nil, ErrNoStepReady
	}
	return &out, nil
}

// ClaimStep claims one step, or renews the lease the worker holds on it.
// A step another worker holds is ErrVersionConflict; one whose deps are
// not complete ErrDepsIncomplete.
func (c *Client) ClaimStep(ctx context.Context, plan, stepID string, req api.StepClaimRequest, opts ...CallOption) (*api.StepResult, error) {
	return doJSON[api.StepResult](ctx, c, request{method: "POST", path: planPath(plan, "steps", esc(stepID), "claim"), body: req}, opts)
}

// AddReport posts an execution report: success completes the step,
// failure and blocked block it. A report naming a worker that no longer
// holds the step is ErrVersionConflict (Problem.ClaimedBy names the
// holder) and is not recorded.
func (c *Client) AddReport(ctx context.Context, plan, stepID string, in api.ReportWrite, opts ...CallOption) (*api.Report, error) {
	return doJSON[api.Report](ctx, c, request{method: "POST", path: planPath(plan, "steps", esc(stepID), "reports"), body: in}, opts)
}

// ListReports reads a plan's reports, oldest first; stepID "" for every
// step.
func (c *Client) ListReports(ctx context.Context, plan, stepID string, opts ...CallOption) (*api.ReportList, error) {
	v := url.Values{}
	set(v, "step_id", stepID)
	return doJSON[api.ReportList](ctx, c, request{method: "GET", path: planPath(plan, "reports"), query: v}, opts)
}
