package http_test

import (
	"testing"

	"github.com/planserver/planserver/internal/apitest"
)

// TestEveryEventTypeMatchesTheContract makes one event of every type and
// reads the log as JSON pages, which apitest checks against the contract:
// each event's data must match the variant of Event its type names.
func TestEveryEventTypeMatchesTheContract(t *testing.T) {
	env := apitest.New(t)
	must := func(r *apitest.Response, want int) {
		t.Helper()
		if r.Status != want {
			t.Fatalf("%d %s, want %d", r.Status, r.Body, want)
		}
	}
	must(env.Call("POST", "/v1/sessions", map[string]any{"id": "a"}), 201)
	must(env.Call("POST", "/v1/sessions", map[string]any{"id": "a.b", "parent_id": "a"}), 201)
	must(env.Do(apitest.Request{Method: "PATCH", Path: "/v1/sessions/a", Body: map[string]any{"title": "T"},
		Header: map[string]string{"Content-Type": "application/merge-patch+json"}}), 200)
	must(env.Call("PATCH", "/v1/sessions/a/mode", map[string]any{"mode": "plan"}), 200)
	must(env.Call("POST", "/v1/sessions/a.b/tools/check", map[string]any{"name": "shell"}), 200)
	must(env.Call("PUT", "/v1/sessions/a/plan", map[string]any{"content": "# Plan"}), 201)
	must(env.Call("POST", "/v1/sessions/a/plan/review", nil), 200)
	must(env.Call("POST", "/v1/sessions/a/plan/reject", map[string]any{"feedback": "more"}), 200)
	must(env.Call("POST", "/v1/sessions/a/plan/review", nil), 200)
	must(env.Call("POST", "/v1/sessions/a/plan/approve", nil, "If-Match", `"1"`), 200)
	must(env.Call("PUT", "/v1/sessions/a/todos", map[string]any{"todos": []map[string]any{{"content": "x", "status": "pending"}}}), 200)
	steps := []map[string]any{{"id": "1", "description": "d", "owner": "o"}}
	must(env.Call("PUT", "/v1/plans/p", map[string]any{"content": "# P", "steps": steps}), 201)
	must(env.Call("PUT", "/v1/plans/p", map[string]any{"content": "# P2"}), 200)
	must(env.Call("PUT", "/v1/plans/p/status", map[string]any{"status": "active"}), 200)
	must(env.Call("PATCH", "/v1/plans/p/steps/1", map[string]any{"owner": "o2"}), 200)
	must(env.Call("POST", "/v1/plans/p/steps/claim", map[string]any{"worker": "w"}), 200)
	must(env.Call("POST", "/v1/plans/p/steps/1/reports", map[string]any{"worker": "w", "outcome": "success", "details": "done"}), 201)
	must(env.Call("DELETE", "/v1/plans/p", nil), 204)
	must(env.Call("DELETE", "/v1/sessions/a", nil), 204)

	seen := map[string]bool{}
	page := getEvents(t, env, "?after=0&limit=1000")
	for _, e := range page.Events {
		seen[e.Type] = true
	}
	for _, typ := range []string{"session.created", "session.updated", "session.mode_changed", "session.deleted",
		"session_plan.updated", "session.review_requested", "session.review_approved", "session.review_rejected",
		"todos.updated", "tool_call.denied", "plan.created", "plan.updated", "plan.status_changed", "plan.deleted",
		"step.updated", "step.claimed", "step.report_added"} {
		if !seen[typ] {
			t.Errorf("no %s event made: the test no longer covers every type", typ)
		}
	}
}
