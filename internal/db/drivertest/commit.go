package drivertest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/planserver/planserver/internal/db"
)

// Group commit and the write transaction.

// WritesQueuedTogetherShareOneCommit holds the writer, queues writes
// meanwhile, and checks they are committed together in one batch, in
// queue order, each answered only after that commit.
func writesQueuedTogetherShareOneCommit(t *testing.T, h Harness) {
	d := kvDB(t, h)
	var commits atomic.Int64
	d.OnCommit(func() { commits.Add(1) })
	release, blocked := BlockWriter(t, d)
	const n = 20
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := 0; i < n; i++ {
		WaitQueued(t, d, i) // queue in order i
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = d.Write(context.Background(), func(tx *db.Tx) error {
				// Each write sees every earlier one, as with one writer.
				var seen int
				if err := tx.QueryRow(`SELECT count(*) FROM kv WHERE k >= 0`).Scan(&seen); err != nil {
					return err
				}
				if seen != i {
					return fmt.Errorf("write %d saw %d earlier writes", i, seen)
				}
				_, err := tx.Exec(`INSERT INTO kv (k, v) VALUES (?, ?)`, i, fmt.Sprint(i))
				return err
			})
		}()
	}
	WaitQueued(t, d, n)
	release()
	if err := <-blocked; err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("write %d: %v", i, err)
		}
	}
	if got := count(t, d); got != n+1 {
		t.Errorf("%d rows, want %d", got, n+1)
	}
	// The blocker alone, then the n queued writes in one commit.
	if got := commits.Load(); got != 2 {
		t.Errorf("%d commits for %d writes, want 2 (the blocker, then one batch)", got, n+1)
	}
}

// FailedWriteRollsBackAlone puts a failing write between two others
// in one batch: its changes vanish, the others commit, and each gets its
// own answer.
func failedWriteRollsBackAlone(t *testing.T, h Harness) {
	d := kvDB(t, h)
	release, blocked := BlockWriter(t, d)
	refused := errors.New("refused")
	results := make([]error, 3)
	var wg sync.WaitGroup
	for i := 0; i < 3; i++ {
		WaitQueued(t, d, i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = d.Write(context.Background(), func(tx *db.Tx) error {
				if _, err := tx.Exec(`INSERT INTO kv (k, v) VALUES (?, 'x')`, i); err != nil {
					return err
				}
				if i == 1 {
					return refused // after its insert: the insert must be undone
				}
				return nil
			})
		}()
	}
	WaitQueued(t, d, 3)
	release()
	<-blocked
	wg.Wait()
	if results[0] != nil || results[2] != nil || !errors.Is(results[1], refused) {
		t.Fatalf("results %v", results)
	}
	var keys []int
	rows, err := d.Reader(context.Background()).Query(`SELECT k FROM kv WHERE k >= 0 ORDER BY k`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var k int
		if err := rows.Scan(&k); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	if fmt.Sprint(keys) != "[0 2]" {
		t.Errorf("kept rows %v, want [0 2]", keys)
	}
}

// PanicInWriteIsAnError: a write that panics fails alone; the writer
// serves the next one.
func panicInWriteIsAnError(t *testing.T, h Harness) {
	d := kvDB(t, h)
	err := d.Write(context.Background(), func(tx *db.Tx) error {
		if _, err := tx.Exec(`INSERT INTO kv (k, v) VALUES (1, 'x')`); err != nil {
			return err
		}
		panic("bug")
	})
	if err == nil {
		t.Fatal("a panicking write succeeded")
	}
	if err := d.Write(context.Background(), func(tx *db.Tx) error {
		_, err := tx.Exec(`INSERT INTO kv (k, v) VALUES (2, 'y')`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if got := count(t, d); got != 1 {
		t.Errorf("%d rows, want only the second write's", got)
	}
}

// WriteCancelledWhileQueuedNeverRuns: a caller that gives up while its
// write waits gets its context's error, and the write never runs.
func writeCancelledWhileQueuedNeverRuns(t *testing.T, h Harness) {
	d := kvDB(t, h)
	release, blocked := BlockWriter(t, d)
	ctx, cancel := context.WithCancel(context.Background())
	ran := atomic.Bool{}
	out := make(chan error, 1)
	go func() {
		out <- d.Write(ctx, func(tx *db.Tx) error {
			ran.Store(true)
			return nil
		})
	}()
	WaitQueued(t, d, 1)
	cancel()
	release()
	<-blocked
	if err := <-out; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled write answered %v", err)
	}
	if ran.Load() {
		t.Error("a write cancelled while queued ran")
	}
}

// TransactionClock: every statement of a transaction reads one
// clock, the database's, which tests may replace.
func transactionClock(t *testing.T, h Harness) {
	d := kvDB(t, h)
	at := time.Date(2030, 1, 2, 3, 4, 5, 6e6, time.UTC)
	d.SetClock(func() time.Time { return at })
	if err := d.Write(context.Background(), func(tx *db.Tx) error {
		if !tx.Now().Equal(at) || tx.NowText() != "2030-01-02T03:04:05.006Z" {
			return fmt.Errorf("tx clock %v %s", tx.Now(), tx.NowText())
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// EventSeqsStayContiguousWhenAWriteRollsBack: a write that appended an
// event and then failed inside a shared commit leaves no hole in the log:
// the next event takes the seq the failed one had, on every engine. (A
// PostgreSQL sequence would not give it back.)
func eventSeqsStayContiguousWhenAWriteRollsBack(t *testing.T, h Harness) {
	d := h.open(t)
	appendEvent := func(tx *db.Tx) (int64, error) {
		var seq int64
		err := tx.QueryRow(`INSERT INTO events (type, time, actor) VALUES ('test', ?, 'test') RETURNING seq`, tx.NowText()).Scan(&seq)
		return seq, err
	}
	release, blocked := BlockWriterOn(t, d, func(tx *db.Tx) error { _, err := appendEvent(tx); return err })
	refused := errors.New("refused")
	results := make([]error, 3)
	var wg sync.WaitGroup
	for i := 0; i < 3; i++ {
		WaitQueued(t, d, i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = d.Write(context.Background(), func(tx *db.Tx) error {
				if _, err := appendEvent(tx); err != nil {
					return err
				}
				if i == 1 {
					return refused // its event must go, and its seq be reused
				}
				return nil
			})
		}()
	}
	WaitQueued(t, d, 3)
	release()
	if err := <-blocked; err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if results[0] != nil || results[2] != nil || !errors.Is(results[1], refused) {
		t.Fatalf("results %v", results)
	}
	var next int64
	if err := d.Write(context.Background(), func(tx *db.Tx) (err error) { next, err = appendEvent(tx); return err }); err != nil {
		t.Fatal(err)
	}
	var n, lo, hi int64
	if err := d.Reader(context.Background()).QueryRow(`SELECT count(*), min(seq), max(seq) FROM events`).Scan(&n, &lo, &hi); err != nil {
		t.Fatal(err)
	}
	if n != 4 || lo != 1 || hi != 4 || next != 4 {
		t.Errorf("%d events from %d to %d (the last got %d), want 4 from 1 to 4", n, lo, hi, next)
	}
}

// StatementFailuresStayTheirWrites: statements whose rows nobody reads
// may reach a PostgreSQL server later than they are made (its pipeline):
// with the next write's first round trip, or with the commit. A duplicate
// key found there still fails only the write that made it, on both
// engines, alone or in a batch, and RowsAffected still counts.
func statementFailuresStayTheirWrites(t *testing.T, h Harness) {
	d := kvDB(t, h)
	ctx := context.Background()
	MustExec(t, d, `INSERT INTO kv (k, v) VALUES (100, 'taken')`)
	// Alone: the duplicate goes with the commit.
	if err := d.Write(ctx, func(tx *db.Tx) error {
		if _, err := tx.Exec(`INSERT INTO kv (k, v) VALUES (50, 'lost')`); err != nil {
			return err
		}
		_, err := tx.Exec(`INSERT INTO kv (k, v) VALUES (100, 'dup')`)
		return err
	}); err == nil {
		t.Fatal("a duplicate key alone was acknowledged")
	}
	release, blocked := BlockWriter(t, d)
	results := make([]error, 4)
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		WaitQueued(t, d, i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = d.Write(ctx, func(tx *db.Tx) error {
				if _, err := tx.Exec(`INSERT INTO kv (k, v) VALUES (?, 'x')`, i); err != nil {
					return err
				}
				if i%2 == 1 { // 1: in the middle of the batch; 3: last
					_, err := tx.Exec(`INSERT INTO kv (k, v) VALUES (100, 'dup')`)
					return err
				}
				res, err := tx.Exec(`UPDATE kv SET v = 'y' WHERE k = ?`, i)
				if err != nil {
					return err
				}
				if n, err := res.RowsAffected(); err != nil || n != 1 {
					return fmt.Errorf("rows affected %d, %v; want 1", n, err)
				}
				return nil
			})
		}()
	}
	WaitQueued(t, d, 4)
	release()
	if err := <-blocked; err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if results[0] != nil || results[2] != nil || results[1] == nil || results[3] == nil {
		t.Fatalf("results %v; want 1 and 3 to fail alone", results)
	}
	rows, err := d.Reader(ctx).Query(`SELECT k, v FROM kv WHERE k >= 0 ORDER BY k`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var kept []string
	for rows.Next() {
		var k int
		var v string
		if err := rows.Scan(&k, &v); err != nil {
			t.Fatal(err)
		}
		kept = append(kept, fmt.Sprint(k, " ", v))
	}
	if fmt.Sprint(kept) != "[0 y 2 y 100 taken]" {
		t.Errorf("kept rows %v, want [0 y 2 y 100 taken]", kept)
	}
}
