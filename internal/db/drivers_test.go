package db_test

import (
	"strings"
	"testing"

	"github.com/planserver/planserver/internal/db"
	_ "github.com/planserver/planserver/internal/db/postgres" // the engines db.Open picks from
	_ "github.com/planserver/planserver/internal/db/sqlite"
)

// TestRedactHidesPasswords: the driver of a DSN names it in messages, a
// PostgreSQL URL without its password, a SQLite path as it is.
func TestRedactHidesPasswords(t *testing.T) {
	cases := map[string]string{
		"postgres://u:secret@db:5432/p?sslmode=disable": "postgres://u:xxxxx@db:5432/p?sslmode=disable",
		"postgresql://u@db/p?password=secret":           "postgresql://u@db/p?password=xxxxx",
		"postgres://db/p":                               "postgres://db/p",
		"/var/lib/planserver/planserver.db":             "/var/lib/planserver/planserver.db",
	}
	for in, want := range cases {
		if got := db.Redact(in); got != want || strings.Contains(got, "secret") {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestIsFileAsksTheDriver: a SQLite path is a file, which Lock keeps
// processes apart on; a PostgreSQL URL is a server's database, shared by
// its replicas.
func TestIsFileAsksTheDriver(t *testing.T) {
	for dsn, want := range map[string]bool{
		"planserver.db":                  true,
		"/var/lib/planserver/p.db":       true,
		"postgres://db/planserver":       false,
		"postgresql://u@db/p?sslmode=no": false,
	} {
		if got := db.IsFile(dsn); got != want {
			t.Errorf("IsFile(%q) = %v, want %v", dsn, got, want)
		}
	}
}
