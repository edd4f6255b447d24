// Package migrated opens test databases with planserver's schema, on
// either engine. It sits beside dbtest, which imports nothing of
// planserver so that the db package's own tests can use it; this package
// imports db, so those tests cannot, and every other package's can.
package migrated

import (
	"testing"

	"github.com/planserver/planserver/internal/db"
	"github.com/planserver/planserver/internal/db/drivertest"
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

// OpenWith is Open with opt (a fixed clock, say): drivertest.Open, which
// the db packages' own tests use, with both engines registered here.
func OpenWith(tb testing.TB, dsn string, opt db.Options) *db.DB {
	tb.Helper()
	return drivertest.Open(tb, dsn, opt)
}

// Fresh opens a new, empty database for tb (dbtest.Fresh), migrated.
func Fresh(tb testing.TB) *db.DB {
	tb.Helper()
	return Open(tb, dbtest.Fresh(tb))
}
