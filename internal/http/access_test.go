package http_test

import (
	"context"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/planserver/planserver/internal/apitest"
	"github.com/planserver/planserver/internal/app"
	"github.com/planserver/planserver/internal/auth"
	"github.com/planserver/planserver/internal/dbtest"
	planhttp "github.com/planserver/planserver/internal/http"
)

// caller is one kind of credential the access tests call with.
type caller string

const (
	admin    caller = "admin"
	agentIn  caller = "agent in scope"
	agentOut caller = "agent out of scope"
	// agentPlan is bound to tgt, which is in plan mode: it may plan but
	// not execute steps.
	agentPlan caller = "agent in plan mode"
	viewer    caller = "viewer"
	noToken   caller = "no token"
	revoked   caller = "revoked"
	expired   caller = "expired"
)

// callers is the order the table test calls in: those that must change
// nothing first, then the agent, then the admin, so the agent's allowed
// writes never make the admin's call fail.
var callers = []caller{noToken, revoked, expired, viewer, agentOut, agentPlan, agentIn, admin}

// accessEnv is a server with --auth token, this session tree
//
//	root (build) ── tgt (plan; a plan at revision 1, review pending)
//	other (build)
//
// a shared plan "shared", one shared plan "mine-<caller>" with steps a and
// b (b needs a) per caller (for deletes and step writes, which would
// otherwise get in each other's way), and one token per caller: the
// in-scope agent is bound to root, the out-of-scope one to other. "victim"
// is a viewer token for the token routes to act on.
type accessEnv struct {
	*apitest.Env
	tokens map[caller]string
}

func withTokens(c *app.Config) { c.Auth = planhttp.AuthToken }

// newAccessTemplate builds the accessEnv database once, closed, so that
// every case can start from a copy of it (copying a file is much cheaper
// than making the fixture again).
func newAccessTemplate(t *testing.T) *accessTemplate {
	t.Helper()
	path := dbtest.Fresh(t)
	a := newAccessEnv(t, apitest.Open(t, path, withTokens))
	a.Close()
	return &accessTemplate{path: path, tokens: a.tokens}
}

type accessTemplate struct {
	path   string
	tokens map[caller]string
}

// open starts a server on a fresh copy of the template database.
func (tpl *accessTemplate) open(t *testing.T) *accessEnv {
	t.Helper()
	return &accessEnv{Env: apitest.Open(t, dbtest.Copy(t, tpl.path), withTokens), tokens: tpl.tokens}
}

// newAccessEnv makes the fixture on env, a server with --auth token.
func newAccessEnv(t *testing.T, env *apitest.Env) *accessEnv {
	t.Helper()
	a := &accessEnv{Env: env, tokens: map[caller]string{}}
	a.tokens[admin] = env.Token(auth.Admin, "root-admin", "")
	as := env.As(a.tokens[admin])
	createSession(t, as, map[string]any{"id": "root"})
	createSession(t, as, map[string]any{"id": "tgt", "parent_id": "root", "mode": "plan"})
	createSession(t, as, map[string]any{"id": "other"})
	writeSessionPlan(t, as, "tgt", map[string]any{"content": "# Plan\n1. Do it\n"}, http.StatusCreated)
	act(t, as, "tgt", "review", nil, http.StatusOK)
	putPlan(t, as, "shared", map[string]any{"content": "# Shared"}, http.StatusCreated)
	for _, c := range callers {
		putPlan(t, as, "mine-"+slug(c), map[string]any{"content": "# Mine", "steps": []map[string]any{
			{"id": "a", "description": "A", "owner": "dev"},
			{"id": "b", "description": "B", "owner": "dev", "deps": []string{"a"}},
		}}, http.StatusCreated)
	}

	a.tokens[agentIn] = env.Token(auth.Agent, "agent-in", "root")
	a.tokens[agentOut] = env.Token(auth.Agent, "agent-out", "other")
	a.tokens[agentPlan] = env.Token(auth.Agent, "agent-plan", "tgt")
	a.tokens[viewer] = env.Token(auth.Viewer, "viewer", "")
	a.tokens[revoked] = env.Token(auth.Admin, "revoked", "")
	env.Token(auth.Viewer, "victim", "")
	store := auth.NewStore(env.DB)
	if _, err := store.Revoke(context.Background(), "revoked"); err != nil {
		t.Fatal(err)
	}
	// A token made two hours ago that lived for one.
	env.DB.SetClock(func() time.Time { return time.Now().Add(-2 * time.Hour) })
	secret, _, err := store.Create(context.Background(), auth.CreateInput{Role: "admin", Name: "expired", TTL: "1h"})
	env.DB.SetClock(time.Now)
	if err != nil {
		t.Fatal(err)
	}
	a.tokens[expired] = secret
	return a
}

// slug is c as a plan name.
func slug(c caller) string { return strings.ReplaceAll(string(c), " ", "-") }

// as returns the view of the server that calls as c.
func (a *accessEnv) as(c caller) *apitest.Env { return a.As(a.tokens[c]) }

// ok stands for any 2xx status in the table. (Not -1: that is the status
// apitest reports for an exchange that broke the contract.)
const ok = 0

// accessCase is one request on one route and the status each caller must
// get; "{who}" in its path is the caller's slug. An admin gets a 2xx and the callers without a valid token get 401
// unless want says otherwise; viewer and both agents must be named. The
// agent in plan mode gets what the agent in scope gets (its session, tgt,
// is in that agent's scope too) unless want names it.
type accessCase struct {
	name   string
	path   string
	body   any
	header []string
	want   map[caller]int
}

// expect is the status c must get.
func (tc accessCase) expect(t *testing.T, c caller) int {
	if want, named := tc.want[c]; named {
		return want
	}
	switch c {
	case admin:
		return ok
	case noToken, revoked, expired:
		return http.StatusUnauthorized
	case agentPlan:
		return tc.expect(t, agentIn)
	}
	t.Fatalf("the case does not say what %s gets", c)
	return 0
}

// everyone is the same status for every caller.
func everyone(status int) map[caller]int {
	m := map[caller]int{}
	for _, c := range callers {
		m[c] = status
	}
	return m
}

func open() map[caller]int {
	m := map[caller]int{}
	for _, c := range callers {
		m[c] = ok
	}
	return m
}

// writers is what shared-plan writes get: agents share plans whatever
// their session; viewers only read.
var writers = map[caller]int{viewer: 403, agentIn: ok, agentOut: ok}

// executors is what claiming, starting, completing and reporting on steps
// get: the writers, but not an agent whose session is in plan mode.
var executors = map[caller]int{viewer: 403, agentIn: ok, agentOut: ok, agentPlan: 403}

// readers is what reads outside any session get: everyone with a token.
var readers = map[caller]int{viewer: ok, agentIn: ok, agentOut: ok}

var tools = map[string]any{"tools": []map[string]any{{"name": "shell"}}}

// accessTable is the access policy written out independently of
// auth.Routes: every route of the router, keyed as chi reports it, with at
// least one request. A route missing here fails TestEveryRouteForEveryCaller.
var accessTable = map[string][]accessCase{
	"GET /healthz":      {{path: "/healthz", want: open()}},
	"GET /readyz":       {{path: "/readyz", want: open()}},
	"GET /metrics":      {{path: "/metrics", want: open()}},
	"GET /openapi.yaml": {{path: "/openapi.yaml", want: open()}},
	// The console's page is public: its data comes from /v1 with the
	// user's token.
	"GET /ui":   {{path: "/ui", want: open()}},
	"GET /ui/*": {{path: "/ui/sessions/tgt/review?revision=1", want: open()}},

	"POST /v1/sessions": {
		{name: "child", path: "/v1/sessions", body: map[string]any{"parent_id": "tgt"},
			want: map[caller]int{viewer: 403, agentIn: ok, agentOut: 400}},
		{name: "root", path: "/v1/sessions", body: map[string]any{"title": "free"},
			want: map[caller]int{viewer: 403, agentIn: 403, agentOut: 403}},
		{name: "harness child", path: "/v1/sessions", body: map[string]any{"parent_id": "root", "harness": true},
			want: map[caller]int{viewer: 403, agentIn: 403, agentOut: 400, agentPlan: 400}},
		// Ids are global: an agent may not choose one, so it never learns
		// which are taken outside its tree (here: "other" is).
		{name: "named child", path: "/v1/sessions", body: map[string]any{"id": "other", "parent_id": "tgt"},
			want: map[caller]int{viewer: 403, agentIn: 403, agentOut: 400, agentPlan: 403, admin: 409}},
		{name: "named child, free id", path: "/v1/sessions", body: map[string]any{"id": "free-{who}", "parent_id": "tgt"},
			want: map[caller]int{viewer: 403, agentIn: 403, agentOut: 400, agentPlan: 403}},
	},
	"GET /v1/sessions": {{path: "/v1/sessions",
		want: map[caller]int{viewer: ok, agentIn: ok, agentOut: ok}}},
	"GET /v1/sessions/{id}": {{path: "/v1/sessions/tgt",
		want: map[caller]int{viewer: ok, agentIn: ok, agentOut: 404}}},
	"PATCH /v1/sessions/{id}": {{path: "/v1/sessions/tgt", body: map[string]any{"title": "x"},
		header: []string{"Content-Type", "application/merge-patch+json"},
		want:   map[caller]int{viewer: 403, agentIn: 403, agentOut: 404}}},
	"DELETE /v1/sessions/{id}": {{path: "/v1/sessions/tgt",
		want: map[caller]int{viewer: 403, agentIn: 403, agentOut: 404}}},
	"PATCH /v1/sessions/{id}/mode": {
		{name: "plan", path: "/v1/sessions/root/mode", body: map[string]any{"mode": "plan"},
			want: map[caller]int{viewer: 403, agentIn: ok, agentOut: 404, agentPlan: 404}},
		{name: "build", path: "/v1/sessions/tgt/mode", body: map[string]any{"mode": "build"},
			want: map[caller]int{viewer: 403, agentIn: 403, agentOut: 404}},
	},
	"PUT /v1/sessions/{id}/plan": {{path: "/v1/sessions/tgt/plan", body: map[string]any{"content": "# Plan v2"},
		want: map[caller]int{viewer: 403, agentIn: ok, agentOut: 404}}},
	"GET /v1/sessions/{id}/plan": {{path: "/v1/sessions/tgt/plan",
		want: map[caller]int{viewer: ok, agentIn: ok, agentOut: 404}}},
	"GET /v1/sessions/{id}/plan/revisions": {{path: "/v1/sessions/tgt/plan/revisions",
		want: map[caller]int{viewer: ok, agentIn: ok, agentOut: 404}}},
	"GET /v1/sessions/{id}/plan/revisions/{revision}": {{path: "/v1/sessions/tgt/plan/revisions/1",
		want: map[caller]int{viewer: ok, agentIn: ok, agentOut: 404}}},
	"GET /v1/sessions/{id}/plan/diff": {{path: "/v1/sessions/tgt/plan/diff",
		want: map[caller]int{viewer: ok, agentIn: ok, agentOut: 404}}},
	"GET /v1/sessions/{id}/reviews": {{path: "/v1/sessions/tgt/reviews",
		want: map[caller]int{viewer: ok, agentIn: ok, agentOut: 404}}},
	"POST /v1/sessions/{id}/plan/review": {{path: "/v1/sessions/tgt/plan/review",
		want: map[caller]int{viewer: 403, agentIn: ok, agentOut: 404}}},
	"POST /v1/sessions/{id}/plan/approve": {{path: "/v1/sessions/tgt/plan/approve", header: []string{"If-Match", `"1"`},
		want: map[caller]int{viewer: 403, agentIn: 403, agentOut: 404}}},
	"POST /v1/sessions/{id}/plan/reject": {{path: "/v1/sessions/tgt/plan/reject",
		want: map[caller]int{viewer: 403, agentIn: 403, agentOut: 404}}},
	// The admin passes access and finds no scope of the target's own: 404.
	"DELETE /v1/sessions/{id}/scope": {{path: "/v1/sessions/tgt/scope",
		want: map[caller]int{admin: 404, viewer: 403, agentIn: 403, agentOut: 404}}},
	"POST /v1/sessions/{id}/tools/filter": {{path: "/v1/sessions/tgt/tools/filter", body: tools,
		want: map[caller]int{viewer: 403, agentIn: ok, agentOut: 404}}},
	"POST /v1/sessions/{id}/tools/check": {{path: "/v1/sessions/tgt/tools/check", body: map[string]any{"name": "shell"},
		want: map[caller]int{viewer: 403, agentIn: ok, agentOut: 404}}},
	// A hook answers 200 in the host's format once the route lets the
	// caller in: for a session outside an agent's scope that answer is a
	// denial saying it was not found (TestHookAccess).
	"POST /v1/hooks/{host}": {{path: "/v1/hooks/claude-code?session=tgt",
		body: map[string]any{"hook_event_name": "PreToolUse", "session_id": "c", "tool_name": "Read", "tool_input": map[string]any{}},
		want: map[caller]int{viewer: 403, agentIn: ok, agentOut: ok}}},
	"PUT /v1/sessions/{id}/todos": {{path: "/v1/sessions/tgt/todos",
		body: map[string]any{"todos": []map[string]any{{"content": "x", "status": "pending"}}},
		want: map[caller]int{viewer: 403, agentIn: ok, agentOut: 404}}},
	"GET /v1/sessions/{id}/todos": {{path: "/v1/sessions/tgt/todos",
		want: map[caller]int{viewer: ok, agentIn: ok, agentOut: 404}}},

	"GET /v1/plans":           {{path: "/v1/plans", want: map[caller]int{viewer: ok, agentIn: ok, agentOut: ok}}},
	"GET /v1/plans/{name}":    {{path: "/v1/plans/shared", want: map[caller]int{viewer: ok, agentIn: ok, agentOut: ok}}},
	"PUT /v1/plans/{name}":    {{path: "/v1/plans/shared", body: map[string]any{"content": "# v2"}, want: writers}},
	"DELETE /v1/plans/{name}": {{path: "/v1/plans/mine-{who}", want: writers}},
	"GET /v1/plans/{name}/content": {{path: "/v1/plans/shared/content",
		want: map[caller]int{viewer: ok, agentIn: ok, agentOut: ok}}},
	"PUT /v1/plans/{name}/content": {{path: "/v1/plans/shared/content", body: "# v3",
		header: []string{"Content-Type", "text/markdown"}, want: writers}},
	"GET /v1/plans/{name}/status": {{path: "/v1/plans/shared/status",
		want: map[caller]int{viewer: ok, agentIn: ok, agentOut: ok}}},
	"PUT /v1/plans/{name}/status": {{path: "/v1/plans/shared/status", body: map[string]any{"status": "done"}, want: writers}},
	"GET /v1/plans/{name}/revisions": {{path: "/v1/plans/shared/revisions",
		want: map[caller]int{viewer: ok, agentIn: ok, agentOut: ok}}},
	"GET /v1/plans/{name}/revisions/{revision}": {{path: "/v1/plans/shared/revisions/1",
		want: map[caller]int{viewer: ok, agentIn: ok, agentOut: ok}}},
	"GET /v1/plans/{name}/diff": {{path: "/v1/plans/shared/diff",
		want: map[caller]int{viewer: ok, agentIn: ok, agentOut: ok}}},

	"GET /v1/plans/{name}/steps":           {{path: "/v1/plans/mine-{who}/steps", want: readers}},
	"GET /v1/plans/{name}/steps/{step_id}": {{path: "/v1/plans/mine-{who}/steps/a", want: readers}},
	"GET /v1/plans/{name}/reports":         {{path: "/v1/plans/mine-{who}/reports", want: readers}},
	// Plan mode covers execution through shared plans: an agent whose
	// session is in plan mode may change a step's owner, or set it pending
	// or blocked (planning), but not claim, start, complete or report on
	// one.
	"POST /v1/plans/{name}/steps/claim": {{path: "/v1/plans/mine-{who}/steps/claim",
		body: map[string]any{"worker": "w"}, want: executors}},
	"PATCH /v1/plans/{name}/steps/{step_id}": {
		{name: "owner", path: "/v1/plans/mine-{who}/steps/a", body: map[string]any{"owner": "ops"}, want: writers},
		{name: "blocked", path: "/v1/plans/mine-{who}/steps/a", body: map[string]any{"status": "blocked"}, want: writers},
		{name: "start", path: "/v1/plans/mine-{who}/steps/a", body: map[string]any{"status": "in_progress"}, want: executors},
		{name: "complete", path: "/v1/plans/mine-{who}/steps/a", body: map[string]any{"status": "complete"}, want: executors},
	},
	"POST /v1/plans/{name}/steps/{step_id}/claim": {{path: "/v1/plans/mine-{who}/steps/a/claim",
		body: map[string]any{"worker": "w"}, want: executors}},
	"POST /v1/plans/{name}/steps/{step_id}/reports": {{path: "/v1/plans/mine-{who}/steps/a/reports",
		body: map[string]any{"outcome": "success", "details": "done"}, want: executors}},

	"GET /v1/events": {
		{name: "whole feed", path: "/v1/events", want: map[caller]int{viewer: ok, agentIn: ok, agentOut: ok}},
		{name: "one session", path: "/v1/events?session_id=tgt", want: map[caller]int{viewer: ok, agentIn: ok, agentOut: 404}},
	},

	// Every role may connect to the MCP endpoint; each tool is then
	// decided with its route's action (internal/mcp's tests).
	"POST /mcp": {{path: "/mcp", body: map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
		header: []string{"Accept", "application/json, text/event-stream"},
		want:   map[caller]int{viewer: ok, agentIn: ok, agentOut: ok}}},

	// A gate needs a registered upstream; "none" is not one, so every
	// caller who gets through the guard gets 404.
	"POST /mcp/gate/{name}": {{path: "/mcp/gate/none", body: map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
		header: []string{"Accept", "application/json, text/event-stream"},
		want:   map[caller]int{viewer: 404, agentIn: 404, agentOut: 404, admin: 404}}},
	// planserver calls the registered servers: only an admin registers one.
	"PUT /v1/gates/{name}": {{path: "/v1/gates/{who}", body: map[string]any{"url": "http://127.0.0.1:1/mcp"},
		want: map[caller]int{viewer: 403, agentIn: 403, agentOut: 403}}},
	"GET /v1/gates":        {{path: "/v1/gates", want: map[caller]int{viewer: 403, agentIn: 403, agentOut: 403}}},
	"GET /v1/gates/{name}": {{path: "/v1/gates/none", want: map[caller]int{viewer: 403, agentIn: 403, agentOut: 403, admin: 404}}},
	"DELETE /v1/gates/{name}": {{path: "/v1/gates/none",
		want: map[caller]int{viewer: 403, agentIn: 403, agentOut: 403, admin: 404}}},

	// Webhooks send events anywhere and their answers hold secrets: admin
	// only. "none" is no subscription, so an admin gets 404.
	"POST /v1/webhooks": {{path: "/v1/webhooks", body: map[string]any{"url": "https://example.com/x", "events": []string{"plan.changed"}},
		want: map[caller]int{viewer: 403, agentIn: 403, agentOut: 403}}},
	"GET /v1/webhooks":      {{path: "/v1/webhooks", want: map[caller]int{viewer: 403, agentIn: 403, agentOut: 403}}},
	"GET /v1/webhooks/{id}": {{path: "/v1/webhooks/none", want: map[caller]int{viewer: 403, agentIn: 403, agentOut: 403, admin: 404}}},
	"PATCH /v1/webhooks/{id}": {{path: "/v1/webhooks/none", body: map[string]any{"state": "paused"},
		want: map[caller]int{viewer: 403, agentIn: 403, agentOut: 403, admin: 404}}},
	"DELETE /v1/webhooks/{id}": {{path: "/v1/webhooks/none", want: map[caller]int{viewer: 403, agentIn: 403, agentOut: 403, admin: 404}}},
	"POST /v1/webhooks/{id}/rotate-secret": {{path: "/v1/webhooks/none/rotate-secret",
		want: map[caller]int{viewer: 403, agentIn: 403, agentOut: 403, admin: 404}}},
	"GET /v1/webhooks/{id}/deliveries": {{path: "/v1/webhooks/none/deliveries",
		want: map[caller]int{viewer: 403, agentIn: 403, agentOut: 403, admin: 404}}},
	"POST /v1/webhooks/{id}/deliveries/{delivery}/redeliver": {{path: "/v1/webhooks/none/deliveries/1/redeliver",
		want: map[caller]int{viewer: 403, agentIn: 403, agentOut: 403, admin: 404}}},
	// The sign-in routes are public (a browser has no credential yet);
	// without sign-in configured they are 404 for everyone.
	"GET /auth/login":    {{path: "/auth/login", want: everyone(404)}},
	"GET /auth/callback": {{path: "/auth/callback?code=x&state=y", want: everyone(404)}},
	"POST /auth/logout":  {{path: "/auth/logout", want: everyone(404)}},
	// Every caller with a credential may ask who it is.
	"GET /v1/me": {{path: "/v1/me", want: map[caller]int{viewer: ok, agentIn: ok, agentOut: ok}}},

	"POST /v1/tokens": {{path: "/v1/tokens", body: map[string]any{"role": "viewer"},
		want: map[caller]int{viewer: 403, agentIn: 403, agentOut: 403}}},
	"GET /v1/tokens": {{path: "/v1/tokens",
		want: map[caller]int{viewer: 403, agentIn: 403, agentOut: 403}}},
	"GET /v1/tokens/{name}": {{path: "/v1/tokens/victim",
		want: map[caller]int{viewer: 403, agentIn: 403, agentOut: 403}}},
	"DELETE /v1/tokens/{name}": {{path: "/v1/tokens/victim",
		want: map[caller]int{viewer: 403, agentIn: 403, agentOut: 403}}},

	// Ending people's sign-ins ends their access: admin only. The id is
	// well formed but names no sign-in, so an admin gets 404.
	"GET /v1/signins": {{path: "/v1/signins", want: map[caller]int{viewer: 403, agentIn: 403, agentOut: 403}}},
	"DELETE /v1/signins": {{path: "/v1/signins?subject=nobody",
		want: map[caller]int{viewer: 403, agentIn: 403, agentOut: 403}}},
	"GET /v1/signins/{id}": {{path: "/v1/signins/si_AAAAAAAAAAAAAAAAAAAAAA",
		want: map[caller]int{viewer: 403, agentIn: 403, agentOut: 403, admin: 404}}},
	"DELETE /v1/signins/{id}": {{path: "/v1/signins/si_AAAAAAAAAAAAAAAAAAAAAA",
		want: map[caller]int{viewer: 403, agentIn: 403, agentOut: 403, admin: 404}}},
}

// routes returns every route of the router as "METHOD /pattern".
func routes(t *testing.T, api *planhttp.Server) []string {
	t.Helper()
	var out []string
	err := chi.Walk(api.Router(), func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		out = append(out, method+" "+route)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// TestEveryRouteForEveryCaller calls every route of the router as every
// kind of caller, with GET routes also as HEAD (which the GET handler
// serves), and checks the status. A route the table or auth.Routes does not
// know fails the test, and so does a row for a route that is gone.
func TestEveryRouteForEveryCaller(t *testing.T) {
	probe := apitest.New(t)
	walked := map[string]bool{}
	for _, route := range routes(t, probe.API) {
		walked[route] = true
		if _, ok := accessTable[route]; !ok {
			t.Errorf("route %s has no row in accessTable: say what every caller gets", route)
		}
		if _, ok := auth.Routes[route]; !ok && strings.Contains(route, " /v1/") {
			t.Errorf("route %s has no rule in auth.Routes: nobody can call it", route)
		}
	}
	for route := range accessTable {
		if !walked[route] {
			t.Errorf("accessTable has a row for %s, which the router does not serve", route)
		}
	}
	for route := range auth.Routes {
		if !walked[route] {
			t.Errorf("auth.Routes has a rule for %s, which the router does not serve", route)
		}
	}
	probe.Close()

	tpl := newAccessTemplate(t)
	for route, cases := range accessTable {
		method, _, _ := strings.Cut(route, " ")
		for _, tc := range cases {
			t.Run(route+" "+tc.name, func(t *testing.T) {
				a := tpl.open(t)
				for _, c := range callers {
					path := strings.ReplaceAll(tc.path, "{who}", slug(c))
					body := tc.body
					if m, isMap := body.(map[string]any); isMap {
						m2 := map[string]any{}
						for k, v := range m {
							if s, isString := v.(string); isString {
								v = strings.ReplaceAll(s, "{who}", slug(c))
							}
							m2[k] = v
						}
						body = m2
					}
					resp := a.as(c).Call(method, path, body, tc.header...)
					checkStatus(t, c, method, path, resp.Status, tc.expect(t, c), resp.Body)
					if resp.Status == http.StatusUnauthorized && resp.Code() != "unauthenticated" {
						t.Errorf("%s: 401 with code %q", c, resp.Code())
					}
					if resp.Status == http.StatusForbidden && resp.Code() != "permission_denied" {
						t.Errorf("%s: 403 with code %q", c, resp.Code())
					}
				}
				if method != http.MethodGet {
					return
				}
				// HEAD is not in the contract (the GET handler serves it),
				// so it goes around env.Call.
				for _, c := range callers {
					path := strings.ReplaceAll(tc.path, "{who}", slug(c))
					req, _ := http.NewRequest(http.MethodHead, a.Server.URL+path, nil)
					if tok := a.tokens[c]; tok != "" {
						req.Header.Set("Authorization", "Bearer "+tok)
					}
					resp, err := a.Client.Do(req)
					if err != nil {
						t.Fatal(err)
					}
					resp.Body.Close()
					checkStatus(t, c, http.MethodHead, path, resp.StatusCode, tc.expect(t, c), nil)
				}
			})
		}
	}
}

func checkStatus(t *testing.T, c caller, method, path string, got, want int, body []byte) {
	t.Helper()
	if want == ok && got >= 200 && got < 300 || got == want {
		return
	}
	w := http.StatusText(want)
	if want == ok {
		w = "2xx"
	}
	t.Errorf("%s: %s %s = %d, want %s: %s", c, method, path, got, w, body)
}
