package http_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/apitest"
	"github.com/planserver/planserver/internal/app"
	"github.com/planserver/planserver/internal/auth"
	"github.com/planserver/planserver/internal/dbtest"
	"github.com/planserver/planserver/internal/http/signin"
)

// withRules sets --oidc-roles.
func withRules(t *testing.T, rules string) func(*signin.Settings) {
	return func(s *signin.Settings) {
		var err error
		if s.Roles, err = auth.ParseRoleRules(rules); err != nil {
			t.Fatal(err)
		}
	}
}

// cookieOf signs user in with a fresh browser and returns the cookie
// (name=value) and the CSRF token of the sign-in, and its id.
func (e *signInEnv) cookieOf(t *testing.T, user person) (cookie, csrf, id string) {
	t.Helper()
	b := newBrowser(t)
	if p := b.login(e, user, ""); p.status != http.StatusSeeOther {
		t.Fatalf("login %s: %d %s", user.sub, p.status, p.body)
	}
	_, m := b.me(e)
	if m.SignInID == nil {
		t.Fatalf("GET /v1/me of %s names no sign-in: %+v", user.sub, m)
	}
	return signin.Cookie + "=" + b.cookie(e, signin.Cookie).Value, *m.CSRFToken, *m.SignInID
}

var lead = person{sub: "u-lead", email: "lead@example.com", name: "Lea Lead", groups: []string{"platform"}}

// TestSignInFollowsTheRules: the reproduction. Signed in under
// admin=email:lead@example.com, then the server restarts with rules that
// no longer name that person: the old cookie no longer reads /v1/me as
// admin nor makes admin tokens. Rules that now make them a viewer make
// the same cookie a viewer's at once; rules that name nobody they match
// refuse it (401, with the sign-in hint).
func TestSignInFollowsTheRules(t *testing.T) {
	path := dbtest.Fresh(t)
	idp := newIDP(t)
	e := newSignInEnv(t, path, idp, withRules(t, "admin=email:lead@example.com,reviewer=group:reviewers"))
	cookie, csrf, _ := e.cookieOf(t, lead)
	as := e.AsSignedIn(cookie, csrf)
	var me api.Me
	as.Call(http.MethodGet, "/v1/me", nil).JSON(t, &me)
	if me.Role != "admin" {
		t.Fatalf("under admin=email:lead@example.com: %+v", me)
	}
	if r := as.Call(http.MethodPost, "/v1/tokens", map[string]any{"role": "admin", "name": "before"}); r.Status != http.StatusCreated {
		t.Fatalf("an admin makes a token: %d %s", r.Status, r.Body)
	}
	e.Close()

	// Restarted: lead's domain is only a viewer's now.
	e = newSignInEnv(t, path, idp, withRules(t, "admin=email:boss@example.com,viewer=domain:example.com"))
	as = e.AsSignedIn(cookie, csrf)
	me = api.Me{}
	as.Call(http.MethodGet, "/v1/me", nil).JSON(t, &me)
	if me.Role != "viewer" {
		t.Errorf("after a restart that makes lead a viewer: GET /v1/me %+v", me)
	}
	if r := as.Call(http.MethodPost, "/v1/tokens", map[string]any{"role": "admin", "name": "after"}); r.Status != http.StatusForbidden {
		t.Errorf("a viewer makes an admin token: %d %s", r.Status, r.Body)
	}
	e.Close()

	// Restarted again: no rule matches lead.
	e = newSignInEnv(t, path, idp, withRules(t, "admin=email:boss@example.com,reviewer=group:reviewers"))
	as = e.AsSignedIn(cookie, csrf)
	r := as.Call(http.MethodGet, "/v1/me", nil)
	if r.Status != http.StatusUnauthorized || !strings.Contains(string(r.Body), "no rule of --oidc-roles lets lead@example.com in") ||
		r.Map(t)["sign_in"] != "/auth/login" {
		t.Errorf("after a restart whose rules name lead no more: %d %s", r.Status, r.Body)
	}
	if r := as.Call(http.MethodPost, "/v1/tokens", map[string]any{"role": "admin", "name": "later"}); r.Status != http.StatusUnauthorized {
		t.Errorf("a sign-in no rule lets in makes a token: %d %s", r.Status, r.Body)
	}
	// The admin's list shows it with no role.
	var list api.SignInList
	e.As(e.Token(auth.Admin, "ops", "")).Call(http.MethodGet, "/v1/signins", nil).JSON(t, &list)
	if len(list.SignIns) != 1 || list.SignIns[0].Role != nil || list.SignIns[0].RoleAtSignIn != "admin" {
		t.Errorf("the list after the rules changed: %+v", list.SignIns)
	}
}

// TestSignInSubtreeFollowsTheRules: a reviewer's subtree is the one the
// rules in force name, by the identity that session has now.
func TestSignInSubtreeFollowsTheRules(t *testing.T) {
	path := dbtest.Fresh(t)
	idp := newIDP(t)
	e := newSignInEnv(t, path, idp, withRules(t, "reviewer[a]=group:platform"))
	admin := e.As(e.Token(auth.Admin, "ops", ""))
	createSession(t, admin, map[string]any{"id": "a"})
	createSession(t, admin, map[string]any{"id": "b"})
	cookie, csrf, _ := e.cookieOf(t, lead)
	e.Close()
	e = newSignInEnv(t, path, idp, withRules(t, "reviewer[b]=group:platform"))
	var me api.Me
	e.AsSignedIn(cookie, csrf).Call(http.MethodGet, "/v1/me", nil).JSON(t, &me)
	if me.Role != "reviewer" || me.SessionID == nil || *me.SessionID != "b" {
		t.Errorf("after the subtree moved to b: %+v", me)
	}
	e.Close()
	e = newSignInEnv(t, path, idp, withRules(t, "reviewer[gone]=group:platform"))
	if r := e.AsSignedIn(cookie, csrf).Call(http.MethodGet, "/v1/me", nil); r.Status != http.StatusUnauthorized ||
		!strings.Contains(string(r.Body), "session gone, does not exist") {
		t.Errorf("a subtree that does not exist: %d %s", r.Status, r.Body)
	}
}

// TestSignInAdminAPI: an admin lists sign-ins (one person's, by pages),
// reads one, ends one and all of one person's; each ended cookie is
// refused at once and the others are untouched. Bad input gets the usual
// answers: a malformed id 400, an unknown or ended one 404, no subject on
// the bulk end 400, a foreign page token 400, a role that may not 403.
func TestSignInAdminAPI(t *testing.T) {
	e := newSignInEnv(t, dbtest.Fresh(t), newIDP(t))
	admin := e.As(e.Token(auth.Admin, "ops", ""))
	janeA, janeCSRF, janeID := e.cookieOf(t, jane)
	janeB, _, _ := e.cookieOf(t, jane)
	boss := person{sub: "u-boss", email: "boss@example.com", name: "Boss"}
	bossCookie, bossCSRF, bossID := e.cookieOf(t, boss)
	viewerCookie, viewerCSRF, _ := e.cookieOf(t, person{sub: "u-v", email: "vic@example.com"})

	var list api.SignInList
	if r := admin.Call(http.MethodGet, "/v1/signins", nil); r.Status != http.StatusOK || r.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("list: %d %v", r.Status, r.Header)
	} else {
		r.JSON(t, &list)
	}
	if len(list.SignIns) != 4 || list.NextPageToken != "" {
		t.Fatalf("list: %+v", list)
	}
	var got api.SignIn
	for _, g := range list.SignIns {
		if g.ID == janeID {
			got = g
		}
	}
	if got.ID != janeID || got.Subject != "u-jane" || got.Email != "jane@example.com" || got.Name != "Jane Doe" ||
		got.Role == nil || *got.Role != "reviewer" || got.RoleAtSignIn != "reviewer" || len(got.Groups) != 1 ||
		got.ExpiresAt == "" || got.IdleExpiresAt == "" || got.IdleExpiresAt > got.ExpiresAt {
		t.Errorf("jane's first sign-in: %+v", got)
	}
	if strings.Contains(string(admin.Call(http.MethodGet, "/v1/signins", nil).Body), strings.TrimPrefix(janeA, signin.Cookie+"=")) {
		t.Error("the list shows a cookie")
	}
	// One person's, a page at a time.
	var page1, page2 api.SignInList
	admin.Call(http.MethodGet, "/v1/signins?subject=u-jane&limit=1", nil).JSON(t, &page1)
	admin.Call(http.MethodGet, "/v1/signins?subject=u-jane&limit=1&page_token="+url.QueryEscape(page1.NextPageToken), nil).JSON(t, &page2)
	if len(page1.SignIns) != 1 || len(page2.SignIns) != 1 || page2.NextPageToken != "" || page1.SignIns[0].ID == page2.SignIns[0].ID {
		t.Errorf("jane's sign-ins by pages: %+v then %+v", page1, page2)
	}
	var one api.SignIn
	admin.Call(http.MethodGet, "/v1/signins/"+bossID, nil).JSON(t, &one)
	if one.ID != bossID || one.Role == nil || *one.Role != "admin" {
		t.Errorf("GET boss's sign-in: %+v", one)
	}

	for _, tc := range []struct {
		who          *apitest.Env
		method, path string
		want         int
		code         string
		// bad marks a request the contract itself refuses.
		bad bool
	}{
		{admin, http.MethodGet, "/v1/signins/not-an-id", 400, "invalid_argument", false},
		{admin, http.MethodDelete, "/v1/signins/si_tooShort", 400, "invalid_argument", false},
		{admin, http.MethodGet, "/v1/signins/si_AAAAAAAAAAAAAAAAAAAAAA", 404, "not_found", false},
		{admin, http.MethodDelete, "/v1/signins/si_AAAAAAAAAAAAAAAAAAAAAA", 404, "not_found", false},
		{admin, http.MethodDelete, "/v1/signins", 400, "invalid_argument", true},
		{admin, http.MethodGet, "/v1/signins?subject=", 400, "invalid_argument", false},
		{admin, http.MethodGet, "/v1/signins?subject=" + strings.Repeat("x", 256), 400, "invalid_argument", false},
		{admin, http.MethodGet, "/v1/signins?limit=1001", 400, "invalid_argument", false},
		{admin, http.MethodGet, "/v1/signins?page_token=" + url.QueryEscape(page1.NextPageToken), 400, "invalid_argument", false},
		{e.AsSignedIn(janeA, janeCSRF), http.MethodGet, "/v1/signins", 403, "permission_denied", false},
		{e.AsSignedIn(janeA, janeCSRF), http.MethodDelete, "/v1/signins/" + bossID, 403, "permission_denied", false},
		{e.AsSignedIn(viewerCookie, viewerCSRF), http.MethodDelete, "/v1/signins?subject=u-boss", 403, "permission_denied", false},
		{e.As(e.Token(auth.Viewer, "watcher", "")), http.MethodGet, "/v1/signins/" + bossID, 403, "permission_denied", false},
	} {
		call := tc.who.Call
		if tc.bad {
			call = tc.who.Bad
		}
		r := call(tc.method, tc.path, nil)
		if r.Status != tc.want || r.Code() != tc.code {
			t.Errorf("%s %s: %d %s, want %d %s", tc.method, tc.path, r.Status, r.Body, tc.want, tc.code)
		}
	}

	// A signed-in admin ends boss's... their own sign-in, which signs
	// them out; then ends all of jane's.
	bossAs := e.AsSignedIn(bossCookie, bossCSRF)
	if r := bossAs.Call(http.MethodDelete, "/v1/signins/"+bossID, nil); r.Status != http.StatusNoContent {
		t.Fatalf("end a sign-in: %d %s", r.Status, r.Body)
	}
	if r := bossAs.Call(http.MethodGet, "/v1/me", nil); r.Status != http.StatusUnauthorized || !strings.Contains(string(r.Body), "ended") {
		t.Errorf("the ended cookie: %d %s", r.Status, r.Body)
	}
	if r := admin.Call(http.MethodDelete, "/v1/signins/"+bossID, nil); r.Status != http.StatusNotFound {
		t.Errorf("end it again: %d %s", r.Status, r.Body)
	}
	var ended api.SignInsEnded
	if r := admin.Call(http.MethodDelete, "/v1/signins?subject=u-jane", nil); r.Status != http.StatusOK {
		t.Fatalf("end jane's: %d %s", r.Status, r.Body)
	} else {
		r.JSON(t, &ended)
	}
	if len(ended.SignIns) != 2 || ended.SignIns[0].Subject != "u-jane" || ended.SignIns[1].Subject != "u-jane" {
		t.Errorf("jane's ended sign-ins: %+v", ended)
	}
	for _, c := range []string{janeA, janeB} {
		if r := e.As("").Call(http.MethodGet, "/v1/me", nil, "Cookie", c); r.Status != http.StatusUnauthorized {
			t.Errorf("jane's cookie after the bulk end: %d", r.Status)
		}
	}
	if r := e.AsSignedIn(viewerCookie, viewerCSRF).Call(http.MethodGet, "/v1/me", nil); r.Status != http.StatusOK {
		t.Errorf("another person's sign-in after jane's ended: %d %s", r.Status, r.Body)
	}
	admin.Call(http.MethodGet, "/v1/signins", nil).JSON(t, &list)
	if len(list.SignIns) != 1 || list.SignIns[0].Subject != "u-v" {
		t.Errorf("the list after the ends: %+v", list.SignIns)
	}
	if r := admin.Call(http.MethodDelete, "/v1/signins?subject=u-jane", nil); r.Status != http.StatusOK || !strings.Contains(string(r.Body), `"signins":[]`) {
		t.Errorf("end jane's again: %d %s", r.Status, r.Body)
	}
}

// TestEndingASignInEndsItsStreamsAndMCP: a person's open event stream and
// their MCP calls stop with the admin's end of their sign-in: the stream
// gets the 401 error event right after the end's commit (long before a
// heartbeat), and the next MCP call is 401.
func TestEndingASignInEndsItsStreamsAndMCP(t *testing.T) {
	e := newSignInServer(t, dbtest.Fresh(t), newIDP(t), func(c *app.Config) { c.SSEHeartbeat = time.Hour })
	admin := e.As(e.Token(auth.Admin, "ops", ""))
	cookie, csrf, id := e.cookieOf(t, jane)
	s := openStream(t, e.Env, "?after=0", "Cookie", cookie)
	mcp := func() *apitest.Response {
		return e.AsSignedIn(cookie, csrf).Call(http.MethodPost, "/mcp", map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
			"Accept", "application/json, text/event-stream")
	}
	if r := mcp(); r.Status != http.StatusOK {
		t.Fatalf("MCP before the end: %d %s", r.Status, r.Body)
	}
	createSession(t, admin, map[string]any{"id": "seen"})
	if ev := mustEvent(t, s); ev.Type != "session.created" {
		t.Fatalf("the stream before the end: %+v", ev)
	}
	ended := time.Now()
	if r := admin.Call(http.MethodDelete, "/v1/signins/"+id, nil); r.Status != http.StatusNoContent {
		t.Fatalf("end: %d %s", r.Status, r.Body)
	}
	b, err := s.block()
	for err == nil && b.Event != "error" {
		b, err = s.block()
	}
	if err != nil || !strings.Contains(b.Data, `"code":"unauthenticated"`) || time.Since(ended) > 10*time.Second {
		t.Errorf("the stream after the end: %+v %v after %s", b, err, time.Since(ended))
	}
	if r := mcp(); r.Status != http.StatusUnauthorized {
		t.Errorf("MCP after the end: %d %s", r.Status, r.Body)
	}
}

// TestSignInRevokedAcrossReplicas: on PostgreSQL, three replicas on one
// database. An admin ends a sign-in on one; the cookie is refused on the
// others at once, and a stream open on another replica ends (the end's
// commit wakes every replica's tail, which re-checks from the database,
// not from memory).
func TestSignInRevokedAcrossReplicas(t *testing.T) {
	dbtest.RequirePostgres(t)
	dsn := dbtest.Fresh(t)
	idp := newIDP(t)
	hour := func(c *app.Config) { c.SSEHeartbeat = time.Hour }
	a, b, c := newSignInServer(t, dsn, idp, hour), newSignInServer(t, dsn, idp, hour), newSignInServer(t, dsn, idp, hour)
	cookie, _, id := a.cookieOf(t, jane)
	s := openStream(t, b.Env, "?after=0", "Cookie", cookie)
	if r := c.As("").Call(http.MethodGet, "/v1/me", nil, "Cookie", cookie); r.Status != http.StatusOK {
		t.Fatalf("the cookie on c: %d %s", r.Status, r.Body)
	}
	if r := a.As(a.Token(auth.Admin, "ops", "")).Call(http.MethodDelete, "/v1/signins/"+id, nil); r.Status != http.StatusNoContent {
		t.Fatalf("end on a: %d %s", r.Status, r.Body)
	}
	for _, r := range []*signInEnv{a, b, c} {
		if resp := r.As("").Call(http.MethodGet, "/v1/me", nil, "Cookie", cookie); resp.Status != http.StatusUnauthorized {
			t.Errorf("%s after the end on a: %d %s", r.Server.URL, resp.Status, resp.Body)
		}
	}
	done := make(chan sseBlock, 1)
	go func() {
		blk, err := s.block()
		for err == nil && blk.Event != "error" {
			blk, err = s.block()
		}
		done <- blk
	}()
	select {
	case blk := <-done:
		var p map[string]any
		if json.Unmarshal([]byte(blk.Data), &p) != nil || p["code"] != "unauthenticated" {
			t.Errorf("the stream on b after the end on a: %+v", blk)
		}
	case <-time.After(15 * time.Second):
		t.Error("the stream on b outlived the end of its sign-in on a")
	}
}
