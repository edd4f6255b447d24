package sqlite_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planserver/planserver/internal/sqlite"
)

// TestLockKeepsHoldersApart: a second holder is refused with the first
// one's command and pid; once released, the lock is free again.
func TestLockKeepsHoldersApart(t *testing.T) {
	db := filepath.Join(t.TempDir(), "p.db")
	first, err := sqlite.Lock(db, "serve")
	if err != nil {
		t.Fatal(err)
	}
	_, err = sqlite.Lock(db, "migrate up")
	want := fmt.Sprintf("a planserver serve (pid %d) holds %s; stop it first", os.Getpid(), db)
	if !errors.Is(err, sqlite.ErrLocked) || !strings.Contains(err.Error(), want) {
		t.Fatalf("second holder: %v, want %q", err, want)
	}
	if err := first.Release(); err != nil {
		t.Fatal(err)
	}
	again, err := sqlite.Lock(db, "migrate up")
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	again.Release()
	if _, err := sqlite.Lock(filepath.Join(t.TempDir(), "missing", "p.db"), "serve"); err == nil ||
		!strings.Contains(err.Error(), "does not exist") {
		t.Errorf("lock in a missing directory: %v", err)
	}
}
