// Package drivertest is the conformance suite of internal/db's drivers:
// what every engine owes the stores above it — group commit, a failed
// write rolled back alone, the transaction's clock, gap-free event seqs,
// keyed writes and their first reads, one snapshot per read, the commit
// version, storage faults, copy — judged by the same tests on each (as
// river's riverdrivertest judges its drivers). Each driver's tests run it
// against databases of their own engine (Exercise); what only one engine
// has (a pipeline's round trips, replicas, a statement cache) its own
// tests judge. It also gives those tests the helpers the suite uses. It
// is imported only by tests.
package drivertest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/planserver/planserver/internal/db"
	"github.com/planserver/planserver/internal/dbtest"
)

// Harness makes databases of the driver under test. The driver's package
// registers it (its init), so db.Open of a DSN Fresh returns opens it.
type Harness struct {
	// Fresh returns the DSN of a new, empty database, gone when tb ends.
	Fresh func(tb testing.TB) string
	// OnSmallDisk returns a fresh database whose data lives on a small
	// file system of size (say "4m") that the test fills (disktest.Fill),
	// and that file system's directory; it skips the test, saying why,
	// where it cannot make one (dbtest.OnSmallDisk).
	OnSmallDisk func(tb testing.TB, size string) (dsn, dir string)
}

// Exercise runs the suite against h's driver, each test a subtest.
func Exercise(t *testing.T, h Harness) {
	for _, c := range []struct {
		name string
		test func(*testing.T, Harness)
	}{
		{"WritesQueuedTogetherShareOneCommit", writesQueuedTogetherShareOneCommit},
		{"FailedWriteRollsBackAlone", failedWriteRollsBackAlone},
		{"PanicInWriteIsAnError", panicInWriteIsAnError},
		{"WriteCancelledWhileQueuedNeverRuns", writeCancelledWhileQueuedNeverRuns},
		{"TransactionClock", transactionClock},
		{"EventSeqsStayContiguousWhenAWriteRollsBack", eventSeqsStayContiguousWhenAWriteRollsBack},
		{"StatementFailuresStayTheirWrites", statementFailuresStayTheirWrites},
		{"ReadIsOneSnapshot", readIsOneSnapshot},
		{"SyntaxErrorsStillSurface", syntaxErrorsStillSurface},
		{"VersionMovesWithEveryCommit", versionMovesWithEveryCommit},
		{"KeyedWritesGetTheirFirstRow", keyedWritesGetTheirFirstRow},
		{"UndoneKeyedWriteLeavesNoEvent", undoneKeyedWriteLeavesNoEvent},
		{"DiskFullIsAFaultUntilFreed", diskFullIsAFaultUntilFreed},
		{"CopyKeepsKeysAndCounters", copyKeepsKeysAndCounters},
	} {
		t.Run(c.name, func(t *testing.T) { c.test(t, h) })
	}
}

// open opens a fresh database of h's driver, migrated.
func (h Harness) open(t *testing.T) *db.DB {
	t.Helper()
	return Open(t, h.Fresh(t), db.Options{})
}

// Open opens dsn with opt, migrated to the newest version and closed when
// tb ends. Two handles on one PostgreSQL database are two replicas.
func Open(tb testing.TB, dsn string, opt db.Options) *db.DB {
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

// kvDB opens a database with one table to write to.
func kvDB(t *testing.T, h Harness) *db.DB {
	t.Helper()
	d := h.open(t)
	CreateKV(t, d)
	return d
}

// CreateKV creates the table kv the write tests use: kv (k INTEGER
// PRIMARY KEY, v TEXT).
func CreateKV(t testing.TB, d *db.DB) {
	t.Helper()
	MustExec(t, d, `CREATE TABLE kv (k INTEGER PRIMARY KEY, v TEXT)`)
}

// MustExec runs one statement in a write of its own, and fails the test
// if the write fails.
func MustExec(t testing.TB, d *db.DB, query string, args ...any) {
	t.Helper()
	if err := d.Write(context.Background(), func(tx *db.Tx) error {
		_, err := tx.Exec(query, args...)
		return err
	}); err != nil {
		t.Fatal(err)
	}
}

func count(t *testing.T, d *db.DB) int {
	t.Helper()
	var n int
	if err := d.Reader(context.Background()).QueryRow(`SELECT count(*) FROM kv`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// BlockWriter holds the writer with a write that waits for release, and
// returns once it runs, so the writes queued meanwhile form one batch.
func BlockWriter(t testing.TB, d *db.DB) (release func(), done <-chan error) {
	t.Helper()
	return BlockWriterOn(t, d, func(tx *db.Tx) error {
		_, err := tx.Exec(`INSERT INTO kv (k, v) VALUES (-1, 'blocker')`)
		return err
	})
}

// BlockWriterOn is BlockWriter whose blocking write runs fn once released.
func BlockWriterOn(t testing.TB, d *db.DB, fn func(tx *db.Tx) error) (release func(), done <-chan error) {
	t.Helper()
	running, gate := make(chan struct{}), make(chan struct{})
	out := make(chan error, 1)
	go func() {
		out <- d.Write(context.Background(), func(tx *db.Tx) error {
			close(running)
			<-gate
			return fn(tx)
		})
	}()
	<-running
	return func() { close(gate) }, out
}

// WaitQueued waits until n writes wait for a writer.
func WaitQueued(t testing.TB, d *db.DB, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for d.QueueLength() < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d writes queued, want %d", d.QueueLength(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// HeldKV is the held write of KeyedBatch for the tests of kv: one round
// trip, since it only writes.
func HeldKV(tx *db.Tx) error {
	_, err := tx.Exec(`INSERT INTO kv (k, v) VALUES (-1, 'held') ON CONFLICT (k) DO NOTHING`)
	return err
}

// KeyedBatch runs writes as one batch of the writer that runs keyed
// writes (the one keyed writer of a database opened with KeyedWriters 1,
// or the one writer of all): a keyed write of its own, held, holds that
// writer while the writes queue in order, then lets them run. It returns
// each write's outcome and the round trips from the held write's start
// to the end of the writes (db.DB.RoundTrips).
func KeyedBatch(t testing.TB, d *db.DB, held func(tx *db.Tx) error, writes []func() error) ([]error, int64) {
	t.Helper()
	before := d.RoundTrips()
	running, gate := make(chan struct{}), make(chan struct{})
	var release sync.Once
	open := func() { release.Do(func() { close(gate) }) }
	t.Cleanup(open)
	heldDone := make(chan error, 1)
	go func() {
		heldDone <- d.WriteKeyed(context.Background(), db.Key{Kind: "test", Name: "held"}, func(tx *db.Tx) error {
			close(running)
			<-gate
			return held(tx)
		})
	}()
	<-running
	results := make([]chan error, len(writes))
	for i, w := range writes {
		results[i] = make(chan error, 1)
		go func() { results[i] <- w() }()
		WaitQueued(t, d, i+1)
	}
	open()
	if err := <-heldDone; err != nil {
		t.Fatal(err)
	}
	errs := make([]error, len(writes))
	for i := range writes {
		errs[i] = <-results[i]
	}
	return errs, d.RoundTrips() - before
}

// RecordEvent appends an event of plan the way events.Record does
// (package events imports db, so db's tests cannot import it).
func RecordEvent(tx *db.Tx, plan string) error {
	return tx.ExecAtEnd(`INSERT INTO events (type, time, actor, plan, data) VALUES ('test', ?, 'test', ?, '{}')`,
		tx.NowText(), plan)
}

// EventPlans lists the plans of the events in seq order, and fails the
// test unless the seqs run 1, 2, 3… without a gap.
func EventPlans(t testing.TB, d *db.DB) []string {
	t.Helper()
	return dbtest.EventLog(t, d.Reader(context.Background()), "plan")
}

// faultOf returns err's storage fault when err is one of kind.
func faultOf(err error, kind error) (*db.Fault, bool) {
	var f *db.Fault
	return f, errors.As(err, &f) && f.Kind == kind
}
