package main

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "modernc.org/sqlite"
)

// binary is the planserver binary built once for the process tests, and
// hookBinary the lean planserver-hook beside it (as make build puts it).
var binary, hookBinary string

func TestMain(m *testing.M) {
	if limit := os.Getenv(noFileEnv); limit != "" {
		execUnderFDLimit(limit) // does not return
	}
	dir, err := os.MkdirTemp("", "planserver-bin")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "planserver")
	// Built as make build builds it, so make run (TestMakeRunStopsTheServer)
	// finds every package compiled already.
	build := exec.Command("go", "build", "-trimpath", "-o", binary, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		panic("build planserver: " + err.Error())
	}
	hookBinary = filepath.Join(dir, "planserver-hook")
	build = exec.Command("go", "build", "-trimpath", "-o", hookBinary, "../planserver-hook")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		panic("build planserver-hook: " + err.Error())
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// freeAddr returns a loopback address nobody listens on right now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// proc is a running planserver binary.
type proc struct {
	cmd    *exec.Cmd
	addr   string
	stderr *syncBuffer
	done   chan error
}

func start(t *testing.T, db string, extra ...string) *proc {
	t.Helper()
	addr := freeAddr(t)
	args := append([]string{"serve", "--addr", addr, "--db", db}, extra...)
	return startCmd(t, addr, exec.Command(binary, args...), serverReady)
}

// serverReady is how long a started server may take to answer /readyz.
// It waits for the server, which answers as soon as it is ready, so the
// bound only has to tell a server that never gets there from one on a
// machine whose every core is busy: the flaky-test hunt saw 10 s run out.
const serverReady = 60 * time.Second

// startCmd starts cmd, a planserver serve on addr, and waits up to ready
// for it to be ready.
func startCmd(t *testing.T, addr string, cmd *exec.Cmd, ready time.Duration) *proc {
	t.Helper()
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: cmd, addr: addr, stderr: stderr, done: make(chan error, 1)}
	go func() { p.done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.done
	})
	deadline := time.Now().Add(ready)
	for time.Now().Before(deadline) {
		if resp, err := http.Get("http://" + addr + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return p
			}
		}
		select {
		case err := <-p.done:
			p.done <- err // for the cleanup, which waits for it
			t.Fatalf("planserver exited early: %v\n%s", err, stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("planserver not ready on %s:\n%s", addr, stderr.String())
	return nil
}

func (p *proc) call(t *testing.T, method, path, body string, header ...string) (int, []byte) {
	t.Helper()
	st, b, err := tryCall(p, method, path, body, header...)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return st, b
}

// tryCall is call for requests that may fail, e.g. while the server is
// being killed.
func tryCall(p *proc, method, path, body string, header ...string) (int, []byte, error) {
	req, err := http.NewRequest(method, "http://"+p.addr+path, strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		return 0, nil, err
	}
	return resp.StatusCode, buf.Bytes(), nil
}

func TestSIGTERMDrainsAndExitsZero(t *testing.T) {
	db := filepath.Join(t.TempDir(), "p.db")
	p := start(t, db)
	if st, body := p.call(t, "POST", "/v1/sessions", `{"id":"s"}`); st != 201 {
		t.Fatalf("create: %d %s", st, body)
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.done:
		p.done <- err // for the cleanup
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v\n%s", err, p.stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("planserver did not stop after SIGTERM")
	}
	if !strings.Contains(p.stderr.String(), "shutting down") {
		t.Errorf("no shutdown log line:\n%s", p.stderr.String())
	}
}

// TestSIGTERMEndsEventStreams: open event streams do not hold up a
// graceful shutdown; they end cleanly and the process exits 0.
func TestSIGTERMEndsEventStreams(t *testing.T) {
	p := start(t, filepath.Join(t.TempDir(), "p.db"), "--sse-heartbeat", "50ms")
	req, err := http.NewRequest("GET", "http://"+p.addr+"/v1/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	if line, err := br.ReadString('\n'); err != nil || line != "retry: 3000\n" {
		t.Fatalf("first line %q, %v", line, err)
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.done:
		p.done <- err
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v\n%s", err, p.stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("planserver did not stop after SIGTERM with a stream open")
	}
	if _, err := io.ReadAll(br); err != nil {
		t.Errorf("stream did not end cleanly: %v", err)
	}
}

// TestServePrunesTheEventLog: serve applies --event-max-rows as it starts
// (and every minute after), and cursors before the pruned events expire.
func TestServePrunesTheEventLog(t *testing.T) {
	db := filepath.Join(t.TempDir(), "p.db")
	p := start(t, db)
	for i := 0; i < 5; i++ {
		if st, body := p.call(t, "POST", "/v1/sessions", fmt.Sprintf(`{"id":"s%d"}`, i)); st != 201 {
			t.Fatalf("create: %d %s", st, body)
		}
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	err := <-p.done
	p.done <- err
	p = start(t, db, "--event-max-rows", "2")
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, body := p.call(t, "GET", "/v1/events?after=0", "")
		if st == http.StatusGone && strings.Contains(string(body), "cursor_expired") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("events never pruned: %d %s", st, body)
		}
		time.Sleep(20 * time.Millisecond)
	}
	st, body := p.call(t, "GET", "/v1/events?after=3", "")
	var page struct {
		Events []struct{ Seq int64 } `json:"events"`
	}
	if err := json.Unmarshal(body, &page); st != 200 || err != nil || len(page.Events) != 2 || page.Events[0].Seq != 4 {
		t.Errorf("after=3: %d %s", st, body)
	}
	if _, metrics := p.call(t, "GET", "/metrics", ""); !strings.Contains(string(metrics), "planserver_events_pruned_total 3") {
		t.Errorf("pruned metric missing:\n%s", metrics)
	}
}

// TestKill9KeepsAcknowledgedChanges kills the server without warning after
// every acknowledged write and restarts it on the same file: nothing that
// was answered 2xx may be missing.
func TestKill9KeepsAcknowledgedChanges(t *testing.T) {
	db := filepath.Join(t.TempDir(), "p.db")
	acked := map[string]string{}
	for round := 0; round < 3; round++ {
		p := start(t, db)
		for i := 0; i < 10; i++ {
			id := fmt.Sprintf("r%d-s%d", round, i)
			mode := []string{"build", "plan"}[i%2]
			st, body := p.call(t, "POST", "/v1/sessions", fmt.Sprintf(`{"id":%q,"mode":%q}`, id, mode))
			if st != 201 {
				t.Fatalf("create %s: %d %s", id, st, body)
			}
			acked[id] = mode
		}
		if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		err := <-p.done
		p.done <- err
	}
	p := start(t, db)
	for id, mode := range acked {
		st, body := p.call(t, "GET", "/v1/sessions/"+id, "")
		if st != 200 {
			t.Fatalf("%s after kill -9: %d %s", id, st, body)
		}
		var s struct {
			Mode string `json:"mode"`
		}
		_ = json.Unmarshal(body, &s)
		if s.Mode != mode {
			t.Errorf("%s mode %s, want %s", id, s.Mode, mode)
		}
	}
	sqldb, err := sql.Open("sqlite", db)
	if err != nil {
		t.Fatal(err)
	}
	defer sqldb.Close()
	var check string
	if err := sqldb.QueryRow("PRAGMA integrity_check").Scan(&check); err != nil || check != "ok" {
		t.Errorf("integrity_check = %q, %v", check, err)
	}
}

func TestServeRefusesANewerSchema(t *testing.T) {
	db := filepath.Join(t.TempDir(), "p.db")
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"migrate", "up", "--db", db}, noEnv, &out, &errOut); err != nil {
		t.Fatalf("migrate up: %v\n%s", err, errOut.String())
	}
	sqldb, err := sql.Open("sqlite", db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sqldb.Exec(`INSERT INTO goose_db_version (version_id, is_applied) VALUES (999, 1)`); err != nil {
		t.Fatal(err)
	}
	sqldb.Close()
	cmd := exec.Command(binary, "serve", "--addr", freeAddr(t), "--db", db)
	msg, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatal("serve started on a database from the future")
	}
	if !strings.Contains(string(msg), "newer than this binary") || !strings.Contains(string(msg), "999") {
		t.Errorf("refusal does not explain itself: %s", msg)
	}
}

func noEnv(string) string { return "" }

func TestMigrateCommands(t *testing.T) {
	db := filepath.Join(t.TempDir(), "m.db")
	runOK := func(args ...string) string {
		t.Helper()
		var out, errOut bytes.Buffer
		if err := run(context.Background(), args, noEnv, &out, &errOut); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, errOut.String())
		}
		return out.String()
	}
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"migrate", "status", "--db", db}, noEnv, &out, &errOut); err == nil ||
		!strings.Contains(err.Error(), "does not exist") {
		t.Errorf("status on a missing database: %v", err)
	}
	if _, err := os.Stat(db); !os.IsNotExist(err) {
		t.Errorf("status created the database it was asked about: %v", err)
	}
	if out := runOK("migrate", "up", "--db", db); !strings.Contains(out, "migrated from version 0") {
		t.Errorf("up:\n%s", out)
	}
	if out := runOK("migrate", "status", "--db", db); strings.Contains(out, "pending") {
		t.Errorf("status after up:\n%s", out)
	}
	if out := runOK("migrate", "up", "--db", db); !strings.Contains(out, "already at version") {
		t.Errorf("second up:\n%s", out)
	}
	if out := runOK("migrate", "down", "--db", db); !strings.Contains(out, "rolled back migration") {
		t.Errorf("down:\n%s", out)
	}
	if out := runOK("version"); !strings.HasPrefix(out, "planserver ") {
		t.Errorf("version: %q", out)
	}
	if err := run(context.Background(), []string{"migrate", "sideways", "--db", db}, noEnv, &out, &errOut); err == nil {
		t.Error("unknown migrate action accepted")
	}
	if err := run(context.Background(), []string{"frobnicate"}, noEnv, &out, &errOut); err == nil || strings.Contains(errOut.String(), "did you mean") {
		t.Errorf("unknown command: %v %s", err, errOut.String())
	}
	// A typo is answered with the command meant.
	for typo, want := range map[string]string{"sesion": "session", "sesison": "session", "plna": "plan", "serv": "serve", "webhooks": "webhook"} {
		errOut.Reset()
		if err := run(context.Background(), []string{typo}, noEnv, &out, &errOut); err == nil || !strings.Contains(errOut.String(), "did you mean "+want+"?") {
			t.Errorf("planserver %s: %v %q, want did you mean %s", typo, err, errOut.String(), want)
		}
	}
}

// TestBackupWhileServing copies the database while the server writes to
// it: the copy passes integrity_check and holds every change acknowledged
// before the backup began.
func TestBackupWhileServing(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "live.db")
	p := start(t, db)
	for i := 0; i < 20; i++ {
		if st, body := p.call(t, "POST", "/v1/sessions", fmt.Sprintf(`{"id":"before-%d"}`, i)); st != 201 {
			t.Fatalf("create: %d %s", st, body)
		}
	}
	stop := make(chan struct{})
	writing := make(chan struct{})
	go func() {
		defer close(writing)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			_, _, _ = tryCall(p, "POST", "/v1/sessions", fmt.Sprintf(`{"id":"during-%d"}`, i))
		}
	}()
	copyPath := filepath.Join(dir, "copy.db")
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"backup", copyPath, "--db", db}, noEnv, &out, &errOut)
	close(stop)
	<-writing
	if err != nil {
		t.Fatalf("backup: %v\n%s", err, errOut.String())
	}
	if err := run(context.Background(), []string{"backup", copyPath, "--db", db}, noEnv, &out, &errOut); err == nil {
		t.Error("backup overwrote an existing file")
	}
	sqldb, err := sql.Open("sqlite", "file:"+copyPath+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer sqldb.Close()
	var check string
	if err := sqldb.QueryRow("PRAGMA integrity_check").Scan(&check); err != nil || check != "ok" {
		t.Fatalf("copy integrity_check = %q, %v", check, err)
	}
	var n int
	if err := sqldb.QueryRow(`SELECT count(*) FROM sessions WHERE id LIKE 'before-%'`).Scan(&n); err != nil || n != 20 {
		t.Fatalf("copy holds %d of the 20 sessions acknowledged before the backup (%v)", n, err)
	}
	// The copy serves: a planserver starts on it and finds the data.
	p2 := start(t, copyPath)
	if st, _ := p2.call(t, "GET", "/v1/sessions/before-7", ""); st != 200 {
		t.Errorf("session in the copy: %d", st)
	}
}
