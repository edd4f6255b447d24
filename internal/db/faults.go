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
)

// Storage faults are not the client's doing and not a bug: the disk is
// full, the file is read-only or damaged, the server cannot be reached.
// Storage says which (a *Fault, errors.Is ErrDiskFull or ErrUnavailable);
// the transports answer it (internal/apierr gives it its code, and
// internal/http its status), and /readyz reports the database unready
// until a write commits again.

// The kinds of storage fault: a Fault is one of them (errors.Is).
var (
	// ErrDiskFull is a storage that has no room for the write.
	ErrDiskFull = errors.New("disk full")
	// ErrUnavailable is a database that cannot serve for now: it cannot
	// be reached or opened, takes no writes, or is damaged.
	ErrUnavailable = errors.New("database unavailable")
)

// Fault is a storage fault: what kind it is, what an operator or a client
// should know of it, and the engine's own error.
type Fault struct {
	// Kind is ErrDiskFull or ErrUnavailable.
	Kind error
	// Detail says what is wrong in words fit for a client: it names no
	// secret and no internal path.
	Detail string
	// Cause is the engine's error, for the server's log.
	Cause error
}

func (f *Fault) Error() string {
	msg := f.Kind.Error() + ": " + f.Detail
	if f.Cause != nil {
		msg += " (" + f.Cause.Error() + ")"
	}
	return msg
}

// Unwrap returns the fault's kind and its cause, so that errors.Is finds
// the kind and errors.As the engine's error.
func (f *Fault) Unwrap() []error { return []error{f.Kind, f.Cause} }

// Classify returns err as a *Fault when it is a storage fault, with err as
// its cause; any other error, and one that is a fault already, is
// returned as it is.
func Classify(err error) error {
	if err == nil {
		return nil
	}
	var f *Fault
	if errors.As(err, &f) {
		return err
	}
	if f = classify(err); f == nil {
		return err
	}
	f.Cause = err
	if f.Kind == ErrDiskFull {
		f.Detail += "; nothing acknowledged is lost, and this request changed nothing: retry later"
	}
	return f
}

// classify returns the fault err is, without its cause, or nil.
func classify(err error) *Fault {
	var se *msqlite.Error
	switch {
	case errors.As(err, &se):
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_FULL:
			return &Fault{Kind: ErrDiskFull, Detail: "the database's disk is full"}
		case sqlite3.SQLITE_READONLY:
			return &Fault{Kind: ErrUnavailable, Detail: "the database cannot take writes: its file is read-only to this server (check the file's owner and permissions, and the file system)"}
		case sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB:
			return &Fault{Kind: ErrUnavailable, Detail: "the database file is damaged; an operator must restore it from a backup"}
		case sqlite3.SQLITE_IOERR:
			return &Fault{Kind: ErrUnavailable, Detail: "the database's disk reports an I/O error"}
		case sqlite3.SQLITE_CANTOPEN:
			return &Fault{Kind: ErrUnavailable, Detail: "the database file cannot be opened"}
		}
		return nil
	case errors.Is(err, syscall.ENOSPC):
		return &Fault{Kind: ErrDiskFull, Detail: "the database's disk is full"}
	}
	return classifyPostgres(err)
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
	var f *Fault
	return errors.As(Classify(err), &f) && f.Cause != nil
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
	if errors.Is(fault, ErrDiskFull) && db.eng.lowOnSpace() {
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
