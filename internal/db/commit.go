package db

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// Group commit. Every write transaction is queued for one goroutine that
// owns the writer connection. It takes whatever is queued (up to maxBatch)
// and runs it in one database transaction, each write in a savepoint of
// its own, then commits once and only then answers every write of the
// batch. A batch never waits for company: when the writer is idle the
// first write runs at once, alone; under load the writes that queued while
// the previous batch committed share the next commit, so the cost of a
// commit (an fsync at --durability full) is paid once per batch.
//
// The guarantees of a single writer hold: writes run one at a time in
// queue order, each sees every earlier one, event seqs are assigned in
// that order and become visible together at the commit, so seq order is
// commit order. On PostgreSQL, keyed writes (DB.WriteKeyed) have a queue
// and committer of their own, whose batches run beside those of other
// keys (pipeline.lockKeys); seq order stays commit order.

// ErrClosed is answered to writes after Close.
var ErrClosed = errors.New("database is closed")

type writeReq struct {
	ctx    context.Context
	queued time.Time // for its db.queue span
	fn     func(tx *Tx) error
	// key is the lock of a keyed write (WriteKeyed, Key.lock), and first
	// the read it runs first, if it declared one (WriteKeyedFirst).
	key   int32
	first *Query
	done  chan error
}

// committer runs the batches of one queue, on loops connections at once.
// The main committer has one; on PostgreSQL the keyed committer (keyed
// set, WriteKeyed) has several, whose batches run side by side.
type committer struct {
	db       *DB
	maxBatch int
	keyed    bool
	queue    chan *writeReq
	waiting  atomic.Int64
	quit     chan struct{}
	loops    sync.WaitGroup
	stopOnce sync.Once
}

func newCommitter(db *DB, maxBatch, loops int, keyed bool) *committer {
	c := &committer{db: db, maxBatch: maxBatch, keyed: keyed, queue: make(chan *writeReq, 4*maxBatch),
		quit: make(chan struct{})}
	c.loops.Add(loops)
	for range loops {
		go c.loop()
	}
	return c
}

func (c *committer) queued() int { return int(c.waiting.Load()) }

// do queues fn and waits for its outcome. Once queued, it waits even if
// ctx ends: the write may already be in a commit, and its caller must not
// be told it failed when it did not.
func (c *committer) do(ctx context.Context, key int32, first *Query, fn func(tx *Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	ctx, sp := startWrite(ctx)
	if sp != nil {
		defer sp.End()
	}
	req := &writeReq{ctx: ctx, fn: fn, key: key, first: first, done: make(chan error, 1)}
	if sp != nil {
		req.queued = time.Now()
	}
	c.waiting.Add(1)
	select {
	case c.queue <- req:
	case <-ctx.Done():
		c.waiting.Add(-1)
		return ctx.Err()
	case <-c.quit:
		c.waiting.Add(-1)
		return ErrClosed
	}
	return <-req.done
}

// stop ends the loops after the batches in flight; writes still queued
// are answered ErrClosed.
func (c *committer) stop() {
	c.stopOnce.Do(func() { close(c.quit) })
	c.loops.Wait()
}

func (c *committer) loop() {
	defer c.loops.Done()
	batch := make([]*writeReq, 0, c.maxBatch)
	for {
		var first *writeReq
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
			case r := <-c.queue:
				batch = append(batch, r)
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
		case r := <-c.queue:
			c.waiting.Add(-1)
			r.done <- ErrClosed
		default:
			return
		}
	}
}

// run executes one batch and answers each of its writes: SQLite's one
// writer; PostgreSQL's batches travel in pipelines (runPipelined).
func (c *committer) run(batch []*writeReq) {
	if c.db.eng.name() == "postgres" {
		c.runPipelined(batch)
		return
	}
	errs := make([]error, len(batch))
	defer func() {
		for i, r := range batch {
			r.done <- errs[i]
		}
	}()
	db := c.db
	started := time.Now()
	// The batch's statements run under a context no client can cancel:
	// interrupting one would roll back every write of the batch.
	ctx := context.Background()
	sqlTx, err := db.writer.BeginTx(ctx, nil)
	if err != nil {
		err = db.health.failed(fmt.Errorf("begin write: %w", Classify(err)))
		for i := range errs {
			errs[i] = err
		}
		return
	}
	alone := len(batch) == 1
	changed := false
	for i, r := range batch {
		if err := r.ctx.Err(); err != nil {
			errs[i] = err // gave up while queued; nothing of it ran
			continue
		}
		if !alone {
			if _, err := sqlTx.ExecContext(ctx, "SAVEPOINT w"); err != nil {
				c.abort(sqlTx, batch, errs, fmt.Errorf("savepoint: %w", Classify(err)))
				return
			}
		}
		// The write's statements carry its caller's values (who acts) but
		// not its cancellation (see above).
		tx := &Tx{tx: sqlTx, eng: db.eng, now: db.Now(), ctx: context.WithoutCancel(r.ctx)}
		if errs[i] = runWrite(r.fn, tx); errs[i] != nil {
			if alone {
				_ = sqlTx.Rollback()
				db.health.sawError(errs[i])
				return
			}
			// Undo this write alone. If that is impossible, the engine
			// has already rolled the whole transaction back (SQLite does
			// on a full disk or an I/O error): every write of the batch
			// is lost and none may be acknowledged.
			if _, err := sqlTx.ExecContext(ctx, "ROLLBACK TO w"); err != nil {
				c.abort(sqlTx, batch, errs, errs[i])
				return
			}
			if _, err := sqlTx.ExecContext(ctx, "RELEASE w"); err != nil {
				c.abort(sqlTx, batch, errs, errs[i])
				return
			}
			continue
		}
		if !alone {
			if _, err := sqlTx.ExecContext(ctx, "RELEASE w"); err != nil {
				c.abort(sqlTx, batch, errs, fmt.Errorf("release savepoint: %w", Classify(err)))
				return
			}
		}
		changed = true
	}
	if !changed {
		_ = sqlTx.Rollback()
		return
	}
	commitStart := time.Now()
	err = sqlTx.Commit()
	emitSpans(batch, started, []span{{name: "db.commit", start: commitStart, end: time.Now(), owner: infra, err: err}})
	// Moved whether or not the commit succeeded: a failed commit may still
	// have reached the disk, and nothing is acknowledged before this.
	db.generation.Add(1)
	if err != nil {
		err = db.health.failed(fmt.Errorf("commit: %w", Classify(err)))
		for i := range errs {
			if errs[i] == nil {
				errs[i] = err
			}
		}
		return
	}
	db.health.ok()
	db.committed()
}

// abort rolls back a batch that cannot go on and fails every write of it
// that had not failed already with cause.
func (c *committer) abort(sqlTx interface{ Rollback() error }, batch []*writeReq, errs []error, cause error) {
	_ = sqlTx.Rollback()
	cause = c.db.health.failed(cause)
	for i := range batch {
		if errs[i] == nil {
			errs[i] = cause
		}
	}
}

// runWrite calls fn, turning a panic into an error: the committer serves
// every writer and must outlive a bug in one of them.
func runWrite(fn func(tx *Tx) error, tx *Tx) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic in write transaction: %v\n%s", p, debug.Stack())
		}
	}()
	return fn(tx)
}
