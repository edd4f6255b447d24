package sqlite

import (
	"context"
	"database/sql"
	"sync"
	"time"
)

// SQLite in WAL mode appends every commit to the -wal file; a checkpoint
// copies those pages back into the database file (and, at synchronous
// NORMAL, fsyncs both). By default SQLite runs it inside the commit that
// takes the WAL past 1,000 pages, in the writer's own connection: that one
// commit, and every write queued behind it in the group commit, waits for
// the copy and the fsyncs. These waits were the tail of write latency
// (docs/benchmarks.md). So the writer leaves checkpoints to a connection of
// their own, which runs one shortly after commits, off the write path.

// checkpointDelay is how long after a commit the background checkpoint
// runs: the commits of that window share one checkpoint.
const checkpointDelay = 100 * time.Millisecond

// writerAutocheckpoint is the writer's own checkpoint threshold (pages), a
// backstop only: the background checkpoint keeps the WAL far below it,
// unless it fails or cannot keep up, and then the writer checkpoints as
// SQLite does by default, at a size that bounds the WAL (about 40 MiB).
const writerAutocheckpoint = 10000

// checkpointer runs PASSIVE checkpoints in the background after commits.
// PASSIVE never waits for a lock and never blocks the writer or readers;
// a frame a reader still needs is left for the next round.
type checkpointer struct {
	conn    *sql.DB // one connection of its own
	wake    chan struct{}
	stop    chan struct{}
	stopped chan struct{}
	once    sync.Once
}

func newCheckpointer(conn *sql.DB) *checkpointer {
	c := &checkpointer{conn: conn, wake: make(chan struct{}, 1), stop: make(chan struct{}), stopped: make(chan struct{})}
	go c.run()
	return c
}

// committed tells the checkpointer that a commit added to the WAL.
func (c *checkpointer) committed() {
	select {
	case c.wake <- struct{}{}:
	default: // one is pending already
	}
}

func (c *checkpointer) run() {
	defer close(c.stopped)
	for {
		select {
		case <-c.stop:
			return
		case <-c.wake:
		}
		select {
		case <-c.stop:
			return
		case <-time.After(checkpointDelay):
		}
		// An error (SQLITE_BUSY from a backup's checkpoint, a full disk)
		// leaves the pages in the WAL: the next commit wakes another try,
		// and the writer's backstop bounds the WAL meanwhile.
		_, _ = c.conn.ExecContext(context.Background(), "PRAGMA wal_checkpoint(PASSIVE)")
	}
}

// close stops the checkpointer and closes its connection; the writer's
// last close checkpoints what is left, as SQLite does.
func (c *checkpointer) close() error {
	c.once.Do(func() { close(c.stop) })
	<-c.stopped
	return c.conn.Close()
}
