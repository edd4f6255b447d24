package main

import (
	"net/http"
	"net/http/cookiejar"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/cli"
	"github.com/planserver/planserver/internal/oidctest"
)

// signInAt signs user in at the planserver on addr through the provider
// idp, as a browser would, and returns the sign-in cookie (name=value).
func signInAt(t *testing.T, addr string, idp *oidctest.Provider, user oidctest.User) string {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	next := "http://" + addr + "/auth/login"
	idp.QueueUser(user)
	// planserver, the provider's authorization endpoint, its login page
	// (which signs the queued user in) and callback, planserver's
	// callback, which answers 303.
	for range 6 {
		resp, err := c.Get(next)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusSeeOther {
			break
		}
		loc, err := resp.Request.URL.Parse(resp.Header.Get("Location"))
		if err != nil {
			t.Fatal(err)
		}
		next = loc.String()
	}
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/v1/me", nil)
	for _, ck := range jar.Cookies(req.URL) {
		if ck.Name == "planserver_session" {
			return ck.Name + "=" + ck.Value
		}
	}
	t.Fatalf("no sign-in cookie after logging %s in", user.Subject)
	return ""
}

// meWith is the status of GET /v1/me with a sign-in cookie.
func meWith(t *testing.T, addr, cookie string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/v1/me", nil)
	req.Header.Set("Cookie", cookie)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestSignInCLI drives planserver signin list, show and revoke against a
// real server with sign-in through a provider on loopback: an admin
// lists people's sign-ins, ends one and then all of one person's, and
// each ended cookie is refused at once; mistakes get the usual exit
// statuses (usage 2, not found 3, denied 5, invalid 1).
func TestSignInCLI(t *testing.T) {
	idp, err := oidctest.Start(oidctest.Options{ClaimsInIDToken: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = idp.Close() }()
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte(idp.ClientSecret), 0o600); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "p.db")
	addr := freeAddr(t)
	idp.AddRedirectURI("http://" + addr + "/auth/callback")
	p := startCmd(t, addr, exec.Command(binary, "serve", "--addr", addr, "--db", db, "--auth", "token",
		"--oidc-issuer", idp.Issuer, "--oidc-client-id", idp.ClientID, "--oidc-client-secret-file", secret,
		"--oidc-redirect-url", "http://"+addr+"/auth/callback",
		"--oidc-roles", "admin=email:boss@example.com,viewer=domain:example.com"), serverReady)
	admin := []string{"PLANSERVER_TOKEN=" + strings.TrimSpace(ok(t, p, "token", "create", "--role", "admin", "--name", "ops", "--db", db))}
	viewer := []string{"PLANSERVER_TOKEN=" + strings.TrimSpace(ok(t, p, "token", "create", "--role", "viewer", "--name", "watch", "--db", db))}
	vic := oidctest.User{Subject: "u-vic", Email: "vic@example.com"}
	vic1, vic2 := signInAt(t, addr, idp, vic), signInAt(t, addr, idp, vic)
	boss := signInAt(t, addr, idp, oidctest.User{Subject: "u-boss", Email: "boss@example.com"})

	run := func(code int, env []string, args ...string) cliResult {
		t.Helper()
		r := cliRun(t, p, "", env, args...)
		if r.code != code {
			t.Fatalf("planserver %s: exit %d, want %d\n%s%s", strings.Join(args, " "), r.code, code, r.stdout, r.stderr)
		}
		return r
	}
	all := decode[[]api.SignIn](t, run(0, admin, "signin", "list", "--json").stdout)
	if len(all) != 3 {
		t.Fatalf("signin list: %+v", all)
	}
	table := run(0, admin, "signin", "list").stdout
	for _, want := range []string{"ROLE", all[0].ID, "u-boss", "admin", "viewer", "vic@example.com"} {
		if !strings.Contains(table, want) {
			t.Errorf("signin list does not say %q:\n%s", want, table)
		}
	}
	vics := decode[[]api.SignIn](t, run(0, admin, "signin", "list", "--subject", "u-vic", "--json").stdout)
	var bossID string
	for _, g := range all {
		if g.Subject == "u-boss" {
			bossID = g.ID
		}
	}
	if len(vics) != 2 || bossID == "" {
		t.Fatalf("vic's sign-ins %+v, boss's %q", vics, bossID)
	}
	if out := run(0, admin, "signin", "show", bossID).stdout; !strings.Contains(out, "role:       admin (at sign-in: admin)") {
		t.Errorf("signin show: %s", out)
	}

	if out := run(0, admin, "signin", "revoke", bossID).stdout; !strings.Contains(out, "ended sign-in "+bossID) {
		t.Errorf("signin revoke: %s", out)
	}
	if s := meWith(t, addr, boss); s != http.StatusUnauthorized {
		t.Errorf("boss's cookie after signin revoke: %d", s)
	}
	if s := meWith(t, addr, vic1); s != http.StatusOK {
		t.Errorf("vic's cookie after boss's was ended: %d", s)
	}
	run(cli.ExitNotFound, admin, "signin", "revoke", bossID)
	run(cli.ExitUsage, admin, "signin", "revoke")
	run(cli.ExitUsage, admin, "signin", "revoke", bossID, "--subject", "u-vic")
	run(cli.ExitFailure, admin, "signin", "show", "not-an-id")
	run(cli.ExitDenied, viewer, "signin", "list")
	run(cli.ExitDenied, nil, "signin", "list")

	ended := decode[[]api.SignIn](t, run(0, admin, "signin", "revoke", "--subject", "u-vic", "--json").stdout)
	if len(ended) != 2 {
		t.Errorf("signin revoke --subject: %+v", ended)
	}
	for _, c := range []string{vic1, vic2} {
		if s := meWith(t, addr, c); s != http.StatusUnauthorized {
			t.Errorf("vic's cookie after signin revoke --subject: %d", s)
		}
	}
	if out := run(0, admin, "signin", "revoke", "--subject", "u-vic").stdout; !strings.Contains(out, "u-vic had no live sign-in") {
		t.Errorf("signin revoke --subject again: %s", out)
	}
}
