package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/planserver/planserver/internal/dbtest"
)

// recordEvent appends an event of plan the way events.Record does
// (package events imports this one).
func recordEvent(tx *Tx, plan string) error {
	return tx.ExecAtEnd(`INSERT INTO events (type, time, actor, plan, data) VALUES ('test', ?, 'test', ?, '{}')`,
		tx.NowText(), plan)
}

// eventPlans lists the plans of the events in seq order, and fails the
// test unless the seqs run 1, 2, 3… without a gap.
func eventPlans(t *testing.T, d *DB) []string {
	t.Helper()
	return dbtest.EventLog(t, d.Reader(context.Background()), "plan")
}

// waitLockWaiters waits until n transactions wait for an advisory lock.
func waitLockWaiters(t *testing.T, d *DB, n int) {
	t.Helper()
	dbtest.WaitAdvisoryWaiters(t, d.Reader(context.Background()), n)
}

// TestPostgresKeyedWritesOfOtherKeysOverlap: on PostgreSQL a keyed write
// runs while a keyed write of another key is in flight on another
// replica; one of the same key, and any unkeyed write, waits for it. Events stay gap-free and in
// commit order: the write that commits first has the lower seq, whichever
// recorded its event first.
func TestPostgresKeyedWritesOfOtherKeysOverlap(t *testing.T) {
	dbtest.RequirePostgres(t)
	dsn := dbtest.Fresh(t)
	// Two replicas: each has one keyed writer (DefaultKeyedWriters).
	d, other := migrated(t, dsn), migrated(t, dsn)
	ctx := context.Background()
	keyA, keyB := Key{Kind: "plan", Name: "a"}, Key{Kind: "plan", Name: "b"}

	running, gate := make(chan struct{}), make(chan struct{})
	var release sync.Once
	open := func() { release.Do(func() { close(gate) }) }
	t.Cleanup(open) // before the database closes, which waits for it
	heldA := make(chan error, 1)
	go func() {
		heldA <- d.WriteKeyed(ctx, keyA, func(tx *Tx) error {
			// A read sends the batch's BEGIN and locks (pgcommit.go).
			var one int
			if err := tx.QueryRow(`SELECT 1`).Scan(&one); err != nil {
				return err
			}
			// Its event is recorded before it waits, and appended at the
			// end: meanwhile the counter's row stays free for others.
			if err := recordEvent(tx, "a1"); err != nil {
				return err
			}
			if err := tx.QueryRow(`SELECT 1`).Scan(&one); err != nil {
				return err // sent every statement queued before it
			}
			close(running)
			<-gate
			return nil
		})
	}()
	<-running

	doneB := make(chan error, 1)
	go func() {
		doneB <- other.WriteKeyed(ctx, keyB, func(tx *Tx) error { return recordEvent(tx, "b") })
	}()
	select {
	case err := <-doneB:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a keyed write of key b waited for one of key a")
	}

	sameKey, unkeyed := make(chan error, 1), make(chan error, 1)
	go func() {
		sameKey <- other.WriteKeyed(ctx, keyA, func(tx *Tx) error { return recordEvent(tx, "a2") })
	}()
	waitLockWaiters(t, d, 1)
	go func() {
		unkeyed <- other.Write(ctx, func(tx *Tx) error { return recordEvent(tx, "all") })
	}()
	waitLockWaiters(t, d, 2)
	select {
	case err := <-sameKey:
		t.Fatalf("a keyed write of key a ran beside another (%v)", err)
	case err := <-unkeyed:
		t.Fatalf("an unkeyed write ran beside a keyed one (%v)", err)
	default:
	}
	open()
	for _, ch := range []chan error{heldA, sameKey, unkeyed} {
		if err := <-ch; err != nil {
			t.Fatal(err)
		}
	}
	got := eventPlans(t, d)
	if len(got) != 4 || got[0] != "b" || got[1] != "a1" {
		t.Fatalf("events in seq order: %v; want b, a1, then a2 and all", got)
	}
	if !slices.Contains(got[2:], "a2") || !slices.Contains(got[2:], "all") {
		t.Fatalf("events in seq order: %v; want b, a1, then a2 and all", got)
	}
}

// TestPostgresUndoneKeyedWriteLeavesNoEvent: what a keyed write queued
// for the end of its batch goes with it when the write fails, by its own
// error or by a statement found failing after it ended (pgcommit.go's
// carried statements); the other writes of the batch keep their events,
// without a gap in the seqs.
func TestPostgresUndoneKeyedWriteLeavesNoEvent(t *testing.T) {
	dbtest.RequirePostgres(t)
	d := migratedWith(t, dbtest.Fresh(t), Options{KeyedWriters: 1})
	ctx := context.Background()
	createKV(t, d)
	// Each write but the last reads first, which carries the last
	// statements of the write before it (pgcommit.go); the last write's
	// go with the commit.
	write := func(plan string, k int, fail error) func(tx *Tx) error {
		return func(tx *Tx) error {
			var one int
			if plan != "p6" {
				if err := tx.QueryRow(`SELECT 1`).Scan(&one); err != nil {
					return err
				}
			}
			if err := recordEvent(tx, plan); err != nil {
				return err
			}
			if _, err := tx.Exec(`INSERT INTO kv (k, v) VALUES (?, ?)`, k, plan); err != nil {
				return err
			}
			return fail
		}
	}
	refused := errors.New("refused")
	writes := []struct {
		plan string
		k    int
		fail error
	}{
		{"p1", 1, nil},
		{"p2", 2, refused}, // fails by its own error
		{"p3", 1, nil},     // k 1 is taken: found by p4's read
		{"p4", 4, nil},
		{"p5", 4, nil}, // k 4 is taken: found with the commit
		{"p6", 6, nil},
	}
	// The one keyed writer is held, so the writes queued meanwhile share
	// the next batch.
	queued := make([]func() error, len(writes))
	for i, w := range writes {
		queued[i] = func() error { return d.WriteKeyed(ctx, Key{Kind: "plan", Name: w.plan}, write(w.plan, w.k, w.fail)) }
	}
	errs, _ := keyedBatch(t, d, write("held", 0, nil), queued)
	for i, w := range writes {
		err := errs[i]
		switch w.plan {
		case "p2":
			if !errors.Is(err, refused) {
				t.Errorf("write %s: %v, want its own error", w.plan, err)
			}
		case "p3", "p5":
			if err == nil {
				t.Errorf("write %s took a key already taken", w.plan)
			}
		default:
			if err != nil {
				t.Errorf("write %s: %v", w.plan, err)
			}
		}
	}
	if got, want := eventPlans(t, d), []string{"held", "p1", "p4", "p6"}; !slices.Equal(got, want) {
		t.Fatalf("events in seq order: %v, want %v", got, want)
	}
}

// TestPostgresKeyedWritesLoseNothing runs keyed read-modify-write
// increments of a few keys on two replicas with several keyed writers
// each, beside unkeyed writes that read every key: no increment is lost,
// no unkeyed write sees a keyed one half done, nothing deadlocks, and
// the event log holds one event per write without a gap.
func TestPostgresKeyedWritesLoseNothing(t *testing.T) {
	dbtest.RequirePostgres(t)
	dsn := dbtest.Fresh(t)
	a := migrated(t, dsn)
	b := migratedWith(t, dsn, Options{KeyedWriters: 3})
	ctx := context.Background()
	const keys = 4
	if err := a.Write(ctx, func(tx *Tx) error {
		if _, err := tx.Exec(`CREATE TABLE counters (k INTEGER PRIMARY KEY, n BIGINT NOT NULL, mirror BIGINT NOT NULL)`); err != nil {
			return err
		}
		_, err := tx.Exec(`INSERT INTO counters SELECT k, 0, 0 FROM generate_series(0, ?) AS k`, keys-1)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	// A keyed write reads its counter, records an event, and writes n and
	// its mirror in two statements: an unkeyed write that ran between
	// them would find them different.
	increment := func(k int) func(tx *Tx) error {
		return func(tx *Tx) error {
			var n int64
			if err := tx.QueryRow(`SELECT n FROM counters WHERE k = ?`, k).Scan(&n); err != nil {
				return err
			}
			if _, err := tx.Exec(`UPDATE counters SET n = ? WHERE k = ?`, n+1, k); err != nil {
				return err
			}
			if err := recordEvent(tx, fmt.Sprint(k)); err != nil {
				return err
			}
			_, err := tx.Exec(`UPDATE counters SET mirror = ? WHERE k = ?`, n+1, k)
			return err
		}
	}
	check := func(tx *Tx) error {
		var torn int
		if err := tx.QueryRow(`SELECT count(*) FROM counters WHERE n <> mirror`).Scan(&torn); err != nil {
			return err
		}
		if torn > 0 {
			return fmt.Errorf("%d counters half written", torn)
		}
		return recordEvent(tx, "check")
	}
	const workers, perWorker = 12, 40
	var wg sync.WaitGroup
	errs := make(chan error, workers*perWorker)
	for w := range workers {
		d := []*DB{a, b}[w%2]
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 1))
			for range perWorker {
				var err error
				if r.IntN(8) == 0 {
					err = d.Write(ctx, check)
				} else {
					k := r.IntN(keys)
					err = d.WriteKeyed(ctx, Key{Kind: "counter", Name: fmt.Sprint(k)}, increment(k))
				}
				if err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	events := eventPlans(t, a)
	if len(events) != workers*perWorker {
		t.Fatalf("%d events for %d writes", len(events), workers*perWorker)
	}
	perKey := map[string]int64{}
	for _, p := range events {
		perKey[p]++
	}
	rows, err := a.Reader(ctx).Query(`SELECT k, n FROM counters ORDER BY k`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var k, n int64
		if err := rows.Scan(&k, &n); err != nil {
			t.Fatal(err)
		}
		if want := perKey[fmt.Sprint(k)]; n != want {
			t.Errorf("counter %d = %d after %d increments: increments were lost", k, n, want)
		}
	}
}

// keyedBatch runs writes as one batch of the one keyed writer of d: a
// keyed write of its own, held, holds the writer while the writes queue
// in order, then lets them run. It returns each write's outcome and the
// round trips from the held write's start to the end of the writes.
// heldKV is the held write of keyedBatch for the tests of kv: one round
// trip, since it only writes.
func heldKV(tx *Tx) error {
	_, err := tx.Exec(`INSERT INTO kv (k, v) VALUES (-1, 'held') ON CONFLICT (k) DO NOTHING`)
	return err
}

func keyedBatch(t *testing.T, d *DB, held func(tx *Tx) error, writes []func() error) ([]error, int64) {
	t.Helper()
	before := d.RoundTrips()
	running, gate := make(chan struct{}), make(chan struct{})
	var release sync.Once
	open := func() { release.Do(func() { close(gate) }) }
	t.Cleanup(open)
	heldDone := make(chan error, 1)
	go func() {
		heldDone <- d.WriteKeyed(context.Background(), Key{Kind: "test", Name: "held"}, func(tx *Tx) error {
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
		waitQueued(t, d, i+1)
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

// TestPostgresKeyedReadsGoAhead: a batch of keyed writes that declare
// their first read (WriteKeyedFirst) sends those reads with its BEGIN and
// locks, so the whole batch costs two round trips however many writes it
// holds; each write gets its own row, as of the batch's start. A write of
// a key an earlier write of the batch changed reads for itself and sees
// what the batch did before it; a write's later reads, of its first row
// again or of another, see its own changes. A write refused after its row
// came, or undone by a statement that fails with the commit, goes alone.
// A declared read that fails begins the batch again without reads sent
// ahead.
func TestPostgresKeyedReadsGoAhead(t *testing.T) {
	dbtest.RequirePostgres(t)
	d := migratedWith(t, dbtest.Fresh(t), Options{KeyedWriters: 1})
	ctx := context.Background()
	createKV(t, d)
	mustExec(t, d, `INSERT INTO kv (k, v) VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd'), (6, 'f'), (100, 'taken')`)
	readV := `SELECT v FROM kv WHERE k = ?`
	// declaring is a keyed write of row k that declares read of row k as
	// its first statement.
	declaring := func(k int, read string, fn func(tx *Tx, first *Row) error) func() error {
		return func() error {
			return d.WriteKeyedFirst(ctx, Key{Kind: "kv", Name: fmt.Sprint(k)}, Query{SQL: read, Args: []any{k}}, fn)
		}
	}
	// value scans a row of readV ("(none)" when there is none); get reads
	// row k as declared; set sets it to v, inserting it when it is
	// missing.
	value := func(row *Row) (string, error) {
		var v string
		err := row.Scan(&v)
		if errors.Is(err, sql.ErrNoRows) {
			return "(none)", nil
		}
		return v, err
	}
	get := func(tx *Tx, k int) (string, error) { return value(tx.QueryRow(readV, k)) }
	set := func(tx *Tx, k int, v string) error {
		_, err := tx.Exec(`INSERT INTO kv (k, v) VALUES (?, ?) ON CONFLICT (k) DO UPDATE SET v = excluded.v`, k, v)
		return err
	}
	// rmw reads row k first, checks it reads want, and sets it to to.
	rmw := func(k int, want, to string) func() error {
		return declaring(k, readV, func(tx *Tx, first *Row) error {
			v, err := value(first)
			if err != nil {
				return err
			}
			if v != want {
				return fmt.Errorf("write of %d read %q, want %q", k, v, want)
			}
			return set(tx, k, to)
		})
	}

	t.Run("distinct keys", func(t *testing.T) {
		errs, trips := keyedBatch(t, d, heldKV, []func() error{
			rmw(1, "a", "a1"), rmw(2, "b", "b1"), rmw(3, "c", "c1"), rmw(4, "d", "d1"), rmw(5, "(none)", "e1"), rmw(6, "f", "f1"),
		})
		for i, err := range errs {
			if err != nil {
				t.Errorf("write %d: %v", i, err)
			}
		}
		// The held write's one, then the batch's: its start with every
		// read, and its commit with every change.
		if trips != 3 {
			t.Errorf("%d round trips, want 3: 1 for the held write, 2 for a batch of six", trips)
		}
	})

	t.Run("reads of their own", func(t *testing.T) {
		refused := errors.New("refused")
		errs, _ := keyedBatch(t, d, heldKV, []func() error{
			rmw(1, "a1", "a2"),
			rmw(1, "a2", "a3"), // key 1 again: sees the write before it
			declaring(2, readV, func(tx *Tx, first *Row) error { // its first read again: sees its own change
				if v, err := value(first); err != nil || v != "b1" {
					return fmt.Errorf("read %q, %v first, want b1", v, err)
				}
				if err := set(tx, 2, "b2"); err != nil {
					return err
				}
				if v, err := get(tx, 2); err != nil || v != "b2" {
					return fmt.Errorf("read %q, %v after its own update, want b2", v, err)
				}
				return nil
			}),
			declaring(3, readV, func(tx *Tx, first *Row) error { // another read after the declared one
				if v, err := value(first); err != nil || v != "c1" {
					return fmt.Errorf("read %q, %v first, want c1", v, err)
				}
				var v string
				if err := tx.QueryRow(`SELECT v || '!' FROM kv WHERE k = ?`, 3).Scan(&v); err != nil || v != "c1!" {
					return fmt.Errorf("read %q, %v, want c1!", v, err)
				}
				return nil
			}),
			declaring(4, readV, func(tx *Tx, first *Row) error { // refused after its row came: undone alone
				if _, err := value(first); err != nil {
					return err
				}
				if err := set(tx, 4, "refused"); err != nil {
					return err
				}
				return refused
			}),
			declaring(5, readV, func(tx *Tx, first *Row) error { // a duplicate found with the commit: undone alone
				if _, err := value(first); err != nil {
					return err
				}
				if err := set(tx, 5, "undone"); err != nil {
					return err
				}
				_, err := tx.Exec(`INSERT INTO kv (k, v) VALUES (100, 'dup')`)
				return err
			}),
			rmw(6, "f1", "f2"),
		})
		for i, err := range errs {
			switch i {
			case 4:
				if !errors.Is(err, refused) {
					t.Errorf("write %d: %v, want its own error", i, err)
				}
			case 5:
				if err == nil {
					t.Errorf("write %d inserted a key already taken", i)
				}
			default:
				if err != nil {
					t.Errorf("write %d: %v", i, err)
				}
			}
		}
	})

	t.Run("a declared read that fails", func(t *testing.T) {
		bad := `SELECT v::int FROM kv WHERE k = ?` // 'f2' is no integer
		errs, _ := keyedBatch(t, d, heldKV, []func() error{
			rmw(1, "a3", "a4"),
			declaring(6, bad, func(tx *Tx, first *Row) error {
				var v int
				return first.Scan(&v)
			}),
			rmw(2, "b2", "b3"),
		})
		if errs[0] != nil || errs[2] != nil {
			t.Errorf("the other writes: %v, %v", errs[0], errs[2])
		}
		if errs[1] == nil {
			t.Error("a read of 'f2' as an integer succeeded")
		}
	})

	var kv string
	if err := d.Reader(ctx).QueryRow(`SELECT string_agg(k || '=' || v, ',' ORDER BY k) FROM kv WHERE k BETWEEN 1 AND 100`).Scan(&kv); err != nil {
		t.Fatal(err)
	}
	if want := "1=a4,2=b3,3=c1,4=d1,5=e1,6=f2,100=taken"; kv != want {
		t.Errorf("rows %s, want %s", kv, want)
	}
}
