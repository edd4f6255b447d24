package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/planserver/planserver/internal/cli"
)

// syncBuffer is a bytes.Buffer a process may write while a test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// waitExit waits up to d for p to exit and returns how long it took and
// its exit error.
func waitExit(t *testing.T, p *proc, d time.Duration) (time.Duration, error) {
	t.Helper()
	begin := time.Now()
	select {
	case err := <-p.done:
		p.done <- err // for the cleanup
		return time.Since(begin), err
	case <-time.After(d):
		t.Fatalf("planserver still running %v later:\n%s", d, p.stderr.String())
	}
	return 0, nil
}

// waitLog waits until p's log holds s.
func waitLog(t *testing.T, p *proc, s string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(p.stderr.String(), s) {
		if time.Now().After(deadline) {
			t.Fatalf("log never said %q:\n%s", s, p.stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// stalledUpload sends a request's headers and part of its body, then
// nothing more: a client whose upload stalled.
func stalledUpload(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := io.WriteString(c, "PUT /v1/plans/stalled HTTP/1.1\r\nHost: 127.0.0.1\r\n"+
		"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"content\":"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // the handler is reading the body now
	return c
}

// readAnswer reads one HTTP answer from c.
func readAnswer(t *testing.T, c net.Conn, within time.Duration) (*http.Response, []byte) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(within))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer within %v: %v", within, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, body
}

// problemCode checks an answer is a problem document with the given
// status and returns its code.
func problemCode(t *testing.T, resp *http.Response, body []byte, status int) string {
	t.Helper()
	var p struct {
		Status int    `json:"status"`
		Code   string `json:"code"`
	}
	if resp.StatusCode != status || resp.Header.Get("Content-Type") != "application/problem+json" ||
		json.Unmarshal(body, &p) != nil || p.Status != status {
		t.Fatalf("want a %d problem document, got %d %s: %s", status, resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	return p.Code
}

// TestStalledUploadDoesNotHoldShutdown: a client that sends headers and
// part of a body, then nothing, used to hold SIGTERM for the whole 30 s
// grace and make planserver exit 2. Its request is answered 408 within
// the stall grace, and the process exits 0 saying it dropped one.
func TestStalledUploadDoesNotHoldShutdown(t *testing.T) {
	p := start(t, filepath.Join(t.TempDir(), "p.db"))
	c := stalledUpload(t, p.addr)
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	resp, body := readAnswer(t, c, stallGrace+3*time.Second)
	if code := problemCode(t, resp, body, http.StatusRequestTimeout); code != "request_timeout" {
		t.Errorf("stalled upload answered %s: %s", code, body)
	}
	took, err := waitExit(t, p, stallGrace+5*time.Second)
	if err != nil {
		t.Fatalf("exit after SIGTERM with a stalled upload: %v\n%s", err, p.stderr.String())
	}
	if took > stallGrace+3*time.Second {
		t.Errorf("shutdown took %v with a %v stall grace", took, stallGrace)
	}
	if log := p.stderr.String(); !strings.Contains(log, "shutdown dropped requests whose clients stalled") ||
		!strings.Contains(log, "count=1") {
		t.Errorf("the log does not count the dropped request:\n%s", log)
	}
	if strings.Contains(p.stderr.String(), "internal error") {
		t.Errorf("a client's stalled body was logged as an internal error:\n%s", p.stderr.String())
	}
}

// TestSecondSignalExitsAtOnce: while a graceful shutdown waits, a second
// SIGTERM ends the process at once.
func TestSecondSignalExitsAtOnce(t *testing.T) {
	p := start(t, filepath.Join(t.TempDir(), "p.db"))
	stalledUpload(t, p.addr)
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitLog(t, p, "shutting down")
	time.Sleep(100 * time.Millisecond)
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if took, _ := waitExit(t, p, stallGrace); took > time.Second {
		t.Errorf("the second SIGTERM took %v to end the process", took)
	}
}

// TestMigrateRefusesWhileServing: migrate up and down refuse to change the
// schema under a running server, naming it; a second serve is refused
// too; status still reads; after the server stops, migrate runs.
func TestMigrateRefusesWhileServing(t *testing.T) {
	db := filepath.Join(t.TempDir(), "p.db")
	p := start(t, db)
	want := fmt.Sprintf("a planserver serve (pid %d) holds %s; stop it first", p.cmd.Process.Pid, db)
	for _, action := range []string{"up", "down"} {
		var out, errOut bytes.Buffer
		err := run(context.Background(), []string{"migrate", action, "--db", db}, noEnv, &out, &errOut)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("migrate %s while serving: %v, want %q", action, err, want)
		}
	}
	var out bytes.Buffer
	if err := run(context.Background(), []string{"migrate", "status", "--db", db}, noEnv, &out, io.Discard); err != nil ||
		strings.Contains(out.String(), "pending") {
		t.Errorf("migrate status while serving: %v\n%s", err, out.String())
	}
	second, err := exec.Command(binary, "serve", "--addr", freeAddr(t), "--db", db).CombinedOutput()
	if err == nil || !strings.Contains(string(second), want) {
		t.Errorf("a second serve on the same database: %v\n%s", err, second)
	}
	if st, body := p.call(t, "GET", "/readyz", ""); st != 200 {
		t.Errorf("the server after the refusals: %d %s", st, body)
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	if _, err := waitExit(t, p, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := run(context.Background(), []string{"migrate", "up", "--db", db}, noEnv, io.Discard, io.Discard); err != nil {
		t.Errorf("migrate up after the server stopped: %v", err)
	}
}

// TestMigrateDownKeepsRevisionFloors: rolling back 00007 used to drop the
// record of deleted resources' revisions, so a plan deleted at revision 2
// came back at 1 and a stale If-Match "1" matched it. The rollback now
// refuses, saying why, and the guarantee holds after.
func TestMigrateDownKeepsRevisionFloors(t *testing.T) {
	db := filepath.Join(t.TempDir(), "p.db")
	p := start(t, db)
	for _, step := range []struct {
		method, body string
		status       int
	}{{"PUT", `{"content":"# one"}`, 201}, {"PUT", `{"content":"# two"}`, 200}, {"DELETE", "", 204}} {
		if st, body := p.call(t, step.method, "/v1/plans/release", step.body); st != step.status {
			t.Fatalf("%s: %d %s", step.method, st, body)
		}
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	if _, err := waitExit(t, p, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	// The later migrations hold nothing of this and roll back first.
	for _, later := range []string{"00025", "00024", "00023", "00022", "00021", "00020", "00019", "00018", "00017", "00016", "00014", "00013", "00012", "00011", "00010", "00009", "00008"} {
		if err := run(context.Background(), []string{"migrate", "down", "--db", db}, noEnv, io.Discard, io.Discard); err != nil {
			t.Fatalf("rolling back %s: %v", later, err)
		}
	}
	err := run(context.Background(), []string{"migrate", "down", "--db", db}, noEnv, io.Discard, io.Discard)
	if err == nil || !strings.HasPrefix(err.Error(), "refusing to roll back 00007_revision_floors: ") ||
		!strings.Contains(err.Error(), "revision 1") {
		t.Fatalf("migrate down with a deleted plan remembered: %v", err)
	}
	p = start(t, db)
	st, body := p.call(t, "PUT", "/v1/plans/release", `{"content":"# again"}`, "If-Match", `"1"`)
	if st != http.StatusPreconditionFailed {
		t.Errorf("a stale If-Match of the deleted plan: %d %s", st, body)
	}
	if st, body := p.call(t, "PUT", "/v1/plans/release", `{"content":"# again"}`); st != 201 || !strings.Contains(string(body), `"revision":3`) {
		t.Errorf("the re-created plan: %d %s, want revision 3", st, body)
	}
}

// TestMigrateDownRefusesToLoseData: every rollback that would drop rows
// refuses, naming its migration; on an unused database all roll back.
func TestMigrateDownRefusesToLoseData(t *testing.T) {
	db := filepath.Join(t.TempDir(), "p.db")
	p := start(t, db)
	if st, body := p.call(t, "POST", "/v1/sessions", `{"id":"s"}`); st != 201 {
		t.Fatalf("create: %d %s", st, body)
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	if _, err := waitExit(t, p, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"00025", "00024", "00023", "00022", "00021", "00020", "00019", "00018", "00017", "00016", "00014", "00013", "00012", "00011", "00010", "00009", "00008", "00007", "00006", "00005", "00004", "00003", "00002"} {
		if err := run(context.Background(), []string{"migrate", "down", "--db", db}, noEnv, io.Discard, io.Discard); err != nil {
			t.Fatalf("rolling back %s, which holds nothing: %v", want, err)
		}
	}
	err := run(context.Background(), []string{"migrate", "down", "--db", db}, noEnv, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "refusing to roll back 00001_sessions_events: sessions or events hold rows") {
		t.Fatalf("rolling back the sessions a server acknowledged: %v", err)
	}
	if err := run(context.Background(), []string{"migrate", "up", "--db", db}, noEnv, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
}

// TestMigrateDownKeepsScopes: a rollback past scoped build refuses while
// a session builds within an approved scope, since an older planserver
// would let it build without; once the scope is lifted (and no review
// records a grant) it rolls back.
func TestMigrateDownKeepsScopes(t *testing.T) {
	db := filepath.Join(t.TempDir(), "p.db")
	p := start(t, db)
	for _, c := range []struct {
		method, path, body string
		status             int
		header             []string
	}{
		{"POST", "/v1/sessions", `{"id":"s","mode":"plan"}`, 201, nil},
		{"PUT", "/v1/sessions/s/plan", `{"content":"# p\n` + "```scope\\nfiles: [a.go]\\n```" + `\n"}`, 201, nil},
		{"POST", "/v1/sessions/s/plan/review", "", 200, nil},
		{"POST", "/v1/sessions/s/plan/approve", "", 200, []string{"If-Match", `"1"`}},
	} {
		if st, body := p.call(t, c.method, c.path, c.body, c.header...); st != c.status {
			t.Fatalf("%s %s: %d %s", c.method, c.path, st, body)
		}
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	if _, err := waitExit(t, p, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	err := run(context.Background(), []string{"migrate", "down", "--db", db}, noEnv, io.Discard, io.Discard)
	if err == nil || !strings.HasPrefix(err.Error(), "refusing to roll back 00025_build_scope: ") {
		t.Fatalf("migrate down with a scope in force: %v", err)
	}
}

// TestOpenErrorsSayWhy: "unable to open database file" names its cause.
func TestOpenErrorsSayWhy(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "adir.db"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "afile"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		filepath.Join(dir, "missing", "p.db"): "directory " + filepath.Join(dir, "missing") + " does not exist",
		filepath.Join(dir, "adir.db"):         filepath.Join(dir, "adir.db") + " is a directory",
		filepath.Join(dir, "afile", "p.db"):   filepath.Join(dir, "afile") + " is not a directory",
	} {
		for _, args := range [][]string{{"migrate", "up"}, {"serve", "--addr", freeAddr(t)}, {"token", "create", "--role", "admin"}} {
			args = append(args, "--db", path)
			err := run(context.Background(), args, noEnv, io.Discard, io.Discard)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%v: %v, want it to say %q", args, err, want)
			}
		}
	}

	// Permission denied: a directory this user may not create files in.
	// As root, the binary runs as nobody, for whom root's 0755 directory is
	// read-only.
	shared, err := os.MkdirTemp("", "planserver-perm")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(shared)
	locked := filepath.Join(shared, "locked")
	if err := os.Mkdir(locked, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shared, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(shared, "planserver")
	data, err := os.ReadFile(binary)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "migrate", "up", "--db", filepath.Join(locked, "p.db"))
	if os.Geteuid() == 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	} else if err := os.Chmod(locked, 0o555); err != nil {
		t.Fatal(err)
	}
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "permission denied: this user may not create files in "+locked) {
		t.Errorf("migrate up in a read-only directory: %v\n%s", err, out)
	}
}

// TestHelpForEveryCommand: --help (and -h) on every command and action
// prints its synopsis and only the flags it reads, each in --double-dash
// form with its environment variable, on stdout, and succeeds.
func TestHelpForEveryCommand(t *testing.T) {
	singleDash := regexp.MustCompile(`(^|[\s(\[])-[a-z][a-z-]+`)
	for _, c := range []struct {
		args      []string
		want, not []string
	}{
		{[]string{"--help"}, []string{"planserver serve", "planserver healthcheck", "planserver COMMAND --help"}, nil},
		{[]string{"help"}, []string{"planserver migrate up|down|status"}, nil},
		{[]string{"serve", "--help"}, []string{"--addr host:port", "PLANSERVER_ADDR", "--db file", "PLANSERVER_DB",
			"--require-preconditions", "PLANSERVER_REQUIRE_PRECONDITIONS", "--max-connections connections",
			"PLANSERVER_MAX_CONNECTIONS", "--max-event-streams streams", "PLANSERVER_MAX_EVENT_STREAMS",
			"(default 127.0.0.1:8080)"}, []string{"--role"}},
		{[]string{"serve", "-h"}, []string{"--durability level", "PLANSERVER_DURABILITY"}, nil},
		{[]string{"migrate", "--help"}, []string{"up ", "down ", "status ", "--db file", "PLANSERVER_DB"}, []string{"--addr", "--durability", "--log-format"}},
		{[]string{"migrate", "up", "--help"}, []string{"planserver migrate up", "--db file"}, []string{"--addr", "--durability"}},
		{[]string{"migrate", "down", "-h"}, []string{"planserver migrate down", "--db file"}, []string{"--addr"}},
		{[]string{"migrate", "status", "--help"}, []string{"planserver migrate status", "--db file"}, []string{"--addr"}},
		{[]string{"token", "--help"}, []string{"planserver token create", "planserver token revoke NAME", "--db file"}, []string{"--addr", "--role role"}},
		{[]string{"token", "create", "--help"}, []string{"--role role", "--session session", "--name name", "--ttl lifetime",
			"--db file", "PLANSERVER_DB"}, []string{"PLANSERVER_ROLE", "PLANSERVER_NAME", "--addr", "--durability"}},
		{[]string{"token", "list", "--help"}, []string{"planserver token list", "--db file"}, []string{"--role", "--addr"}},
		{[]string{"token", "revoke", "--help"}, []string{"planserver token revoke NAME", "--db file"}, []string{"--role", "--addr"}},
		{[]string{"backup", "--help"}, []string{"planserver backup FILE", "--db file", "PLANSERVER_DB"}, []string{"--addr", "--durability"}},
		{[]string{"healthcheck", "--help"}, []string{"--addr host:port", "PLANSERVER_ADDR"}, []string{"--db"}},
		{[]string{"copy", "--help"}, []string{"usage: planserver copy --from DB --to DB", "--from file", "--to file"}, []string{"PLANSERVER_", "--addr"}},
		{[]string{"copy", "-h"}, []string{"usage: planserver copy --from DB --to DB"}, nil},
		{[]string{"gate", "--help"}, []string{"planserver gate add NAME URL", "planserver gate list | remove NAME"}, nil},
		{[]string{"gate", "add", "--help"}, []string{"Usage: planserver gate add NAME URL", "--read-only tools", "--db file", "PLANSERVER_DB"}, []string{"--addr"}},
		{[]string{"gate", "list", "--help"}, []string{"Usage: planserver gate list", "--db file"}, []string{"--read-only", "--addr"}},
		{[]string{"gate", "remove", "-h"}, []string{"Usage: planserver gate remove NAME", "--db file"}, []string{"--read-only", "--addr"}},
	} {
		var out, errOut bytes.Buffer
		if err := run(context.Background(), c.args, noEnv, &out, &errOut); err != nil {
			t.Errorf("%v: %v", c.args, err)
			continue
		}
		help := out.String()
		if errOut.Len() > 0 {
			t.Errorf("%v wrote to stderr: %s", c.args, errOut.String())
		}
		for _, w := range c.want {
			if !strings.Contains(help, w) {
				t.Errorf("%v: help lacks %q:\n%s", c.args, w, help)
			}
		}
		for _, n := range c.not {
			if strings.Contains(help, n) {
				t.Errorf("%v: help lists %q, which does not apply:\n%s", c.args, n, help)
			}
		}
		if m := singleDash.FindString(help); m != "" {
			t.Errorf("%v: help names a flag in single-dash form (%q):\n%s", c.args, m, help)
		}
	}
}

// TestWrongFlagIsOneLine: a flag a command does not take, or a missing
// value, is one line naming it in --double-dash form and pointing to
// --help, and exits 2.
func TestWrongFlagIsOneLine(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--frobnicate"}, "planserver serve: unknown flag --frobnicate (see 'planserver serve --help')"},
		{[]string{"migrate", "up", "--addr", "x"}, "planserver migrate up: unknown flag --addr (see 'planserver migrate up --help')"},
		{[]string{"token", "create", "--role"}, "planserver token create: flag --role needs a value (see 'planserver token create --help')"},
		{[]string{"token", "list", "extra"}, `planserver token list: unexpected argument "extra" (see 'planserver token list --help')`},
		{[]string{"backup", "copy.db", "--durability", "full"}, "planserver backup: unknown flag --durability (see 'planserver backup --help')"},
		{[]string{"serve", "--rate-limit", "lots"}, `planserver serve: invalid value "lots" for flag --rate-limit`},
		{[]string{"migrate", "sideways"}, `planserver migrate: unknown action "sideways": want up, down or status (see 'planserver migrate --help')`},
		{[]string{"healthcheck", "--db", "x"}, "planserver healthcheck: unknown flag --db"},
	} {
		var out, errOut bytes.Buffer
		err := run(context.Background(), c.args, noEnv, &out, &errOut)
		if !errors.Is(err, cli.ErrUsage) {
			t.Errorf("%v: %v, want a usage error", c.args, err)
		}
		lines := strings.Split(strings.TrimSuffix(errOut.String(), "\n"), "\n")
		if len(lines) != 1 || !strings.HasPrefix(lines[0], c.want) {
			t.Errorf("%v: stderr %q, want one line starting %q", c.args, errOut.String(), c.want)
		}
	}
	// The exit statuses, through the binary.
	for args, want := range map[string]int{"token create --help": 0, "copy --help": 0, "gate add --help": 0, "migrate up --frobnicate": 2} {
		err := exec.Command(binary, strings.Fields(args)...).Run()
		code := 0
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			code = exit.ExitCode()
		}
		if code != want {
			t.Errorf("planserver %s exited %d, want %d", args, code, want)
		}
	}
}

// TestHealthcheck: exit 0 against a serving planserver, 1 against nothing.
func TestHealthcheck(t *testing.T) {
	p := start(t, filepath.Join(t.TempDir(), "p.db"))
	var out bytes.Buffer
	if err := run(context.Background(), []string{"healthcheck", "--addr", p.addr}, noEnv, &out, io.Discard); err != nil ||
		!strings.Contains(out.String(), `"status":"ok"`) {
		t.Errorf("healthcheck of a live server: %v %s", err, out.String())
	}
	env := map[string]string{"PLANSERVER_ADDR": p.addr}
	if err := run(context.Background(), []string{"healthcheck"}, func(k string) string { return env[k] }, io.Discard, io.Discard); err != nil {
		t.Errorf("healthcheck with PLANSERVER_ADDR: %v", err)
	}
	err := exec.Command(binary, "healthcheck", "--addr", freeAddr(t)).Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Errorf("healthcheck of nothing: %v, want exit status 1", err)
	}
}

// TestMakeRunStopsTheServer: make run started by a script and stopped with
// SIGTERM leaves no server behind (with go run it did: go run died and its
// child kept serving).
func TestMakeRunStopsTheServer(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	dir := t.TempDir()
	addr := freeAddr(t)
	cmd := exec.Command("make", "-s", "run", "BIN="+filepath.Join(dir, "planserver"))
	cmd.Dir = filepath.Join("..", "..")
	cmd.Env = append(os.Environ(), "PLANSERVER_ADDR="+addr, "PLANSERVER_DB="+filepath.Join(dir, "run.db"))
	// make builds first: a link when the packages are compiled already,
	// longer on a machine that never built them.
	p := startCmd(t, addr, cmd, 5*time.Minute)
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitExit(t, p, 10*time.Second)
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Fatalf("a server still listens on %s after make run was stopped", addr)
	}
}

// noFileEnv asks TestMain to run the command in its arguments under an
// RLIMIT_NOFILE of this value, soft and hard: the Go runtime raises a
// soft limit to the hard one at start, and restores the original soft
// limit for the children it starts, so only a hard limit set before exec
// reaches planserver.
const noFileEnv = "PLANSERVER_TEST_NOFILE"

// execUnderFDLimit sets RLIMIT_NOFILE to limit and execs os.Args[1:].
func execUnderFDLimit(limit string) {
	n, err := strconv.ParseUint(limit, 10, 64)
	if err == nil {
		err = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: n, Max: n})
	}
	if err == nil {
		err = syscall.Exec(os.Args[1], os.Args[1:], withoutEnv(os.Environ(), noFileEnv))
	}
	fmt.Fprintln(os.Stderr, "run under RLIMIT_NOFILE", limit+":", err)
	os.Exit(3)
}

// startUnderFDLimit starts planserver serve under an RLIMIT_NOFILE of
// limit.
func startUnderFDLimit(t *testing.T, limit int, db string, extra ...string) *proc {
	t.Helper()
	addr := freeAddr(t)
	args := append([]string{binary, "serve", "--addr", addr, "--db", db}, extra...)
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), noFileEnv+"="+strconv.Itoa(limit))
	return startCmd(t, addr, cmd, serverReady)
}

// limitsLogged reads the caps serve derived and logged at start.
func limitsLogged(t *testing.T, p *proc) (fdLimit, conns, streams int) {
	t.Helper()
	m := regexp.MustCompile(`fd_limit=(\d+) .*max_connections=(\d+) max_event_streams=(\d+)`).FindStringSubmatch(p.stderr.String())
	if m == nil {
		t.Fatalf("serve did not log its limits:\n%s", p.stderr.String())
	}
	fdLimit, _ = strconv.Atoi(m[1])
	conns, _ = strconv.Atoi(m[2])
	streams, _ = strconv.Atoi(m[3])
	return fdLimit, conns, streams
}

// openStream asks for the event stream on a connection of its own. ok
// reports a stream (its first line read); otherwise resp is the refusal.
func openStream(addr string) (resp *http.Response, body []byte, ok bool, err error) {
	// The timeouts tell a stream that is never answered from a slow one on
	// a loaded machine; they are not what is measured.
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true, ResponseHeaderTimeout: 20 * time.Second}}
	req, _ := http.NewRequest("GET", "http://"+addr+"/v1/events", nil)
	req.Header.Set("Accept", "text/event-stream")
	if resp, err = client.Do(req); err != nil {
		return nil, nil, false, err
	}
	if resp.StatusCode != http.StatusOK {
		body, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, body, false, err
	}
	stuck := time.AfterFunc(20*time.Second, func() { resp.Body.Close() })
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	stuck.Stop()
	return resp, nil, err == nil && line == "retry: 3000\n", err
}

// TestEventStreamsAboveTheCapGet503: under an fd limit of 256, more
// watchers than planserver can hold used to sit unaccepted and starve
// /healthz. Now the streams above the derived cap are answered 503 with
// Retry-After at once, and /healthz answers while the others stay open.
func TestEventStreamsAboveTheCapGet503(t *testing.T) {
	p := startUnderFDLimit(t, 256, filepath.Join(t.TempDir(), "p.db"))
	fdLimit, conns, streams := limitsLogged(t, p)
	if fdLimit != 256 || conns >= 256 || streams >= conns {
		t.Fatalf("under RLIMIT_NOFILE 256: fd_limit=%d max_connections=%d max_event_streams=%d", fdLimit, conns, streams)
	}
	clients := max(conns+40, 300)
	type result struct {
		resp *http.Response
		body []byte
		ok   bool
		err  error
		took time.Duration
	}
	results := make(chan result, clients)
	for i := 0; i < clients; i++ {
		go func() {
			begin := time.Now()
			resp, body, ok, err := openStream(p.addr)
			results <- result{resp, body, ok, err, time.Since(begin)}
		}()
	}
	var open, refused int
	for i := 0; i < clients; i++ {
		r := <-results
		switch {
		case r.err != nil:
			t.Errorf("a watcher got no answer: %v (after %v)", r.err, r.took)
		case r.ok:
			open++
			t.Cleanup(func() { r.resp.Body.Close() })
		default:
			refused++
			code := problemCode(t, r.resp, r.body, http.StatusServiceUnavailable)
			if code != "unavailable" || r.resp.Header.Get("Retry-After") == "" {
				t.Errorf("refusal %s without Retry-After %q: %s", code, r.resp.Header.Get("Retry-After"), r.body)
			}
		}
		// Starved watchers used to wait for ever; a bound this far above
		// an answer's cost tells that apart on a loaded machine too.
		if r.took > 20*time.Second {
			t.Errorf("a watcher waited %v for its answer", r.took)
		}
	}
	if open != streams || refused != clients-streams {
		t.Errorf("%d streams open and %d refused of %d; want %d open (max_event_streams)", open, refused, clients, streams)
	}
	// /healthz is answered, not starved (which was for ever): the bound is
	// generous so that a busy machine does not read as starvation.
	begin := time.Now()
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 20 * time.Second}
	resp, err := client.Get("http://" + p.addr + "/healthz")
	if err != nil {
		t.Fatalf("/healthz with %d streams open: %v (after %v)", open, err, time.Since(begin))
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("/healthz with %d streams open: %d after %v", open, resp.StatusCode, time.Since(begin))
	}
}

// waitOpenConnections waits until the server counts want open connections
// besides the one asking. The asking connection is sent Connection: close
// and read to its end: the server closes it only after it has stopped
// counting it (conn.Close), so once the client sees EOF the count has
// dropped. Reading the count alone would race the server's close of the
// asking connection, which under load lands after the next dial.
func waitOpenConnections(t *testing.T, addr string, want int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		_, err = io.WriteString(c, "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
		if err != nil {
			t.Fatal(err)
		}
		resp, body := readAnswer(t, c, 10*time.Second)
		// The answer carried Connection: close: wait for the server's close.
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if n, err := io.Copy(io.Discard, c); err != nil || n != 0 {
			t.Fatalf("after an answer with Connection: close: %d more bytes, %v", n, err)
		}
		c.Close()
		got := -1
		for _, line := range strings.Split(string(body), "\n") {
			if v, ok := strings.CutPrefix(line, "planserver_connections_open "); ok {
				got, _ = strconv.Atoi(v)
			}
		}
		// The count includes the asking connection.
		if resp.StatusCode == http.StatusOK && got-1 == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("open connections besides the asking one: %d, want %d (status %d)", got-1, want, resp.StatusCode)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestConnectionsAboveTheCapGet503: above --max-connections a new
// connection is answered one 503 problem with Retry-After and closed; once
// a connection closes, requests are served again.
//
// It asserts what the server does, not when: every wait is for an event
// the server causes (its count of open connections reaching a value, an
// answer, a close), never for a duration to pass, so a loaded machine only
// makes it slower.
func TestConnectionsAboveTheCapGet503(t *testing.T) {
	p := start(t, filepath.Join(t.TempDir(), "p.db"), "--max-connections", "3", "--max-event-streams", "1")
	// start's readiness probe closed its connection from the client's side,
	// which the server notices on its own time: wait until it has, so that
	// all three places are free.
	waitOpenConnections(t, p.addr, 0)
	// Hold connections open, each with a request answered, until one is
	// refused: the cap allows three, and nothing else is connected.
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	for refused := false; !refused; {
		if len(held) > 3 {
			t.Fatalf("%d connections held open under --max-connections 3", len(held))
		}
		c, err := net.Dial("tcp", p.addr)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
		if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		resp, body := readAnswer(t, c, 10*time.Second)
		if resp.StatusCode == http.StatusOK {
			continue
		}
		refused = true
		if code := problemCode(t, resp, body, http.StatusServiceUnavailable); code != "unavailable" ||
			resp.Header.Get("Retry-After") == "" || !resp.Close {
			t.Errorf("above the cap: %s, Retry-After %q, close %v: %s", code, resp.Header.Get("Retry-After"), resp.Close, body)
		}
	}
	if len(held) != 4 {
		t.Errorf("refused the connection %d under --max-connections 3", len(held))
	}
	// Once one closes, requests are served again: the server notices the
	// close on its own time, so ask until it has (a refusal meanwhile is
	// the cap still counting it).
	held[0].Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}
		resp, err := client.Get("http://" + p.addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("/healthz after a connection closed: %v %v", resp, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, c := range held {
		c.Close()
	}
	held = nil
	// The stream cap: the streams' connections must fit under the
	// connection cap, so wait until the server has let go of those above.
	waitOpenConnections(t, p.addr, 0)
	// The stream cap: one stream, then 503 for the next.
	if _, _, ok, err := openStream(p.addr); !ok {
		t.Fatalf("first stream: %v", err)
	}
	resp, body, ok, err := openStream(p.addr)
	if ok || err != nil {
		t.Fatalf("second stream above --max-event-streams 1: ok %v, %v", ok, err)
	}
	if code := problemCode(t, resp, body, http.StatusServiceUnavailable); code != "unavailable" || resp.Header.Get("Retry-After") != "5" {
		t.Errorf("stream above the cap: %s, Retry-After %q: %s", code, resp.Header.Get("Retry-After"), body)
	}
	if _, metrics := p.call(t, "GET", "/metrics", ""); !strings.Contains(string(metrics), "planserver_event_streams_rejected_total 1") ||
		!regexp.MustCompile(`planserver_connections_rejected_total [1-9]`).Match(metrics) {
		t.Errorf("the refusals are not counted:\n%s", metrics)
	}
}

// TestServeRefusesWrongConnectionSettings: serve refuses a negative
// --max-connections and --pg-writers 0 (TestConnectionLimitsFormula in
// internal/serveconfig has the caps derived from the descriptor limit).
func TestServeRefusesWrongConnectionSettings(t *testing.T) {
	err := run(context.Background(), []string{"serve", "--max-connections", "-1", "--db", filepath.Join(t.TempDir(), "p.db")},
		noEnv, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "must not be negative") {
		t.Errorf("--max-connections -1: %v", err)
	}
	err = run(context.Background(), []string{"serve", "--pg-writers", "0", "--db", filepath.Join(t.TempDir(), "p.db")},
		noEnv, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "--pg-writers 0: at least 1") {
		t.Errorf("--pg-writers 0: %v", err)
	}
}
