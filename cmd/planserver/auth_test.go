package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestServeRefusesAuthNoneOffLoopback(t *testing.T) {
	for _, args := range [][]string{
		{"--addr", "0.0.0.0:0"},
		{"--addr", ":8080"},
		{"--addr", "[::]:0", "--auth", "none"},
		{"--addr", "192.0.2.1:8080"},
	} {
		db := filepath.Join(t.TempDir(), "x.db")
		var out, errOut bytes.Buffer
		err := run(context.Background(), append([]string{"serve", "--db", db}, args...), noEnv, &out, &errOut)
		if err == nil {
			t.Fatalf("%v: served without authentication off loopback", args)
		}
		for _, hint := range []string{"planserver token create --role admin", "--auth token", "loopback"} {
			if !strings.Contains(err.Error(), hint) {
				t.Errorf("%v: the refusal does not say %q: %v", args, hint, err)
			}
		}
		if _, statErr := os.Stat(db); !os.IsNotExist(statErr) {
			t.Errorf("%v: the database was opened before the refusal", args)
		}
	}
	// The environment counts as much as the flag.
	env := map[string]string{"PLANSERVER_ADDR": "0.0.0.0:0"}
	err := run(context.Background(), []string{"serve", "--db", filepath.Join(t.TempDir(), "x.db")},
		func(k string) string { return env[k] }, &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "--auth token") {
		t.Errorf("PLANSERVER_ADDR off loopback: %v", err)
	}
}

func TestIsLoopback(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:8080": true, "127.1.2.3:80": true, "[::1]:8080": true, "localhost:8080": true,
		"LocalHost:1": true, "0.0.0.0:8080": false, ":8080": false, "[::]:8080": false,
		"10.0.0.1:8080": false, "example.com:80": false, "127.0.0.1": false, "": false,
	} {
		if got := isLoopback(addr); got != want {
			t.Errorf("isLoopback(%q) = %v", addr, got)
		}
	}
}

func TestServeAccessFlags(t *testing.T) {
	base := config{Addr: "127.0.0.1:8080", Auth: "none", RateLimit: 50, RateBurst: 100}
	for name, tc := range map[string]struct {
		mod  func(*config)
		fail string
	}{
		"defaults":              {func(*config) {}, ""},
		"token anywhere":        {func(c *config) { c.Auth, c.Addr = "token", "0.0.0.0:8080" }, ""},
		"unknown auth":          {func(c *config) { c.Auth = "basic" }, "--auth"},
		"rate off":              {func(c *config) { c.RateLimit, c.RateBurst = 0, 0 }, ""},
		"no burst":              {func(c *config) { c.RateBurst = 0 }, "--rate-burst"},
		"negative rate":         {func(c *config) { c.RateLimit = -1 }, "--rate-limit"},
		"origins":               {func(c *config) { c.CORSOrigins = "https://a.example.com, http://localhost:5173" }, ""},
		"wildcard origin":       {func(c *config) { c.CORSOrigins = "*" }, "--cors-origins"},
		"wildcard subdomain":    {func(c *config) { c.CORSOrigins = "https://*.example.com" }, "--cors-origins"},
		"origin with a path":    {func(c *config) { c.CORSOrigins = "https://a.example.com/app" }, "--cors-origins"},
		"origin without scheme": {func(c *config) { c.CORSOrigins = "a.example.com" }, "--cors-origins"},
	} {
		c := base
		tc.mod(&c)
		err := c.validateAccess()
		if tc.fail == "" && err != nil || tc.fail != "" && (err == nil || !strings.Contains(err.Error(), tc.fail)) {
			t.Errorf("%s: %v", name, err)
		}
	}
	got, _ := origins(" https://a.example.com/ ,,http://localhost:5173")
	if strings.Join(got, " ") != "https://a.example.com http://localhost:5173" {
		t.Errorf("origins = %q", got)
	}
	var cfg config
	env := map[string]string{"PLANSERVER_AUTH": "token", "PLANSERVER_RATE_LIMIT": "5", "PLANSERVER_CORS_ORIGINS": "https://x.example"}
	if err := parseServe(&cfg, nil, func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	if cfg.Auth != "token" || cfg.RateLimit != 5 || cfg.RateBurst != 100 || cfg.CORSOrigins != "https://x.example" {
		t.Errorf("from the environment: %+v", cfg)
	}
}

// TestServeWithTokens runs the binary with --auth token and a token made
// by the CLI on the same database.
func TestServeWithTokens(t *testing.T) {
	db := filepath.Join(t.TempDir(), "p.db")
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"token", "create", "--role", "admin", "--name", "ops", "--db", db},
		noEnv, &out, &errOut); err != nil {
		t.Fatalf("token create: %v\n%s", err, errOut.String())
	}
	secret := strings.TrimSpace(out.String())
	p := start(t, db, "--auth", "token")
	if st, body := p.call(t, "POST", "/v1/sessions", `{"id":"s"}`); st != 401 {
		t.Errorf("without a token: %d %s", st, body)
	}
	if st, body := p.call(t, "POST", "/v1/sessions", `{"id":"s"}`, "Authorization", "Bearer "+secret); st != 201 ||
		!strings.Contains(string(body), `"id":"s"`) {
		t.Errorf("with the admin token: %d %s", st, body)
	}
	if st, _ := p.call(t, "GET", "/healthz", ""); st != 200 {
		t.Errorf("healthz: %d", st)
	}
}
