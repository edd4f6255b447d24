package client

import (
	"context"
	"iter"
	"net/url"
	"strconv"

	"github.com/planserver/planserver/api"
)

// planPath is the path of a shared plan or its sub-resource.
func planPath(name string, rest ...string) string {
	return pathOf(append([]string{"v1", "plans", esc(name)}, rest...)...)
}

// Content is a representation that is not JSON (Markdown, YAML) and the
// revision it is of: the ETag, to send back with IfMatch.
type Content struct {
	Body     string
	Revision int64
}

// PlanQuery filters GET /v1/plans. Zero values do not filter.
type PlanQuery struct {
	Status, Author string
	// Limit is the page size (the server's default when 0).
	Limit     int
	PageToken string
}

func (q PlanQuery) values() url.Values {
	v := url.Values{}
	set(v, "status", q.Status)
	set(v, "author", q.Author)
	setInt(v, "limit", int64(q.Limit))
	set(v, "page_token", q.PageToken)
	return v
}

// ListPlans reads one page of plan summaries, by name (list_plans).
func (c *Client) ListPlans(ctx context.Context, q PlanQuery, opts ...CallOption) (*api.PlanPage, error) {
	return doJSON[api.PlanPage](ctx, c, request{method: "GET", path: "/v1/plans", query: q.values()}, opts)
}

// Plans walks every page of the list from q.PageToken on, yielding each
// summary, or the error that ended the walk. Plans the server could not
// read are skipped (ListPlans names them in Warnings).
func (c *Client) Plans(ctx context.Context, q PlanQuery) iter.Seq2[*api.PlanSummary, error] {
	return func(yield func(*api.PlanSummary, error) bool) {
		for {
			page, err := c.ListPlans(ctx, q)
			if err != nil {
				yield(nil, err)
				return
			}
			for i := range page.Plans {
				if !yield(&page.Plans[i], nil) {
					return
				}
			}
			if page.NextPageToken == "" {
				return
			}
			q.PageToken = page.NextPageToken
		}
	}
}

// PutPlan creates or updates a plan from JSON (write_plan): members left
// nil keep their value. Every call is a new revision. Preconditions:
// IfMatch, IfNoneMatchAny or LastKnownRevision.
func (c *Client) PutPlan(ctx context.Context, name string, in api.PlanWrite, opts ...CallOption) (*api.Plan, error) {
	if rev := settle(opts).lastKnown; rev != nil {
		in.LastKnownRevision = rev
	}
	return doJSON[api.Plan](ctx, c, request{method: "PUT", path: planPath(name), body: in, lastKnown: true}, opts)
}

// PutPlanYAML creates or updates a plan from its YAML document, as
// GetPlanYAML reads it (title, author, status, steps, content).
func (c *Client) PutPlanYAML(ctx context.Context, name string, doc []byte, opts ...CallOption) (*api.Plan, error) {
	return doJSON[api.Plan](ctx, c, request{method: "PUT", path: planPath(name), body: doc, contentType: mediaYAML}, opts)
}

// GetPlan reads a plan as JSON (read_plan); with IfNoneMatch,
// ErrNotModified while it is unchanged.
func (c *Client) GetPlan(ctx context.Context, name string, opts ...CallOption) (*api.Plan, error) {
	return doJSON[api.Plan](ctx, c, request{method: "GET", path: planPath(name)}, opts)
}

// GetPlanYAML reads a plan as its YAML document, which PutPlanYAML takes
// back.
func (c *Client) GetPlanYAML(ctx context.Context, name string, opts ...CallOption) (*Content, error) {
	return c.content(ctx, request{method: "GET", path: planPath(name), accept: mediaYAML}, opts)
}

// GetPlanContent reads a plan's Markdown content alone
// (export_plan_to_file).
func (c *Client) GetPlanContent(ctx context.Context, name string, opts ...CallOption) (*Content, error) {
	return c.content(ctx, request{method: "GET", path: planPath(name, "content"), accept: mediaMarkdown}, opts)
}

// PutPlanContent replaces a plan's content alone, keeping title, status
// and steps (update_plan_from_file); it creates the plan when there is
// none. The answer is the summary: the content never travels back.
func (c *Client) PutPlanContent(ctx context.Context, name, content string, opts ...CallOption) (*api.PlanSummary, error) {
	return doJSON[api.PlanSummary](ctx, c, request{method: "PUT", path: planPath(name, "content"),
		body: []byte(content), contentType: mediaMarkdown}, opts)
}

// DeletePlan deletes a plan and its history (delete_plan).
func (c *Client) DeletePlan(ctx context.Context, name string, opts ...CallOption) error {
	_, err := c.call(ctx, request{method: "DELETE", path: planPath(name)}, opts, nil)
	return err
}

// GetPlanStatus reads a plan's status and revision (get_plan_status).
func (c *Client) GetPlanStatus(ctx context.Context, name string, opts ...CallOption) (*api.PlanStatus, error) {
	return doJSON[api.PlanStatus](ctx, c, request{method: "GET", path: planPath(name, "status")}, opts)
}

// SetPlanStatus sets a plan's free-form status (set_plan_status), a new
// revision. Preconditions: IfMatch or LastKnownRevision.
func (c *Client) SetPlanStatus(ctx context.Context, name, status string, opts ...CallOption) (*api.PlanStatus, error) {
	return doJSON[api.PlanStatus](ctx, c, request{method: "PUT", path: planPath(name, "status"),
		body: api.PlanStatusWrite{Status: &status, LastKnownRevision: settle(opts).lastKnown}, lastKnown: true}, opts)
}

// PlanRevisions lists a plan's kept revisions, newest first.
func (c *Client) PlanRevisions(ctx context.Context, name string, opts ...CallOption) (*api.PlanRevisions, error) {
	return doJSON[api.PlanRevisions](ctx, c, request{method: "GET", path: planPath(name, "revisions")}, opts)
}

// GetPlanRevision reads a plan as it was at revision rev (ErrNotFound once
// pruned).
func (c *Client) GetPlanRevision(ctx context.Context, name string, rev int64, opts ...CallOption) (*api.Plan, error) {
	return doJSON[api.Plan](ctx, c, request{method: "GET", path: planPath(name, "revisions", strconv.FormatInt(rev, 10))}, opts)
}

// GetPlanRevisionContent reads a plan's Markdown content as it was at
// revision rev.
func (c *Client) GetPlanRevisionContent(ctx context.Context, name string, rev int64, opts ...CallOption) (*Content, error) {
	return c.content(ctx, request{method: "GET", path: planPath(name, "revisions", strconv.FormatInt(rev, 10)),
		accept: mediaMarkdown}, opts)
}

// DiffPlan answers how one revision of a plan's content differs from
// another, as hunks.
func (c *Client) DiffPlan(ctx context.Context, name string, r DiffRange, opts ...CallOption) (*api.Diff, error) {
	return doJSON[api.Diff](ctx, c, request{method: "GET", path: planPath(name, "diff"), query: r.values()}, opts)
}

// DiffPlanText is DiffPlan as a unified diff ("" when the revisions are
// equal).
func (c *Client) DiffPlanText(ctx context.Context, name string, r DiffRange, opts ...CallOption) (string, error) {
	b, _, err := c.raw(ctx, request{method: "GET", path: planPath(name, "diff"), query: r.values(), accept: mediaDiff}, opts)
	return string(b), err
}

// content is raw for the representations that carry a revision.
func (c *Client) content(ctx context.Context, r request, opts []CallOption) (*Content, error) {
	b, rev, err := c.raw(ctx, r, opts)
	if err != nil {
		return nil, err
	}
	return &Content{Body: string(b), Revision: rev}, nil
}
