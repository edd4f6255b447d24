package db

import (
	"testing"

	"github.com/planserver/planserver/migrations"
)

// TestEnginesEndAtTheSameVersion: a version means one schema on every
// engine, so both directories end at the version this binary reports.
func TestEnginesEndAtTheSameVersion(t *testing.T) {
	if s, p := newestVersion(migrations.SQLite), newestVersion(migrations.Postgres); s != p || KnownVersion() != s {
		t.Fatalf("SQLite migrations end at %d, PostgreSQL's at %d (KnownVersion %d): add the missing one", s, p, KnownVersion())
	}
}
