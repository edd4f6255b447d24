package mcp

import (
	"context"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/apierr"
	"github.com/planserver/planserver/internal/auth"
	"github.com/planserver/planserver/internal/plans"
	"github.com/planserver/planserver/internal/revision"
	"github.com/planserver/planserver/internal/validation"
)

// The step tools are the step routes of a shared plan. Claims and reports
// take no precondition, as over HTTP: they make their own atomic check
// (the step is ready, the claim is the worker's) in the write.

type listStepsIn struct {
	planName
	Status string `json:"status,omitempty" jsonschema:"Only steps in this status: pending, in_progress, complete or blocked."`
	Owner  string `json:"owner,omitempty"`
	Ready  *bool  `json:"ready,omitempty"`
}

func (e *Endpoint) listSteps(ctx context.Context, _ *sdk.CallToolRequest, in listStepsIn) (*sdk.CallToolResult, *api.StepList, error) {
	const tool = "list_steps"
	if err := e.allow(ctx, tool, ""); err != nil {
		return nil, nil, e.fail(tool, err)
	}
	list, err := e.b.Plans.Steps(ctx, in.Name, plans.StepQuery{Status: in.Status, Owner: in.Owner, Ready: in.Ready})
	if err != nil {
		return nil, nil, e.fail(tool, err)
	}
	return nil, list, nil
}

type claimStepIn struct {
	planName
	StepID *string `json:"step_id,omitempty" jsonschema:"Claim this step (or renew your claim on it) instead of the next ready one."`
	api.ClaimRequest
}

type claimOut struct {
	// Claimed is false when no step was ready to claim.
	Claimed  bool          `json:"claimed"`
	Step     *api.StepView `json:"step"`
	Revision int64         `json:"revision"`
}

func (e *Endpoint) claimStep(ctx context.Context, _ *sdk.CallToolRequest, in claimStepIn) (*sdk.CallToolResult, *claimOut, error) {
	const tool = "claim_step"
	if err := e.allow(ctx, tool, ""); err != nil {
		return nil, nil, e.fail(tool, err)
	}
	if in.Worker == "" {
		in.Worker = defaultWorker(ctx)
	}
	var (
		res *api.StepResult
		err error
	)
	if in.StepID != nil {
		if in.Owner != "" {
			return nil, nil, e.fail(tool, apierr.Invalid("owner", "picks among the ready steps; with step_id leave it out"))
		}
		if !validation.StepID.MatchString(*in.StepID) {
			return nil, nil, e.fail(tool, validation.BadStepID(*in.StepID))
		}
		res, err = e.b.Plans.ClaimStep(ctx, in.Name, *in.StepID,
			api.StepClaimRequest{Worker: in.Worker, LeaseSeconds: in.LeaseSeconds}, revision.Precondition{})
	} else {
		res, err = e.b.Plans.Claim(ctx, in.Name, in.ClaimRequest, revision.Precondition{})
	}
	if err != nil {
		return nil, nil, e.fail(tool, err)
	}
	if res == nil {
		return nil, &claimOut{}, nil
	}
	return nil, &claimOut{Claimed: true, Step: &res.Step, Revision: res.Revision}, nil
}

// defaultWorker names the worker of a claim that names none: the bound
// session, else the caller.
func defaultWorker(ctx context.Context) string {
	if s := sessionFrom(ctx); s != nil {
		return s.ID
	}
	return auth.PrincipalFrom(ctx).Name
}

type reportStepIn struct {
	planName
	api.ReportWrite
}

func (e *Endpoint) reportStep(ctx context.Context, _ *sdk.CallToolRequest, in reportStepIn) (*sdk.CallToolResult, *api.Report, error) {
	const tool = "report_step"
	if err := e.allow(ctx, tool, ""); err != nil {
		return nil, nil, e.fail(tool, err)
	}
	if in.StepID == nil {
		return nil, nil, e.fail(tool, apierr.Invalid("step_id", "is required: the id of the step the report is on"))
	}
	if !validation.StepID.MatchString(*in.StepID) {
		return nil, nil, e.fail(tool, validation.BadStepID(*in.StepID))
	}
	rep, err := e.b.Plans.AddReport(ctx, in.Name, *in.StepID, in.ReportWrite, revision.Precondition{})
	if err != nil {
		return nil, nil, e.fail(tool, err)
	}
	return nil, rep, nil
}
