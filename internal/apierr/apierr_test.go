package apierr

import (
	"errors"
	"fmt"
	"syscall"
	"testing"

	"github.com/planserver/planserver/internal/db"
)

// TestStorageFaultsAreAnswered: a storage fault, bare or wrapped, is
// answered insufficient_storage (a full disk) or unavailable (any other)
// with storage's detail, a Retry-After and the engine's error as its
// cause; an error with a code of its own keeps it, whatever it wraps.
func TestStorageFaultsAreAnswered(t *testing.T) {
	enospc := fmt.Errorf("write planserver.db-wal: %w", syscall.ENOSPC)
	full := db.Classify(enospc)
	cases := []struct {
		name   string
		err    error
		code   Code
		detail string
		cause  error
	}{
		{"disk full", full, InsufficientStorage,
			"the database's disk is full; nothing acknowledged is lost, and this request changed nothing: retry later", enospc},
		{"wrapped", fmt.Errorf("commit: %w", full), InsufficientStorage,
			"the database's disk is full; nothing acknowledged is lost, and this request changed nothing: retry later", enospc},
		{"unavailable", &db.Fault{Kind: db.ErrUnavailable, Detail: "the database file cannot be opened", Cause: syscall.EIO},
			Unavailable, "the database file cannot be opened", syscall.EIO},
	}
	for _, c := range cases {
		e, ok := As(c.err)
		if !ok || e.Code != c.code || e.Detail != c.detail || e.RetryAfter != retryAfterFault || !errors.Is(e.Cause, c.cause) {
			t.Errorf("%s: As(%v) = %+v, %v; want %s %q with Retry-After %d and its cause", c.name, c.err, e, ok, c.code, c.detail, retryAfterFault)
		}
		if CodeOf(c.err) != c.code {
			t.Errorf("%s: CodeOf = %s, want %s", c.name, CodeOf(c.err), c.code)
		}
	}
	// Of classifies an engine's error that nobody classified yet; As
	// leaves that to storage.
	if _, ok := As(enospc); ok {
		t.Error("As answered an unclassified error")
	}
	if e, ok := Of(enospc); !ok || e.Code != InsufficientStorage {
		t.Errorf("Of(ENOSPC) = %+v, %v; want insufficient_storage", e, ok)
	}
	// A coded error is answered with its code even when its text or its
	// cause would look like a fault.
	coded := &Error{Code: NotFound, Detail: `plan "conn closed" not found`, Cause: enospc}
	if e, ok := Of(coded); !ok || e != coded {
		t.Errorf("Of(a not_found) = %+v, want it unchanged", e)
	}
	if _, ok := Of(errors.New("a bug")); ok {
		t.Error("Of answered an error that is neither coded nor a fault")
	}
}
