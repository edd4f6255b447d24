package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/planserver/planserver/internal/oidctest"
)

// signIn measures what a sign-in cookie costs against a bearer token: the
// same GET of one session, on one server with --auth token and sign-in
// through an OIDC provider (internal/oidctest, in this process, on loopback), once
// with the cookie of a signed-in person and once with an admin token. The
// goal (issue 26) is the cookie's throughput within 10% of the token's.
func (b *bench) signIn(ctx context.Context) error {
	// The provider's ID tokens carry the email, so the sign-in asks no
	// UserInfo; its request log is discarded (planbench logs nothing
	// through slog, whose default the provider's logger becomes).
	idp, err := oidctest.Start(oidctest.Options{ClaimsInIDToken: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return fmt.Errorf("start the OIDC provider: %w", err)
	}
	defer func() { _ = idp.Close() }()
	db := filepath.Join(b.dir, "signin.db")
	out, err := exec.Command(b.o.bin, "token", "create", "--role", "admin", "--name", "bench", "--db", db).Output()
	if err != nil {
		return fmt.Errorf("planserver token create: %w", err)
	}
	token := strings.TrimSpace(string(out))
	addr, err := freeAddr()
	if err != nil {
		return err
	}
	base := "http://" + addr
	idp.AddRedirectURI(base + "/auth/callback")
	// The person who signs in; admin=domain:example.com maps them.
	idp.QueueUser(oidctest.User{Subject: "u-jane", Email: "jane.doe@example.com"})
	o := b.o
	o.serverEnv = append(append([]string{}, o.serverEnv...), "PLANSERVER_OIDC_CLIENT_SECRET="+idp.ClientSecret)
	srv, err := o.start("--auth token with sign-in", base, "/readyz", o.bin, "serve", "--addr", addr, "--db", db,
		"--log-format", "json", "--auth", "token", "--rate-limit", "0",
		"--oidc-issuer", idp.Issuer, "--oidc-client-id", idp.ClientID,
		"--oidc-redirect-url", base+"/auth/callback", "--oidc-roles", "admin=domain:example.com")
	if err != nil {
		return err
	}
	defer srv.stop()
	cookie, err := signInCookie(base)
	if err != nil {
		return err
	}
	bearer := map[string]string{"Authorization": "Bearer " + token}
	if err := expect(b.c, "POST", base+"/v1/sessions", strings.NewReader(`{"id":"signin-bench","title":"bench"}`),
		map[string]string{"Authorization": "Bearer " + token, "Content-Type": "application/json"}, 201); err != nil {
		return err
	}
	withCookie := map[string]string{"Cookie": cookie}
	if err := expect(b.c, "GET", base+"/v1/me", nil, withCookie, 200); err != nil {
		return fmt.Errorf("the sign-in cookie is refused: %w", err)
	}
	get := func(name string, header map[string]string) side {
		return side{name: name, proc: srv, profile: "get-session-" + strings.Fields(name)[len(strings.Fields(name))-1],
			op: func(ctx context.Context, w, i int) error {
				return expect(b.c, "GET", base+"/v1/sessions/signin-bench", nil, header, 200)
			}}
	}
	b.compare(ctx, get("GET /v1/sessions/{id} with the sign-in cookie", withCookie),
		get("GET /v1/sessions/{id} with a bearer token", bearer))
	return nil
}

// signInCookie signs in through the provider as a browser would (login,
// the provider's redirect, the callback) and returns the Cookie header.
func signInCookie(base string) (string, error) {
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 10 * time.Second}
	resp, err := c.Get(base + "/auth/login")
	if err != nil {
		return "", fmt.Errorf("sign in: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Request.URL.Path, "/ui") {
		return "", fmt.Errorf("sign in: ended at %s with %d", resp.Request.URL, resp.StatusCode)
	}
	for _, ck := range resp.Request.Response.Cookies() {
		if ck.Name == "planserver_session" {
			return ck.Name + "=" + ck.Value, nil
		}
	}
	return "", fmt.Errorf("sign in: no planserver_session cookie was set")
}
