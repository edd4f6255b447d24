package main

import (
	"bytes"
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planserver/planserver/internal/apitest"
	"github.com/planserver/planserver/internal/db"
	"github.com/planserver/planserver/internal/dbtest"
)

// TestCopyNULToPostgres: a SQLite database written before NUL was refused
// may hold NULs. It stays readable; planserver copy to PostgreSQL lists
// the rows that would not fit and writes nothing; with --replace-nul it
// copies them with U+FFFD in place of each NUL, and says so.
func TestCopyNULToPostgres(t *testing.T) {
	dbtest.RequirePostgres(t)
	src := filepath.Join(t.TempDir(), "old.db")
	env := apitest.Open(t, src)
	if r := env.Call("POST", "/v1/sessions", map[string]any{"id": "s", "title": "fine"}); r.Status != http.StatusCreated {
		t.Fatalf("session: %d %s", r.Status, r.Body)
	}
	if r := env.Call("PUT", "/v1/plans/p", map[string]any{"content": "# P", "title": "fine"}); r.Status != http.StatusCreated {
		t.Fatalf("plan: %d %s", r.Status, r.Body)
	}
	// What an older server let through, written as it stored it.
	if err := env.DB.Write(context.Background(), func(tx *db.Tx) error {
		if _, err := tx.Exec("UPDATE sessions SET title = 'a' || char(0) || 'b' WHERE id = 's'"); err != nil {
			return err
		}
		_, err := tx.Exec("UPDATE plan_contents SET content = '# P' || char(0) WHERE name = 'p'")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	// Still readable on SQLite.
	r := env.Call("GET", "/v1/plans/p", nil)
	if r.Status != http.StatusOK || !strings.Contains(string(r.Body), `# P\u0000`) {
		t.Fatalf("reading a plan holding NUL on SQLite: %d %s", r.Status, r.Body)
	}
	env.Close()

	to := dbtest.Fresh(t)
	out, err := copyCmd(t, src, to)
	if err == nil || !strings.Contains(err.Error(), "NUL") || !strings.Contains(err.Error(), `sessions pk="1": title`) ||
		!strings.Contains(err.Error(), `plan_contents name="p" content_rev="1": content`) || !strings.Contains(err.Error(), "--replace-nul") {
		t.Fatalf("copy of a source holding NULs: %v\n%s", err, out)
	}
	// Nothing was written: the same target takes the copy afterwards.
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"copy", "--from", src, "--to", to, "--replace-nul"}, noEnv, &stdout, &stderr); err != nil {
		t.Fatalf("copy --replace-nul: %v\n%s%s", err, stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), "replaced NUL (U+0000) with U+FFFD in 2 values") {
		t.Errorf("copy --replace-nul says: %s", stdout.String())
	}
	pg := apitest.Open(t, to)
	if r := pg.Call("GET", "/v1/plans/p", nil); r.Status != http.StatusOK || !strings.Contains(string(r.Body), "# P\uFFFD") {
		t.Errorf("plan on PostgreSQL: %d %s", r.Status, r.Body)
	}
	if r := pg.Call("GET", "/v1/sessions/s", nil); r.Status != http.StatusOK || !strings.Contains(string(r.Body), "a\uFFFDb") {
		t.Errorf("session on PostgreSQL: %d %s", r.Status, r.Body)
	}
}
