package postgres

import (
	"errors"
	"testing"

	"github.com/planserver/planserver/internal/db"
	"github.com/planserver/planserver/internal/db/drivertest"
	_ "github.com/planserver/planserver/internal/db/sqlite" // TestPostgresSchemaMatchesSQLite opens a SQLite file too
	"github.com/planserver/planserver/internal/dbtest"
)

// The conformance suite's helpers, by the names these tests use.
var (
	createKV      = drivertest.CreateKV
	mustExec      = drivertest.MustExec
	blockWriter   = drivertest.BlockWriter
	blockWriterOn = drivertest.BlockWriterOn
	waitQueued    = drivertest.WaitQueued
	keyedBatch    = drivertest.KeyedBatch
	heldKV        = drivertest.HeldKV
	recordEvent   = drivertest.RecordEvent
	eventPlans    = drivertest.EventPlans
)

// migrated opens dsn, migrated; two handles on one database are two
// replicas.
func migrated(t *testing.T, dsn string) *db.DB { return drivertest.Open(t, dsn, db.Options{}) }

// migratedWith is migrated, opened with opt.
func migratedWith(t *testing.T, dsn string, opt db.Options) *db.DB {
	return drivertest.Open(t, dsn, opt)
}

// kvDB opens a fresh database with one table to write to (CreateKV).
func kvDB(t *testing.T) *db.DB {
	t.Helper()
	d := migrated(t, dbtest.Fresh(t))
	createKV(t, d)
	return d
}

// faultOf returns err's storage fault when err is one of kind.
func faultOf(err error, kind error) (*db.Fault, bool) {
	var f *db.Fault
	return f, errors.As(err, &f) && f.Kind == kind
}
