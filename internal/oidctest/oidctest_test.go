package oidctest_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/planserver/planserver/internal/oidctest"
)

const redirect = "http://127.0.0.1:1/callback"

func start(t *testing.T, o oidctest.Options) (*oidctest.Provider, *oidc.Provider, oauth2.Config) {
	t.Helper()
	p, err := oidctest.Start(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	p.AddRedirectURI(redirect)
	rp, err := oidc.NewProvider(context.Background(), p.Issuer)
	if err != nil {
		t.Fatal(err)
	}
	return p, rp, oauth2.Config{ClientID: p.ClientID, ClientSecret: p.ClientSecret, Endpoint: rp.Endpoint(),
		RedirectURL: redirect, Scopes: []string{oidc.ScopeOpenID, "email", "profile"}}
}

// code follows the provider's redirects from the authorization request to
// the client's redirect URI and returns its code.
func code(t *testing.T, authURL string) string {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 10 * time.Second,
		CheckRedirect: func(r *http.Request, _ []*http.Request) error {
			if strings.HasPrefix(r.URL.String(), redirect) {
				return http.ErrUseLastResponse
			}
			return nil
		}}
	resp, err := c.Get(authURL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, _ := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusFound || loc == nil || loc.Query().Get("code") == "" {
		t.Fatalf("the authorization request ended with %d at %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	return loc.Query().Get("code")
}

// TestQueuedUserClaims: a queued user signs in without the login page,
// and the ID token and UserInfo carry what User says.
func TestQueuedUserClaims(t *testing.T) {
	p, rp, cfg := start(t, oidctest.Options{ClaimsInIDToken: true})
	ctx := context.Background()
	p.QueueUser(oidctest.User{Subject: "u-mal", Email: "boss@example.com", Name: "Mal", Groups: []string{"g"},
		EmailUnverified: true, UserInfoOnly: []string{"groups"}, UserInfoSubject: "someone-else"})
	if !strings.HasPrefix(cfg.AuthCodeURL("st"), p.AuthorizationEndpoint()) {
		t.Fatalf("authorization endpoint %q, discovery says %q", p.AuthorizationEndpoint(), cfg.Endpoint.AuthURL)
	}
	tok, err := cfg.Exchange(ctx, code(t, cfg.AuthCodeURL("st", oidc.Nonce("n1"))))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := tok.Extra("id_token").(string)
	idt, err := rp.Verifier(&oidc.Config{ClientID: p.ClientID}).Verify(ctx, raw)
	if err != nil {
		t.Fatal(err)
	}
	var claims map[string]any
	_ = idt.Claims(&claims)
	if idt.Subject != "u-mal" || idt.Nonce != "n1" || claims["email"] != "boss@example.com" || claims["email_verified"] != false ||
		claims["name"] != "Mal" || claims["groups"] != nil || claims["preferred_username"] != nil {
		t.Errorf("ID token claims %v", claims)
	}
	info, err := rp.UserInfo(ctx, oauth2.StaticTokenSource(tok))
	if err != nil {
		t.Fatal(err)
	}
	_ = info.Claims(&claims)
	if info.Subject != "someone-else" || info.EmailVerified || len(claims["groups"].([]any)) != 1 {
		t.Errorf("UserInfo %v", claims)
	}
	if p.LoginPages() != 0 {
		t.Errorf("%d login pages shown", p.LoginPages())
	}
}

// TestIDTokenAndNoEndSession: IDToken mints what the provider's keys
// verify, and NoEndSession leaves RP-initiated logout out of discovery.
func TestIDTokenAndNoEndSession(t *testing.T) {
	p, rp, _ := start(t, oidctest.Options{NoEndSession: true})
	v := rp.Verifier(&oidc.Config{ClientID: p.ClientID})
	ctx := context.Background()
	raw, err := p.IDToken(oidctest.TokenClaims{Subject: "u", Nonce: "n", Email: "u@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	if idt, err := v.Verify(ctx, raw); err != nil || idt.Nonce != "n" {
		t.Fatalf("minted token: %v", err)
	}
	for name, c := range map[string]oidctest.TokenClaims{
		"expired":          {Subject: "u", Expiry: time.Now().Add(-time.Minute)},
		"another audience": {Subject: "u", Audience: "x"},
	} {
		raw, _ := p.IDToken(c)
		if _, err := v.Verify(ctx, raw); err == nil {
			t.Errorf("%s: verified", name)
		}
	}
	var meta map[string]any
	if err := rp.Claims(&meta); err != nil || meta["end_session_endpoint"] != nil || meta["userinfo_endpoint"] == nil {
		t.Errorf("discovery %v: %v", meta, err)
	}
	resp, err := http.Get(p.Issuer + "/.well-known/openid-configuration")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&meta); err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("discovery: %d %v", resp.StatusCode, err)
	}
}
