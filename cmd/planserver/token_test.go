package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTokenCommands(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "t.db")
	runIt := func(args ...string) (string, string, error) {
		var out, errOut bytes.Buffer
		err := run(context.Background(), args, noEnv, &out, &errOut)
		return out.String(), errOut.String(), err
	}
	mustRun := func(args ...string) string {
		t.Helper()
		out, errOut, err := runIt(args...)
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, errOut)
		}
		return out
	}
	admin := strings.TrimSpace(mustRun("token", "create", "--role", "admin", "--name", "alice", "--db", db))
	viewer := strings.TrimSpace(mustRun("token", "create", "--role", "viewer", "--ttl", "24h", "--db", db))
	if !strings.HasPrefix(admin, "ps_") || !strings.HasPrefix(viewer, "ps_") || admin == viewer {
		t.Fatalf("tokens %q %q", admin, viewer)
	}
	// An agent token needs an existing session.
	if _, errOut, err := runIt("token", "create", "--role", "agent", "--session", "ghost", "--db", db); err == nil {
		t.Errorf("agent token for a missing session: %s", errOut)
	}
	if _, _, err := runIt("token", "create", "--role", "agent", "--db", db); err == nil {
		t.Error("agent token without a session")
	}
	if _, _, err := runIt("token", "create", "--role", "root", "--db", db); err == nil {
		t.Error("unknown role accepted")
	}
	if _, _, err := runIt("token", "create", "--role", "admin", "--name", "alice", "--db", db); err == nil {
		t.Error("duplicate name accepted")
	}
	list := mustRun("token", "list", "--db", db)
	if !strings.Contains(list, "alice") || !strings.Contains(list, "viewer") || strings.Contains(list, admin) {
		t.Errorf("list:\n%s", list)
	}
	if out := mustRun("token", "revoke", "alice", "--db", db); !strings.Contains(out, `revoked token "alice"`) {
		t.Errorf("revoke: %s", out)
	}
	if _, _, err := runIt("token", "revoke", "nobody", "--db", db); err == nil {
		t.Error("revoking a missing token succeeded")
	}
	list = mustRun("token", "list", "--db", db)
	for _, line := range strings.Split(list, "\n") {
		if strings.HasPrefix(line, "alice ") && strings.HasSuffix(strings.TrimSpace(line), "-") {
			t.Errorf("alice not shown revoked: %q", line)
		}
	}
	// The database holds no plaintext token: not in the main file, not in
	// the WAL.
	for _, f := range []string{db, db + "-wal"} {
		raw, err := os.ReadFile(f)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		for _, secret := range []string{admin, viewer, admin[3:], viewer[3:]} {
			if bytes.Contains(raw, []byte(secret)) {
				t.Errorf("%s contains a plaintext token", filepath.Base(f))
			}
		}
	}
}
