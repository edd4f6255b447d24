package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/client"
	"github.com/planserver/planserver/internal/cli"
)

// follower is a running planserver events --follow.
type follower struct {
	cmd    *exec.Cmd
	lines  chan string
	stderr *syncBuffer
	done   chan error
}

func follow(t *testing.T, p *proc, args ...string) *follower {
	t.Helper()
	cmd := cliCmd(t, p, nil, append([]string{"events", "--follow", "--json"}, args...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	f := &follower{cmd: cmd, lines: make(chan string, 100), stderr: &syncBuffer{}, done: make(chan error, 1)}
	cmd.Stderr = f.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			f.lines <- sc.Text()
		}
		close(f.lines)
	}()
	go func() { f.done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-f.done
	})
	return f
}

// event reads the next event the follower printed.
func (f *follower) event(t *testing.T) api.Event {
	t.Helper()
	select {
	case line, ok := <-f.lines:
		if !ok {
			t.Fatalf("the follower ended:\n%s", f.stderr.String())
		}
		var e api.Event
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("not an event: %q", line)
		}
		return e
	case <-time.After(30 * time.Second):
		t.Fatalf("no event from the follower:\n%s", f.stderr.String())
	}
	return api.Event{}
}

// exit waits for the follower to end and returns its status.
func (f *follower) exit(t *testing.T) int {
	t.Helper()
	select {
	case <-f.done:
		f.done <- nil // for the cleanup
		return f.cmd.ProcessState.ExitCode()
	case <-time.After(30 * time.Second):
		t.Fatalf("the follower did not end:\n%s", f.stderr.String())
	}
	return -1
}

// TestCLIEventsFollowSurvivesRestart: events --follow goes on across a
// restart of the server on the same database and address: it prints
// every event once, those written while it reconnected included, and
// ends with status 0 when interrupted.
func TestCLIEventsFollowSurvivesRestart(t *testing.T) {
	db := filepath.Join(t.TempDir(), "p.db")
	addr := freeAddr(t)
	p := serveAt(t, db, addr)
	c := apiClient(t, p)
	create := func(id string) {
		t.Helper()
		if _, err := c.CreateSession(t.Context(), api.SessionCreate{ID: client.Ptr(id)}); err != nil {
			t.Fatal(err)
		}
	}
	create("a")
	f := follow(t, p)
	if e := f.event(t); e.Seq != 1 || e.SessionID != "a" {
		t.Fatalf("first event %+v", e)
	}
	stopServer(t, p)
	serveAt(t, db, addr) // c reaches it: same address
	create("b")
	create("c")
	for seq, id := range []string{"b", "c"} {
		if e := f.event(t); e.Seq != int64(seq+2) || e.SessionID != id {
			t.Errorf("after the restart: %+v", e)
		}
	}
	if !strings.Contains(f.stderr.String(), "reconnecting in") {
		t.Errorf("no word of the reconnection:\n%s", f.stderr.String())
	}
	if err := f.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := f.exit(t); code != 0 {
		t.Errorf("interrupted follower exited %d:\n%s", code, f.stderr.String())
	}
	select {
	case line, ok := <-f.lines:
		if ok {
			t.Errorf("printed twice or more: %q", line)
		}
	case <-time.After(time.Second):
	}
}

// TestCLIEventsFollowCursorExpired: the events after the follower's point
// are pruned while the server is down; the reconnection is refused, and
// the follower says so and ends with the conflict status, not a retry
// loop.
func TestCLIEventsFollowCursorExpired(t *testing.T) {
	db := filepath.Join(t.TempDir(), "p.db")
	addr := freeAddr(t)
	p := serveAt(t, db, addr)
	c := apiClient(t, p)
	for _, id := range []string{"a", "b", "c"} {
		if _, err := c.CreateSession(t.Context(), api.SessionCreate{ID: client.Ptr(id)}); err != nil {
			t.Fatal(err)
		}
	}
	// It follows plans only, from the start: the session events are
	// skipped, its cursor stays at 0.
	f := follow(t, p, "--after", "0", "--types", api.EventPlanCreated)
	waitSubscribers(t, p, 1)
	stopServer(t, p)
	serveAt(t, db, addr, "--event-max-rows", "1") // prunes all but the newest as it starts
	if code := f.exit(t); code != cli.ExitConflict {
		t.Fatalf("exit %d:\n%s", code, f.stderr.String())
	}
	if !strings.Contains(f.stderr.String(), "events after seq 0 were pruned") {
		t.Errorf("stderr:\n%s", f.stderr.String())
	}
}

// waitSubscribers waits until p has n event streams open.
func waitSubscribers(t *testing.T, p *proc, n int) {
	t.Helper()
	want := fmt.Sprintf("\nplanserver_event_subscribers %d\n", n)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if _, body, err := tryCall(p, "GET", "/metrics", ""); err == nil && strings.Contains(string(body), want) {
			return
		}
	}
	t.Fatalf("never %d event streams open", n)
}

func TestCLIEventsList(t *testing.T) {
	p := start(t, filepath.Join(t.TempDir(), "p.db"))
	c := apiClient(t, p)
	for _, id := range []string{"a", "b"} {
		if _, err := c.CreateSession(t.Context(), api.SessionCreate{ID: client.Ptr(id)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.SetMode(t.Context(), "b", api.ModePlan); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutPlanContent(t.Context(), "p", "# p"); err != nil {
		t.Fatal(err)
	}
	out := ok(t, p, "events")
	if !regexp.MustCompile(`(?m)^1\s+\S+\s+session\.created\s+a r1\s+by anonymous\n2 .*\n3\s+\S+\s+session\.mode_changed\s+b build→plan r2 .*\n4\s+\S+\s+plan\.created\s+plan p r1 `).MatchString(out) {
		t.Errorf("events:\n%s", out)
	}
	lines := strings.Split(strings.TrimSpace(ok(t, p, "events", "--json", "--after", "1", "--types", "session.created,plan.created")), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"seq":2`) || !strings.Contains(lines[1], `"plan":"p"`) {
		t.Errorf("--json --after 1 --types: %q", lines)
	}
	if out := ok(t, p, "events", "--session", "b", "--limit", "1"); strings.Count(out, "\n") != 1 || !strings.Contains(out, "session.created") {
		t.Errorf("--session b --limit 1: %q", out)
	}
	fails(t, p, cli.ExitFailure, "events", "--types", "no.such")
}
