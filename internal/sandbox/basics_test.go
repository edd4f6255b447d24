//go:build linux && (amd64 || arm64)

package sandbox

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestMetadataCallsFailInTmpdir proves the seccomp half: Landlock allows
// writing the private TMPDIR, so only the filter can make chmod, utimes,
// chown and the xattr calls fail there, and they fail with EPERM.
func TestMetadataCallsFailInTmpdir(t *testing.T) {
	needSandbox(t)
	script := `
import errno, os, sys
p = os.path.join(os.environ["TMPDIR"], "x")
open(p, "w").write("x")
for name, op in [("chmod", lambda: os.chmod(p, 0o777)), ("utime", lambda: os.utime(p)),
                 ("chown", lambda: os.chown(p, os.getuid(), os.getgid())),
                 ("setxattr", lambda: os.setxattr(p, "user.x", b"1")),
                 ("removexattr", lambda: os.removexattr(p, "user.x"))]:
    try:
        op()
        print(name, "succeeded")
    except OSError as e:
        print(name, errno.errorcode[e.errno])
`
	r := sandboxed(t, t.TempDir(), nil, "python3", "-c", script)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	want := "chmod EPERM\nutime EPERM\nchown EPERM\nsetxattr EPERM\nremovexattr EPERM\n"
	if r.stdout != want {
		t.Errorf("metadata calls in TMPDIR:\n%s\nwant\n%s", r.stdout, want)
	}
}

// TestExitStatusAndOutput: the command's status and bytes come back
// unchanged; a signal that ends it is 128+N.
func TestExitStatusAndOutput(t *testing.T) {
	needSandbox(t)
	dir := t.TempDir()
	if r := sandboxed(t, dir, nil, "sh", "-c", "exit 7"); r.code != 7 {
		t.Errorf("exit 7 came back as %d", r.code)
	}
	// A fault's SIGSEGV ends even PID 1 of a namespace.
	if r := sandboxed(t, dir, nil, "python3", "-c", "import ctypes; ctypes.string_at(0)"); r.code != 128+11 {
		t.Errorf("a SIGSEGV came back as %d, want 139 (%s)", r.code, r.stderr)
	}
	r := sandboxed(t, dir, nil, "printf", `a\000b\377\n`)
	if r.code != 0 || r.stdout != "a\x00b\xff\n" {
		t.Errorf("printf: exit %d, %q", r.code, r.stdout)
	}
	if r := sandboxed(t, dir, nil, "sh", "-c", "echo out; echo err >&2; exit 3"); r.code != 3 || r.stdout != "out\n" ||
		!strings.HasPrefix(r.stderr, "err\n[planserver sandbox] exit status 3: ") || strings.Count(r.stderr, "\n") != 2 {
		t.Errorf("got %+v", r)
	}
	// Output to a file: the command may reopen it as /dev/stdout, and
	// nothing else.
	out, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	exe, _ := os.Executable()
	code, err := Run([]string{"sh", "-c", "echo reopened > /dev/stdout && echo x > " + filepath.Join(dir, "other")},
		Options{Exe: exe, Stdout: out, Stderr: io.Discard})
	if data, _ := os.ReadFile(out.Name()); err != nil || code == 0 || string(data) != "reopened\n" {
		t.Errorf("stdout to a file: exit %d (%v), file %q", code, err, data)
	}
	if _, err := os.Stat(filepath.Join(dir, "other")); !os.IsNotExist(err) {
		t.Errorf("a file beside stdout's was written")
	}
	if r := sandboxed(t, dir, nil, "no-such-command-planserver"); r.code != ExitNotFound || !strings.Contains(r.stderr, "not found") {
		t.Errorf("a missing command: %+v", r)
	}
	if r := sandboxed(t, dir, nil, "/etc/hostname"); r.code != ExitCannotRun {
		t.Errorf("a file that is not executable: %+v", r)
	}
}

// TestTmpdir: TMPDIR is private, empty, writable, and removed afterwards
// (also when the command leaves a directory without permissions); HOME
// and the working directory are kept; the quiet switches are set.
func TestTmpdir(t *testing.T) {
	needSandbox(t)
	dir := t.TempDir()
	r := sandboxed(t, dir, nil, "sh", "-c",
		`ls -A "$TMPDIR" | wc -l; echo x > "$TMPDIR/f" && cat "$TMPDIR/f"; mkdir -m 0 "$TMPDIR/locked"; mkdir -m 0 "$TMPDIR/d" && mkdir "$TMPDIR/d/e" 2>/dev/null; echo "$TMPDIR"; echo "$HOME"; pwd; stat -c %a "$TMPDIR"`)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 6 || strings.TrimSpace(lines[0]) != "0" || lines[1] != "x" || lines[5] != "700" {
		t.Fatalf("output %q", r.stdout)
	}
	tmp := lines[2]
	if !strings.HasPrefix(filepath.Base(filepath.Dir(tmp)), "planserver-sandbox-") {
		t.Errorf("TMPDIR %q is not the sandbox's own", tmp)
	}
	if _, err := os.Stat(filepath.Dir(tmp)); !os.IsNotExist(err) {
		t.Errorf("TMPDIR %s is still there after the run: %v", tmp, err)
	}
	if home, _ := os.UserHomeDir(); lines[3] != os.Getenv("HOME") && lines[3] != home {
		t.Errorf("HOME %q changed", lines[3])
	}
	if real, _ := filepath.EvalSymlinks(dir); lines[4] != dir && lines[4] != real {
		t.Errorf("working directory %q, want %q", lines[4], dir)
	}
}

// TestWritePaths: Options.WritePaths opens exactly those paths for
// writing (metadata stays refused there too), and nothing beside them.
func TestWritePaths(t *testing.T) {
	needSandbox(t)
	dir := t.TempDir()
	open, file := filepath.Join(dir, "open"), filepath.Join(dir, "file")
	if err := os.Mkdir(open, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	exe, _ := os.Executable()
	var stderr strings.Builder
	code, err := Run([]string{"sh", "-c", "echo new > open/made && echo more >> file && chmod 777 open/made; echo $? > open/chmod; echo x > other"},
		Options{Exe: exe, Dir: dir, WritePaths: []string{open, file}, Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: &stderr})
	if err != nil || code == 0 {
		t.Fatalf("exit %d, %v: %s", code, err, stderr.String())
	}
	if data, _ := os.ReadFile(filepath.Join(open, "made")); string(data) != "new\n" {
		t.Errorf("open/made: %q", data)
	}
	if data, _ := os.ReadFile(file); string(data) != "old\nmore\n" {
		t.Errorf("file: %q", data)
	}
	if data, _ := os.ReadFile(filepath.Join(open, "chmod")); strings.TrimSpace(string(data)) == "0" {
		t.Errorf("chmod succeeded in a write path")
	}
	if _, err := os.Stat(filepath.Join(dir, "other")); !os.IsNotExist(err) {
		t.Errorf("a file beside the write paths was written")
	}
	if _, err := Run([]string{"true"}, Options{Exe: exe, WritePaths: []string{"relative"}}); err == nil {
		t.Errorf("a relative write path was accepted")
	}
}

// TestQuietSwitches: the environment every sandboxed command gets, with
// the caller's git configuration entries kept before the sandbox's.
func TestQuietSwitches(t *testing.T) {
	base := []string{"HOME=/h", "PAGER=less", "GIT_EXTERNAL_DIFF=evil", "GIT_CONFIG_COUNT=1",
		"GIT_CONFIG_KEY_0=user.name", "GIT_CONFIG_VALUE_0=me", "GOPROXY=https://proxy.golang.org"}
	env := Env(base, "/t")
	for _, want := range []string{"HOME=/h", "TMPDIR=/t", "PAGER=cat", "GIT_PAGER=cat", "MANPAGER=cat", "GIT_OPTIONAL_LOCKS=0",
		"GIT_TERMINAL_PROMPT=0", "GOTOOLCHAIN=local", "GOTELEMETRY=off", "GOPROXY=off", "PYTHONDONTWRITEBYTECODE=1",
		"GIT_CONFIG_KEY_0=user.name", "GIT_CONFIG_VALUE_0=me", "GIT_CONFIG_KEY_1=core.fsmonitor", "GIT_CONFIG_VALUE_1=false",
		"GIT_CONFIG_KEY_2=core.pager", "GIT_CONFIG_KEY_3=log.showSignature", "GIT_CONFIG_COUNT=6", "GOCACHE=/t/go-build"} {
		if !slices.Contains(env, want) {
			t.Errorf("%s missing from %q", want, env)
		}
	}
	for _, kv := range env {
		if strings.HasPrefix(kv, "GIT_EXTERNAL_DIFF=") || kv == "PAGER=less" || strings.Contains(kv, "proxy.golang.org") {
			t.Errorf("%s kept", kv)
		}
	}
	if env := Env([]string{"GIT_CONFIG_COUNT=x"}, "/t"); !slices.Contains(env, "GIT_CONFIG_KEY_0=core.fsmonitor") {
		t.Errorf("a bad count: %q", env)
	}
}

// TestRepositoryCannotRunPrograms: a repository's own pager and
// fsmonitor hook do not run for reading commands in the sandbox (where
// they could not write anyway: the hook says on stderr that it ran).
func TestRepositoryCannotRunPrograms(t *testing.T) {
	needSandbox(t)
	dir := project(t)
	hook := filepath.Join(t.TempDir(), "hook")
	if err := os.WriteFile(hook, []byte("#!/bin/sh\necho \"repository program ran: $0 $*\" >&2\ncat >/dev/null\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, kv := range [][2]string{{"core.pager", hook}, {"core.fsmonitor", hook}} {
		if r := direct(t, dir, "git", "config", kv[0], kv[1]); r.code != 0 {
			t.Fatal(r)
		}
	}
	// A pager starts only when stdout is a terminal.
	_, slave := pty(t)
	exe, _ := os.Executable()
	for _, argv := range [][]string{{"git", "status"}, {"git", "log"}, {"git", "diff"}} {
		var stderr strings.Builder
		code, err := Run(argv, Options{Exe: exe, Dir: dir, Stdin: strings.NewReader(""), Stdout: slave, Stderr: &stderr})
		if err != nil || code != 0 || strings.Contains(stderr.String(), "repository program ran") {
			t.Errorf("%q: exit %d, %v, stderr %q", argv, code, err, stderr.String())
		}
	}
	// Outside they do run, so the check above can fail.
	var stderr strings.Builder
	for _, argv := range [][]string{{"git", "status"}, {"git", "log"}} {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Dir, cmd.Stdout, cmd.Stderr = dir, slave, &stderr
		_ = cmd.Run()
	}
	if n := strings.Count(stderr.String(), "repository program ran"); n < 2 {
		t.Errorf("the repository's pager and fsmonitor did not both run outside the sandbox: %q", stderr.String())
	}
}

func TestParseEndpoints(t *testing.T) {
	eps, err := ParseEndpoints([]string{"127.0.0.1:80, Example.com:443", "[::1]:80", "[::ffff:10.0.0.1]:22,127.0.0.1:80"})
	want := []Endpoint{{"127.0.0.1", 80}, {"example.com", 443}, {"::1", 80}, {"10.0.0.1", 22}}
	if err != nil || !slices.Equal(eps, want) {
		t.Errorf("got %v, %v; want %v", eps, err, want)
	}
	ports, err := ParseAllowConnect([]string{"127.0.0.1:80, example.com:443", "[::1]:80"})
	if err != nil || !slices.Equal(ports, []uint16{80, 443}) {
		t.Errorf("ports %v, %v", ports, err)
	}
	for _, bad := range []string{"80", "host:", ":80", "host:0", "host:65536", "host:http", "a b:1", "-x:1", "[fe80::1%eth0]:1"} {
		if _, err := ParseEndpoints([]string{bad}); err == nil {
			t.Errorf("%q was accepted", bad)
		}
	}
}
