package attacks

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	// binary, hookBinary: planserver and planserver-hook, built once (or
	// taken from PLANSERVER_BIN's directory).
	binary, hookBinary string
	// template is the git repository every case starts from.
	template string
	// goCache is a build cache the reads share, filled before any case.
	goCache string
)

func TestMain(m *testing.M) {
	// The cases spend their time waiting on processes, not on the CPU:
	// run more of them at once than there are cores, unless told.
	flag.Parse()
	explicit := false
	flag.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "test.parallel" })
	if !explicit {
		_ = flag.Set("test.parallel", "8")
	}
	// The whole corpus takes minutes on two cores: give it the time,
	// unless told otherwise.
	timeout := false
	flag.Visit(func(f *flag.Flag) { timeout = timeout || f.Name == "test.timeout" })
	if !timeout && os.Getenv("PLANSERVER_ATTACKS") == "full" {
		_ = flag.Set("test.timeout", "45m")
	}
	dir, err := os.MkdirTemp("", "planserver-attacks")
	if err != nil {
		panic(err)
	}
	code := func() int {
		defer os.RemoveAll(dir)
		if err := build(dir); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		goCache = filepath.Join(dir, "gocache")
		template = filepath.Join(dir, "template")
		if err := makeTemplate(template); err != nil {
			fmt.Fprintln(os.Stderr, "the template repository:", err)
			return 1
		}
		return m.Run()
	}()
	os.Exit(code)
}

// build puts planserver and its lean companions in dir.
func build(dir string) error {
	binary = filepath.Join(dir, "planserver")
	hookBinary = filepath.Join(dir, "planserver-hook")
	pkgs := map[string]string{binary: "../../cmd/planserver", hookBinary: "../../cmd/planserver-hook"}
	if _, err := os.Stat("../../cmd/planserver-sandbox"); err == nil {
		pkgs[filepath.Join(dir, "planserver-sandbox")] = "../../cmd/planserver-sandbox"
	}
	if prebuilt := os.Getenv("PLANSERVER_BIN"); prebuilt != "" {
		abs, err := filepath.Abs(prebuilt)
		if err != nil {
			return err
		}
		for out := range pkgs {
			if err := os.Symlink(filepath.Join(filepath.Dir(abs), filepath.Base(out)), out); err != nil {
				return err
			}
		}
		return nil
	}
	for out, pkg := range pkgs {
		b := exec.Command("go", "build", "-trimpath", "-o", out, pkg)
		b.Env = append(os.Environ(), "CGO_ENABLED=0")
		if o, err := b.CombinedOutput(); err != nil {
			return fmt.Errorf("build %s: %v\n%s", pkg, err, o)
		}
	}
	return nil
}

// makeTemplate makes the repository every case copies: a few committed
// files in a small Go module, a second commit, a file with an extended
// attribute, and a file of slashes for the awk and sed bracket cases.
func makeTemplate(dir string) error {
	var big strings.Builder
	for i := 0; i < 5000; i++ {
		fmt.Fprintf(&big, "line %d of the big file, some words to sort\n", i%977)
	}
	files := map[string]string{
		"victim.txt":       "the victim: plan mode must leave this file as it is\na b c\n",
		"notes.md":         "# notes\n\nTODO: plan the change\nmore notes\n",
		"go.mod":           "module example.com/demo\n\ngo 1.21\n",
		"src/app.go":       "package src\n\n// Version is what the plan will change. TODO: bump it.\nconst Version = \"1\"\n",
		"cmd/demo/main.go": "package main\n\nimport \"example.com/demo/src\"\n\nfunc main() { println(src.Version) }\n",
		"dir/file.txt":     "a file in a directory\n",
		"dir/slash.txt":    "a/b\nc/d\n",
		"dir/big.txt":      big.String(),
		"dir/data.json":    "{\"a\": 1, \"b\": [1, 2]}\n",
		"dir/data.yaml":    "a: 0\n",
		"dir/xattr.txt":    "has an extended attribute\n",
		"tools/read.py":    "import os\nfor root, dirs, files in sorted(os.walk('.')):\n    dirs[:] = sorted(d for d in dirs if d != '.git')\n    for f in sorted(files):\n        with open(os.path.join(root, f), 'rb') as fh:\n            print(os.path.join(root, f), len(fh.read()))\n",
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "dir", "empty"), 0o755); err != nil {
		return err
	}
	script := `set -e
git init -q -b main .
git config user.name attacker-test
git config user.email test@example.com
git config commit.gpgsign false
git add -A
git commit -q -m first
echo 'second line' >> notes.md
git commit -q -am second
setfattr -n user.keep -v 1 dir/xattr.txt 2>/dev/null || python3 -c "import os; os.setxattr('dir/xattr.txt', 'user.keep', b'1')"
`
	c := exec.Command("bash", "-c", script)
	c.Dir = dir
	c.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
	if out, err := c.CombinedOutput(); err != nil {
		return fmt.Errorf("%v\n%s", err, out)
	}
	return nil
}

// server is a planserver on a loopback port with one session in plan mode.
type server struct {
	URL, addr, db, session string
	cmd                    *exec.Cmd
	state                  string // the process's state, which no attack may change
	log                    *bytes.Buffer
	mu                     sync.Mutex
	done                   chan struct{}
}

func startServer(t *testing.T, label string, extra ...string) *server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	s := &server{URL: "http://" + addr, addr: addr, db: filepath.Join(t.TempDir(), "planserver.db"), log: &bytes.Buffer{}}
	s.cmd = exec.Command(binary, append([]string{"serve", "--addr", addr, "--db", s.db}, extra...)...)
	s.cmd.Stdout, s.cmd.Stderr = lockedWriter{&s.mu, s.log}, lockedWriter{&s.mu, s.log}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s.done = make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(s.done) }()
	t.Cleanup(func() {
		_ = s.cmd.Process.Kill()
		<-s.done
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := httpClient.Get(s.URL + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		select {
		case <-s.done:
			t.Fatalf("planserver (%s) exited at start:\n%s", label, s.log.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("planserver (%s) not ready:\n%s", label, s.log.String())
		}
	}
	resp, err := httpClient.Post(s.URL+"/v1/sessions", "application/json", strings.NewReader(`{"id":"attacked","title":"under attack","mode":"plan"}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var sess struct {
		ID string `json:"id"`
	}
	if resp.StatusCode != 201 || json.Unmarshal(b, &sess) != nil {
		t.Fatalf("create the session: %d %s", resp.StatusCode, b)
	}
	s.session = "attacked"
	s.state = processState(s.cmd.Process.Pid)
	return s
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
