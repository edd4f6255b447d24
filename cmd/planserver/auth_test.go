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
