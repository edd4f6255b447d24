// Command oidcprovider runs zitadel's OpenID Provider
// (github.com/zitadel/oidc/v3, through internal/oidctest), an OIDC
// provider nobody here wrote, as a process of its own on a loopback
// address, for the browser test of sign-in (e2e/signin.test.mjs). It has
// its own login page (username and password), a session of its own that
// signs a returning browser in without asking again, and RP-initiated
// logout (end_session_endpoint) that ends that session. It registers one
// confidential web client and one user (the flags), and prints
// {"issuer": …} on stdout once it listens.
//
// Dex was the first choice for this test, but its main branch does not
// build from the Go module proxy (its api/v2 module is not published at
// the version it needs).
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/planserver/planserver/internal/oidctest"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "loopback `host:port` to listen on")
	clientID := flag.String("client-id", "planserver", "the client id")
	secret := flag.String("client-secret", "", "the client secret (required)")
	redirect := flag.String("redirect-uri", "", "the client's redirect URI (required), e.g. http://127.0.0.1:8080/auth/callback")
	postLogout := flag.String("post-logout-redirect-uri", "", "comma-separated URIs end_session may return to, e.g. http://127.0.0.1:8080/ui/")
	sub := flag.String("sub", "reviewer-1", "the user's subject")
	username := flag.String("username", "reviewer", "the user's login name")
	password := flag.String("password", "", "the user's password (required)")
	email := flag.String("email", "reviewer@example.com", "the user's email (verified)")
	given := flag.String("given-name", "Rita", "the user's given name")
	family := flag.String("family-name", "Reviewer", "the user's family name")
	flag.Parse()
	if *secret == "" || *redirect == "" || *password == "" {
		fmt.Fprintln(os.Stderr, "oidcprovider: --client-secret, --redirect-uri and --password are required")
		os.Exit(2)
	}
	var logouts []string
	if *postLogout != "" {
		logouts = strings.Split(*postLogout, ",")
	}
	p, err := oidctest.Start(oidctest.Options{Addr: *addr, ClientID: *clientID, ClientSecret: *secret,
		RedirectURIs: []string{*redirect}, PostLogoutRedirectURIs: logouts,
		Users: []oidctest.User{{Subject: *sub, Username: *username, Password: *password, Email: *email,
			GivenName: *given, FamilyName: *family}},
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		fmt.Fprintln(os.Stderr, "oidcprovider:", err)
		os.Exit(1)
	}
	_ = json.NewEncoder(os.Stdout).Encode(map[string]string{"issuer": p.Issuer})
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	<-sig
	_ = p.Close()
}
