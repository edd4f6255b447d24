package db

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"syscall"
	"time"
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

// classify returns the fault err is, without its cause, or nil. A full
// disk is a full disk whoever says so; any other error only its own
// engine knows, and the default engine's are looked at first.
func classify(err error) *Fault {
	if errors.Is(err, syscall.ENOSPC) {
		return &Fault{Kind: ErrDiskFull, Detail: "the database's disk is full"}
	}
	for _, d := range append([]Driver{fallback}, drivers...) {
		if d == nil {
			continue
		}
		if f, ours := d.Classify(err); ours {
			return f
		}
	}
	return nil
}

// IsCorrupt reports whether err says the database is damaged beyond what
// a retry or a restart fixes: a file an operator must restore
// (Driver.IsCorrupt).
func IsCorrupt(err error) bool {
	for _, d := range append([]Driver{fallback}, drivers...) {
		if d != nil && d.IsCorrupt(err) {
			return true
		}
	}
	return false
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
	if errors.Is(fault, ErrDiskFull) && db.eng.LowOnSpace() {
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
