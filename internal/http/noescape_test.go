package http_test

import (
	"net/http"
	"testing"

	"github.com/planserver/planserver/internal/apitest"
	"github.com/planserver/planserver/internal/app"
	"github.com/planserver/planserver/internal/auth"
	planhttp "github.com/planserver/planserver/internal/http"
)

// TestAgentCannotEscapePlanMode tries, with an agent token, every way out
// of plan mode for the agent's session and its descendants, and checks
// after each that nothing moved: both sessions still in plan mode of their
// own, their reviews still pending, the tree whole, no token made.
//
//	top (build) ── mid (plan; the agent's session) ── leaf (plan)
//
// top is in build so that mid and leaf are in plan only through their own
// mode: an escape could not hide behind an ancestor's plan mode.
func TestAgentCannotEscapePlanMode(t *testing.T) {
	env := apitest.New(t, func(c *app.Config) { c.Auth = planhttp.AuthToken })
	adminTok := env.Token(auth.Admin, "human", "")
	as := env.As(adminTok)
	createSession(t, as, map[string]any{"id": "top"})
	createSession(t, as, map[string]any{"id": "mid", "parent_id": "top", "mode": "plan"})
	createSession(t, as, map[string]any{"id": "leaf", "parent_id": "mid", "mode": "plan"})
	agentTok := env.Token(auth.Agent, "model", "mid")
	agent := env.As(agentTok)
	// The agent does its legitimate work: plans and asks for review.
	for _, id := range []string{"mid", "leaf"} {
		writeSessionPlan(t, agent, id, map[string]any{"content": "# Plan for " + id}, http.StatusCreated)
		act(t, agent, id, "review", map[string]any{"rationale": "ready"}, http.StatusOK)
	}
	tokensBefore := countRows(t, env, "tokens", "")

	merge := []string{"Content-Type", "application/merge-patch+json"}
	attempts := []struct {
		name         string
		method, path string
		body         any
		header       []string
		want         int
	}{
		{"own session to build", "PATCH", "/v1/sessions/mid/mode", map[string]any{"mode": "build"}, nil, 403},
		{"own session to build with If-Match", "PATCH", "/v1/sessions/mid/mode", map[string]any{"mode": "build"},
			[]string{"If-Match", "*"}, 403},
		{"own session to build as a merge patch", "PATCH", "/v1/sessions/mid/mode", map[string]any{"mode": "build"}, merge, 403},
		{"descendant to build", "PATCH", "/v1/sessions/leaf/mode", map[string]any{"mode": "build"}, nil, 403},
		{"ancestor to build", "PATCH", "/v1/sessions/top/mode", map[string]any{"mode": "build"}, nil, 404},
		{"ancestor into plan", "PATCH", "/v1/sessions/top/mode", map[string]any{"mode": "plan"}, nil, 404},
		{"approve own plan", "POST", "/v1/sessions/mid/plan/approve", nil, []string{"If-Match", `"1"`}, 403},
		{"approve descendant's plan", "POST", "/v1/sessions/leaf/plan/approve", nil, []string{"If-Match", `"1"`}, 403},
		{"reject own plan", "POST", "/v1/sessions/mid/plan/reject", map[string]any{"feedback": "x"}, nil, 403},
		{"reject descendant's plan", "POST", "/v1/sessions/leaf/plan/reject", nil, nil, 403},
		{"delete own session", "DELETE", "/v1/sessions/mid", nil, nil, 403},
		{"delete descendant", "DELETE", "/v1/sessions/leaf", nil, nil, 403},
		{"delete ancestor", "DELETE", "/v1/sessions/top", nil, nil, 404},
		{"merge-patch own session", "PATCH", "/v1/sessions/mid", map[string]any{"title": "free"}, merge, 403},
		{"merge-patch descendant", "PATCH", "/v1/sessions/leaf", map[string]any{"metadata": map[string]any{"mode": "build"}}, merge, 403},
		{"harness child of own session", "POST", "/v1/sessions", map[string]any{"parent_id": "mid", "harness": true}, nil, 403},
		{"harness child of descendant", "POST", "/v1/sessions", map[string]any{"parent_id": "leaf", "harness": true}, nil, 403},
		{"harness root", "POST", "/v1/sessions", map[string]any{"harness": true}, nil, 403},
		{"root session in build", "POST", "/v1/sessions", map[string]any{"id": "escape", "mode": "build"}, nil, 403},
		{"sibling under the ancestor", "POST", "/v1/sessions", map[string]any{"parent_id": "top"}, nil, 400},
		{"an admin token", "POST", "/v1/tokens", map[string]any{"role": "admin", "name": "mine"}, nil, 403},
		{"an agent token for the ancestor", "POST", "/v1/tokens", map[string]any{"role": "agent", "session_id": "top"}, nil, 403},
		{"list tokens", "GET", "/v1/tokens", nil, nil, 403},
		{"revoke the human's token", "DELETE", "/v1/tokens/human", nil, nil, 403},
		{"revoke its own token", "DELETE", "/v1/tokens/model", nil, nil, 403},
	}
	for _, a := range attempts {
		resp := agent.Call(a.method, a.path, a.body, a.header...)
		if resp.Status != a.want {
			t.Errorf("%s: %s %s = %d, want %d: %s", a.name, a.method, a.path, resp.Status, a.want, resp.Body)
		}
		stillPlanning(t, as, a.name)
	}

	// Requests that break the contract on purpose: a path that escapes
	// the id, and the human's token smuggled in the query string next to
	// the agent's header.
	bad := []struct {
		name         string
		method, path string
		body         any
		want         int
	}{
		{"escaped id", "POST", "/v1/sessions/m%69d/plan/approve", nil, 404},
		{"escaped id to build", "PATCH", "/v1/sessions/m%69d/mode", map[string]any{"mode": "build"}, 404},
		{"admin token in the query", "PATCH", "/v1/sessions/mid/mode?access_token=" + adminTok, map[string]any{"mode": "build"}, 403},
	}
	for _, a := range bad {
		resp := agent.Bad(a.method, a.path, a.body, "If-Match", `"1"`)
		if resp.Status != a.want {
			t.Errorf("%s: %s %s = %d, want %d: %s", a.name, a.method, a.path, resp.Status, a.want, resp.Body)
		}
		stillPlanning(t, as, a.name)
	}

	if n := countRows(t, env, "tokens", ""); n != tokensBefore {
		t.Errorf("%d tokens, want %d", n, tokensBefore)
	}
	if n := countRows(t, env, "sessions", "harness = 1 OR id = 'escape'"); n != 0 {
		t.Errorf("%d escape sessions were created", n)
	}
	if n := countRows(t, env, "events", "actor = 'model' AND type IN ('session.mode_changed', 'session.review_approved', "+
		"'session.review_rejected', 'session.deleted', 'session.updated')"); n != 0 {
		t.Errorf("the agent's token changed modes, reviews or sessions: %d events", n)
	}

	// The human ends plan mode the one sanctioned way, and it is recorded
	// as theirs.
	resp, approved := act(t, as, "mid", "approve", nil, http.StatusOK, "If-Match", `"1"`)
	if approved.Mode != "build" || approved.Review.DecidedBy == nil || *approved.Review.DecidedBy != "human" {
		t.Errorf("approval by the human: %s", resp.Body)
	}
}

// stillPlanning checks that mid and leaf are in plan mode of their own
// with a pending review.
func stillPlanning(t *testing.T, env *apitest.Env, after string) {
	t.Helper()
	for _, id := range []string{"mid", "leaf"} {
		s := getReviewed(t, env, id)
		if s.Mode != "plan" || s.EffectiveMode != "plan" || s.Review.State != "pending" {
			t.Fatalf("after %q: %s is mode %s, effective %s, review %s", after, id, s.Mode, s.EffectiveMode, s.Review.State)
		}
	}
}
