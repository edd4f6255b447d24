package db

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"syscall"
	"time"

	msqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/planserver/planserver/internal/apierr"
)

// Storage faults are not the client's doing and not a bug: the disk is
// full, the file is read-only or damaged. Clients get a code that says so
// (507 insufficient_storage, 503 unavailable) instead of 500 internal, and
// /readyz reports the database unready until a write commits again.

// retryAfterFault is the Retry-After, in seconds, of a storage fault: long
// enough for an operator to notice, short enough for a client to resume
// soon after the fault is fixed.
const retryAfterFault = 30

// Classify returns err as the apierr.Error a client should see when err is
// a storage fault, with err as its cause; any other error is returned as
// it is.
func Classify(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := apierr.As(err); ok {
		return err
	}
	var code apierr.Code
	var detail string
	var se *msqlite.Error
	switch {
	case errors.As(err, &se):
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_FULL:
			code, detail = apierr.InsufficientStorage, "the database's disk is full"
		case sqlite3.SQLITE_READONLY:
			code, detail = apierr.Unavailable, "the database cannot take writes: its file is read-only to this server (check the file's owner and permissions, and the file system)"
		case sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB:
			code, detail = apierr.Unavailable, "the database file is damaged; an operator must restore it from a backup"
		case sqlite3.SQLITE_IOERR:
			code, detail = apierr.Unavailable, "the database's disk reports an I/O error"
		case sqlite3.SQLITE_CANTOPEN:
			code, detail = apierr.Unavailable, "the database file cannot be opened"
		default:
			return err
		}
	case errors.Is(err, syscall.ENOSPC):
		code, detail = apierr.InsufficientStorage, "the database's disk is full"
	default:
		var ok bool
		if code, detail, ok = classifyPostgres(err); !ok {
			return err
		}
	}
	if code == apierr.InsufficientStorage {
		detail += "; nothing acknowledged is lost, and this request changed nothing: retry later"
	}
	return &apierr.Error{Code: code, Detail: detail, RetryAfter: retryAfterFault, Cause: err}
}

// IsCorrupt reports whether err says the database file is damaged.
func IsCorrupt(err error) bool {
	var se *msqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	code := se.Code() & 0xff
	return code == sqlite3.SQLITE_CORRUPT || code == sqlite3.SQLITE_NOTADB
}

// IsFault reports whether err is a storage fault (see Classify).
func IsFault(err error) bool {
	e, ok := apierr.As(Classify(err))
	return ok && (e.Code == apierr.InsufficientStorage || e.Code == apierr.Unavailable) && e.Cause != nil
}

// health remembers the last storage fault of the write path, until a
// write commits again.
type health struct {
	mu    sync.Mutex
	fault error
	since time.Time
}

// minFreeBytes is the free space a database's file system needs, after a
// full disk, before the database reports ready again: a probe write of a
// page may fit into what a failed write left behind, but real writes would
// fail again at once.
const minFreeBytes = 1 << 20

// failed records err when it is a storage fault, and returns it
// classified.
func (h *health) failed(err error) error {
	err = Classify(err)
	h.sawError(err)
	return err
}

// sawError records err when it is a storage fault.
func (h *health) sawError(err error) {
	if !IsFault(err) {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.fault == nil {
		h.since = time.Now()
	}
	h.fault = Classify(err)
}

// ok records a successful commit.
func (h *health) ok() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.fault = nil
}

func (h *health) current() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.fault
}

// Ready reports whether the database can serve: it answers reads, and
// writes can commit. After a write failed for a storage fault, Ready
// probes with a write of its own (a no-op update of one row, which still
// writes a page) until one commits, so readiness comes back as soon as an
// operator fixes the fault, even if no client writes meanwhile.
func (db *DB) Ready(ctx context.Context) error {
	var one int
	if err := db.reader.QueryRowContext(ctx, `SELECT 1`).Scan(&one); err != nil {
		return Classify(fmt.Errorf("read: %w", err))
	}
	fault := db.health.current()
	if fault == nil {
		return nil
	}
	if apierr.CodeOf(fault) == apierr.InsufficientStorage && db.eng.lowOnSpace() {
		return fault
	}
	return db.Probe(ctx)
}

// Probe commits a write that changes nothing a client can see, to test that
// writes can commit.
func (db *DB) Probe(ctx context.Context) error {
	return db.Write(ctx, func(tx *Tx) error {
		_, err := tx.Exec(`UPDATE event_retention SET pruned_through = pruned_through WHERE id = 1`)
		return err
	})
}
