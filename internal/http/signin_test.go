package http_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/apitest"
	"github.com/planserver/planserver/internal/app"
	"github.com/planserver/planserver/internal/auth"
	"github.com/planserver/planserver/internal/dbtest"
	planhttp "github.com/planserver/planserver/internal/http"
	"github.com/planserver/planserver/internal/http/signin"
	"github.com/planserver/planserver/internal/oidctest"
)

// person is a user of the in-process provider, as the tests here write
// one.
type person struct {
	sub, email, name string
	groups           []string
	unverified       bool
	// What only the UserInfo answer says: the email when idNoEmail
	// (the ID token then has none), groups, and, to test the subject
	// check, another subject.
	idNoEmail  bool
	infoGroups []string
	infoSub    string
}

// user is the person as the provider knows them: the ID token carries
// their email and groups unless only UserInfo is to say them.
func (p person) user() oidctest.User {
	u := oidctest.User{Subject: p.sub, Email: p.email, Name: p.name, Groups: p.groups,
		EmailUnverified: p.unverified, UserInfoSubject: p.infoSub}
	if p.idNoEmail {
		u.UserInfoOnly = append(u.UserInfoOnly, "email")
	}
	if p.infoGroups != nil {
		u.Groups = p.infoGroups
		u.UserInfoOnly = append(u.UserInfoOnly, "groups")
	}
	return u
}

var (
	jane = person{sub: "u-jane", email: "jane@example.com", name: "Jane Doe", groups: []string{"reviewers"}}
	ola  = person{sub: "u-ola", email: "ola@elsewhere.org", name: "Ola"}
)

// signInEnv is a planserver with --auth token and sign-in through an
// oidctest provider, both on loopback.
type signInEnv struct {
	*apitest.Env
	idp *oidctest.Provider
}

const testRoles = "admin=email:boss@example.com,reviewer[root]=group:root-reviewers,reviewer=group:reviewers,viewer=domain:example.com"

// newIDP starts a provider whose ID tokens carry the person's claims (so
// UserInfo is asked only for what a person's ID token leaves out) and that
// offers no RP-initiated logout (TestSignOut is the local logout; the
// provider's logout is TestRPInitiatedLogout's).
func newIDP(t *testing.T) *oidctest.Provider {
	t.Helper()
	p, err := oidctest.Start(oidctest.Options{ClaimsInIDToken: true, NoEndSession: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func newSignInEnv(t *testing.T, path string, idp *oidctest.Provider, configure ...func(*signin.Settings)) *signInEnv {
	t.Helper()
	return newSignInServer(t, path, idp, nil, configure...)
}

// newSignInServer is newSignInEnv with server settings of its own (rate
// limits, a clock) set by server, when not nil.
func newSignInServer(t *testing.T, path string, idp *oidctest.Provider, server func(*app.Config), configure ...func(*signin.Settings)) *signInEnv {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rules, err := auth.ParseRoleRules(testRoles)
	if err != nil {
		t.Fatal(err)
	}
	redirect := "http://" + ln.Addr().String() + signin.CallbackPath
	idp.AddRedirectURI(redirect)
	settings := signin.Settings{Issuer: idp.Issuer, ClientID: idp.ClientID, ClientSecret: idp.ClientSecret,
		RedirectURL: redirect, Roles: rules,
		Scopes: []string{"openid", "email", "profile", "groups"}}
	for _, c := range configure {
		c(&settings)
	}
	o, err := signin.NewOIDC(context.Background(), settings)
	if err != nil {
		t.Fatal(err)
	}
	env := apitest.OpenOn(t, path, ln, func(c *app.Config) {
		c.Auth = planhttp.AuthToken
		c.OIDC = o
		if server != nil {
			server(c)
		}
	})
	return &signInEnv{Env: env, idp: idp}
}

// browser is a cookie-keeping HTTP client that does not follow redirects,
// so each step of the login can be looked at.
type browser struct {
	t      *testing.T
	client *http.Client
}

func newBrowser(t *testing.T) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: t, client: &http.Client{Jar: jar, Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

type page struct {
	status   int
	location string
	body     string
	header   http.Header
}

func (b *browser) do(method, u string, header ...string) page {
	b.t.Helper()
	req, err := http.NewRequest(method, u, nil)
	if err != nil {
		b.t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := b.client.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return page{status: resp.StatusCode, location: resp.Header.Get("Location"), body: string(body), header: resp.Header}
}

func (b *browser) get(u string) page { b.t.Helper(); return b.do(http.MethodGet, u) }

// startLogin follows /auth/login to the provider and returns the URL of
// the provider's authorization request.
func (b *browser) startLogin(e *signInEnv, returnTo string) string {
	b.t.Helper()
	u := e.Server.URL + "/auth/login"
	if returnTo != "" {
		u += "?return_to=" + url.QueryEscape(returnTo)
	}
	p := b.get(u)
	if p.status != http.StatusFound || !strings.HasPrefix(p.location, e.idp.AuthorizationEndpoint()) {
		b.t.Fatalf("GET /auth/login = %d to %q: %s", p.status, p.location, p.body)
	}
	return p.location
}

// authorize asks the provider to sign user in and returns its redirect
// back to planserver (the callback URL with code and state), following
// the provider's own redirects (its login page, which signs the queued
// user in, and its callback) on the way.
func (b *browser) authorize(e *signInEnv, authURL string, user person) string {
	b.t.Helper()
	e.idp.QueueUser(user.user())
	// The provider's own callback is /auth/callback too: only this
	// server's is the way back.
	back := e.Server.URL + signin.CallbackPath
	p := b.get(authURL)
	for i := 0; i < 5 && p.status == http.StatusFound && !strings.HasPrefix(p.location, back); i++ {
		p = b.get(resolve(e.idp.Issuer, p.location))
	}
	if p.status != http.StatusFound || !strings.HasPrefix(p.location, back) {
		b.t.Fatalf("provider = %d to %q: %s", p.status, p.location, p.body)
	}
	return p.location
}

// login signs user in and returns where the callback sent the browser.
func (b *browser) login(e *signInEnv, user person, returnTo string) page {
	b.t.Helper()
	return b.get(b.authorize(e, b.startLogin(e, returnTo), user))
}

func (b *browser) cookie(e *signInEnv, name string) *http.Cookie {
	u, _ := url.Parse(e.Server.URL)
	for _, c := range b.client.Jar.Cookies(u) {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// me is GET /v1/me with the browser's cookie.
func (b *browser) me(e *signInEnv) (int, api.Me) {
	b.t.Helper()
	p := b.get(e.Server.URL + "/v1/me")
	var m api.Me
	if p.status == http.StatusOK {
		if err := json.Unmarshal([]byte(p.body), &m); err != nil {
			b.t.Fatal(err)
		}
	}
	return p.status, m
}

// TestSignInFlow: a person signs in through the provider's authorization
// code flow, lands on the deep link they started from, and is then a
// person to /v1/me with the role the rules give them, on a cookie that is
// HttpOnly and SameSite=Lax and holds only an opaque id.
func TestSignInFlow(t *testing.T) {
	e := newSignInEnv(t, dbtest.Fresh(t), newIDP(t))
	b := newBrowser(t)
	deep := "/ui/sessions/s1/review?revision=3"
	authURL := b.startLogin(e, deep)
	q, _ := url.Parse(authURL)
	for _, k := range []string{"state", "nonce", "code_challenge"} {
		if q.Query().Get(k) == "" {
			t.Errorf("the authorization request has no %s: %s", k, authURL)
		}
	}
	if q.Query().Get("code_challenge_method") != "S256" {
		t.Errorf("PKCE method %q, want S256", q.Query().Get("code_challenge_method"))
	}
	p := b.get(b.authorize(e, authURL, jane))
	if p.status != http.StatusSeeOther || p.location != deep {
		t.Fatalf("callback = %d to %q, want 303 to the deep link: %s", p.status, p.location, p.body)
	}
	var set *http.Cookie
	for _, c := range (&http.Response{Header: p.header}).Cookies() {
		if c.Name == signin.Cookie {
			set = c
		}
	}
	if set == nil || !set.HttpOnly || set.SameSite != http.SameSiteLaxMode || set.Path != "/" ||
		!auth.LooksLikeSignIn(set.Value) || strings.Contains(set.Value, "jane") {
		t.Fatalf("sign-in cookie %+v", set)
	}
	status, m := b.me(e)
	if status != http.StatusOK || m.Kind != "person" || m.Subject != "u-jane" || m.Email != "jane@example.com" ||
		m.Name != "Jane Doe" || m.Role != "reviewer" || m.CSRFToken == nil || *m.CSRFToken == "" || m.ExpiresAt == nil {
		t.Fatalf("GET /v1/me = %d %+v", status, m)
	}
	// The same answer through the contract-checking client.
	resp := e.As("").Call(http.MethodGet, "/v1/me", nil, "Cookie", signin.Cookie+"="+set.Value)
	if resp.Status != http.StatusOK {
		t.Fatalf("GET /v1/me with the cookie = %d %s", resp.Status, resp.Body)
	}
}

// TestSignInRoleMapping: the first matching rule decides; nobody without
// one gets in (a page that says so, no cookie); an unverified email
// matches no email or domain rule.
func TestSignInRoleMapping(t *testing.T) {
	e := newSignInEnv(t, dbtest.Fresh(t), newIDP(t))
	for _, tc := range []struct {
		user person
		role string
	}{
		{person{sub: "b", email: "boss@example.com"}, "admin"},
		{person{sub: "v", email: "vic@example.com"}, "viewer"},
		{person{sub: "g", email: "x@other.net", groups: []string{"reviewers"}}, "reviewer"},
		{ola, ""},
		{person{sub: "u", email: "boss@example.com", unverified: true}, ""},
	} {
		b := newBrowser(t)
		p := b.login(e, tc.user, "")
		if tc.role == "" {
			if p.status != http.StatusForbidden || !strings.Contains(p.body, "no role is mapped to you") ||
				!strings.Contains(p.header.Get("Content-Type"), "text/html") || b.cookie(e, signin.Cookie) != nil {
				t.Errorf("%s without a mapping: %d %s", tc.user.sub, p.status, p.body)
			}
			if status, _ := b.me(e); status != http.StatusUnauthorized {
				t.Errorf("%s without a mapping: GET /v1/me = %d", tc.user.sub, status)
			}
			continue
		}
		if status, m := b.me(e); status != http.StatusOK || m.Role != tc.role {
			t.Errorf("%s: GET /v1/me = %d %+v, want role %s", tc.user.sub, status, m, tc.role)
		}
	}
}

// TestSignInUserInfo: what the ID token leaves out (the email, groups)
// comes from the provider's UserInfo, but only for the ID token's
// subject.
func TestSignInUserInfo(t *testing.T) {
	e := newSignInEnv(t, dbtest.Fresh(t), newIDP(t))
	for _, tc := range []struct {
		user        person
		role, email string
	}{
		{person{sub: "ui-1", email: "vic@example.com", name: "Vic", idNoEmail: true}, "viewer", "vic@example.com"},
		{person{sub: "ui-2", email: "x@other.net", infoGroups: []string{"reviewers"}}, "reviewer", "x@other.net"},
	} {
		b := newBrowser(t)
		if p := b.login(e, tc.user, ""); p.status != http.StatusSeeOther {
			t.Fatalf("%s: %d %s", tc.user.sub, p.status, p.body)
		}
		if status, m := b.me(e); status != http.StatusOK || m.Role != tc.role || m.Email != tc.email || m.Subject != tc.user.sub {
			t.Errorf("%s: GET /v1/me = %d %+v, want role %s and email %s", tc.user.sub, status, m, tc.role, tc.email)
		}
	}
	b := newBrowser(t)
	p := b.login(e, person{sub: "ui-3", email: "boss@example.com", idNoEmail: true, infoSub: "someone-else"}, "")
	if p.status != http.StatusUnauthorized || !strings.Contains(p.body, "another subject") || b.cookie(e, signin.Cookie) != nil {
		t.Errorf("UserInfo about another subject: %d %s", p.status, p.body)
	}
}

// TestSignInAttacks puts each attack of the issue to the real flow.
func TestSignInAttacks(t *testing.T) {
	e := newSignInEnv(t, dbtest.Fresh(t), newIDP(t))

	t.Run("state mismatch", func(t *testing.T) {
		b := newBrowser(t)
		cb := b.authorize(e, b.startLogin(e, ""), jane)
		u, _ := url.Parse(cb)
		q := u.Query()
		q.Set("state", auth.NewNonce())
		u.RawQuery = q.Encode()
		if p := b.get(u.String()); p.status != http.StatusBadRequest || !strings.Contains(p.body, "state") {
			t.Errorf("forged state: %d %s", p.status, p.body)
		}
		// Another browser's callback (login CSRF): its state is not this
		// browser's.
		other := newBrowser(t)
		if p := other.get(cb); p.status != http.StatusBadRequest || other.cookie(e, signin.Cookie) != nil {
			t.Errorf("a callback in another browser: %d %s", p.status, p.body)
		}
	})

	t.Run("replayed code", func(t *testing.T) {
		b := newBrowser(t)
		cb := b.authorize(e, b.startLogin(e, ""), jane)
		if p := b.get(cb); p.status != http.StatusSeeOther {
			t.Fatalf("first callback: %d %s", p.status, p.body)
		}
		// The same callback again: its state is spent.
		if p := b.get(cb); p.status != http.StatusBadRequest {
			t.Errorf("replayed callback: %d %s", p.status, p.body)
		}
		// The code under a fresh state of this browser: the provider
		// refuses a code it already redeemed.
		fresh, _ := url.Parse(b.startLogin(e, ""))
		old, _ := url.Parse(cb)
		q := old.Query()
		q.Set("state", fresh.Query().Get("state"))
		old.RawQuery = q.Encode()
		if p := b.get(old.String()); p.status != http.StatusUnauthorized || !strings.Contains(p.body, "refused") {
			t.Errorf("replayed code: %d %s", p.status, p.body)
		}
	})

	t.Run("wrong nonce", func(t *testing.T) {
		b := newBrowser(t)
		authURL, _ := url.Parse(b.startLogin(e, ""))
		q := authURL.Query()
		q.Set("nonce", auth.NewNonce())
		authURL.RawQuery = q.Encode()
		p := b.get(b.authorize(e, authURL.String(), jane))
		if p.status != http.StatusUnauthorized || !strings.Contains(p.body, "nonce") || b.cookie(e, signin.Cookie) != nil {
			t.Errorf("wrong nonce: %d %s", p.status, p.body)
		}
	})

	t.Run("open redirect", func(t *testing.T) {
		b := newBrowser(t)
		for _, to := range []string{"https://evil.example/", "//evil.example/x", "/\\evil.example", "javascript:alert(1)", "ui/x"} {
			p := b.get(e.Server.URL + "/auth/login?return_to=" + url.QueryEscape(to))
			if p.status != http.StatusBadRequest || p.location != "" {
				t.Errorf("return_to %q: %d to %q", to, p.status, p.location)
			}
		}
	})

	t.Run("tampered or unknown cookie", func(t *testing.T) {
		b := newBrowser(t)
		b.login(e, jane, "")
		c := b.cookie(e, signin.Cookie)
		for _, v := range []string{c.Value[:len(c.Value)-1] + flip(c.Value[len(c.Value)-1]), "pss_" + strings.Repeat("A", 43), "junk"} {
			resp := e.As("").Call(http.MethodGet, "/v1/me", nil, "Cookie", signin.Cookie+"="+v)
			if resp.Status != http.StatusUnauthorized || resp.Code() != "unauthenticated" {
				t.Errorf("cookie %q: %d %s", v, resp.Status, resp.Body)
			}
		}
	})

	t.Run("CSRF", func(t *testing.T) {
		b := newBrowser(t)
		b.login(e, person{sub: "b", email: "boss@example.com"}, "")
		_, m := b.me(e)
		cookie := "Cookie"
		value := signin.Cookie + "=" + b.cookie(e, signin.Cookie).Value
		body := map[string]any{"id": "csrf"}
		resp := e.As("").Call(http.MethodPost, "/v1/sessions", body, cookie, value)
		if resp.Status != http.StatusForbidden || resp.Code() != "permission_denied" || !strings.Contains(string(resp.Body), signin.CSRFHeader) {
			t.Errorf("POST with the cookie and no CSRF token: %d %s", resp.Status, resp.Body)
		}
		resp = e.As("").Call(http.MethodPost, "/v1/sessions", body, cookie, value, signin.CSRFHeader, "wrong")
		if resp.Status != http.StatusForbidden {
			t.Errorf("POST with a wrong CSRF token: %d %s", resp.Status, resp.Body)
		}
		if e.As("").Call(http.MethodGet, "/v1/sessions/csrf", nil, cookie, value).Status != http.StatusNotFound {
			t.Error("a refused POST created the session")
		}
		resp = e.As("").Call(http.MethodPost, "/v1/sessions", body, cookie, value, signin.CSRFHeader, *m.CSRFToken)
		if resp.Status != http.StatusCreated {
			t.Errorf("POST with the CSRF token: %d %s", resp.Status, resp.Body)
		}
	})

	t.Run("expired: idle and absolute", func(t *testing.T) {
		b := newBrowser(t)
		b.login(e, jane, "")
		if status, _ := b.me(e); status != http.StatusOK {
			t.Fatal("fresh sign-in refused")
		}
		e.DB.SetClock(func() time.Time { return time.Now().Add(signin.DefaultIdle + time.Minute) })
		defer e.DB.SetClock(time.Now)
		if status, _ := b.me(e); status != http.StatusUnauthorized {
			t.Errorf("after the idle timeout: %d", status)
		}
		e.DB.SetClock(time.Now)
		b2 := newBrowser(t)
		b2.login(e, jane, "")
		// Active every hour, but past the absolute timeout.
		for h := time.Duration(1); h <= 7*24+1; h += 6 {
			at := time.Now().Add(h * time.Hour)
			e.DB.SetClock(func() time.Time { return at })
			status, _ := b2.me(e)
			if want := http.StatusOK; h*time.Hour >= signin.DefaultMaxAge {
				if status != http.StatusUnauthorized {
					t.Errorf("%dh after login, past the absolute timeout: %d", h, status)
				}
			} else if status != want {
				t.Fatalf("%dh after login, active every 6h: %d", h, status)
			}
		}
	})
}

func flip(c byte) string {
	if c == 'A' {
		return "B"
	}
	return "A"
}

// TestSignOut: logout needs the CSRF token and deletes the sign-in (the
// cookie is refused afterwards even if a copy of it is replayed). The
// provider offers no end_session_endpoint (newIDP), so the logout is local
// only: the browser goes back to /ui/. (RP-initiated logout, with a provider that
// offers it: TestRPInitiatedLogout.)
func TestSignOut(t *testing.T) {
	e := newSignInEnv(t, dbtest.Fresh(t), newIDP(t))
	b := newBrowser(t)
	b.login(e, jane, "")
	_, m := b.me(e)
	stolen := b.cookie(e, signin.Cookie).Value
	if p := b.do(http.MethodPost, e.Server.URL+"/auth/logout"); p.status != http.StatusForbidden {
		t.Errorf("logout without the CSRF token: %d %s", p.status, p.body)
	}
	p := b.do(http.MethodPost, e.Server.URL+"/auth/logout", signin.CSRFHeader, *m.CSRFToken)
	if p.status != http.StatusOK || !strings.Contains(p.body, `"redirect":"/ui/"`) {
		t.Fatalf("logout: %d %s", p.status, p.body)
	}
	if status, _ := b.me(e); status != http.StatusUnauthorized {
		t.Errorf("after logout: GET /v1/me = %d", status)
	}
	if resp := e.As("").Call(http.MethodGet, "/v1/me", nil, "Cookie", signin.Cookie+"="+stolen); resp.Status != http.StatusUnauthorized {
		t.Errorf("a copy of the cookie after logout: %d", resp.Status)
	}
}

// TestSignInMisconfiguration: every mistake stops NewOIDC (and so the
// server's start) with an error naming what to fix.
func TestSignInMisconfiguration(t *testing.T) {
	idp := newIDP(t)
	rules, _ := auth.ParseRoleRules(testRoles)
	good := signin.Settings{Issuer: idp.Issuer, ClientID: idp.ClientID, ClientSecret: idp.ClientSecret,
		RedirectURL: "http://127.0.0.1:8080/auth/callback", Roles: rules}
	if _, err := signin.NewOIDC(context.Background(), good); err != nil {
		t.Fatalf("good settings: %v", err)
	}
	// A port nothing listens on, on loopback: an unreachable issuer.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := "http://" + ln.Addr().String() + "/oidc"
	ln.Close()
	for want, change := range map[string]func(*signin.Settings){
		"discovery failed":                func(s *signin.Settings) { s.Issuer = dead },
		"client secret is missing":        func(s *signin.Settings) { s.ClientSecret = "" },
		"--oidc-client-id is required":    func(s *signin.Settings) { s.ClientID = "" },
		"its path must be /auth/callback": func(s *signin.Settings) { s.RedirectURL = "http://127.0.0.1:8080/callback" },
		"plain http on a host":            func(s *signin.Settings) { s.RedirectURL = "http://planserver.example.com/auth/callback" },
		"want this server's callback":     func(s *signin.Settings) { s.RedirectURL = "planserver/auth/callback" },
		"--oidc-roles is required":        func(s *signin.Settings) { s.Roles = nil },
	} {
		s := good
		change(&s)
		if _, err := signin.NewOIDC(context.Background(), s); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v", want, err)
		}
	}
}

// signedIn signs user in with a fresh browser and returns the view of the
// server that calls as them (cookie and CSRF token).
func (e *signInEnv) signedIn(t *testing.T, user person) *apitest.Env {
	t.Helper()
	b := newBrowser(t)
	if p := b.login(e, user, ""); p.status != http.StatusSeeOther {
		t.Fatalf("login %s: %d %s", user.sub, p.status, p.body)
	}
	_, m := b.me(e)
	return e.AsSignedIn(signin.Cookie+"="+b.cookie(e, signin.Cookie).Value, *m.CSRFToken)
}

// reviewPending makes session id (under parent, "" for a root) in plan
// mode with a two-line plan whose review is pending.
func reviewPending(t *testing.T, as *apitest.Env, id, parent string) {
	t.Helper()
	body := map[string]any{"id": id, "mode": "plan"}
	if parent != "" {
		body["parent_id"] = parent
	}
	createSession(t, as, body)
	writeSessionPlan(t, as, id, map[string]any{"content": "# Plan\n1. Do it\n"}, http.StatusCreated)
	act(t, as, id, "review", nil, http.StatusOK)
}

// TestAPersonIsRecorded: a signed-in person's approval names them —
// decided_by (their email), decided_by_person, each comment's author, the
// review history, the review event — while an agent token's changes keep
// the token's name and no person; a token a person makes names them.
func TestAPersonIsRecorded(t *testing.T) {
	e := newSignInEnv(t, dbtest.Fresh(t), newIDP(t))
	admin := e.As(e.Token(auth.Admin, "ops", ""))
	createSession(t, admin, map[string]any{"id": "root"})
	agent := e.As(e.Token(auth.Agent, "claude", "root"))
	createSession(t, admin, map[string]any{"id": "work", "parent_id": "root", "mode": "plan"})
	writeSessionPlan(t, agent, "work", map[string]any{"content": "# Plan\n1. Do it\n"}, http.StatusCreated)
	act(t, agent, "work", "review", nil, http.StatusOK)

	as := e.signedIn(t, jane)
	_, s := act(t, as, "work", "approve", map[string]any{"comments": []map[string]any{{"line": 2, "body": "fine"}}},
		http.StatusOK, "If-Match", `"1"`)
	want := api.Person{Subject: "u-jane", Email: "jane@example.com", Name: "Jane Doe"}
	var sess api.Session
	resp := admin.Call(http.MethodGet, "/v1/sessions/work", nil)
	resp.JSON(t, &sess)
	r := sess.Review
	if r.DecidedBy == nil || *r.DecidedBy != "jane@example.com" || r.DecidedByPerson == nil || *r.DecidedByPerson != want ||
		len(r.Comments) != 1 || r.Comments[0].Author != "jane@example.com" {
		t.Errorf("the session's review: %+v (approve answered %+v)", r, s)
	}
	var h api.ReviewHistory
	admin.Call(http.MethodGet, "/v1/sessions/work/reviews", nil).JSON(t, &h)
	if len(h.Reviews) != 1 || h.Reviews[0].EndedBy != "jane@example.com" || h.Reviews[0].EndedByPerson == nil ||
		*h.Reviews[0].EndedByPerson != want {
		t.Errorf("review history: %+v", h.Reviews)
	}
	var page api.EventPage
	admin.Call(http.MethodGet, "/v1/events?session_id=work", nil).JSON(t, &page)
	seen := map[string]api.Event{}
	for _, ev := range page.Events {
		seen[ev.Type] = ev
	}
	if ev := seen[api.EventSessionReviewApproved]; ev.Actor != "jane@example.com" || ev.Person == nil || *ev.Person != want {
		t.Errorf("the approval event: actor %q person %+v", ev.Actor, ev.Person)
	}
	if ev := seen[api.EventSessionReviewRequested]; ev.Actor != "claude" || ev.Person != nil {
		t.Errorf("the agent's event: actor %q person %+v", ev.Actor, ev.Person)
	}

	boss := e.signedIn(t, person{sub: "u-boss", email: "boss@example.com", name: "Boss"})
	var tok api.CreatedToken
	resp = boss.Call(http.MethodPost, "/v1/tokens", map[string]any{"role": "viewer", "name": "made-by-boss"})
	resp.JSON(t, &tok)
	if resp.Status != http.StatusCreated || tok.CreatedBy != "boss@example.com" || tok.CreatedByPerson == nil ||
		tok.CreatedByPerson.Subject != "u-boss" {
		t.Errorf("a token made by a person: %d %s", resp.Status, resp.Body)
	}
	var made api.Token
	admin.Call(http.MethodGet, "/v1/tokens/claude", nil).JSON(t, &made)
	if made.CreatedBy != "" || made.CreatedByPerson != nil {
		t.Errorf("a token made on the host names a creator: %+v", made)
	}
}

// TestReviewerRole: a reviewer reads everything and decides reviews and
// modes inside its subtree only; it never mints tokens or manages gates,
// and writes no plans or sessions.
func TestReviewerRole(t *testing.T) {
	e := newSignInEnv(t, dbtest.Fresh(t), newIDP(t))
	admin := e.As(e.Token(auth.Admin, "ops", ""))
	createSession(t, admin, map[string]any{"id": "root"})
	reviewPending(t, admin, "inside", "root")
	reviewPending(t, admin, "outside", "")
	reviewPending(t, admin, "anywhere", "")
	scoped := e.signedIn(t, person{sub: "u-s", email: "s@example.net", groups: []string{"root-reviewers"}})
	global := e.signedIn(t, jane)
	viewer := e.signedIn(t, person{sub: "u-v", email: "v@example.com"})

	for _, tc := range []struct {
		who          *apitest.Env
		method, path string
		body         any
		header       []string
		want         int
	}{
		{scoped, http.MethodGet, "/v1/sessions/outside", nil, nil, http.StatusOK},
		{scoped, http.MethodGet, "/v1/events", nil, nil, http.StatusOK},
		{scoped, http.MethodPost, "/v1/sessions/outside/plan/approve", nil, []string{"If-Match", `"1"`}, http.StatusForbidden},
		{scoped, http.MethodPatch, "/v1/sessions/outside/mode", map[string]any{"mode": "build"}, nil, http.StatusForbidden},
		{scoped, http.MethodPost, "/v1/sessions/inside/plan/approve", nil, []string{"If-Match", `"1"`}, http.StatusOK},
		{scoped, http.MethodPatch, "/v1/sessions/inside/mode", map[string]any{"mode": "plan"}, nil, http.StatusOK},
		{scoped, http.MethodPost, "/v1/sessions/nothere/plan/reject", nil, nil, http.StatusNotFound},
		{global, http.MethodPost, "/v1/sessions/anywhere/plan/reject", map[string]any{"feedback": "no"}, nil, http.StatusOK},
		{global, http.MethodPost, "/v1/tokens", map[string]any{"role": "viewer"}, nil, http.StatusForbidden},
		{global, http.MethodGet, "/v1/tokens", nil, nil, http.StatusForbidden},
		{global, http.MethodGet, "/v1/gates", nil, nil, http.StatusForbidden},
		{global, http.MethodPut, "/v1/sessions/anywhere/plan", map[string]any{"content": "# mine"}, nil, http.StatusForbidden},
		{global, http.MethodPost, "/v1/sessions", map[string]any{"id": "new"}, nil, http.StatusForbidden},
		{global, http.MethodPut, "/v1/plans/p", map[string]any{"content": "# p"}, nil, http.StatusForbidden},
		{viewer, http.MethodGet, "/v1/sessions/outside", nil, nil, http.StatusOK},
		{viewer, http.MethodPost, "/v1/sessions/outside/plan/reject", nil, nil, http.StatusForbidden},
	} {
		resp := tc.who.Call(tc.method, tc.path, tc.body, tc.header...)
		if resp.Status != tc.want {
			t.Errorf("%s %s = %d, want %d: %s", tc.method, tc.path, resp.Status, tc.want, resp.Body)
		}
	}
	var m api.Me
	scoped.Call(http.MethodGet, "/v1/me", nil).JSON(t, &m)
	if m.Role != "reviewer" || m.SessionID == nil || *m.SessionID != "root" {
		t.Errorf("a scoped reviewer's /v1/me: %+v", m)
	}
}

// TestSignInHint: on a server with sign-in, a request with no credential
// is told where people sign in (the console offers it); a server without
// sign-in says nothing of it.
func TestSignInHint(t *testing.T) {
	e := newSignInEnv(t, dbtest.Fresh(t), newIDP(t))
	resp := e.As("").Call(http.MethodGet, "/v1/me", nil)
	if resp.Status != http.StatusUnauthorized || resp.Map(t)["sign_in"] != "/auth/login" {
		t.Errorf("no credential with sign-in on: %d %s", resp.Status, resp.Body)
	}
	plain := apitest.New(t, withTokens)
	resp = plain.As("").Call(http.MethodGet, "/v1/me", nil)
	if _, has := resp.Map(t)["sign_in"]; resp.Status != http.StatusUnauthorized || has {
		t.Errorf("no credential, tokens only: %d %s", resp.Status, resp.Body)
	}
}

// TestSignInAcrossReplicas runs three servers on one PostgreSQL database,
// as replicas behind a load balancer: a login started on one finishes on
// another and works on the third; a logout on one ends the sign-in on all
// of them, for the same cookie and for a copy of it. (PostgreSQL only: a
// SQLite file has one server.)
func TestSignInAcrossReplicas(t *testing.T) {
	dbtest.RequirePostgres(t)
	dsn := dbtest.Fresh(t)
	idp := newIDP(t)
	a := newSignInEnv(t, dsn, idp)
	// Behind a load balancer every replica names the one public callback,
	// which the provider holds a code's redemption to.
	public := func(s *signin.Settings) { s.RedirectURL = a.Server.URL + signin.CallbackPath }
	b, c := newSignInEnv(t, dsn, idp, public), newSignInEnv(t, dsn, idp, public)
	replicas := []*signInEnv{a, b, c}

	br := newBrowser(t)
	cb := br.authorize(a, br.startLogin(a, "/ui/sessions/x/review?revision=1"), jane)
	// The provider sends the browser back through the load balancer,
	// which picks replica b this time.
	onB := strings.Replace(cb, strings.TrimPrefix(a.Server.URL, "http://"), strings.TrimPrefix(b.Server.URL, "http://"), 1)
	if p := br.get(onB); p.status != http.StatusSeeOther || p.location != "/ui/sessions/x/review?revision=1" {
		t.Fatalf("callback on another replica: %d %q %s", p.status, p.location, p.body)
	}
	cookie := signin.Cookie + "=" + br.cookie(a, signin.Cookie).Value
	var csrf string
	for _, r := range replicas {
		resp := r.As("").Call(http.MethodGet, "/v1/me", nil, "Cookie", cookie)
		var m api.Me
		resp.JSON(t, &m)
		if resp.Status != http.StatusOK || m.Email != "jane@example.com" {
			t.Fatalf("%s: GET /v1/me = %d %s", r.Server.URL, resp.Status, resp.Body)
		}
		csrf = *m.CSRFToken
	}
	// A write with the cookie on c, which did not see the login.
	admin := c.As(c.Token(auth.Admin, "ops", ""))
	reviewPending(t, admin, "rep", "")
	if resp := c.AsSignedIn(cookie, csrf).Call(http.MethodPost, "/v1/sessions/rep/plan/reject",
		map[string]any{"feedback": "no"}); resp.Status != http.StatusOK {
		t.Fatalf("reject on a third replica: %d %s", resp.Status, resp.Body)
	}

	p := br.do(http.MethodPost, a.Server.URL+"/auth/logout", signin.CSRFHeader, csrf)
	if p.status != http.StatusOK {
		t.Fatalf("logout on a: %d %s", p.status, p.body)
	}
	for _, r := range replicas {
		if resp := r.As("").Call(http.MethodGet, "/v1/me", nil, "Cookie", cookie); resp.Status != http.StatusUnauthorized {
			t.Errorf("%s after logout on another replica: %d %s", r.Server.URL, resp.Status, resp.Body)
		}
	}
}

// TestSignInCallbackErrorText: an error answer at /auth/callback shows
// nothing of its text unless it ends a login this browser started: a link
// anyone can send (no state, another browser's state) gets planserver's
// "did not start in this browser" page alone. For this browser's own
// login, planserver says in its own words that the provider did not sign
// the person in, and quotes the provider's code and description under
// them, bounded and printable; the login's state is spent.
func TestSignInCallbackErrorText(t *testing.T) {
	e := newSignInEnv(t, dbtest.Fresh(t), newIDP(t))
	const spoof = "Your account is locked. Call +1-555-0100 or visit evil.example to unlock it"
	spoofed := func(state string) string {
		v := url.Values{"error": {"access_denied"}, "error_description": {spoof}}
		if state != "" {
			v.Set("state", state)
		}
		return e.Server.URL + signin.CallbackPath + "?" + v.Encode()
	}
	other := newBrowser(t)
	otherState := func() string {
		u, _ := url.Parse(other.startLogin(e, ""))
		return u.Query().Get("state")
	}()
	for name, u := range map[string]string{
		"no state":                spoofed(""),
		"a made-up state":         spoofed(auth.NewNonce()),
		"another browser's state": spoofed(otherState),
	} {
		b := newBrowser(t)
		p := b.get(u)
		if p.status != http.StatusBadRequest || !strings.Contains(p.body, "did not start in this browser") ||
			strings.Contains(p.body, "555") || strings.Contains(p.body, "evil.example") || strings.Contains(p.body, "access_denied") {
			t.Errorf("%s: %d %s", name, p.status, p.body)
		}
	}

	b := newBrowser(t)
	authURL, _ := url.Parse(b.startLogin(e, ""))
	state := authURL.Query().Get("state")
	long := strings.Repeat("x", 1000) + "\x1b[31m"
	p := b.get(e.Server.URL + signin.CallbackPath + "?" + url.Values{"error": {"access_denied"},
		"error_description": {"The user said no. " + long}, "state": {state}}.Encode())
	quote := regexp.MustCompile(`(?s)<figcaption>The identity provider said:</figcaption>\s*<blockquote id="provider-said">(.*?)</blockquote>`).
		FindStringSubmatch(p.body)
	if p.status != http.StatusUnauthorized || !strings.Contains(p.body, "<h1>The identity provider did not sign you in</h1>") ||
		!strings.Contains(p.body, "cancelled, or the identity provider refused it") || quote == nil ||
		!strings.HasPrefix(quote[1], "access_denied: The user said no. xxx") || len(quote[1]) > 320 || strings.Contains(quote[1], "\x1b") {
		t.Fatalf("the provider's error for this browser's login: %d %s", p.status, p.body)
	}
	if strings.Count(p.body, "The user said no") != 1 {
		t.Errorf("the provider's text appears outside its quotation: %s", p.body)
	}
	// The login is over: its state works no more, even with its cookie
	// put back (the answer cleared it).
	if b.cookie(e, "planserver_login") != nil {
		t.Error("the login cookie outlived the provider's error")
	}
	p = b.do(http.MethodGet, e.Server.URL+signin.CallbackPath+"?"+url.Values{"code": {"x"}, "state": {state}}.Encode(),
		"Cookie", "planserver_login="+state)
	if p.status != http.StatusBadRequest || !strings.Contains(p.body, "already used or has expired") {
		t.Errorf("the state after the provider's error: %d %s", p.status, p.body)
	}
}

// TestUnverifiedEmailIsNobodysName: under
// admin=email:lead@example.com,reviewer=group:platform, a person whose ID
// token says email lead@example.com with email_verified false (and, to
// be thorough, the name lead@example.com too) signs in as a reviewer by
// their group. Their approval (decided_by, the history's ended_by), its
// event's actor and GET /v1/me name them by their subject, and no email
// field holds the unverified email, so the audit trail never says the
// admin approved. (The name stays what the person calls themselves; it
// is never an actor.)
func TestUnverifiedEmailIsNobodysName(t *testing.T) {
	e := newSignInEnv(t, dbtest.Fresh(t), newIDP(t), func(s *signin.Settings) {
		s.Roles, _ = auth.ParseRoleRules("admin=email:lead@example.com,reviewer=group:platform")
	})
	admin := e.As(e.Token(auth.Admin, "ops", ""))
	reviewPending(t, admin, "work", "")
	mallory := person{sub: "u-mallory", email: "lead@example.com", name: "lead@example.com", unverified: true,
		groups: []string{"platform"}}
	as := e.signedIn(t, mallory)
	var me api.Me
	as.Call(http.MethodGet, "/v1/me", nil).JSON(t, &me)
	if me.Role != "reviewer" || me.Subject != "u-mallory" || me.Email != "" {
		t.Errorf("GET /v1/me of an unverified email: %+v", me)
	}
	act(t, as, "work", "approve", nil, http.StatusOK, "If-Match", `"1"`)
	resp := admin.Call(http.MethodGet, "/v1/sessions/work", nil)
	var sess api.Session
	resp.JSON(t, &sess)
	if r := sess.Review; r.DecidedBy == nil || *r.DecidedBy != "u-mallory" || r.DecidedByPerson == nil ||
		r.DecidedByPerson.Email != "" || r.DecidedByPerson.Subject != "u-mallory" {
		t.Errorf("the approval of an unverified email: decided_by %v, person %+v", r.DecidedBy, r.DecidedByPerson)
	}
	events := admin.Call(http.MethodGet, "/v1/events?session_id=work", nil)
	var page api.EventPage
	events.JSON(t, &page)
	for _, ev := range page.Events {
		if ev.Type == api.EventSessionReviewApproved && (ev.Actor != "u-mallory" || ev.Person == nil || ev.Person.Email != "") {
			t.Errorf("the approval event: actor %q person %+v", ev.Actor, ev.Person)
		}
	}
	for what, body := range map[string][]byte{"the session": resp.Body, "the events": events.Body,
		"the history": admin.Call(http.MethodGet, "/v1/sessions/work/reviews", nil).Body} {
		// Only the name the person chose for themselves may say it.
		if m := regexp.MustCompile(`"(\w+)":"lead@example.com"`).FindAllStringSubmatch(string(body), -1); len(m) > 0 {
			for _, member := range m {
				if member[1] != "name" {
					t.Errorf("%s record the unverified email as %s: %s", what, member[1], body)
				}
			}
		}
	}
}
