package db

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/planserver/planserver/internal/tracing"
)

// Group commit. Every write transaction is queued for a committer: one
// goroutine that takes whatever is queued (up to maxBatch) as a batch and
// hands it to its engine (Engine.Commit), which runs it in one database
// transaction, each write in a savepoint of its own, commits once and
// only then lets the committer answer every write of the batch. A batch
// never waits for company: when the committer is idle the first write
// runs at once, alone; under load the writes that queued while the
// previous batch committed share the next commit, so the cost of a
// commit (an fsync, a round trip) is paid once per batch.
//
// The guarantees of a single writer hold: writes run one at a time in
// queue order, each sees every earlier one, event seqs are assigned in
// that order and become visible together at the commit, so seq order is
// commit order. An engine that runs keyed writes (DB.WriteKeyed) beside
// the others has a queue and committer of them of its own, whose batches
// run beside those of other keys (Engine.KeyedWriters); seq order stays
// commit order.

// ErrClosed is answered to writes after Close.
var ErrClosed = errors.New("database is closed")

// Write is one queued write transaction, as its engine runs it (Batch).
type Write struct {
	db     *DB
	ctx    context.Context
	queued time.Time // for its db.queue span
	fn     func(tx *Tx) error
	// first is a keyed write's declared first read and fnFirst the
	// function that takes its row (WriteKeyedFirst); key is the hash of
	// a keyed write's key (Key.hash).
	first   *Query
	fnFirst func(tx *Tx, first *Row) error
	key     int32
	done    chan error
	// Err is the write's outcome, which the engine that runs it sets:
	// nil once it committed.
	Err error
}

// Context is the context of the write's caller. Its values travel with
// the write's statements; once the write runs, its cancellation does not
// (Run): interrupting a statement would roll back the whole batch.
func (w *Write) Context() context.Context { return w.ctx }

// Key is the write's key (DB.WriteKeyed), hashed: two keys may share one,
// and then their writes take turns, which costs time, never correctness.
// It is 0 for a write that is not keyed.
func (w *Write) Key() int32 { return w.key }

// First is the one-row read a keyed write declared it runs first
// (DB.WriteKeyedFirst), or nil. An engine may read it before the write
// runs, with other writes' (RunOn): no earlier write of the batch can
// have changed what the first write of a key reads.
func (w *Write) First() *Query { return w.first }

// Run runs the write with its statements sent one by one through
// database/sql on r, and returns its outcome; a panic in it is an error.
func (w *Write) Run(r Runner) error {
	return w.run(&Tx{r: r, eng: w.db.eng, now: w.db.Now(), ctx: context.WithoutCancel(w.ctx)}, nil)
}

// RunOn is Run with the statements going to st, and first, when not nil,
// the row of the write's declared first read, which the engine read
// ahead (First); when nil, the write reads it through st.
func (w *Write) RunOn(st Statements, first *Row) error {
	return w.run(&Tx{st: st, now: w.db.Now(), ctx: context.WithoutCancel(w.ctx)}, first)
}

// run calls the write's function, turning a panic into an error: the
// committer serves every writer and must outlive a bug in one of them.
func (w *Write) run(tx *Tx, first *Row) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic in write transaction: %v\n%s", p, debug.Stack())
		}
	}()
	if w.fnFirst == nil {
		return w.fn(tx)
	}
	if first == nil {
		first = tx.QueryRow(w.first.SQL, w.first.Args...)
	}
	return w.fnFirst(tx, first)
}

// Batch is the writes a committer hands its engine to run in one
// transaction and commit once (Engine.Commit).
type Batch struct {
	// Writes are the batch's writes in queue order. A write whose caller
	// gave up while it was queued (its Context is done) must not run:
	// its outcome is its context's error.
	Writes []*Write
	// Keyed marks a batch of keyed writes (Engine.KeyedWriters).
	Keyed bool

	c       *committer
	started time.Time
}

// TakeQueued adds to the batch the writes queued since it began, up to
// the largest batch, after its others, and returns how many it added.
func (b *Batch) TakeQueued() int {
	n := 0
	for len(b.Writes) < b.c.maxBatch {
		select {
		case w := <-b.c.queue:
			b.c.waiting.Add(-1)
			b.Writes = append(b.Writes, w)
			n++
		default:
			return n
		}
	}
	return n
}

// Failed records err when it is a storage fault, until a write commits
// again (DB.Ready), and returns it classified: a batch that cannot go on
// fails its writes with it.
func (b *Batch) Failed(err error) error { return b.c.db.health.failed(err) }

// SawError records err, a write's own failure, when it is a storage
// fault.
func (b *Batch) SawError(err error) { b.c.db.health.sawError(err) }

// Committed reports a commit that changed something: the database is
// healthy again, and the OnCommit hooks run.
func (b *Batch) Committed() {
	b.c.db.health.ok()
	b.c.db.committed()
}

// Trace makes the spans the engine recorded of the batch (round trips, a
// lock's wait, the commit), under each write's db.write span, when
// tracing is on.
func (b *Batch) Trace(spans []Span) {
	if tracing.Enabled() {
		emitSpans(b.Writes, b.started, spans)
	}
}

// committer runs the batches of one queue, on loops connections at once.
// The main committer has one; an engine's keyed committer (keyed set,
// Engine.KeyedWriters) may have several, whose batches run side by side.
type committer struct {
	db       *DB
	maxBatch int
	keyed    bool
	queue    chan *Write
	waiting  atomic.Int64
	quit     chan struct{}
	loops    sync.WaitGroup
	stopOnce sync.Once
}

func newCommitter(db *DB, maxBatch, loops int, keyed bool) *committer {
	c := &committer{db: db, maxBatch: maxBatch, keyed: keyed, queue: make(chan *Write, 4*maxBatch),
		quit: make(chan struct{})}
	c.loops.Add(loops)
	for range loops {
		go c.loop()
	}
	return c
}

func (c *committer) queued() int { return int(c.waiting.Load()) }

// do queues w and waits for its outcome. Once queued, it waits even if
// its ctx ends: the write may already be in a commit, and its caller must
// not be told it failed when it did not.
func (c *committer) do(ctx context.Context, w *Write) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	ctx, sp := startWrite(ctx)
	if sp != nil {
		defer sp.End()
		w.queued = time.Now()
	}
	w.db, w.ctx, w.done = c.db, ctx, make(chan error, 1)
	c.waiting.Add(1)
	select {
	case c.queue <- w:
	case <-ctx.Done():
		c.waiting.Add(-1)
		return ctx.Err()
	case <-c.quit:
		c.waiting.Add(-1)
		return ErrClosed
	}
	return <-w.done
}

// stop ends the loops after the batches in flight; writes still queued
// are answered ErrClosed.
func (c *committer) stop() {
	c.stopOnce.Do(func() { close(c.quit) })
	c.loops.Wait()
}

func (c *committer) loop() {
	defer c.loops.Done()
	batch := make([]*Write, 0, c.maxBatch)
	for {
		var first *Write
		select {
		case first = <-c.queue:
		case <-c.quit:
			c.drain()
			return
		}
		batch = append(batch[:0], first)
	fill:
		for len(batch) < c.maxBatch {
			select {
			case w := <-c.queue:
				batch = append(batch, w)
			default:
				break fill
			}
		}
		c.waiting.Add(-int64(len(batch)))
		c.run(batch)
	}
}

func (c *committer) drain() {
	for {
		select {
		case w := <-c.queue:
			c.waiting.Add(-1)
			w.done <- ErrClosed
		default:
			return
		}
	}
}

// run has the engine run one batch, then answers each of its writes.
func (c *committer) run(writes []*Write) {
	b := &Batch{Writes: writes, Keyed: c.keyed, c: c}
	if tracing.Enabled() {
		b.started = time.Now()
	}
	c.db.eng.Commit(b)
	for _, w := range b.Writes {
		w.done <- w.Err
	}
}
