package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planserver/planserver/internal/sandbox"
)

// sandboxRun runs the planserver binary with args in dir and returns its
// exit status, stdout and stderr.
func sandboxRun(t *testing.T, dir string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Dir = dir
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return exit.ExitCode(), stdout.String(), stderr.String()
	case err != nil:
		t.Fatal(err)
	}
	return 0, stdout.String(), stderr.String()
}

// TestSandboxCommand drives planserver sandbox as the hook's rewritten
// command line does: the write fails, the status and output come back.
func TestSandboxCommand(t *testing.T) {
	if abi, err := sandbox.Available(); err != nil {
		t.Skipf("no kernel sandbox here (Landlock ABI %d): %v", abi, err)
	}
	dir := t.TempDir()
	code, stdout, stderr := sandboxRun(t, dir, "sandbox", "--read-only", "--", "sh", "-c", "echo out; echo x > marker.txt; exit 4")
	if code != 4 || stdout != "out\n" || !strings.Contains(stderr, "Permission denied") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "marker.txt")); !os.IsNotExist(err) {
		t.Errorf("marker.txt was written: %v", err)
	}
	// The line WrapCommand builds, run by bash as a host would.
	line, err := sandbox.WrapCommand(binary, "cat <<'EOF' > marker.txt\nit's\nEOF\necho \"status $?\"", nil)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := exec.Command("bash", "-c", "cd "+sandbox.Quote(dir)+" && "+line).CombinedOutput()
	if !strings.Contains(string(out), "Permission denied") || !strings.Contains(string(out), "status 1") {
		t.Errorf("wrapped here-document: %s", out)
	}
	if _, err := os.Stat(filepath.Join(dir, "marker.txt")); !os.IsNotExist(err) {
		t.Errorf("marker.txt was written through the wrapped line: %v", err)
	}
}

// TestSandboxCommandUsage: a wrong invocation is 125, never a run
// without the sandbox, and --help answers.
func TestSandboxCommandUsage(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"sandbox", "--", "touch", "x"},
		{"sandbox", "--read-only"},
		{"sandbox", "--read-only", "--allow-connect", "nohost", "--", "touch", "x"},
		{"sandbox", "--bogus", "--", "touch", "x"},
	} {
		code, _, stderr := sandboxRun(t, dir, args...)
		if code != sandbox.ExitUnavailable || !strings.Contains(stderr, "planserver sandbox:") {
			t.Errorf("%q: exit %d, stderr %q", args, code, stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "x")); !os.IsNotExist(err) {
		t.Errorf("a wrong invocation ran the command")
	}
	code, stdout, _ := sandboxRun(t, dir, "sandbox", "--help")
	if code != 0 || !strings.Contains(stdout, "--allow-connect") || !strings.Contains(stdout, "125") {
		t.Errorf("--help: exit %d\n%s", code, stdout)
	}
}

// TestServeChecksTheShellTable: serve refuses a --shell-read-only file it
// cannot use, naming it, and accepts a good one.
func TestServeChecksTheShellTable(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("shell_read_only:\n  commands:\n    - command: curl\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out := serveOnce(t, filepath.Join(dir, "p.db"), "--shell-read-only", bad)
	if code == 0 || !strings.Contains(out, "--shell-read-only") || !strings.Contains(out, "curl") {
		t.Errorf("a table adding curl: exit %d\n%s", code, out)
	}
	code, out = serveOnce(t, filepath.Join(dir, "p.db"), "--shell-read-only", filepath.Join(dir, "missing.yaml"))
	if code == 0 || !strings.Contains(out, "missing.yaml") {
		t.Errorf("a missing table: exit %d\n%s", code, out)
	}
}
