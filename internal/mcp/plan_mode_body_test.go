package mcp_test

import (
	"net/http"
	"testing"

	"github.com/planserver/planserver/internal/auth"
)

// TestWritePlanCannotExecuteInPlanMode: write_plan is the whole-plan write
// over MCP; an agent in plan mode may replan the steps with it but not
// start, complete or claim one, exactly as over HTTP.
func TestWritePlanCannotExecuteInPlanMode(t *testing.T) {
	te := newTokenEnv(t)
	mustStatus(t, te.admin.Call("PUT", "/v1/plans/p", map[string]any{"content": "# P", "steps": []map[string]any{
		{"id": "a", "description": "A", "owner": "dev"}}}), http.StatusCreated)
	mustStatus(t, te.admin.Call("PATCH", "/v1/sessions/a/mode", map[string]any{"mode": "plan"}), http.StatusOK)
	c := connect(t, te.Env, clientOpts{token: te.Token(auth.Agent, "agent-a", "a")})
	before := head(t, te.admin)
	for _, st := range []map[string]any{
		{"id": "a", "description": "A", "owner": "dev", "status": "complete"},
		{"id": "a", "description": "A", "owner": "dev", "status": "in_progress", "claimed_by": "agent-a", "claim_expires_at": "2099-01-01T00:00:00Z"},
	} {
		c.fails("write_plan", map[string]any{"name": "p", "content": "# P", "steps": []map[string]any{st}},
			"permission_denied", "plan mode is active", `steps[0] ("a")`)
	}
	if head(t, te.admin) != before {
		t.Fatal("a refused write_plan was recorded")
	}
	c.ok("write_plan", map[string]any{"name": "p", "content": "# P", "steps": []map[string]any{
		{"id": "a", "description": "A, replanned", "owner": "dev", "status": "blocked"}}}, nil)
}
