package mcp_test

import (
	"context"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/apitest"
	"github.com/planserver/planserver/internal/app"
	"github.com/planserver/planserver/internal/auth"
	planhttp "github.com/planserver/planserver/internal/http"
	"github.com/planserver/planserver/internal/mcp"
)

// planModeTools is what the default plan-mode gate leaves of the tools:
// the read-only ones and the plan-mode allowlist (sessions.DefaultPlanModeAllow).
var planModeTools = []string{
	"exit_plan_mode", "get_plan_status", "list_plans", "list_steps", "plan_enter", "plan_exit", "plan_write",
	"read_plan", "read_session_plan", "set_plan_status", "todo_write", "write_plan", "write_session_plan",
}

// sharedTools are the tools offered without a session.
var sharedTools = []string{
	"claim_step", "delete_plan", "edit_plan", "get_plan_status", "list_plans", "list_steps", "read_plan",
	"report_step", "set_plan_status", "write_plan",
}

func allTools() []string {
	var out []string
	for _, op := range mcp.Operations {
		out = append(out, op.Name)
	}
	sort.Strings(out)
	return out
}

func sameSet(t *testing.T, what string, got, want []string) {
	t.Helper()
	got = slices.Clone(got)
	sort.Strings(got)
	if !slices.Equal(got, want) {
		t.Fatalf("%s = %v, want %v", what, got, want)
	}
}

// TestPlanModeGatesListAndCalls: in plan mode the list holds only the
// read-only tools and the allowlist; a hidden tool called anyway is
// refused with the reason POST …/tools/check gives, recorded as
// tool_call.denied with the upstream, and changes nothing. The list
// follows the mode at the very next request, both ways, and a sub-session
// is gated by its ancestor's mode.
func TestPlanModeGatesListAndCalls(t *testing.T) {
	for _, version := range []string{"", "2025-11-25"} {
		t.Run("protocol "+version, func(t *testing.T) {
			env := apitest.New(t)
			session(t, env, map[string]any{"id": "s"})
			session(t, env, map[string]any{"id": "s.child", "parent_id": "s"})
			c := connect(t, env, clientOpts{session: "s", version: version})
			child := connect(t, env, clientOpts{session: "s.child", version: version})
			sameSet(t, "build-mode list", c.names(), allTools())
			c.ok("write_plan", map[string]any{"name": "p", "content": "# P\n"}, nil)

			// A human (or the host) turns plan mode on: the next list shrinks.
			mustStatus(t, env.Call("PATCH", "/v1/sessions/s/mode", map[string]any{"mode": "plan"}), http.StatusOK)
			sameSet(t, "plan-mode list", c.names(), planModeTools)
			sameSet(t, "sub-session list", child.names(), planModeTools)

			before := head(t, env)
			msg := c.fails("delete_plan", map[string]any{"name": "p"}, "[Tool denied — plan mode is active]")
			var check api.CheckResult
			env.Call("POST", "/v1/sessions/s/tools/check", map[string]any{"name": "delete_plan",
				"annotations": map[string]any{"readOnlyHint": false}}).JSON(t, &check)
			if check.Allowed || msg != check.Reason {
				t.Fatalf("refusal %q, tools/check says %q", msg, check.Reason)
			}
			c.fails("edit_plan", map[string]any{"name": "p", "old_string": "P", "new_string": "Q"}, "plan mode is active")
			child.fails("claim_step", map[string]any{"name": "p"}, "plan mode is active", `ancestor session "s"`)
			mustStatus(t, env.Call("GET", "/v1/plans/p", nil), http.StatusOK)
			var p api.Plan
			env.Call("GET", "/v1/plans/p", nil).JSON(t, &p)
			if p.Revision != 1 {
				t.Fatalf("a refused call wrote: plan at revision %d", p.Revision)
			}
			denied := events(t, env, before, "tool_call.denied")
			if len(denied) != 4 { // three refusals and the tools/check above
				t.Fatalf("%d tool_call.denied events, want 4: %v", len(denied), denied)
			}
			data := denied[0]["data"].(map[string]any)
			if data["tool"] != "delete_plan" || data["upstream"] != mcp.Upstream || denied[0]["session_id"] != "s" {
				t.Fatalf("denial event = %v", denied[0])
			}
			if d := denied[3]; d["session_id"] != "s.child" || d["data"].(map[string]any)["mode_source"] != "s" {
				t.Fatalf("the sub-session's denial = %v", d)
			}
			// The allowlisted tools still work in plan mode.
			c.ok("write_plan", map[string]any{"name": "p", "content": "# P v2\n"}, nil)
			c.ok("write_session_plan", map[string]any{"content": "# The plan"}, nil)
			var r reviewOut
			c.ok("exit_plan_mode", map[string]any{}, &r)

			// The human approves: the list grows back at the next request.
			mustStatus(t, env.Call("POST", "/v1/sessions/s/plan/approve", nil, "If-Match", `"1"`), http.StatusOK)
			sameSet(t, "list after approval", c.names(), allTools())
			sameSet(t, "sub-session list after approval", child.names(), allTools())
			c.ok("delete_plan", map[string]any{"name": "p"}, nil)

			// plan_enter, the model's own way in, shrinks it again.
			c.ok("plan_enter", map[string]any{}, nil)
			sameSet(t, "list after plan_enter", c.names(), planModeTools)
		})
	}
}

// TestListCacheHints: the tool list depends on the caller and the mode,
// so it is stale at once and private (SEP-2549), and the server does not
// promise list_changed notifications it cannot send.
func TestListCacheHints(t *testing.T) {
	env := apitest.New(t)
	c := connect(t, env, clientOpts{})
	res, err := c.cs.ListTools(context.Background(), &sdk.ListToolsParams{})
	if err != nil {
		t.Fatal(err)
	}
	if res.TTLMs != 0 || res.CacheScope != "private" {
		t.Fatalf("tools/list ttlMs %d cacheScope %q, want 0 and private", res.TTLMs, res.CacheScope)
	}
	caps := c.cs.InitializeResult().Capabilities
	if caps.Tools == nil || caps.Tools.ListChanged {
		t.Fatalf("tools capability = %+v, want tools without listChanged", caps.Tools)
	}
}

// TestPlanModeAllowlistIsTheServers: the gate is the server's, with its
// --plan-mode-allow list.
func TestPlanModeAllowlistIsTheServers(t *testing.T) {
	env := apitest.New(t, func(c *app.Config) { c.PlanModeAllow = []string{"write_session_plan", "exit_plan_mode"} })
	session(t, env, map[string]any{"id": "s", "mode": "plan"})
	c := connect(t, env, clientOpts{session: "s"})
	sameSet(t, "plan-mode list", c.names(), []string{"exit_plan_mode", "get_plan_status", "list_plans", "list_steps",
		"read_plan", "read_session_plan", "write_session_plan"})
	c.fails("write_plan", map[string]any{"name": "p", "content": "x"}, "plan mode is active")
}

// tokenEnv is a server with --auth token and the session tree
//
//	a ── a.child
//	b
type tokenEnv struct {
	*apitest.Env
	admin *apitest.Env
}

func newTokenEnv(t *testing.T) *tokenEnv {
	env := apitest.New(t, func(c *app.Config) { c.Auth = planhttp.AuthToken })
	admin := env.As(env.Token(auth.Admin, "root", ""))
	session(t, admin, map[string]any{"id": "a"})
	session(t, admin, map[string]any{"id": "a.child", "parent_id": "a"})
	session(t, admin, map[string]any{"id": "b"})
	return &tokenEnv{Env: env, admin: admin}
}

// TestAgentToken: an agent token binds the client to its session; it may
// name one of its descendants, never a session of another tree (which is
// answered as missing, exactly as over HTTP). Its writes are recorded
// under its name.
func TestAgentToken(t *testing.T) {
	te := newTokenEnv(t)
	token := te.Token(auth.Agent, "agent-a", "a")

	c := connect(t, te.Env, clientOpts{token: token})
	sameSet(t, "agent's list", c.names(), allTools())
	before := head(t, te.admin)
	c.ok("write_session_plan", map[string]any{"content": "# A's plan"}, nil)
	var p api.SessionPlan
	te.admin.Call("GET", "/v1/sessions/a/plan", nil).JSON(t, &p)
	if p.Content != "# A's plan" {
		t.Fatalf("a's plan = %+v", p)
	}
	if ev := events(t, te.admin, before, "session_plan.updated"); len(ev) != 1 || ev[0]["actor"] != "agent-a" || ev[0]["session_id"] != "a" {
		t.Fatalf("session_plan.updated = %v, want one by agent-a on a", ev)
	}

	// A sub-agent names its sub-session.
	connect(t, te.Env, clientOpts{token: token, session: "a.child"}).ok("plan_write", map[string]any{"content": "# child"}, nil)
	mustStatus(t, te.admin.Call("GET", "/v1/sessions/a.child/plan", nil), http.StatusOK)

	// Another tree's session is not found, by header or by _meta.
	other := connect(t, te.Env, clientOpts{token: token, session: "b"})
	if _, err := other.cs.ListTools(context.Background(), &sdk.ListToolsParams{}); err == nil ||
		!strings.Contains(err.Error(), `session \"b\" not found`) && !strings.Contains(err.Error(), `session "b" not found`) {
		t.Fatalf("tools/list bound to another tree's session: %v", err)
	}
	other.fails("write_session_plan", map[string]any{"content": "# hijack"}, "not_found", `session "b" not found`)
	res, err := c.cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "plan_write",
		Arguments: map[string]any{"content": "# hijack"}, Meta: sdk.Meta{mcp.MetaSession: "b"}})
	if err != nil || !res.IsError || !strings.Contains(text(res), `session "b" not found`) {
		t.Fatalf("plan_write with _meta naming b: %v %v", text(res), err)
	}
	mustStatus(t, te.admin.Call("GET", "/v1/sessions/b/plan", nil), http.StatusNotFound)
	// Header and _meta naming two sessions is refused.
	res, err = c.cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "read_session_plan",
		Arguments: map[string]any{}, Meta: sdk.Meta{mcp.MetaSession: "a.child"}})
	if err != nil || res.IsError {
		t.Fatalf("read_session_plan with _meta naming a.child: %v %v", text(res), err)
	}
	child := connect(t, te.Env, clientOpts{token: token, session: "a"})
	res, _ = child.cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "read_session_plan",
		Arguments: map[string]any{}, Meta: sdk.Meta{mcp.MetaSession: "a.child"}})
	if !res.IsError || !strings.Contains(text(res), "name one session") {
		t.Fatalf("header a and _meta a.child: %s", text(res))
	}

	// The agent may enter plan mode; nothing lets it out, and execution
	// is refused while it plans.
	c.ok("plan_enter", map[string]any{}, nil)
	sameSet(t, "agent's list in plan mode", c.names(), planModeTools)
	c.fails("claim_step", map[string]any{"name": "x"}, "plan mode is active")
}

// TestViewerToken: a viewer is offered the read-only tools only, and a
// write called anyway is refused by the route's own rule.
func TestViewerToken(t *testing.T) {
	te := newTokenEnv(t)
	mustStatus(t, te.admin.Call("PUT", "/v1/plans/p", map[string]any{"content": "# P"}), http.StatusCreated)
	token := te.Token(auth.Viewer, "watcher", "")

	c := connect(t, te.Env, clientOpts{token: token})
	sameSet(t, "viewer's list", c.names(), []string{"get_plan_status", "list_plans", "list_steps", "read_plan"})
	c.ok("read_plan", map[string]any{"name": "p"}, nil)
	before := head(t, te.admin)
	c.fails("write_plan", map[string]any{"name": "p", "content": "# vandal"}, "permission_denied", `viewer token "watcher"`)
	if head(t, te.admin) != before {
		t.Fatal("a viewer's write was recorded")
	}
	withSession := connect(t, te.Env, clientOpts{token: token, session: "a"})
	sameSet(t, "viewer's list on a session", withSession.names(),
		[]string{"get_plan_status", "list_plans", "list_steps", "read_plan", "read_session_plan"})
	withSession.fails("plan_enter", map[string]any{}, "permission_denied")
	if getSession(t, te.admin, "a").Mode != api.ModeBuild {
		t.Fatal("a viewer moved a session into plan mode")
	}
}

// TestNoSession: without a session only the shared-plan and step tools
// are offered, and a session tool says how to name one.
func TestNoSession(t *testing.T) {
	te := newTokenEnv(t)
	c := connect(t, te.Env, clientOpts{token: te.Token(auth.Admin, "ops", "")})
	sameSet(t, "list without a session", c.names(), sharedTools)
	c.fails("write_session_plan", map[string]any{"content": "x"}, mcp.SessionHeader, "agent token")
	c.fails("plan_enter", map[string]any{}, mcp.SessionHeader)
	c.ok("write_plan", map[string]any{"name": "shared", "content": "# S"}, nil)
}
