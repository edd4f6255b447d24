package postgres

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"time"

	"github.com/planserver/planserver/internal/db"
)

// versionReads coalesces the reads of commit_version. A caller never
// shares a read that was sent before it arrived, which could predate a
// commit acknowledged to it; it joins the read that goes next, sent as
// soon as the one in flight returns.
type versionReads struct {
	mu      sync.Mutex
	sending bool          // a read is in flight
	next    *versionRound // the read that goes next; nil while nobody waits for one
}

// versionRound is one read of commit_version and the callers who share it.
type versionRound struct {
	done    chan struct{}
	version uint64
	err     error
}

// versionReadTimeout bounds one read of commit_version, which serves every
// caller queued behind it whatever their own deadlines.
const versionReadTimeout = 10 * time.Second

func (v *versionReads) read(ctx context.Context, reader *sql.DB) (uint64, error) {
	v.mu.Lock()
	r := v.next
	if r == nil {
		r = &versionRound{done: make(chan struct{})}
		v.next = r
	}
	if !v.sending {
		v.sending, v.next = true, nil
		go v.send(r, reader)
	}
	v.mu.Unlock()
	select {
	case <-r.done:
		return r.version, r.err
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// send reads commit_version for r, then for each round that queued
// meanwhile, until none did.
func (v *versionReads) send(r *versionRound, reader *sql.DB) {
	for r != nil {
		ctx, cancel := context.WithTimeout(context.Background(), versionReadTimeout)
		var n int64
		if err := reader.QueryRowContext(ctx, `SELECT version FROM commit_version WHERE id = 1`).Scan(&n); err != nil {
			r.err = fmt.Errorf("read the commit version: %w", db.Classify(err))
		}
		cancel()
		r.version = uint64(n)
		close(r.done)
		v.mu.Lock()
		r, v.next = v.next, nil
		if r == nil {
			v.sending = false
		}
		v.mu.Unlock()
	}
}
