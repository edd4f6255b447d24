package client_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/client"
)

// TestPlanReviewLoop walks the plan-mode loop through the client: write,
// ask for review, reject with line comments, rewrite, approve the
// revision read (a stale one is refused), and read the history.
func TestPlanReviewLoop(t *testing.T) {
	_, c := newTest(t)
	ctx := t.Context()
	if _, err := c.CreateSession(ctx, api.SessionCreate{ID: client.Ptr("billing"), Mode: "plan"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetSessionPlan(ctx, "billing"); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("plan before the first write: %v", err)
	}
	if _, err := c.RequestReview(ctx, "billing", api.ReviewRequest{}); !errors.Is(err, client.ErrPlanMissing) {
		t.Errorf("review before a plan: %v", err)
	}

	var meta client.ResponseMeta
	v1, err := c.PutSessionPlan(ctx, "billing", api.SessionPlanWrite{Content: "# Plan\n1. Move totals\n"},
		client.IfNoneMatchAny(), client.Meta(&meta))
	if err != nil || v1.Revision != 1 || v1.Author != "anonymous" || meta.Status != http.StatusCreated {
		t.Fatalf("first write: %+v %+v %v", v1, meta, err)
	}
	if _, err := c.PutSessionPlan(ctx, "billing", api.SessionPlanWrite{Content: "# again"}, client.IfNoneMatchAny()); !errors.Is(err, client.ErrAlreadyExists) {
		t.Errorf("create-only write over a plan: %v", err)
	}
	s, err := c.RequestReview(ctx, "billing", api.ReviewRequest{Rationale: client.Ptr("grep found the callers")}, client.IfMatch(1))
	if err != nil || s.Review.State != api.ReviewPending || *s.Review.PlanRevision != 1 || *s.Review.Rationale != "grep found the callers" {
		t.Fatalf("request review: %+v %v", s, err)
	}
	rejected, err := c.RejectPlan(ctx, "billing", api.ReviewRejection{Feedback: client.Ptr("Run the tests."),
		Comments: []api.ReviewComment{{Line: 2, Body: "and the callers?"}}}, client.IfMatch(1))
	if err != nil || rejected.Review.State != api.ReviewRejected || len(rejected.Review.Comments) != 1 || rejected.Mode != api.ModePlan {
		t.Fatalf("reject: %+v %v", rejected, err)
	}
	if _, err := c.RejectPlan(ctx, "billing", api.ReviewRejection{}); !errors.Is(err, client.ErrReviewNotPending) {
		t.Errorf("reject twice: %v", err)
	}

	v2, err := c.PutSessionPlan(ctx, "billing", api.SessionPlanWrite{Content: "# Plan\n1. Move totals\n2. Run go test\n",
		Author: client.Ptr("planner")}, client.IfMatch(v1.Revision))
	if err != nil || v2.Revision != 2 || v2.Author != "planner" {
		t.Fatalf("rewrite: %+v %v", v2, err)
	}
	if _, err := c.RequestReview(ctx, "billing", api.ReviewRequest{}); err != nil {
		t.Fatal(err)
	}
	// The human read revision 1: the approval is refused and changes nothing.
	_, err = c.ApprovePlan(ctx, "billing", 1, api.ReviewApproval{})
	var e *client.Error
	if !errors.As(err, &e) || e.Code != api.CodeVersionConflict || *e.CurrentRevision != 2 {
		t.Fatalf("stale approval: %v", err)
	}
	// The argument is the If-Match, whatever the options say.
	approved, err := c.ApprovePlan(ctx, "billing", 2, api.ReviewApproval{Feedback: client.Ptr("Go.")}, client.IfMatch(1))
	if err != nil || approved.Mode != api.ModeBuild || approved.Review.State != api.ReviewApproved || approved.Note != nil {
		t.Fatalf("approve: %+v %v", approved, err)
	}

	plan, err := c.GetSessionPlan(ctx, "billing", client.Meta(&meta))
	if err != nil || plan.Revision != 2 || meta.Revision != 2 || plan.Review == nil || *plan.Review.Feedback != "Go." {
		t.Fatalf("get plan: %+v %v", plan, err)
	}
	if _, err := c.GetSessionPlan(ctx, "billing", client.IfNoneMatch(2)); !errors.Is(err, client.ErrNotModified) {
		t.Errorf("unchanged plan: %v", err)
	}
	revs, err := c.SessionPlanRevisions(ctx, "billing")
	if err != nil || len(revs.Revisions) != 2 || revs.Revisions[0].Revision != 2 {
		t.Fatalf("revisions: %+v %v", revs, err)
	}
	old, err := c.GetSessionPlanRevision(ctx, "billing", 1)
	if err != nil || old.Content != "# Plan\n1. Move totals\n" || old.Review != nil {
		t.Fatalf("revision 1: %+v %v", old, err)
	}
	if _, err := c.GetSessionPlanRevision(ctx, "billing", 9); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("revision 9: %v", err)
	}
	d, err := c.DiffSessionPlan(ctx, "billing", client.DiffRange{})
	if err != nil || d.From != 1 || d.To != 2 || len(d.Hunks) != 1 {
		t.Fatalf("diff: %+v %v", d, err)
	}
	text, err := c.DiffSessionPlanText(ctx, "billing", client.DiffRange{From: client.Ptr[int64](0), To: client.Ptr[int64](1)})
	if err != nil || !strings.Contains(text, "+1. Move totals") || !strings.HasPrefix(text, "--- ") {
		t.Fatalf("unified diff: %q %v", text, err)
	}
	h, err := c.ReviewHistory(ctx, "billing")
	if err != nil || h.Current.State != api.ReviewApproved || len(h.Reviews) != 2 ||
		h.Reviews[0].State != api.ReviewApproved || h.Reviews[1].State != api.ReviewRejected {
		t.Fatalf("history: %+v %v", h, err)
	}
}

func TestToolsAndTodos(t *testing.T) {
	_, c := newTest(t)
	ctx := t.Context()
	if _, err := c.CreateSession(ctx, api.SessionCreate{ID: client.Ptr("s"), Mode: "plan"}); err != nil {
		t.Fatal(err)
	}
	f, err := c.FilterTools(ctx, "s", []api.Tool{
		{Name: "read_file", Annotations: &api.ToolAnnotations{ReadOnlyHint: client.Ptr(true)}},
		{Name: "shell"}, {Name: "write_session_plan"},
	})
	if err != nil || f.EffectiveMode != api.ModePlan || strings.Join(f.Allowed, ",") != "read_file,write_session_plan" ||
		strings.Join(f.Removed, ",") != "shell" || f.Reminder == nil {
		t.Fatalf("filter: %+v %v", f, err)
	}
	if f, err := c.FilterTools(ctx, "s", nil); err != nil || len(f.Allowed) != 0 {
		t.Errorf("filter of no tools: %+v %v", f, err)
	}
	chk, err := c.CheckTool(ctx, "s", api.Tool{Name: "shell"})
	if err != nil || chk.Allowed || !strings.Contains(chk.Reason, "plan mode") {
		t.Fatalf("check: %+v %v", chk, err)
	}

	empty, err := c.GetTodos(ctx, "s")
	if err != nil || empty.Revision != 0 || len(empty.Todos) != 0 {
		t.Fatalf("todos before a write: %+v %v", empty, err)
	}
	list, err := c.PutTodos(ctx, "s", []api.TodoWrite{{Content: "a", Status: api.TodoInProgress}, {ID: "b", Content: "b", Status: api.TodoPending}})
	if err != nil || list.Revision != 1 || len(list.Todos) != 2 || !strings.HasPrefix(list.Todos[0].ID, "todo_") {
		t.Fatalf("put todos: %+v %v", list, err)
	}
	if _, err := c.PutTodos(ctx, "s", nil, client.IfMatch(7)); !errors.Is(err, client.ErrVersionConflict) {
		t.Errorf("stale todos write: %v", err)
	}
	if _, err := c.GetTodos(ctx, "s", client.IfNoneMatch(1)); !errors.Is(err, client.ErrNotModified) {
		t.Errorf("unchanged todos: %v", err)
	}
	if cleared, err := c.PutTodos(ctx, "s", nil, client.IfMatch(1)); err != nil || len(cleared.Todos) != 0 || cleared.Revision != 2 {
		t.Errorf("clear todos: %+v %v", cleared, err)
	}
}
