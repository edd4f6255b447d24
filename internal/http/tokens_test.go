package http_test

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/apitest"
	"github.com/planserver/planserver/internal/app"
	"github.com/planserver/planserver/internal/auth"
	"github.com/planserver/planserver/internal/events"
	planhttp "github.com/planserver/planserver/internal/http"
)

func tokenEnv(t *testing.T) (*apitest.Env, *apitest.Env) {
	t.Helper()
	env := apitest.New(t, func(c *app.Config) { c.Auth = planhttp.AuthToken })
	return env, env.As(env.Token(auth.Admin, "console", ""))
}

func TestTokenAPI(t *testing.T) {
	env, as := tokenEnv(t)
	createSession(t, as, map[string]any{"id": "work"})

	resp := as.Call("POST", "/v1/tokens", map[string]any{"role": "agent", "session_id": "work", "name": "coder", "ttl": "24h"})
	if resp.Status != http.StatusCreated || resp.Header.Get("Location") != "/v1/tokens/coder" ||
		resp.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("create: %d %v %s", resp.Status, resp.Header, resp.Body)
	}
	var created api.CreatedToken
	resp.JSON(t, &created)
	if !auth.LooksLikeToken(created.Secret) || created.Role != "agent" || created.SessionID == nil ||
		*created.SessionID != "work" || created.ExpiresAt == nil || created.RevokedAt != nil {
		t.Fatalf("created: %s", resp.Body)
	}
	// The new secret works at once, as the agent it was made for.
	if r := env.As(created.Secret).Call("GET", "/v1/sessions/work", nil); r.Status != http.StatusOK {
		t.Fatalf("new token: %d %s", r.Status, r.Body)
	}
	resp = as.Call("POST", "/v1/tokens", map[string]any{"role": "viewer"})
	var generated api.CreatedToken
	resp.JSON(t, &generated)
	if resp.Status != http.StatusCreated || !strings.HasPrefix(generated.Name, "viewer-") || generated.ExpiresAt != nil {
		t.Fatalf("generated name: %d %s", resp.Status, resp.Body)
	}

	// Neither the list nor one token shows a secret or a hash.
	resp = as.Call("GET", "/v1/tokens", nil)
	var list api.TokenList
	resp.JSON(t, &list)
	if resp.Status != http.StatusOK || len(list.Tokens) != 3 || list.Tokens[0].Name != "console" {
		t.Fatalf("list: %d %s", resp.Status, resp.Body)
	}
	for _, secret := range []string{created.Secret, generated.Secret} {
		for _, leak := range []string{secret, secret[3:], auth.Hash(secret)} {
			if bytes.Contains(resp.Body, []byte(leak)) {
				t.Errorf("the token list shows a secret or a hash: %s", resp.Body)
			}
		}
	}
	if list.Tokens[1].LastUsedAt == nil {
		t.Errorf("coder's last use is not recorded: %s", resp.Body)
	}
	resp = as.Call("GET", "/v1/tokens/coder", nil)
	var got api.CreatedToken
	resp.JSON(t, &got)
	if resp.Status != http.StatusOK || got.Name != "coder" || got.Secret != "" || bytes.Contains(resp.Body, []byte(created.Secret)) {
		t.Fatalf("get: %d %s", resp.Status, resp.Body)
	}

	// Revoking: 204, then the token is 401 and listed as revoked; again is
	// still a success.
	for range 2 {
		if r := as.Call("DELETE", "/v1/tokens/coder", nil); r.Status != http.StatusNoContent {
			t.Fatalf("revoke: %d %s", r.Status, r.Body)
		}
	}
	if r := env.As(created.Secret).Call("GET", "/v1/sessions/work", nil); r.Status != http.StatusUnauthorized ||
		!strings.HasPrefix(r.Header.Get("WWW-Authenticate"), "Bearer") {
		t.Fatalf("revoked token: %d %v %s", r.Status, r.Header, r.Body)
	}
	as.Call("GET", "/v1/tokens/coder", nil).JSON(t, &got)
	if got.RevokedAt == nil {
		t.Error("revoked token not shown revoked")
	}
}

func TestTokenAPIBadInput(t *testing.T) {
	env, as := tokenEnv(t)
	createSession(t, as, map[string]any{"id": "work"})
	before := countRows(t, env, "tokens", "")
	for _, tc := range []struct {
		name   string
		body   any
		header []string
		status int
		code   string
	}{
		{"no role", map[string]any{}, nil, 400, "invalid_argument"},
		{"unknown role", map[string]any{"role": "root"}, nil, 400, "invalid_argument"},
		{"agent without a session", map[string]any{"role": "agent"}, nil, 400, "invalid_argument"},
		{"agent of a missing session", map[string]any{"role": "agent", "session_id": "ghost"}, nil, 400, "invalid_argument"},
		{"viewer with a session", map[string]any{"role": "viewer", "session_id": "work"}, nil, 400, "invalid_argument"},
		{"bad name", map[string]any{"role": "viewer", "name": "Bad Name"}, nil, 400, "invalid_argument"},
		{"bad ttl", map[string]any{"role": "viewer", "ttl": "forever"}, nil, 400, "invalid_argument"},
		{"negative ttl", map[string]any{"role": "viewer", "ttl": "-1h"}, nil, 400, "invalid_argument"},
		{"taken name", map[string]any{"role": "viewer", "name": "console"}, nil, 409, "already_exists"},
		{"unknown field", `{"role":"viewer","scope":"all"}`, nil, 400, "invalid_argument"},
		{"malformed JSON", `{"role":`, nil, 400, "invalid_argument"},
		{"wrong media type", "role=viewer", []string{"Content-Type", "text/plain"}, 415, "unsupported_media_type"},
		{"too large", `{"role":"viewer","name":"` + strings.Repeat("a", 2<<20) + `"}`, nil, 413, "payload_too_large"},
	} {
		resp := as.Bad("POST", "/v1/tokens", tc.body, tc.header...)
		if resp.Status != tc.status || resp.Code() != tc.code {
			t.Errorf("%s: %d %s, want %d %s", tc.name, resp.Status, resp.Body, tc.status, tc.code)
		}
	}
	if n := countRows(t, env, "tokens", ""); n != before {
		t.Errorf("bad requests made %d tokens", n-before)
	}
	for _, tc := range []struct {
		method, path string
		status       int
	}{
		{"GET", "/v1/tokens/ghost", 404},
		{"DELETE", "/v1/tokens/ghost", 404},
		{"GET", "/v1/tokens/Not%20A%20Name", 400},
		{"DELETE", "/v1/tokens/Not%20A%20Name", 400},
	} {
		if r := as.Call(tc.method, tc.path, nil); r.Status != tc.status {
			t.Errorf("%s %s: %d %s, want %d", tc.method, tc.path, r.Status, r.Body, tc.status)
		}
	}
}

// TestAuthenticationFailures checks that every bad credential is the same
// 401 unauthenticated with WWW-Authenticate, validated by the contract.
func TestAuthenticationFailures(t *testing.T) {
	env, as := tokenEnv(t)
	createSession(t, as, map[string]any{"id": "work"})
	adminTok := as.Token(auth.Admin, "second", "")
	for name, header := range map[string][]string{
		"no header":            nil,
		"empty bearer":         {"Authorization", "Bearer "},
		"basic auth":           {"Authorization", "Basic dXNlcjpwYXNz"},
		"scheme only":          {"Authorization", "Bearer"},
		"not a token":          {"Authorization", "Bearer hunter2"},
		"unknown token":        {"Authorization", "Bearer " + auth.NewToken()},
		"token without prefix": {"Authorization", "Bearer " + adminTok[3:]},
		"hash as token":        {"Authorization", "Bearer " + auth.Hash(adminTok)},
	} {
		resp := env.Call("GET", "/v1/sessions/work", nil, header...)
		if resp.Status != http.StatusUnauthorized || resp.Code() != "unauthenticated" ||
			resp.Header.Get("WWW-Authenticate") != `Bearer realm="planserver"` {
			t.Errorf("%s: %d %v %s", name, resp.Status, resp.Header, resp.Body)
		}
	}
	// The scheme is case-insensitive (RFC 9110).
	if r := env.Call("GET", "/v1/sessions/work", nil, "Authorization", "bearer "+adminTok); r.Status != http.StatusOK {
		t.Errorf("lower-case scheme: %d %s", r.Status, r.Body)
	}
	// A token in the query string is for the event stream only.
	resp := env.Bad("GET", "/v1/sessions/work?access_token="+adminTok, nil)
	if resp.Status != http.StatusUnauthorized || !strings.Contains(resp.Code(), "unauthenticated") {
		t.Errorf("access_token off the event stream: %d %s", resp.Status, resp.Body)
	}
	// The operations endpoints stay open.
	for _, path := range []string{"/healthz", "/readyz", "/metrics", "/openapi.yaml"} {
		if r := env.Call("GET", path, nil); r.Status != http.StatusOK {
			t.Errorf("%s without a token: %d", path, r.Status)
		}
	}
}

// TestAgentSeesOnlyItsSubtree lists sessions as an agent: its session and
// descendants only, with every filter and across pages.
func TestAgentSeesOnlyItsSubtree(t *testing.T) {
	env, as := tokenEnv(t)
	for _, s := range []map[string]any{
		{"id": "a"}, {"id": "a.1", "parent_id": "a"}, {"id": "a.1.x", "parent_id": "a.1", "mode": "plan"},
		{"id": "a.2", "parent_id": "a"}, {"id": "b"}, {"id": "b.1", "parent_id": "b"},
	} {
		createSession(t, as, s)
	}
	agent := env.As(env.Token(auth.Agent, "agent-a1", "a.1"))
	ids := func(query string) string {
		t.Helper()
		var all []string
		token := ""
		for {
			q := query + "&limit=1"
			if token != "" {
				q += "&page_token=" + token
			}
			resp := agent.Call("GET", "/v1/sessions?"+q, nil)
			if resp.Status != http.StatusOK {
				t.Fatalf("list %s: %d %s", q, resp.Status, resp.Body)
			}
			var page api.SessionList
			resp.JSON(t, &page)
			for _, s := range page.Sessions {
				all = append(all, s.ID)
			}
			if token = page.NextPageToken; token == "" {
				return strings.Join(all, ",")
			}
		}
	}
	for query, want := range map[string]string{
		"":                 "a.1,a.1.x",
		"parent_id=a.1":    "a.1.x",
		"mode=plan":        "a.1.x",
		"parent_id=a":      "a.1", // its own session, whose parent it already knows
		"parent_id=b":      "",
		"parent_id=ghost":  "",
		"parent_id=a.1.x":  "",
		"mode=build":       "a.1",
		"parent_id=b&mode": "",
	} {
		if got := ids(query); got != want {
			t.Errorf("agent lists %q: %s, want %s", query, got, want)
		}
	}
	// An admin still sees everything.
	resp := as.Call("GET", "/v1/sessions", nil)
	if n := strings.Count(string(resp.Body), `"revision"`); n != 6 {
		t.Errorf("admin sees %d sessions", n)
	}
}

// TestEveryEventNamesTheToken checks the actor of changes, the author of a
// plan and the decider of a review.
func TestEveryEventNamesTheToken(t *testing.T) {
	env, as := tokenEnv(t)
	createSession(t, as, map[string]any{"id": "s", "mode": "plan"})
	agent := env.As(env.Token(auth.Agent, "claude", "s"))
	plan := writeSessionPlan(t, agent, "s", map[string]any{"content": "# Plan"}, http.StatusCreated)
	if plan.Author != "claude" {
		t.Errorf("plan author %q", plan.Author)
	}
	act(t, agent, "s", "review", nil, http.StatusOK)
	_, approved := act(t, as, "s", "approve", nil, http.StatusOK, "If-Match", "1")
	if approved.Review.DecidedBy == nil || *approved.Review.DecidedBy != "console" {
		t.Errorf("decided by %v", approved.Review.DecidedBy)
	}
	for typ, actor := range map[string]string{
		"session.created": "console", "session_plan.updated": "claude", "session.review_requested": "claude",
		"session.review_approved": "console", "session.mode_changed": "console",
	} {
		if n := countRows(t, env, "events", "type = ? AND actor = ?", typ, actor); n != 1 {
			t.Errorf("%d %s events by %s", n, typ, actor)
		}
	}
	if n := countRows(t, env, "events", "actor = 'anonymous'"); n != 0 {
		t.Errorf("%d anonymous events under --auth token", n)
	}

	// Without tokens every change is anonymous's.
	open := apitest.New(t)
	createSession(t, open, map[string]any{"id": "s"})
	if n := countRows(t, open, "events", "actor = 'anonymous'"); n != 1 {
		t.Errorf("%d anonymous events under --auth none", n)
	}
}

// TestDeletingASessionRevokesItsAgentTokens checks the trigger: a token
// must not outlive its scope, or a session created later under the same id
// would fall into it.
func TestDeletingASessionRevokesItsAgentTokens(t *testing.T) {
	env, as := tokenEnv(t)
	createSession(t, as, map[string]any{"id": "p"})
	createSession(t, as, map[string]any{"id": "p.c", "parent_id": "p"})
	child := env.Token(auth.Agent, "child", "p.c")
	parent := env.Token(auth.Agent, "parent", "p")
	if r := as.Call("DELETE", "/v1/sessions/p", nil); r.Status != http.StatusNoContent {
		t.Fatalf("delete: %d %s", r.Status, r.Body)
	}
	createSession(t, as, map[string]any{"id": "p"})
	createSession(t, as, map[string]any{"id": "p.c", "parent_id": "p"})
	for _, tok := range []string{child, parent} {
		if r := env.As(tok).Call("GET", "/v1/sessions/p.c", nil); r.Status != http.StatusUnauthorized {
			t.Errorf("token of a deleted session: %d %s", r.Status, r.Body)
		}
	}
	if n := countRows(t, env, "tokens", "revoked_at IS NOT NULL"); n != 2 {
		t.Errorf("%d revoked tokens, want 2", n)
	}
}

// TestAgentEventFeed checks an agent's view of the log: its subtree and
// the events of no session, in pages and on the stream, with the token in
// the header or, on this route only, in ?access_token=.
func TestAgentEventFeed(t *testing.T) {
	env, as := tokenEnv(t)
	for _, s := range []map[string]any{
		{"id": "a"}, {"id": "a.1", "parent_id": "a"}, {"id": "a.1.x", "parent_id": "a.1"}, {"id": "b"},
	} {
		createSession(t, as, s)
	}
	putPlan(t, as, "shared", map[string]any{"content": "# Shared"}, http.StatusCreated)
	secret := env.Token(auth.Agent, "agent-a1", "a.1")
	agent := env.As(secret)
	as.Call("PATCH", "/v1/sessions/b", map[string]any{"title": "elsewhere"}, "Content-Type", "application/merge-patch+json")
	as.Call("PATCH", "/v1/sessions/a.1.x", map[string]any{"title": "mine"}, "Content-Type", "application/merge-patch+json")

	seen := func(es []events.Event) string {
		var out []string
		for _, e := range es {
			out = append(out, e.Type+":"+e.SessionID+e.Plan)
		}
		return strings.Join(out, " ")
	}
	const want = "session.created:a.1 session.created:a.1.x plan.created:shared session.updated:a.1.x"
	if got := seen(getEvents(t, agent, "").Events); got != want {
		t.Errorf("agent's feed: %s\nwant %s", got, want)
	}
	if got := seen(getEvents(t, agent, "?session_id=a.1.x").Events); got != "session.created:a.1.x session.updated:a.1.x" {
		t.Errorf("agent's feed of a.1.x: %s", got)
	}
	for _, outside := range []string{"a", "b", "ghost"} {
		if r := agent.Call("GET", "/v1/events?session_id="+outside, nil); r.Status != http.StatusNotFound || r.Code() != "not_found" {
			t.Errorf("agent's feed of %s: %d %s", outside, r.Status, r.Body)
		}
	}
	if n := len(getEvents(t, as, "").Events); n != 7 {
		t.Errorf("admin's feed has %d events, want 7", n)
	}

	// ?access_token= instead of the header, as an EventSource must.
	if got := seen(getEvents(t, env, "?access_token="+secret).Events); got != want {
		t.Errorf("feed with access_token: %s", got)
	}
	if r := env.Call("GET", "/v1/events?access_token="+auth.NewToken(), nil); r.Status != http.StatusUnauthorized {
		t.Errorf("unknown access_token: %d %s", r.Status, r.Body)
	}
	s := openStream(t, env, "?access_token="+secret)
	var streamed []events.Event
	for range 4 {
		streamed = append(streamed, mustEvent(t, s))
	}
	if got := seen(streamed); got != want {
		t.Errorf("stream with access_token: %s", got)
	}
	// A live event outside the scope is skipped, one inside arrives.
	as.Call("PATCH", "/v1/sessions/b", map[string]any{"title": "again"}, "Content-Type", "application/merge-patch+json")
	as.Call("PATCH", "/v1/sessions/a.1", map[string]any{"title": "live"}, "Content-Type", "application/merge-patch+json")
	if e := mustEvent(t, s); e.Type != "session.updated" || e.SessionID != "a.1" {
		t.Errorf("live event %s %s", e.Type, e.SessionID)
	}
}
