package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/planserver/planserver/internal/dbtest"
)

// Every raw shape but the one-row diagnostic does the durable work of a
// conditional PUT: each acknowledged write is visible to another
// connection at once, at the next revision, with its 2 KiB; and a write
// whose row has moved behind the worker's back fails with errStale and
// writes nothing. The one-row diagnostic writes the one row (and, unchecked,
// loses updates). Needs
// PostgreSQL (.ci/postgres go test ./cmd/planbench).
func TestRawShapesDoTheDurableWork(t *testing.T) {
	dbtest.RequirePostgres(t)
	ctx := context.Background()
	dsn := dbtest.Fresh(t)
	other, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	const workers, writes = 8, 5
	for k, s := range rawShapes {
		t.Run(fmt.Sprint(k), func(t *testing.T) {
			table := fmt.Sprintf("shape_%d", k)
			tab, closeShape, err := s.open(ctx, dsn, table, workers)
			if err != nil {
				t.Fatal(err)
			}
			defer closeShape()
			op := s.side(tab).op
			t.Log(s.side(tab).name)
			stored := func(w int) (rev int64, size int) {
				t.Helper()
				if err := other.QueryRow(ctx, `SELECT revision, length(content) FROM `+table+` WHERE name = $1`, rowName(w)).Scan(&rev, &size); err != nil {
					t.Fatalf("%s: %v", rowName(w), err)
				}
				return rev, size
			}
			var wg sync.WaitGroup
			errs := make(chan error, workers*writes)
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range writes {
						if err := op(ctx, w, i); err != nil {
							errs <- err
							return
						}
						if s.shared {
							continue // one row: no revision of its own to see
						}
						if rev, _ := stored(w); rev != int64(i+1) {
							errs <- fmt.Errorf("worker %d: write %d acknowledged, another connection reads revision %d", w, i+1, rev)
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			if s.shared {
				// Unchecked reads then writes of one row lose updates: the
				// row moved on once for at least each write of one worker.
				if rev, size := stored(0); rev < writes || rev > workers*writes || size != 2048 {
					t.Errorf("one row: revision %d, %d bytes; want %d to %d, 2048", rev, size, writes, workers*writes)
				}
				return
			}
			for w := range workers {
				if rev, size := stored(w); rev != writes || size != 2048 {
					t.Errorf("%s: revision %d, %d bytes; want %d, 2048", rowName(w), rev, size, writes)
				}
			}
			// Another writer moves worker 3's row: the worker's next write
			// must see it and write nothing.
			if _, err := other.Exec(ctx, `UPDATE `+table+` SET revision = revision + 1, content = 'moved' WHERE name = $1`, rowName(3)); err != nil {
				t.Fatal(err)
			}
			if err := op(ctx, 3, writes); !errors.Is(err, errStale) {
				t.Errorf("a write on a row moved behind its back: %v, want errStale", err)
			}
			if rev, size := stored(3); rev != writes+1 || size != len("moved") {
				t.Errorf("after the refused write: revision %d, %d bytes; want %d, %d (the other writer's)", rev, size, writes+1, len("moved"))
			}
		})
	}
}

// The postgres section's baseline is the group commit on four committers
// (the fastest shape measured on 16 cores), never a diagnostic: the
// constant must follow when rawShapes changes.
func TestPostgresBaselineIsGroupCommitOnFourCommitters(t *testing.T) {
	if s := rawShapes[postgresBaseline]; s.diagnostic || s.set || s.writers != 4 {
		t.Errorf("the baseline is %+v", s)
	}
}

// A group committer puts at most one write of a row in a batch: a second
// one waits for the next, where its check sees the first. Sent as one
// statement, two writes of one row would fail the whole batch ("cannot
// affect row a second time"); sent as upserts one after the other, the
// second would see the first anyway.
func TestGroupCommitBatchesOneWriteOfARow(t *testing.T) {
	dbtest.RequirePostgres(t)
	ctx := context.Background()
	dsn := dbtest.Fresh(t)
	for k, s := range rawShapes {
		if s.writers != 1 {
			continue // one committer: the two writes commit in their order
		}
		t.Run(fmt.Sprint(k), func(t *testing.T) {
			tab, closeShape, err := s.open(ctx, dsn, fmt.Sprintf("dup_%d", k), 16)
			if err != nil {
				t.Fatal(err)
			}
			defer closeShape()
			rev := int64(0)
			for round := range 20 {
				// Others' writes keep the committer busy while the two
				// writes of plan-0 queue behind them, one after the other.
				var others []*pendingWrite
				for w := 1; w < 8; w++ {
					p := &pendingWrite{name: rowName(w), expect: int64(round), done: make(chan error, 1)}
					others = append(others, p)
					tab.queue <- p
				}
				first := &pendingWrite{name: rowName(0), expect: rev, done: make(chan error, 1)}
				second := &pendingWrite{name: rowName(0), expect: rev + 1, done: make(chan error, 1)}
				tab.queue <- first
				tab.queue <- second
				for _, p := range append(others, first, second) {
					if err := <-p.done; err != nil {
						t.Fatalf("round %d, %s expecting %d: %v", round, p.name, p.expect, err)
					}
				}
				if second.rev != rev+2 {
					t.Fatalf("round %d: the second write left revision %d, want %d", round, second.rev, rev+2)
				}
				rev = second.rev
			}
		})
	}
}
