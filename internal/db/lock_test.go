package db_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planserver/planserver/internal/db"
)

// TestLockKeepsHoldersApart: a second holder is refused with the first
// one's command and pid; once released, the lock is free again.
func TestLockKeepsHoldersApart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.db")
	first, err := db.Lock(path, "serve")
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.Lock(path, "migrate up")
	want := fmt.Sprintf("a planserver serve (pid %d) holds %s; stop it first", os.Getpid(), path)
	if !errors.Is(err, db.ErrLocked) || !strings.Contains(err.Error(), want) {
		t.Fatalf("second holder: %v, want %q", err, want)
	}
	if err := first.Release(); err != nil {
		t.Fatal(err)
	}
	again, err := db.Lock(path, "migrate up")
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	again.Release()
	if _, err := db.Lock(filepath.Join(t.TempDir(), "missing", "p.db"), "serve"); err == nil ||
		!strings.Contains(err.Error(), "does not exist") {
		t.Errorf("lock in a missing directory: %v", err)
	}
}
