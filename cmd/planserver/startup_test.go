package main

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/planserver/planserver/internal/disktest"
)

// serveOnce runs `planserver serve` on db and returns its exit status and
// what it printed, for servers that must refuse to start.
func serveOnce(t *testing.T, db string, extra ...string) (int, string) {
	t.Helper()
	args := append([]string{"serve", "--addr", freeAddr(t), "--db", db}, extra...)
	cmd := exec.Command(binary, args...)
	out, err := runWithin(cmd, 20*time.Second)
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), out
	}
	if err != nil {
		t.Fatalf("serve: %v\n%s", err, out)
	}
	return 0, out
}

func runWithin(cmd *exec.Cmd, d time.Duration) (string, error) {
	done := make(chan struct{})
	timer := time.AfterFunc(d, func() { _ = cmd.Process.Kill() })
	defer timer.Stop()
	out, err := cmd.CombinedOutput()
	close(done)
	return string(out), err
}

// TestServeRefusesADamagedDatabase garbles the pages of a database behind
// its intact header: serve refuses it at start with exit 3 and says what
// to do, instead of serving 500s while /readyz says ready.
func TestServeRefusesADamagedDatabase(t *testing.T) {
	db := filepath.Join(t.TempDir(), "p.db")
	if err := run(context.Background(), []string{"migrate", "up", "--db", db}, noEnv, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	disktest.Garble(t, db)
	code, out := serveOnce(t, db)
	if code != exitDatabaseUnusable || !strings.Contains(out, "refusing to serve a damaged database") {
		t.Fatalf("serve on a damaged database: exit %d\n%s", code, out)
	}
}

// TestServeRefusesAnUnwritableDatabase serves a database file the server
// may not write (0444, another owner): it refuses at start with exit 3,
// naming the cause, instead of answering every write 500.
func TestServeRefusesAnUnwritableDatabase(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "p.db")
	if err := run(context.Background(), []string{"migrate", "up", "--db", db}, noEnv, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(db, 0o444); err != nil {
		t.Fatal(err)
	}
	// migrate left its lock file, root's own; the server makes a new one.
	if err := os.Remove(db + ".lock"); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	args := []string{"serve", "--addr", freeAddr(t), "--db", db}
	cmd := exec.Command(binary, args...)
	if os.Getuid() == 0 {
		// Root writes any file: serve as nobody, who may create the -wal,
		// -shm and lock files beside it but not write the database, from
		// a copy of the binary nobody may run.
		for _, d := range []string{filepath.Dir(dir), dir} {
			if err := os.Chmod(d, 0o777); err != nil {
				t.Fatal(err)
			}
		}
		bin, err := os.ReadFile(binary)
		if err != nil {
			t.Fatal(err)
		}
		self := filepath.Join(dir, "planserver")
		if err := os.WriteFile(self, bin, 0o755); err != nil {
			t.Fatal(err)
		}
		cmd = exec.Command(self, args...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	}
	out, err := runWithin(cmd, 20*time.Second)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != exitDatabaseUnusable ||
		!(strings.Contains(out, "read-only") || strings.Contains(out, "may not read and write")) {
		t.Fatalf("serve on an unwritable database: %v\n%s", err, out)
	}
}

// TestServeAddrWantsHostPort: --addr 8080 is a port, not an address: serve
// says it wants host:port, rather than refusing --auth none on what it
// would take for a host named 8080.
func TestServeAddrWantsHostPort(t *testing.T) {
	for addr, want := range map[string]string{
		"8080":           `--addr "8080": want host:port, such as 127.0.0.1:8080`,
		"localhost":      `--addr "localhost": want host:port`,
		"127.0.0.1:http": `the port "http" is not a number`,
	} {
		var stderr strings.Builder
		err := run(context.Background(), []string{"serve", "--addr", addr, "--db", filepath.Join(t.TempDir(), "p.db")}, noEnv, io.Discard, &stderr)
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "authentication") {
			t.Errorf("serve --addr %s: %v, want %q", addr, err, want)
		}
	}
}
