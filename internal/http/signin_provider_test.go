package http_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/coreos/go-oidc/v3/oidc"

	"github.com/planserver/planserver/internal/apitest"
	"github.com/planserver/planserver/internal/app"
	"github.com/planserver/planserver/internal/auth"
	"github.com/planserver/planserver/internal/dbtest"
	planhttp "github.com/planserver/planserver/internal/http"
	"github.com/planserver/planserver/internal/http/signin"
	"github.com/planserver/planserver/internal/oidctest"
)

// The tests here sign in through zitadel's OpenID Provider
// (internal/oidctest): a provider nobody here wrote, with a login page of
// its own, that puts the email only in its UserInfo answer (not in the ID
// token, as OIDC Core 5.4 allows and ZITADEL does), and that offers
// RP-initiated logout. The tests of signin_test.go sign people in through
// the same provider without its login page (oidctest.Provider.QueueUser)
// and cover the attacks; their provider offers no end_session_endpoint,
// so TestSignOut there is the local-only logout.

var rita = oidctest.User{Subject: "u-rita", Username: "rita", Password: "rita-pw-1", Email: "rita@example.com",
	GivenName: "Rita", FamilyName: "Reviewer"}

// providerEnv is planserver signing in through a zitadel OP.
type providerEnv struct {
	*apitest.Env
	op *oidctest.Provider
}

func newProviderEnv(t *testing.T) *providerEnv {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	op, err := oidctest.Start(oidctest.Options{ClientID: "planserver", ClientSecret: "zitadel-secret",
		RedirectURIs: []string{base + signin.CallbackPath}, PostLogoutRedirectURIs: []string{base + "/ui/"},
		Users: []oidctest.User{rita}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = op.Close() })
	rules, _ := auth.ParseRoleRules("reviewer=email:rita@example.com")
	o, err := signin.NewOIDC(context.Background(), signin.Settings{Issuer: op.Issuer, ClientID: "planserver",
		ClientSecret: "zitadel-secret", RedirectURL: base + signin.CallbackPath, Roles: rules})
	if err != nil {
		t.Fatal(err)
	}
	env := apitest.OpenOn(t, dbtest.Fresh(t), ln, func(c *app.Config) { c.Auth = planhttp.AuthToken; c.OIDC = o })
	return &providerEnv{Env: env, op: op}
}

// toProvider starts a login at planserver and follows the provider's
// redirects until it answers with a page (its login page) or sends the
// browser back to planserver's callback, which is returned unfollowed.
func (b *browser) toProvider(e *providerEnv, returnTo string) page {
	b.t.Helper()
	p := b.get(e.Server.URL + "/auth/login?return_to=" + url.QueryEscape(returnTo))
	for i := 0; p.status == http.StatusFound && i < 5; i++ {
		if strings.HasPrefix(p.location, e.Server.URL+signin.CallbackPath) {
			return p
		}
		if !strings.HasPrefix(p.location, e.op.Issuer) && !strings.HasPrefix(p.location, "/") {
			b.t.Fatalf("redirected off the provider to %q", p.location)
		}
		p = b.get(resolve(e.op.Issuer, p.location))
	}
	return p
}

func resolve(base, ref string) string {
	u, _ := url.Parse(base)
	r, _ := u.Parse(ref)
	return r.String()
}

// fillLogin submits the provider's login page for the auth request the
// page carries, and follows the provider until it sends the browser back
// to planserver (returned unfollowed) or answers with a page.
func (b *browser) fillLogin(e *providerEnv, loginPage page, username, password string) page {
	b.t.Helper()
	const marker = `name="id" value="`
	i := strings.Index(loginPage.body, marker)
	if i < 0 {
		b.t.Fatalf("not the provider's login page: %d %s", loginPage.status, loginPage.body)
	}
	id := loginPage.body[i+len(marker):]
	id = id[:strings.IndexByte(id, '"')]
	form := url.Values{"id": {id}, "username": {username}, "password": {password}}
	req, _ := http.NewRequest(http.MethodPost, e.op.Issuer+"/login/username", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := b.client.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	body := string(raw)
	p := page{status: resp.StatusCode, location: resp.Header.Get("Location"), body: body, header: resp.Header}
	for i := 0; p.status == http.StatusFound && i < 5; i++ {
		if strings.HasPrefix(p.location, e.Server.URL+signin.CallbackPath) {
			return p
		}
		p = b.get(resolve(e.op.Issuer, p.location))
	}
	return p
}

func isLoginPage(p page) bool {
	return p.status == http.StatusOK && strings.Contains(p.body, `name="password"`)
}

// TestSignInThroughAProvidersLoginPage: the provider's own login page
// asks for the password (a wrong one is refused there), the callback
// lands on the deep link, and the email the ID token left out comes from
// the provider's UserInfo.
func TestSignInThroughAProvidersLoginPage(t *testing.T) {
	e := newProviderEnv(t)
	b := newBrowser(t)
	deep := "/ui/sessions/s1/review?revision=2"
	login := b.toProvider(e, deep)
	if !isLoginPage(login) {
		t.Fatalf("the provider did not show its login page: %d %q %s", login.status, login.location, login.body)
	}
	if p := b.fillLogin(e, login, rita.Username, "not-the-password"); !isLoginPage(p) || !strings.Contains(p.body, "wrong") {
		t.Fatalf("a wrong password: %d %q %s", p.status, p.location, p.body)
	}
	back := b.fillLogin(e, login, rita.Username, rita.Password)
	if back.status != http.StatusFound {
		t.Fatalf("the provider did not send the browser back: %d %s", back.status, back.body)
	}
	if p := b.get(back.location); p.status != http.StatusSeeOther || p.location != deep {
		t.Fatalf("callback = %d to %q: %s", p.status, p.location, p.body)
	}
	status, m := b.me(&signInEnv{Env: e.Env})
	if status != http.StatusOK || m.Kind != "person" || m.Subject != rita.Subject || m.Email != rita.Email ||
		m.Name != "Rita Reviewer" || m.Role != "reviewer" {
		t.Fatalf("GET /v1/me = %d %+v", status, m)
	}
}

// TestRPInitiatedLogout: logout deletes the sign-in and sends the browser
// to the provider's end_session_endpoint with the sign-in's ID token as
// id_token_hint, the client id, and /ui/ on this server to return to; the
// provider accepts all three (it sends the browser back there) and ends
// its own session, so the next sign-in asks for the password again, where
// before the logout the provider signed the browser in silently.
func TestRPInitiatedLogout(t *testing.T) {
	e := newProviderEnv(t)
	b := newBrowser(t)
	signIn := func() {
		t.Helper()
		p := b.toProvider(e, "/ui/")
		if isLoginPage(p) {
			p = b.fillLogin(e, p, rita.Username, rita.Password)
		}
		if p.status != http.StatusFound {
			t.Fatalf("sign-in: %d %s", p.status, p.body)
		}
		if p = b.get(p.location); p.status != http.StatusSeeOther {
			t.Fatalf("callback: %d %s", p.status, p.body)
		}
	}
	signIn()
	// The provider remembers the browser: signing in again (planserver's
	// cookie gone) needs no password.
	u, _ := url.Parse(e.Server.URL)
	b.client.Jar.SetCookies(u, []*http.Cookie{{Name: signin.Cookie, Value: "", MaxAge: -1, Path: "/"}})
	if p := b.toProvider(e, "/ui/"); p.status != http.StatusFound || e.op.SilentSignIns() != 1 {
		t.Fatalf("before logout the provider should sign the browser in silently: %d %s (silent %d)", p.status, p.body, e.op.SilentSignIns())
	} else if p = b.get(p.location); p.status != http.StatusSeeOther {
		t.Fatalf("silent sign-in's callback: %d %s", p.status, p.body)
	}

	se := &signInEnv{Env: e.Env}
	_, m := b.me(se)
	p := b.do(http.MethodPost, e.Server.URL+"/auth/logout", signin.CSRFHeader, *m.CSRFToken)
	resp := e.As("").Call(http.MethodPost, "/auth/logout", nil) // no cookie: local only, through the contract check
	if p.status != http.StatusOK || resp.Status != http.StatusOK {
		t.Fatalf("logout: %d %s / %d %s", p.status, p.body, resp.Status, resp.Body)
	}
	var out struct{ Redirect string }
	if err := json.Unmarshal([]byte(p.body), &out); err != nil {
		t.Fatal(err)
	}
	var meta struct {
		EndSession string `json:"end_session_endpoint"`
	}
	provider, err := oidc.NewProvider(context.Background(), e.op.Issuer)
	if err != nil {
		t.Fatal(err)
	}
	if err := provider.Claims(&meta); err != nil || meta.EndSession == "" {
		t.Fatalf("the provider offers no end_session_endpoint: %v", err)
	}
	to, err := url.Parse(out.Redirect)
	if err != nil || !strings.HasPrefix(out.Redirect, meta.EndSession+"?") {
		t.Fatalf("logout redirect %q, want %s?…", out.Redirect, meta.EndSession)
	}
	q := to.Query()
	if q.Get("client_id") != "planserver" || q.Get("post_logout_redirect_uri") != e.Server.URL+"/ui/" {
		t.Errorf("logout redirect %q: client_id %q, post_logout_redirect_uri %q", out.Redirect, q.Get("client_id"), q.Get("post_logout_redirect_uri"))
	}
	// The hint is an ID token the provider issued to planserver for rita.
	idt, err := provider.Verifier(&oidc.Config{ClientID: "planserver"}).Verify(context.Background(), q.Get("id_token_hint"))
	if err != nil || idt.Subject != rita.Subject {
		t.Fatalf("id_token_hint: %v %+v", err, idt)
	}
	if status, _ := b.me(se); status != http.StatusUnauthorized {
		t.Errorf("after logout GET /v1/me = %d", status)
	}

	// The provider takes the logout and returns the browser to /ui/.
	if p := b.get(out.Redirect); p.status != http.StatusFound || p.location != e.Server.URL+"/ui/" {
		t.Fatalf("the provider's end_session: %d to %q: %s", p.status, p.location, p.body)
	}
	// Its session is over: the next sign-in shows its login page.
	if p := b.toProvider(e, "/ui/"); !isLoginPage(p) || e.op.SilentSignIns() != 1 {
		t.Fatalf("after logout the provider signed the browser in again without its login page: %d %q (silent %d)",
			p.status, p.location, e.op.SilentSignIns())
	}
}
