//go:build linux && (amd64 || arm64)

package sandbox

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// The test binary plays every part:
//
//	StageCommand …                  the stage, as planserver's main hands it over
//	sandbox --read-only … -- CMD    planserver sandbox's command line (with SANDBOX_TEST_CLI=1;
//	                                SANDBOX_TEST_FALLBACK=1 forces the fallback without namespaces,
//	                                SANDBOX_TEST_STAGE=1 the stage where root would start CMD directly,
//	                                SANDBOX_TEST_LACK=FEATURE stands for a kernel without it)
//	sandbox-test-helper ATTACK …    the raw system calls of helper_test.go
func TestMain(m *testing.M) {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case StageCommand:
			os.Exit(Stage(os.Args[2:], os.Stderr))
		case helperCommand:
			os.Exit(helper(os.Args[2:]))
		case "sandbox":
			if os.Getenv("SANDBOX_TEST_CLI") == "1" {
				lackKernelFeature(os.Getenv("SANDBOX_TEST_LACK"))
				o := Options{NoNamespaces: os.Getenv("SANDBOX_TEST_FALLBACK") == "1"}
				stageOnly = os.Getenv("SANDBOX_TEST_STAGE") == "1"
				code, _ := cli("planserver sandbox", os.Args[2:], os.Stdout, os.Stderr, o)
				os.Exit(code)
			}
		}
	}
	code := m.Run()
	if shared.dir != "" {
		_ = os.RemoveAll(shared.dir)
	}
	os.Exit(code)
}

// needSandbox skips where the kernel cannot run the sandbox, saying why.
func needSandbox(t *testing.T) {
	t.Helper()
	// sandboxtest.Need's rule, which this package's own tests cannot
	// import: CI's PLANSERVER_REQUIRE_SANDBOX=1 turns the skip into a
	// failure.
	if abi, err := Available(); err != nil {
		if os.Getenv("PLANSERVER_REQUIRE_SANDBOX") == "1" {
			t.Fatalf("PLANSERVER_REQUIRE_SANDBOX=1, but this kernel cannot run the sandbox (Landlock ABI %d): %v", abi, err)
		}
		t.Skipf("no kernel sandbox here (Landlock ABI %d): %v", abi, err)
	}
}

// shared holds what every runner uses: a directory anyone may traverse
// (for an unprivileged runner's projects and home) and a copy of the test
// binary there that anyone may run.
var shared struct {
	once sync.Once
	dir  string
	exe  string
	err  error
}

func sharedDir(t *testing.T) (dir, exe string) {
	t.Helper()
	shared.once.Do(func() {
		self, err := os.Executable()
		if err != nil {
			shared.err = err
			return
		}
		if shared.dir, shared.err = os.MkdirTemp("", "planserver-sandbox-test-"); shared.err != nil {
			return
		}
		if shared.err = os.Chmod(shared.dir, 0o755); shared.err != nil {
			return
		}
		data, err := os.ReadFile(self)
		if err != nil {
			shared.err = err
			return
		}
		shared.exe = filepath.Join(shared.dir, "sandbox.test")
		shared.err = os.WriteFile(shared.exe, data, 0o755)
	})
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.dir, shared.exe
}

// runner runs the sandbox's command line, as root, as an unprivileged
// user (the user namespace path) or in the fallback without namespaces,
// and the same commands outside it for comparison.
type runner struct {
	name     string
	cred     *syscall.Credential // nil: the test's own user
	fallback bool
	stage    bool // root, through the stage (as every other user) instead of the direct start
	exe      string
	home     string
}

// runners are the ways the sandbox runs here: as root (CI runs as root)
// with namespaces, started directly and through the stage, as an
// unprivileged user through a user namespace, and the fallback without
// namespaces.
func runners(t *testing.T) []runner {
	t.Helper()
	needSandbox(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var rs []runner
	if os.Geteuid() == 0 {
		dir, exe := sharedDir(t)
		home := filepath.Join(dir, "home")
		if err := os.MkdirAll(home, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(home, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		rs = append(rs,
			runner{name: "root", exe: self},
			runner{name: "root-stage", stage: true, exe: self},
			runner{name: "unprivileged", cred: &syscall.Credential{Uid: 65534, Gid: 65534}, exe: exe, home: home},
			runner{name: "fallback", fallback: true, exe: self},
		)
	} else {
		rs = append(rs, runner{name: "unprivileged", exe: self}, runner{name: "fallback", fallback: true, exe: self})
	}
	return rs
}

type result struct {
	code           int
	stdout, stderr string
}

// run is one command run by the runner's user, in dir, with stdin.
type run struct {
	dir   string
	allow string // --allow-connect
	stdin *os.File
	flags []string // more of the sandbox's flags (--allow-write, ...)
}

func (r runner) command(c run, argv []string, sandboxed bool) *exec.Cmd {
	if sandboxed {
		args := append([]string{"sandbox", "--read-only"}, c.flags...)
		if c.allow != "" {
			args = append(args, "--allow-connect", c.allow)
		}
		argv = append(append(args, "--"), argv...)
		argv = append([]string{r.exe}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = c.dir
	cmd.Env = append(os.Environ(), "SANDBOX_TEST_CLI=1", "LC_ALL=C")
	if r.fallback {
		cmd.Env = append(cmd.Env, "SANDBOX_TEST_FALLBACK=1")
	}
	if r.stage {
		cmd.Env = append(cmd.Env, "SANDBOX_TEST_STAGE=1")
	}
	if r.home != "" {
		cmd.Env = append(cmd.Env, "HOME="+r.home, "XDG_CONFIG_HOME="+r.home+"/.config")
	}
	if r.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: r.cred}
	}
	if c.stdin != nil {
		cmd.Stdin = c.stdin
	}
	return cmd
}

func collect(t *testing.T, cmd *exec.Cmd) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
		if ws := exit.Sys().(syscall.WaitStatus); ws.Signaled() {
			code = 128 + int(ws.Signal())
		}
	} else if err != nil {
		t.Fatalf("%q: %v", cmd.Args, err)
	}
	return result{code, stdout.String(), stderr.String()}
}

// sandbox runs argv in the sandbox through the command line.
func (r runner) sandbox(t *testing.T, c run, argv ...string) result {
	t.Helper()
	return collect(t, r.command(c, argv, true))
}

// direct runs argv as the same user, without the sandbox.
func (r runner) direct(t *testing.T, c run, argv ...string) result {
	t.Helper()
	return collect(t, r.command(c, argv, false))
}

// helper is argv for the attack helper.
func (r runner) helper(attack string, args ...string) []string {
	return append([]string{r.exe, helperCommand, attack}, args...)
}

// sandboxed runs argv in the sandbox in process (Run), as the test's own
// user, with namespaces.
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
	return collect(t, cmd)
}

// treeHash hashes every entry under dir: path, mode, size, modification
// and change times, owner, link count, extended attributes and content
// (or link target), so any write shows.
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
		// ctime also catches chmod, chown, link and xattr changes; atime
		// is left out, since reading changes it.
		fmt.Fprintf(h, "%s %v %d %d %d:%d %d.%d %d\n", rel, info.Mode(), info.Size(), info.ModTime().UnixNano(),
			st.Uid, st.Gid, st.Ctim.Sec, st.Ctim.Nsec, st.Nlink)
		fmt.Fprintf(h, "xattrs %q\n", xattrs(t, path))
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

// xattrs lists path's extended attributes with their values, sorted.
func xattrs(t *testing.T, path string) []string {
	buf := make([]byte, 64<<10)
	n, err := unix.Llistxattr(path, buf)
	if err != nil {
		if err == unix.ENOTSUP {
			return nil
		}
		t.Fatalf("listxattr %s: %v", path, err)
	}
	var out []string
	for _, name := range strings.Split(strings.TrimRight(string(buf[:n]), "\x00"), "\x00") {
		if name == "" {
			continue
		}
		v := make([]byte, 64<<10)
		m, err := unix.Lgetxattr(path, name, v)
		if err != nil {
			t.Fatalf("getxattr %s %s: %v", path, name, err)
		}
		out = append(out, name+"="+string(v[:m]))
	}
	slices.Sort(out)
	return out
}

// project makes a small git repository, owned by the runner's user, to
// read and to try to write. One file carries an extended attribute.
func (r runner) project(t *testing.T) string {
	t.Helper()
	// Under the user's own home, so that the project's parent is the
	// user's too: in a user namespace, owners it does not map (root)
	// show as the overflow user, nobody.
	base := t.TempDir()
	if r.cred != nil {
		var err error
		if base, err = os.MkdirTemp(r.home, "parent-"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { removeAll(base) })
		if err := os.Chown(base, int(r.cred.Uid), int(r.cred.Gid)); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(base, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	dir, err := os.MkdirTemp(base, "project-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeAll(dir) })
	makeProject(t, dir)
	if r.cred != nil {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(path, int(r.cred.Uid), int(r.cred.Gid))
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// Settle the index as the runner's user, so that reading commands
	// have nothing to refresh.
	if res := r.direct(t, run{dir: dir}, "git", "status", "--short"); res.code != 0 {
		t.Fatalf("git status: %+v", res)
	}
	return dir
}

// project is a project for the test's own user.
func project(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	makeProject(t, dir)
	if res := direct(t, dir, "git", "status", "--short"); res.code != 0 {
		t.Fatalf("git status: %+v", res)
	}
	return dir
}

func makeProject(t *testing.T, dir string) {
	t.Helper()
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
	files := map[string]string{
		"f": "hello\nneedle one\n", "old": "old\n", "sub/g": "needle two\n",
		"go.mod":       "module example.com/m\n\ngo 1.22\n",
		"m.go":         "package m\n\n// F is one.\nfunc F() int { return 1 }\n",
		"sub/s.go":     "package sub\n\nimport \"example.com/m\"\n\nvar X = m.F()\n",
		"read.py":      "import os\nfor n in sorted(os.listdir('.')):\n    if os.path.isfile(n):\n        print(n, len(open(n, 'rb').read()))\n",
		".gitignore":   "",
		"sub/data.txt": "needle three\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := unix.Setxattr(filepath.Join(dir, "old"), "user.planserver", []byte("kept"), 0); err != nil && err != unix.ENOTSUP {
		t.Fatal(err)
	}
	must("git", "init", "-q")
	must("git", "add", ".")
	must("git", "commit", "-qm", "first")
	// A change in the work tree, for git diff and git status to show.
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("hello\nneedle one\nchanged\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// exitCode is err's exit status: 0 for nil, -1 for an error that is not
// an exit.
func exitCode(err error) int {
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}
