// Command oidcprovider runs github.com/oauth2-proxy/mockoidc, an OIDC
// provider nobody here wrote, as a process of its own on a loopback
// address, for the browser test of sign-in (e2e/signin.test.mjs). It signs
// in one user (the flags) on every authorization request, without a login
// page of its own, and prints {"issuer": …} on stdout once it listens.
//
// Dex was the first choice for this test (a login page of its own), but
// its main branch does not build from the Go module proxy: its api/v2
// module is not published at the version it needs.
package main

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/oauth2-proxy/mockoidc"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "loopback `host:port` to listen on")
	clientID := flag.String("client-id", "planserver", "the client id")
	secret := flag.String("client-secret", "", "the client secret (required)")
	sub := flag.String("sub", "reviewer-1", "the user's subject")
	email := flag.String("email", "reviewer@example.com", "the user's email (verified)")
	name := flag.String("name", "reviewer", "the user's preferred_username")
	flag.Parse()
	if *secret == "" {
		fmt.Fprintln(os.Stderr, "oidcprovider: --client-secret is required")
		os.Exit(2)
	}
	host, _, err := net.SplitHostPort(*addr)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		fmt.Fprintln(os.Stderr, "oidcprovider: --addr must be a loopback address")
		os.Exit(2)
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		fail(err)
	}
	m, err := mockoidc.NewServer(key)
	if err != nil {
		fail(err)
	}
	m.ClientID, m.ClientSecret = *clientID, *secret
	user := &mockoidc.MockUser{Subject: *sub, Email: *email, EmailVerified: true, PreferredUsername: *name}
	// Every authorization request signs this user in.
	if err := m.AddMiddleware(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == mockoidc.AuthorizationEndpoint {
				m.QueueUser(user)
			}
			next.ServeHTTP(w, r)
		})
	}); err != nil {
		fail(err)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fail(err)
	}
	if err := m.Start(ln, nil); err != nil {
		fail(err)
	}
	_ = json.NewEncoder(os.Stdout).Encode(map[string]string{"issuer": m.Issuer()})
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	<-sig
	_ = m.Shutdown()
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "oidcprovider:", err)
	os.Exit(1)
}
