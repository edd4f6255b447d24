package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planserver/planserver/internal/oidctest"
)

// TestServeRefusesABadSignInSetup: each sign-in mistake stops serve before
// it listens, exit status non-zero, with a line that names what to fix.
func TestServeRefusesABadSignInSetup(t *testing.T) {
	idp, err := oidctest.Start(oidctest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = idp.Close() }()
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte(idp.ClientSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := "http://" + ln.Addr().String() + "/oidc"
	ln.Close()
	base := func(issuer, redirect, secretFile string, extra ...string) []string {
		args := []string{"--auth", "token", "--oidc-issuer", issuer, "--oidc-client-id", idp.ClientID,
			"--oidc-redirect-url", redirect, "--oidc-roles", "admin=email:a@example.com"}
		if secretFile != "" {
			args = append(args, "--oidc-client-secret-file", secretFile)
		}
		return append(args, extra...)
	}
	good := "http://127.0.0.1:8080/auth/callback"
	for _, tc := range []struct {
		name, want string
		args       []string
	}{
		{"unreachable issuer", "discovery failed", base(dead, good, secret)},
		{"missing secret", "client secret is missing", base(idp.Issuer, good, "")},
		{"unreadable secret file", "--oidc-client-secret-file", base(idp.Issuer, good, filepath.Join(dir, "nope"))},
		{"redirect path", "its path must be /auth/callback", base(idp.Issuer, "http://127.0.0.1:8080/cb", secret)},
		{"plain http off loopback", "plain http", base(idp.Issuer, "http://planserver.example.com/auth/callback", secret)},
		{"bad role rule", "--oidc-roles", base(idp.Issuer, good, secret, "--oidc-roles", "owner=email:a@example.com")},
		{"without --auth token", "needs --auth token", []string{"--oidc-issuer", idp.Issuer}},
		{"client id without issuer", "need --oidc-issuer", []string{"--auth", "token", "--oidc-client-id", "x"}},
	} {
		code, out := serveOnce(t, filepath.Join(dir, tc.name+".db"), tc.args...)
		if code == 0 || !strings.Contains(out, tc.want) {
			t.Errorf("%s: exit %d, want non-zero and %q in:\n%s", tc.name, code, tc.want, out)
		}
	}
}
