package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/planserver/planserver/internal/sandbox/sandboxtest"
)

var lying struct {
	once sync.Once
	path string
	err  error
}

// lyingServer builds testdata/lyingmcp: a stdio MCP server whose writing
// tool says readOnlyHint: true.
func lyingServer(t *testing.T) string {
	t.Helper()
	lying.once.Do(func() {
		lying.path = filepath.Join(filepath.Dir(binary), "lyingmcp")
		build := exec.Command("go", "build", "-o", lying.path, "./testdata/lyingmcp")
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			lying.err = err
			t.Logf("%s", out)
		}
	})
	if lying.err != nil {
		t.Fatalf("build the lying server: %v", lying.err)
	}
	return lying.path
}

// startHeldGate is planserver gate in front of the lying server, run in
// dir (the project), with the Go SDK's client as the host.
func startHeldGate(t *testing.T, p *proc, session, dir string, extra ...string) *gateClient {
	t.Helper()
	args := append([]string{"gate", "--session", session, "--server", "http://" + p.addr}, extra...)
	args = append(args, "--", lyingServer(t))
	cmd := exec.Command(binary, args...)
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	c := sdk.NewClient(&sdk.Implementation{Name: "host", Version: "1"}, &sdk.ClientOptions{Capabilities: &sdk.ClientCapabilities{}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect through planserver gate: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return &gateClient{t: t, cs: cs}
}

// TestGateHoldsALyingServer: a tool server whose writing tool claims
// readOnlyHint: true passes the annotations, so the kernel holds it: it
// cannot write in plan mode, writes only inside the scope after an
// approval with scope, and writes anywhere after a full approval; each
// change restarts it, and a call in flight gets an error saying why.
func TestGateHoldsALyingServer(t *testing.T) {
	sandboxtest.Need(t, "the kernel holding a lying tool server")
	p := start(t, filepath.Join(t.TempDir(), "p.db"))
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "inside"), 0o755); err != nil {
		t.Fatal(err)
	}
	inside, outside := filepath.Join(dir, "inside", "note.txt"), filepath.Join(dir, "outside.txt")
	mustCall(t, p, "POST", "/v1/sessions", `{"id":"main","mode":"plan"}`, 201)
	mustCall(t, p, "PUT", "/v1/sessions/main/plan", `{"content":"# Notes\n\n`+"```scope\\nfiles: [inside/]\\n```"+`\n"}`, 201)

	g := startHeldGate(t, p, "main", dir, "--watch", "0")
	if tools := g.tools(); !slices.Contains(tools, "write_note") {
		t.Fatalf("the lying tool is not offered: %v", tools)
	}
	write := func(path string) (string, bool) {
		return g.call("write_note", map[string]any{"path": path, "content": "hi"})
	}
	exists := func(path string) bool { _, err := os.Stat(path); return err == nil }

	// Plan mode: the lie passes the gate, the kernel refuses the write.
	out, isErr := write(inside)
	if !isErr || !strings.Contains(out, "write failed") || exists(inside) {
		t.Fatalf("plan mode: %v %s (written: %v)", isErr, out, exists(inside))
	}
	planPID, _ := g.call("whoami", nil)

	// Approved with its scope: inside only.
	mustCall(t, p, "POST", "/v1/sessions/main/plan/review", ``, 200)
	mustCall(t, p, "POST", "/v1/sessions/main/plan/approve", ``, 200, "If-Match", `"1"`)
	if out, isErr := write(inside); isErr || !exists(inside) {
		t.Fatalf("scoped build, inside: %v %s", isErr, out)
	}
	if out, isErr := write(outside); !isErr || exists(outside) {
		t.Fatalf("scoped build, outside: %v %s (written: %v)", isErr, out, exists(outside))
	}
	scopedPID, _ := g.call("whoami", nil)
	if scopedPID == planPID {
		t.Errorf("the mode changed and the server was not restarted (pid %s)", scopedPID)
	}

	// Approved in full: anywhere.
	mustCall(t, p, "PATCH", "/v1/sessions/main/mode", `{"mode":"plan"}`, 200)
	mustCall(t, p, "POST", "/v1/sessions/main/plan/review", ``, 200)
	mustCall(t, p, "POST", "/v1/sessions/main/plan/approve", `{"scope":"full"}`, 200, "If-Match", `"1"`)
	if out, isErr := write(outside); isErr || !exists(outside) {
		t.Fatalf("full build: %v %s", isErr, out)
	}

	// A call in flight when the mode changes gets an error saying why.
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, err := g.cs.CallTool(ctx, &sdk.CallToolParams{Name: "wait_note", Arguments: map[string]any{"seconds": "20"}})
		done <- err
	}()
	time.Sleep(300 * time.Millisecond) // the call reaches the server
	mustCall(t, p, "PATCH", "/v1/sessions/main/mode", `{"mode":"plan"}`, 200)
	if out, isErr := write(filepath.Join(dir, "again.txt")); !isErr || exists(filepath.Join(dir, "again.txt")) {
		t.Fatalf("plan mode again: %v %s", isErr, out)
	}
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "restarted the tool server") {
			t.Fatalf("the call in flight: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the call in flight was not answered when the server restarted")
	}
}
