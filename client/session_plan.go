package client

import (
	"context"
	"net/url"
	"strconv"

	"github.com/planserver/planserver/api"
)

// sessionPath is the path of a session's sub-resource.
func sessionPath(id string, rest ...string) string {
	return pathOf(append([]string{"v1", "sessions", esc(id)}, rest...)...)
}

// PutSessionPlan writes the session's plan (write_session_plan). A rewrite
// withdraws a pending review. IfNoneMatchAny makes it create-only.
func (c *Client) PutSessionPlan(ctx context.Context, id string, in api.SessionPlanWrite, opts ...CallOption) (*api.SessionPlan, error) {
	return doJSON[api.SessionPlan](ctx, c, request{method: "PUT", path: sessionPath(id, "plan"), body: in}, opts)
}

// GetSessionPlan reads the session's plan with its review; ErrNotFound
// before the first write.
func (c *Client) GetSessionPlan(ctx context.Context, id string, opts ...CallOption) (*api.SessionPlan, error) {
	return doJSON[api.SessionPlan](ctx, c, request{method: "GET", path: sessionPath(id, "plan")}, opts)
}

// SessionPlanRevisions lists the kept revisions of the session's plan,
// newest first.
func (c *Client) SessionPlanRevisions(ctx context.Context, id string, opts ...CallOption) (*api.SessionPlanRevisions, error) {
	return doJSON[api.SessionPlanRevisions](ctx, c, request{method: "GET", path: sessionPath(id, "plan", "revisions")}, opts)
}

// GetSessionPlanRevision reads the session's plan as it was at revision
// rev (ErrNotFound once pruned).
func (c *Client) GetSessionPlanRevision(ctx context.Context, id string, rev int64, opts ...CallOption) (*api.SessionPlan, error) {
	return doJSON[api.SessionPlan](ctx, c, request{method: "GET",
		path: sessionPath(id, "plan", "revisions", strconv.FormatInt(rev, 10))}, opts)
}

// DiffRange names the two revisions of a diff. From nil is the newest
// kept revision before To (0, the empty document, when there is none);
// To nil is the current revision.
type DiffRange struct {
	From, To *int64
}

func (r DiffRange) values() url.Values {
	v := url.Values{}
	if r.From != nil {
		v.Set("from", strconv.FormatInt(*r.From, 10))
	}
	if r.To != nil {
		v.Set("to", strconv.FormatInt(*r.To, 10))
	}
	return v
}

// DiffSessionPlan answers how one revision of the session's plan differs
// from another, as hunks.
func (c *Client) DiffSessionPlan(ctx context.Context, id string, r DiffRange, opts ...CallOption) (*api.Diff, error) {
	return doJSON[api.Diff](ctx, c, request{method: "GET", path: sessionPath(id, "plan", "diff"), query: r.values()}, opts)
}

// DiffSessionPlanText is DiffSessionPlan as a unified diff ("" when the
// revisions are equal).
func (c *Client) DiffSessionPlanText(ctx context.Context, id string, r DiffRange, opts ...CallOption) (string, error) {
	b, _, err := c.raw(ctx, request{method: "GET", path: sessionPath(id, "plan", "diff"), query: r.values(), accept: mediaDiff}, opts)
	return string(b), err
}

// RequestReview asks a human to review the current plan revision
// (exit_plan_mode); ErrPlanMissing before any plan. IfMatch names the plan
// revision the agent means.
func (c *Client) RequestReview(ctx context.Context, id string, in api.ReviewRequest, opts ...CallOption) (*api.Session, error) {
	return doJSON[api.Session](ctx, c, request{method: "POST", path: sessionPath(id, "plan", "review"), body: in}, opts)
}

// ApprovePlan is the human's approval of plan revision planRevision, the
// one they read: the session's own mode becomes build, limited to the
// revision's scope unless in.Scope is "full" (see api.ReviewApproval). A plan edited since
// is ErrVersionConflict, no pending review ErrReviewNotPending; admin
// tokens only. planRevision is sent as If-Match, whatever opts say.
func (c *Client) ApprovePlan(ctx context.Context, id string, planRevision int64, in api.ReviewApproval, opts ...CallOption) (*api.Approval, error) {
	opts = append(opts[:len(opts):len(opts)], IfMatch(planRevision))
	return doJSON[api.Approval](ctx, c, request{method: "POST", path: sessionPath(id, "plan", "approve"), body: in}, opts)
}

// LiftScope ends the session's scoped build: it builds without the scope
// its approval granted (full build). Admin tokens only; a session without
// a scope of its own is ErrNotFound. IfMatch names the session revision.
func (c *Client) LiftScope(ctx context.Context, id string, opts ...CallOption) (*api.Session, error) {
	return doJSON[api.Session](ctx, c, request{method: "DELETE", path: sessionPath(id, "scope")}, opts)
}

// RejectPlan rejects the pending review with feedback and line comments;
// the mode stays plan. IfMatch names the plan revision the human read.
func (c *Client) RejectPlan(ctx context.Context, id string, in api.ReviewRejection, opts ...CallOption) (*api.Session, error) {
	return doJSON[api.Session](ctx, c, request{method: "POST", path: sessionPath(id, "plan", "reject"), body: in}, opts)
}

// ReviewHistory reads the session's current review and every review that
// ended, newest first.
func (c *Client) ReviewHistory(ctx context.Context, id string, opts ...CallOption) (*api.ReviewHistory, error) {
	return doJSON[api.ReviewHistory](ctx, c, request{method: "GET", path: sessionPath(id, "reviews")}, opts)
}

// FilterTools filters a turn's toolset by the session's effective mode.
func (c *Client) FilterTools(ctx context.Context, id string, tools []api.Tool, opts ...CallOption) (*api.FilterResult, error) {
	if tools == nil {
		tools = []api.Tool{}
	}
	return doJSON[api.FilterResult](ctx, c, request{method: "POST", path: sessionPath(id, "tools", "filter"),
		body: api.ToolFilter{Tools: tools}}, opts)
}

// CheckTool asks whether one tool call may run; a denial is recorded as a
// tool_call.denied event.
func (c *Client) CheckTool(ctx context.Context, id string, tool api.Tool, opts ...CallOption) (*api.CheckResult, error) {
	return doJSON[api.CheckResult](ctx, c, request{method: "POST", path: sessionPath(id, "tools", "check"), body: tool}, opts)
}

// PutTodos replaces the session's todo list (todo_write).
func (c *Client) PutTodos(ctx context.Context, id string, todos []api.TodoWrite, opts ...CallOption) (*api.TodoList, error) {
	if todos == nil {
		todos = []api.TodoWrite{}
	}
	return doJSON[api.TodoList](ctx, c, request{method: "PUT", path: sessionPath(id, "todos"),
		body: api.TodosWrite{Todos: todos}}, opts)
}

// GetTodos reads the session's todo list (revision 0: never written).
func (c *Client) GetTodos(ctx context.Context, id string, opts ...CallOption) (*api.TodoList, error) {
	return doJSON[api.TodoList](ctx, c, request{method: "GET", path: sessionPath(id, "todos")}, opts)
}
