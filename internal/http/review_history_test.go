package http_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/apitest"
	"github.com/planserver/planserver/internal/app"
)

// TestReviewWithLineCommentsAndHistory walks a review round trip as the
// console does it: the agent writes and asks, the human rejects with
// feedback and a comment on a line, the agent reads both from its plan,
// rewrites (a pending review is withdrawn by a rewrite), asks again, the
// human approves; every ended review stays readable, newest first.
func TestReviewWithLineCommentsAndHistory(t *testing.T) {
	env := apitest.New(t)
	createSession(t, env, map[string]any{"id": "s", "mode": "plan"})
	writeSessionPlan(t, env, "s", map[string]any{"content": "# Plan\n1. Move totals\n2. Update callers\n"}, http.StatusCreated)
	act(t, env, "s", "review", map[string]any{"rationale": "first try"}, 200)

	// A comment on a line the plan does not have is refused, and nothing
	// is decided.
	if r := env.Bad("POST", "/v1/sessions/s/plan/reject", map[string]any{"comments": []map[string]any{{"line": 9, "body": "?"}}}); r.Status != 400 ||
		!strings.Contains(string(r.Body), `"field":"comments[0].line"`) {
		t.Fatalf("comment past the end: %d %s", r.Status, r.Body)
	}
	act(t, env, "s", "reject", map[string]any{"feedback": "add tests",
		"comments": []map[string]any{{"line": 3, "body": "which callers? list them"}}}, 200)

	// The agent reads the feedback and the comment with its plan.
	var p api.SessionPlan
	env.Call("GET", "/v1/sessions/s/plan", nil).JSON(t, &p)
	if p.Review == nil || p.Review.State != "rejected" || *p.Review.Feedback != "add tests" ||
		len(p.Review.Comments) != 1 || p.Review.Comments[0].Line != 3 || p.Review.Comments[0].Body != "which callers? list them" {
		t.Fatalf("plan as the agent reads it: %+v", p.Review)
	}

	// Rewritten, asked again, rewritten while pending (withdrawn), asked
	// again, approved with a comment.
	writeSessionPlan(t, env, "s", map[string]any{"content": "# Plan\n1. Move totals\n2. Update billing/a.go and b.go\n3. go test\n"}, http.StatusOK)
	act(t, env, "s", "review", nil, 200)
	writeSessionPlan(t, env, "s", map[string]any{"content": "# Plan\n1. Move totals\n2. Update billing/a.go and b.go\n3. go test ./billing/...\n"}, http.StatusOK)
	act(t, env, "s", "review", nil, 200)
	_, approved := act(t, env, "s", "approve", map[string]any{"comments": []map[string]any{{"line": 4, "body": "good"}}}, 200, "If-Match", `"3"`)
	if approved.Mode != "build" || approved.Review.State != "approved" {
		t.Fatalf("approved: %+v", approved)
	}

	var h api.ReviewHistory
	env.Call("GET", "/v1/sessions/s/reviews", nil).JSON(t, &h)
	var got []string
	for _, r := range h.Reviews {
		got = append(got, r.State)
	}
	if strings.Join(got, ",") != "approved,withdrawn,rejected" || h.Current.State != "approved" {
		t.Fatalf("review history %v, current %s", got, h.Current.State)
	}
	rejected := h.Reviews[2]
	if *rejected.PlanRevision != 1 || *rejected.Feedback != "add tests" || len(rejected.Comments) != 1 ||
		rejected.EndedBy != "anonymous" || *rejected.Rationale != "first try" {
		t.Errorf("the rejection as kept: %+v", rejected)
	}
	if withdrawn := h.Reviews[1]; *withdrawn.PlanRevision != 2 {
		t.Errorf("the withdrawn review: %+v", withdrawn)
	}
	if a := h.Reviews[0]; *a.PlanRevision != 3 || len(a.Comments) != 1 || a.Comments[0].Line != 4 {
		t.Errorf("the approval as kept: %+v", a)
	}
}

// TestSessionPlanRevisionsAndDiff: every rewrite keeps the replaced
// revision, readable alone and diffable against any other (JSON hunks or a
// unified diff), within --plan-history.
func TestSessionPlanRevisionsAndDiff(t *testing.T) {
	env := apitest.New(t, func(c *app.Config) { c.PlanHistory = 3 })
	createSession(t, env, map[string]any{"id": "s"})
	for _, c := range []string{"a\nb\nc\n", "a\nB\nc\n", "a\nB\nc\nd\n", "A\nB\nc\nd\n"} {
		env.Call("PUT", "/v1/sessions/s/plan", map[string]any{"content": c})
	}
	var revs api.SessionPlanRevisions
	env.Call("GET", "/v1/sessions/s/plan/revisions", nil).JSON(t, &revs)
	if len(revs.Revisions) != 3 || revs.Revisions[0].Revision != 4 || revs.Revisions[2].Revision != 2 {
		t.Fatalf("history within 3: %+v", revs.Revisions)
	}
	r := env.Call("GET", "/v1/sessions/s/plan/revisions/2", nil, "Accept", "text/markdown")
	if r.Status != 200 || string(r.Body) != "a\nB\nc\n" || r.Header.Get("ETag") != `"2"` {
		t.Errorf("revision 2: %d %q %s", r.Status, r.Body, r.Header.Get("ETag"))
	}
	if r := env.Call("GET", "/v1/sessions/s/plan/revisions/1", nil); r.Status != 404 {
		t.Errorf("a pruned revision: %d %s", r.Status, r.Body)
	}

	// Default: the current revision against the one before it.
	var d api.Diff
	env.Call("GET", "/v1/sessions/s/plan/diff", nil).JSON(t, &d)
	if d.From != 3 || d.To != 4 || len(d.Hunks) != 1 || d.Hunks[0].Lines[0].Op != "-" || d.Hunks[0].Lines[0].Text != "a" {
		t.Errorf("default diff: %+v", d)
	}
	r = env.Call("GET", "/v1/sessions/s/plan/diff?from=2&to=4", nil, "Accept", "text/x-diff")
	want := "--- plan of session s@2\n+++ plan of session s@4\n@@ -1,3 +1,4 @@\n-a\n+A\n B\n c\n+d\n"
	if r.Status != 200 || string(r.Body) != want || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/x-diff") {
		t.Errorf("unified diff: %d %q", r.Status, r.Body)
	}
	for _, q := range []string{"from=1&to=4", "from=2&to=9"} {
		if r := env.Call("GET", "/v1/sessions/s/plan/diff?"+q, nil); r.Status != 404 {
			t.Errorf("?%s: %d %s", q, r.Status, r.Body)
		}
	}
	for _, q := range []string{"from=-1", "to=0", "to=x", "from=01"} {
		if r := env.Bad("GET", "/v1/sessions/s/plan/diff?"+q, nil); r.Status != 400 {
			t.Errorf("?%s: %d %s", q, r.Status, r.Body)
		}
	}
	if r := env.Bad("GET", "/v1/sessions/s/plan/diff", nil, "Accept", "image/png"); r.Status != 406 {
		t.Errorf("Accept image/png: %d", r.Status)
	}
}

// TestSharedPlanDiff compares contents of a shared plan; step changes
// diff as equal, and from=0 is the empty plan.
func TestSharedPlanDiff(t *testing.T) {
	env := apitest.New(t)
	putPlan(t, env, "p", map[string]any{"content": "one\ntwo\n", "steps": []map[string]any{{"id": "a", "description": "d", "owner": "o"}}}, http.StatusCreated)
	putPlan(t, env, "p", map[string]any{"content": "one\n2\n"}, http.StatusOK)
	env.Call("PATCH", "/v1/plans/p/steps/a", map[string]any{"owner": "ops"})
	var d api.Diff
	env.Call("GET", "/v1/plans/p/diff?from=2&to=3", nil).JSON(t, &d)
	if len(d.Hunks) != 0 {
		t.Errorf("a step change diffs as %+v", d.Hunks)
	}
	env.Call("GET", "/v1/plans/p/diff?from=1&to=3", nil).JSON(t, &d)
	if len(d.Hunks) != 1 || d.Hunks[0].OldLines != 2 || d.Hunks[0].NewLines != 2 {
		t.Errorf("content diff: %+v", d.Hunks)
	}
	env.Call("GET", "/v1/plans/p/diff?from=0&to=1", nil).JSON(t, &d)
	if len(d.Hunks) != 1 || d.Hunks[0].OldStart != 0 || d.Hunks[0].NewLines != 2 {
		t.Errorf("against the empty plan: %+v", d.Hunks)
	}
	if r := env.Call("GET", "/v1/plans/nope/diff", nil); r.Status != 404 {
		t.Errorf("missing plan: %d", r.Status)
	}
}

// TestInboxFilter: ?review_state=pending lists the sessions waiting for a
// human.
func TestInboxFilter(t *testing.T) {
	env := apitest.New(t)
	for _, id := range []string{"a", "b", "c"} {
		createSession(t, env, map[string]any{"id": id, "mode": "plan"})
		writeSessionPlan(t, env, id, map[string]any{"content": "# " + id}, http.StatusCreated)
	}
	act(t, env, "a", "review", nil, 200)
	act(t, env, "c", "review", nil, 200)
	var list api.SessionList
	env.Call("GET", "/v1/sessions?review_state=pending", nil).JSON(t, &list)
	if len(list.Sessions) != 2 || list.Sessions[0].ID != "a" || list.Sessions[1].ID != "c" {
		t.Errorf("inbox: %+v", list.Sessions)
	}
	if r := env.Bad("GET", "/v1/sessions?review_state=waiting", nil); r.Status != 400 {
		t.Errorf("unknown review state: %d", r.Status)
	}
}
