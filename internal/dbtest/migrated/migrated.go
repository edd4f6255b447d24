// Package migrated opens test databases with planserver's schema, on
// either engine. It sits beside dbtest, which imports nothing of
// planserver so that the db package's own tests can use it; this package
// imports db, so those tests cannot, and every other package's can.
package migrated

import (
	"context"
	"testing"

	"github.com/planserver/planserver/internal/db"
	_ "github.com/planserver/planserver/internal/db/postgres" // the engines its databases are on
	_ "github.com/planserver/planserver/internal/db/sqlite"
	"github.com/planserver/planserver/internal/dbtest"
)

// Open opens the database dsn, migrated to the newest version and closed
// when tb ends. Two handles on one PostgreSQL database are two replicas.
func Open(tb testing.TB, dsn string) *db.DB {
	tb.Helper()
	return OpenWith(tb, dsn, db.Options{})
}

// OpenWith is Open with opt (a fixed clock, say).
func OpenWith(tb testing.TB, dsn string, opt db.Options) *db.DB {
	tb.Helper()
	ctx := context.Background()
	d, err := db.Open(ctx, dsn, opt)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { d.Close() })
	if _, _, err := d.MigrateUp(ctx, nil); err != nil {
		tb.Fatal(err)
	}
	return d
}

// Fresh opens a new, empty database for tb (dbtest.Fresh), migrated.
func Fresh(tb testing.TB) *db.DB {
	tb.Helper()
	return Open(tb, dbtest.Fresh(tb))
}
