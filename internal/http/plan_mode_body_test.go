package http_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/planserver/planserver/internal/apitest"
	"github.com/planserver/planserver/internal/auth"
)

// TestPlanModeCannotExecuteThroughThePlanBody: an agent whose session is in
// plan mode may rewrite a shared plan, steps included, but not execute
// through it: a whole-plan write (JSON or YAML) that moves a step to
// in_progress or complete, or sets or changes a claim, is refused with the
// 403 the claim, report and step-PATCH routes give, and changes nothing.
// The same writes by the same agent once its session builds are accepted.
func TestPlanModeCannotExecuteThroughThePlanBody(t *testing.T) {
	env := apitest.New(t, withTokens)
	admin := env.As(env.Token(auth.Admin, "root", ""))
	createSession(t, admin, map[string]any{"id": "planner", "mode": "plan"})
	agent := env.As(env.Token(auth.Agent, "agent-p", "planner"))
	claim := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	putPlan(t, admin, "shared", map[string]any{"content": "# Shared", "steps": []map[string]any{
		{"id": "a", "description": "A", "owner": "dev"},
		{"id": "b", "description": "B", "owner": "dev", "deps": []string{"a"}},
		{"id": "done", "description": "Already done", "owner": "dev", "status": "complete"},
		{"id": "held", "description": "Held", "owner": "dev", "status": "in_progress", "claimed_by": "w1", "claim_expires_at": claim},
	}}, http.StatusCreated)
	before := getPlan(t, admin, "shared")

	steps := func(a, held map[string]any) []map[string]any {
		out := []map[string]any{
			{"id": "a", "description": "A", "owner": "dev"},
			{"id": "b", "description": "B", "owner": "dev", "deps": []string{"a"}},
			{"id": "done", "description": "Already done", "owner": "dev", "status": "complete"},
			{"id": "held", "description": "Held", "owner": "dev", "status": "in_progress", "claimed_by": "w1", "claim_expires_at": claim},
		}
		for k, v := range a {
			out[0][k] = v
		}
		for k, v := range held {
			out[3][k] = v
		}
		return out
	}
	later := time.Now().Add(2 * time.Hour).UTC().Format(time.RFC3339)
	refused := []struct {
		name  string
		steps []map[string]any
	}{
		{"complete", steps(map[string]any{"status": "complete"}, nil)},
		{"start", steps(map[string]any{"status": "in_progress"}, nil)},
		{"start and claim", steps(map[string]any{"status": "in_progress", "claimed_by": "agent-p", "claim_expires_at": claim}, nil)},
		{"take over a claim", steps(nil, map[string]any{"claimed_by": "agent-p"})},
		{"extend a claim", steps(nil, map[string]any{"claim_expires_at": later})},
		{"complete a held step", steps(nil, map[string]any{"status": "complete", "claimed_by": nil, "claim_expires_at": nil})},
		{"a new step already complete", append(steps(nil, nil), map[string]any{"id": "new", "description": "N", "owner": "dev", "status": "complete"})},
	}
	for _, c := range refused {
		r := agent.Call("PUT", "/v1/plans/shared", map[string]any{"content": "# Shared", "steps": c.steps})
		if r.Status != http.StatusForbidden || r.Code() != "permission_denied" || !strings.Contains(string(r.Body), "plan mode is active") {
			t.Errorf("%s (JSON): %d %s, want 403 permission_denied", c.name, r.Status, r.Body)
		}
	}
	yamlRefused := []string{
		"content: '# Shared'\nsteps:\n  - id: a\n    description: A\n    owner: dev\n    status: complete\n",
		"content: '# Shared'\nsteps:\n  - id: a\n    description: A\n    owner: dev\n    status: in_progress\n    claimed_by: agent-p\n    claim_expires_at: '" + claim + "'\n",
	}
	for _, body := range yamlRefused {
		r := agent.Call("PUT", "/v1/plans/shared", []byte(body), "Content-Type", "application/yaml")
		if r.Status != http.StatusForbidden || r.Code() != "permission_denied" {
			t.Errorf("YAML %q: %d %s, want 403 permission_denied", body, r.Status, r.Body)
		}
	}
	if after := getPlan(t, admin, "shared"); after.Revision != before.Revision || string(after.Steps) != string(before.Steps) {
		t.Fatalf("a refused write changed the plan: revision %d → %d\n%s\n%s", before.Revision, after.Revision, before.Steps, after.Steps)
	}

	// Planning through the body stays allowed: descriptions, owners,
	// blocked and pending, new pending steps, and steps that keep the
	// status and claim they have.
	putPlan(t, agent, "shared", map[string]any{"content": "# Shared, replanned", "steps": append(
		steps(map[string]any{"description": "A, reworded", "owner": "dev", "status": "blocked"}, nil),
		map[string]any{"id": "c", "description": "C", "owner": "dev", "deps": []string{"b"}})}, http.StatusOK)
	r := agent.Call("PUT", "/v1/plans/shared", []byte("content: '# Shared'\nsteps:\n  - id: a\n    description: A\n    owner: dev\n    status: pending\n"),
		"Content-Type", "application/yaml")
	if r.Status != http.StatusOK {
		t.Fatalf("planning YAML write: %d %s", r.Status, r.Body)
	}

	// Once the session builds, the same agent may execute through the body.
	mustPatchMode(t, admin, "planner", "build")
	putPlan(t, agent, "shared", map[string]any{"content": "# Shared", "steps": steps(map[string]any{"status": "complete"}, nil)}, http.StatusOK)
}

// mustPatchMode sets a session's mode as an admin.
func mustPatchMode(t *testing.T, admin *apitest.Env, id, mode string) {
	t.Helper()
	if r := admin.Call("PATCH", "/v1/sessions/"+id+"/mode", map[string]any{"mode": mode}); r.Status != http.StatusOK {
		t.Fatalf("mode %s of %s: %d %s", mode, id, r.Status, r.Body)
	}
}
