// Package disktest makes file-system faults for tests: a small disk to fill,
// a damaged database file.
// It is imported only by tests.
package disktest

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// SmallDisk mounts a tmpfs of size (e.g. "4m") on a new temp dir and
// returns the dir; it is unmounted when the test ends. Mounting needs root
// (CI runs as root); elsewhere the test is skipped, saying why.
func SmallDisk(tb testing.TB, size string) string {
	tb.Helper()
	dir := tb.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		tb.Skipf("cannot mount a small tmpfs to fill (needs root): %v", err)
	}
	tb.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}

// Fill writes a file in dir until its file system is full, and returns a
// function that deletes the file.
func Fill(tb testing.TB, dir string) (free func()) {
	tb.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	chunk := make([]byte, 4096)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				tb.Fatal(err)
			}
			break
		}
	}
	f.Close()
	return func() {
		if err := os.Remove(path); err != nil {
			tb.Fatal(err)
		}
	}
}

// Garble damages the SQLite database file path behind its first page:
// the header stays intact, so the file opens, and the pages after it are
// garbage, which only an integrity check or a read of them finds.
func Garble(tb testing.TB, path string) {
	tb.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	for i := 4096 + 100; i < len(raw); i += 7 {
		raw[i] ^= 0x5a
	}
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		tb.Fatal(err)
	}
}
