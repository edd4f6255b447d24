package events

import (
	"context"
	"sync/atomic"

	"github.com/planserver/planserver/internal/db"
)

// HeadCache serves Head from memory between commits. Every snapshot GET
// carries the head (X-Event-Seq), and profiling showed that query taking a
// sixth of a plan read's CPU; the head only moves when something commits.
//
// The cache never reports a head above the log's: it holds only values it
// read. It may report one below it, for a request that starts after a
// commit but before that commit's hook marked the cache stale; a client
// resuming from such a head sees a change twice, never misses one, which is
// Head's promise anyway.
type HeadCache struct {
	db    *db.DB
	stale atomic.Bool
	head  atomic.Int64
}

// NewHeadCache returns a cache of db's head, invalidated by every commit
// made through db.Write.
func NewHeadCache(d *db.DB) *HeadCache {
	c := &HeadCache{db: d}
	c.stale.Store(true)
	d.OnCommit(func() { c.stale.Store(true) })
	return c
}

// Head returns the log's head, reading it only after a commit.
func (c *HeadCache) Head(ctx context.Context) (int64, error) {
	if !c.stale.Load() {
		return c.head.Load(), nil
	}
	// Cleared before reading, so a commit during the read marks the cache
	// stale again and the next caller reads anew.
	c.stale.Store(false)
	h, err := Head(ctx, c.db)
	if err != nil {
		c.stale.Store(true)
		return 0, err
	}
	// Concurrent readers may finish out of order; keep the highest head.
	for {
		old := c.head.Load()
		if h <= old || c.head.CompareAndSwap(old, h) {
			return max(h, old), nil
		}
	}
}
