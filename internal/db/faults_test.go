package db

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"testing"
)

// TestClassifyFullDisk: an error that says the disk is full is a
// disk-full fault whichever engine made it, carrying it as its cause and
// telling the client nothing was lost; a fault is classified once; an
// error that is no fault is returned as it is.
func TestClassifyFullDisk(t *testing.T) {
	full := &os.PathError{Op: "write", Path: "p.db-wal", Err: syscall.ENOSPC}
	err := Classify(fmt.Errorf("commit: %w", full))
	var f *Fault
	if !errors.As(err, &f) || f.Kind != ErrDiskFull || !errors.Is(err, ErrDiskFull) || !errors.Is(f.Cause, full) {
		t.Fatalf("Classify(ENOSPC) = %v, want a disk-full fault caused by it", err)
	}
	if want := "the database's disk is full; nothing acknowledged is lost, and this request changed nothing: retry later"; f.Detail != want {
		t.Errorf("detail %q, want %q", f.Detail, want)
	}
	if again := Classify(fmt.Errorf("write: %w", err)); !errors.Is(again, err) || IsFault(errors.New("a bug")) {
		t.Errorf("Classify of a fault: %v", again)
	}
	if !IsFault(err) {
		t.Error("IsFault(a disk-full fault) is false")
	}
	plain := errors.New("no such table: kv")
	if got := Classify(plain); got != plain {
		t.Errorf("Classify(%v) = %v, want it unchanged", plain, got)
	}
	if Classify(nil) != nil {
		t.Error("Classify(nil) is not nil")
	}
}
