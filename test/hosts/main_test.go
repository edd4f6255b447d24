// Package hosts drives real agent hosts, installed from npm into
// node_modules here by .ci/install-hosts (make test-hosts), against a real
// planserver binary and the scripted model endpoint of internal/hosttest.
// Nothing leaves loopback: the model is scripted, and every host runs with
// its proxy pointed at hosttest.Egress, which refuses and records whatever
// a host tries to reach outside.
//
// Without node_modules the tests skip and say why, unless
// PLANSERVER_REQUIRE_HOSTS is set (make test-hosts and CI set it), when
// they fail.
package hosts

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/planserver/planserver/internal/hosttest"
)

// binary is planserver, built once for the package's tests.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "planserver-hosts")
	if err != nil {
		panic(err)
	}
	// PLANSERVER_BIN names a binary built already (make test-hosts
	// builds it with make build); otherwise it is built here.
	// Hosts run it as "planserver" from PATH, so it is that name here.
	binary = filepath.Join(dir, "planserver")
	// planserver-hook, the lean command form, is what hosts run (as
	// planserver hook install writes it), beside planserver.
	hookBinary := filepath.Join(dir, "planserver-hook")
	if prebuilt := os.Getenv("PLANSERVER_BIN"); prebuilt != "" {
		abs, err := filepath.Abs(prebuilt)
		if err == nil {
			err = os.Symlink(abs, binary)
		}
		if err == nil {
			err = os.Symlink(filepath.Join(filepath.Dir(abs), "planserver-hook"), hookBinary)
		}
		if err != nil {
			panic(err)
		}
	} else {
		for _, b := range []struct{ out, pkg string }{{binary, "../../cmd/planserver"}, {hookBinary, "../../cmd/planserver-hook"}} {
			build := exec.Command("go", "build", "-trimpath", "-o", b.out, b.pkg)
			build.Env = append(os.Environ(), "CGO_ENABLED=0")
			build.Stderr = os.Stderr
			if err := build.Run(); err != nil {
				panic("build " + b.pkg + ": " + err.Error())
			}
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// host returns the path of a host's command from node_modules/.bin.
func host(t *testing.T, name string) string {
	t.Helper()
	bin, err := filepath.Abs(filepath.Join("node_modules", ".bin", name))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(bin); err != nil {
		if os.Getenv("PLANSERVER_REQUIRE_HOSTS") != "" {
			t.Fatalf("%s is missing: run .ci/install-hosts", bin)
		}
		t.Skipf("%s is not installed: run .ci/install-hosts (npm ci in test/hosts) to test against the real hosts", bin)
	}
	return bin
}

// server is a running planserver binary on a loopback port, its database
// in the test's temp dir.
type server struct {
	t    *testing.T
	URL  string
	addr string
	db   string
	cmd  *exec.Cmd
	done chan struct{}
	log  *bytes.Buffer
	mu   sync.Mutex
}

func startServer(t *testing.T, extra ...string) *server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	s := &server{t: t, URL: "http://" + addr, addr: addr, db: filepath.Join(t.TempDir(), "planserver.db"), log: &bytes.Buffer{}}
	s.start(extra...)
	t.Cleanup(s.stop)
	return s
}

func (s *server) start(extra ...string) {
	t := s.t
	t.Helper()
	args := append([]string{"serve", "--addr", s.addr, "--db", s.db}, extra...)
	s.cmd = exec.Command(binary, args...)
	s.cmd.Stderr = lockedWriter{&s.mu, s.log}
	s.cmd.Stdout = s.cmd.Stderr
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s.done = make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(s.done) }()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(s.URL + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		select {
		case <-s.done:
			t.Fatalf("planserver exited at start:\n%s", s.logText())
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("planserver not ready on %s:\n%s", s.addr, s.logText())
}

// stop kills the server (a test of "planserver is down" calls it early).
func (s *server) stop() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Kill()
		<-s.done
	}
}

func (s *server) logText() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.log.String()
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// call sends one HTTP API request (admin under --auth none, or with the
// bearer token given) and decodes the JSON answer into out when out is not
// nil; it fails the test unless the status is want.
func (s *server) call(method, path, body string, want int, out any, header ...string) []byte {
	t := s.t
	t.Helper()
	req, err := http.NewRequest(method, s.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("%s %s: %d, want %d: %s", method, path, resp.StatusCode, want, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, b)
		}
	}
	return b
}

// run runs a host command with env (added to a bare environment: PATH,
// a HOME of the test's own, the egress proxy) in dir, and returns its
// combined output. It fails the test when the host runs past timeout: a
// host that hangs on an unreachable network is a finding.
func run(t *testing.T, egress *hosttest.Egress, dir string, timeout time.Duration, env []string, name string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	home := filepath.Join(t.TempDir(), "home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd.Env = append([]string{
		"PATH=" + filepath.Dir(binary) + string(os.PathListSeparator) + os.Getenv("PATH"),
		"HOME=" + home,
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"XDG_DATA_HOME=" + filepath.Join(home, ".local", "share"),
		"XDG_CACHE_HOME=" + filepath.Join(home, ".cache"),
		"XDG_STATE_HOME=" + filepath.Join(home, ".local", "state"),
		"TMPDIR=" + t.TempDir(),
		"TERM=dumb",
		"NO_COLOR=1",
		"CI=1",
	}, egress.Env()...)
	cmd.Env = append(cmd.Env, env...)
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("%s %s ran past %s:\n%s", filepath.Base(name), strings.Join(args, " "), timeout, out)
	}
	return string(out), err
}

// hashDir returns a digest of every path, mode and content under dir, so a
// test can say a directory is byte-for-byte unchanged.
func hashDir(t *testing.T, dir string) string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		info, err := d.Info()
		if err != nil {
			return err
		}
		line := fmt.Sprintf("%s %v %d", rel, info.Mode(), info.ModTime().UnixNano())
		if d.Type().IsRegular() {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(b)
			line += " " + hex.EncodeToString(sum[:])
		}
		lines = append(lines, line)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(lines)
	sum := sha256.Sum256([]byte(strings.Join(lines, "\n")))
	return hex.EncodeToString(sum[:])
}

// project makes a working directory with a few files for a host to work in.
func project(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "project")
	for name, content := range map[string]string{
		"README.md":   "# demo\n",
		"main.go":     "package main\n\nfunc main() {}\n",
		"src/util.go": "package src\n\n// Version is edited by the tests.\nconst Version = \"1\"\n",
	} {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
