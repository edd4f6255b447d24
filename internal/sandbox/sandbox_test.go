package sandbox

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMain lets the test binary be the stage: Run re-executes it with
// StageCommand, as planserver's main does.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == StageCommand {
		os.Exit(Stage(os.Args[2:], os.Stderr))
	}
	// As the planserver of WrapCommand's line: sandbox --read-only -- CMD…
	if os.Getenv("SANDBOX_TEST_CLI") == "1" && len(os.Args) > 3 && os.Args[1] == "sandbox" && os.Args[2] == "--read-only" && os.Args[3] == "--" {
		code, err := Run(os.Args[4:], Options{})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// needSandbox skips where the kernel cannot run the sandbox, saying why.
func needSandbox(t *testing.T) {
	t.Helper()
	if abi, err := Available(); err != nil {
		t.Skipf("no kernel sandbox here (Landlock ABI %d): %v", abi, err)
	}
}

type result struct {
	code           int
	stdout, stderr string
}

// sandboxed runs argv in the sandbox in dir.
func sandboxed(t *testing.T, dir string, allow []string, argv ...string) result {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code, err := Run(argv, Options{Exe: exe, Dir: dir, AllowConnect: allow, Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr})
	if err != nil {
		t.Fatalf("Run(%q): %v (stderr %q)", argv, err, stderr.String())
	}
	return result{code, stdout.String(), stderr.String()}
}

// direct runs argv without the sandbox, for comparison.
func direct(t *testing.T, dir string, argv ...string) result {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if exit, ok := err.(*exec.ExitError); ok {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{code, stdout.String(), stderr.String()}
}

// treeHash hashes every entry under dir: path, mode, size, modification
// time, owner and content (or link target), so any write shows.
func treeHash(t *testing.T, dir string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := os.Lstat(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		st := info.Sys().(*syscall.Stat_t)
		// ctime catches chmod, chown, link and xattr changes; atime is
		// left out, since reading changes it.
		fmt.Fprintf(h, "%s %v %d %d %d:%d %d.%d %d\n", rel, info.Mode(), info.Size(), info.ModTime().UnixNano(),
			st.Uid, st.Gid, st.Ctim.Sec, st.Ctim.Nsec, st.Nlink)
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(path)
			fmt.Fprintln(h, "->", target)
		case info.Mode().IsRegular():
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			h.Write(data)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

// project makes a small git repository to read and to try to write.
func project(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	must := func(argv ...string) {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
			"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_AUTHOR_DATE=2026-01-01T00:00:00Z",
			"GIT_COMMITTER_DATE=2026-01-01T00:00:00Z")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%q: %v\n%s", argv, err, out)
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{"f": "hello\nneedle one\n", "old": "old\n", "sub/g": "needle two\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	must("git", "init", "-q")
	must("git", "add", ".")
	must("git", "commit", "-qm", "first")
	// Settle the index so that reading commands outside have nothing to refresh.
	must("git", "status", "--short")
	return dir
}

// TestWritesFail runs every kind of write the issue lists, and a few
// more, inside the sandbox: each fails, and the directory (contents,
// modes, owners and times) is byte-for-byte what it was.
func TestWritesFail(t *testing.T) {
	needSandbox(t)
	dir := project(t)
	before := treeHash(t, dir)
	writes := []string{
		`echo x > f`,
		`echo x > new`,
		`echo x >> old`,
		`python3 -c "open('f','w')"`,
		`python3 -c "open('new','w')"`,
		`touch newfile`,
		`touch old`,
		`python3 -c "import os; os.utime('old')"`,
		`chmod 777 old`,
		`chown 65534 old`,
		`rm old`,
		`rm -rf sub`,
		`mv old moved`,
		`mkdir d`,
		`ln -s old link`,
		`ln old hard`,
		`truncate -s 0 old`,
		`cp f copy`,
		`dd if=f of=old conv=notrunc`,
		`python3 -c "import os; os.setxattr('old', 'user.x', b'1')"`,
		`git commit --allow-empty -qm second`,
		`git tag v1`,
		`sh -c 'echo x > child'`,
		`python3 -c "import subprocess; subprocess.run(['sh','-c','echo x > grandchild'], check=True)"`,
		`(echo x > subshell) && true`,
		`sed -i s/hello/bye/ f`,
	}
	for _, w := range writes {
		r := sandboxed(t, dir, nil, "sh", "-c", w)
		if r.code == 0 {
			t.Errorf("%s: exit 0 in the sandbox, want a failure (stderr %q)", w, r.stderr)
		}
	}
	if after := treeHash(t, dir); after != before {
		t.Errorf("the directory changed under the sandbox")
	}
}

// TestMetadataCallsFailInTmpdir proves the seccomp half: Landlock allows
// writing the private TMPDIR, so only the filter can make chmod, utimes
// and setxattr fail there, and they fail with EPERM.
func TestMetadataCallsFailInTmpdir(t *testing.T) {
	needSandbox(t)
	script := `
import errno, os, sys
p = os.path.join(os.environ["TMPDIR"], "x")
open(p, "w").write("x")
for name, op in [("chmod", lambda: os.chmod(p, 0o777)), ("utime", lambda: os.utime(p)),
                 ("chown", lambda: os.chown(p, os.getuid(), os.getgid())),
                 ("setxattr", lambda: os.setxattr(p, "user.x", b"1"))]:
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
	want := "chmod EPERM\nutime EPERM\nchown EPERM\nsetxattr EPERM\n"
	if r.stdout != want {
		t.Errorf("metadata calls in TMPDIR:\n%s\nwant\n%s", r.stdout, want)
	}
}

// TestReadsMatchOutside runs reading commands inside and outside: the
// output is the same, and the sandboxed runs change nothing.
func TestReadsMatchOutside(t *testing.T) {
	needSandbox(t)
	dir := project(t)
	reads := [][]string{
		{"ls", "-la"},
		{"cat", "f"},
		{"git", "log", "--format=%H %s"},
		{"git", "status", "--short"},
		{"grep", "-r", "needle", "."},
		{"sh", "-c", "find . -not -path './.git/*' | sort"},
	}
	outside := make([]result, len(reads))
	for i, argv := range reads {
		outside[i] = direct(t, dir, argv...)
	}
	before := treeHash(t, dir)
	for i, argv := range reads {
		inside := sandboxed(t, dir, nil, argv...)
		if inside.code != outside[i].code || inside.stdout != outside[i].stdout {
			t.Errorf("%q: inside exit %d %q, outside exit %d %q (stderr inside %q)",
				argv, inside.code, inside.stdout, outside[i].code, outside[i].stdout, inside.stderr)
		}
		if inside.stderr != "" {
			t.Errorf("%q wrote to stderr in the sandbox: %q", argv, inside.stderr)
		}
	}
	if after := treeHash(t, dir); after != before {
		t.Errorf("reading commands changed the directory under the sandbox")
	}
}

// TestNetworkRule opens a listener on loopback: a connection from the
// sandbox is refused, and allowed with --allow-connect.
func TestNetworkRule(t *testing.T) {
	needSandbox(t)
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan struct{}, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- struct{}{}
			c.Close()
		}
	}()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	connect := "exec 3<>/dev/tcp/127.0.0.1/" + port
	r := sandboxed(t, t.TempDir(), nil, "bash", "-c", connect)
	if r.code == 0 {
		t.Errorf("a connect to 127.0.0.1:%s succeeded in the sandbox without --allow-connect", port)
	}
	select {
	case <-accepted:
		t.Errorf("the listener accepted a connection from the sandbox")
	case <-time.After(100 * time.Millisecond):
	}
	r = sandboxed(t, t.TempDir(), []string{"127.0.0.1:" + port}, "bash", "-c", connect)
	if r.code != 0 {
		t.Fatalf("with --allow-connect 127.0.0.1:%s: exit %d %s", port, r.code, r.stderr)
	}
	select {
	case <-accepted:
	case <-time.After(5 * time.Second):
		t.Errorf("the listener saw no connection with --allow-connect")
	}
}

// TestExitStatusAndOutput: the command's status and bytes come back unchanged.
func TestExitStatusAndOutput(t *testing.T) {
	needSandbox(t)
	dir := t.TempDir()
	if r := sandboxed(t, dir, nil, "sh", "-c", "exit 7"); r.code != 7 {
		t.Errorf("exit 7 came back as %d", r.code)
	}
	if r := sandboxed(t, dir, nil, "sh", "-c", "kill -KILL $$"); r.code != 128+9 {
		t.Errorf("a SIGKILL came back as %d, want 137", r.code)
	}
	r := sandboxed(t, dir, nil, "printf", `a\000b\377\n`)
	if r.code != 0 || r.stdout != "a\x00b\xff\n" {
		t.Errorf("printf: exit %d, %q", r.code, r.stdout)
	}
	if r := sandboxed(t, dir, nil, "sh", "-c", "echo out; echo err >&2; exit 3"); r.code != 3 || r.stdout != "out\n" || r.stderr != "err\n" {
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
// and the working directory are kept.
func TestTmpdir(t *testing.T) {
	needSandbox(t)
	dir := t.TempDir()
	r := sandboxed(t, dir, nil, "sh", "-c",
		`ls -A "$TMPDIR" | wc -l; echo x > "$TMPDIR/f" && cat "$TMPDIR/f"; mkdir -m 0 "$TMPDIR/locked"; echo "$TMPDIR"; echo "$HOME"; pwd; echo "$GIT_OPTIONAL_LOCKS $GOTELEMETRY"`)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 6 || strings.TrimSpace(lines[0]) != "0" || lines[1] != "x" {
		t.Fatalf("output %q", r.stdout)
	}
	tmp := lines[2]
	if !strings.HasPrefix(filepath.Base(tmp), "planserver-sandbox-") {
		t.Errorf("TMPDIR %q is not the sandbox's own", tmp)
	}
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Errorf("TMPDIR %s is still there after the run: %v", tmp, err)
	}
	if home, _ := os.UserHomeDir(); lines[3] != os.Getenv("HOME") && lines[3] != home {
		t.Errorf("HOME %q changed", lines[3])
	}
	if real, _ := filepath.EvalSymlinks(dir); lines[4] != dir && lines[4] != real {
		t.Errorf("working directory %q, want %q", lines[4], dir)
	}
	if lines[5] != "0 off" {
		t.Errorf("quiet switches: %q", lines[5])
	}
}

func TestParseAllowConnect(t *testing.T) {
	ports, err := ParseAllowConnect([]string{"127.0.0.1:80, example.com:443", "[::1]:80"})
	if err != nil || len(ports) != 2 || ports[0] != 80 || ports[1] != 443 {
		t.Errorf("got %v, %v", ports, err)
	}
	for _, bad := range []string{"80", "host:", ":80", "host:0", "host:65536", "host:http"} {
		if _, err := ParseAllowConnect([]string{bad}); err == nil {
			t.Errorf("%q was accepted", bad)
		}
	}
}
