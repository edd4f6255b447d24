package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// filesystemServer is the reference MCP filesystem server from npm, as
// .ci/mcp installs it (cd test/mcp && npm ci). Without it the gate tests
// skip, unless PLANSERVER_REQUIRE_MCP_NPM is set (.ci/mcp sets it), when
// they fail.
func filesystemServer(t *testing.T) string {
	t.Helper()
	bin, err := filepath.Abs("../../test/mcp/node_modules/.bin/mcp-server-filesystem")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(bin); err != nil {
		if os.Getenv("PLANSERVER_REQUIRE_MCP_NPM") != "" {
			t.Fatalf("%s is missing: run npm ci in test/mcp (.ci/mcp does)", bin)
		}
		t.Skipf("%s is not installed: run .ci/mcp (or npm ci in test/mcp) to run the gate's tests", bin)
	}
	return bin
}

// gateClient is the Go SDK's client driving `planserver gate --session
// session -- mcp-server-filesystem dir`, as an agent host would.
type gateClient struct {
	t  *testing.T
	cs *sdk.ClientSession
}

func startGate(t *testing.T, p *proc, session, dir string, extra ...string) *gateClient {
	t.Helper()
	return startGateWith(t, p, session, dir, &sdk.ClientOptions{}, append([]string{"--watch", "0"}, extra...)...)
}

func startGateWith(t *testing.T, p *proc, session, dir string, opts *sdk.ClientOptions, extra ...string) *gateClient {
	t.Helper()
	args := append([]string{"gate", "--session", session, "--server", "http://" + p.addr}, extra...)
	args = append(args, "--", filesystemServer(t), dir)
	cmd := exec.Command(binary, args...)
	cmd.Stderr = io.Discard
	// No roots: the filesystem server keeps to the directory it was given.
	opts.Capabilities = &sdk.ClientCapabilities{}
	c := sdk.NewClient(&sdk.Implementation{Name: "host", Version: "1"}, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect through planserver gate: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return &gateClient{t: t, cs: cs}
}

func (g *gateClient) tools() []string {
	g.t.Helper()
	res, err := g.cs.ListTools(context.Background(), &sdk.ListToolsParams{})
	if err != nil {
		g.t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	return names
}

func (g *gateClient) call(name string, args map[string]any) (string, bool) {
	g.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := g.cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		g.t.Fatalf("tools/call %s: %v", name, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String(), res.IsError
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func mustCall(t *testing.T, p *proc, method, path, body string, want int, header ...string) []byte {
	t.Helper()
	st, b := p.call(t, method, path, body, header...)
	if st != want {
		t.Fatalf("%s %s: %d %s, want %d", method, path, st, b, want)
	}
	return b
}

// TestGateFilesystemServer puts the reference filesystem server behind
// planserver gate: in build mode write_file writes; in plan mode the list
// lacks it, a direct call is refused with the plan-mode reason (recorded
// with the upstream) and the file is unchanged, while reads work; after a
// human approves the plan, the write works again. A sub-session's gate
// refuses while only its ancestor is in plan mode.
func TestGateFilesystemServer(t *testing.T) {
	p := start(t, filepath.Join(t.TempDir(), "p.db"))
	mustCall(t, p, "POST", "/v1/sessions", `{"id":"main"}`, 201)
	mustCall(t, p, "POST", "/v1/sessions", `{"id":"main.worker","parent_id":"main"}`, 201)
	dir := t.TempDir()
	file := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(file, []byte("one"), 0o600); err != nil {
		t.Fatal(err)
	}

	g := startGate(t, p, "main", dir)
	worker := startGate(t, p, "main.worker", dir)
	if tools := g.tools(); !slices.Contains(tools, "write_file") || !slices.Contains(tools, "read_text_file") {
		t.Fatalf("build-mode tools = %v", tools)
	}
	if out, isErr := g.call("write_file", map[string]any{"path": file, "content": "two"}); isErr || readFile(t, file) != "two" {
		t.Fatalf("write_file in build mode: %s (file %q)", out, readFile(t, file))
	}

	mustCall(t, p, "PATCH", "/v1/sessions/main/mode", `{"mode":"plan"}`, 200)
	tools := g.tools()
	for _, hidden := range []string{"write_file", "edit_file", "move_file", "create_directory"} {
		if slices.Contains(tools, hidden) {
			t.Errorf("plan-mode tools include %s: %v", hidden, tools)
		}
	}
	if !slices.Contains(tools, "read_text_file") || !slices.Contains(tools, "list_directory") {
		t.Errorf("plan-mode tools lack the reads: %v", tools)
	}
	out, isErr := g.call("write_file", map[string]any{"path": file, "content": "three"})
	if !isErr || !strings.Contains(out, "[Tool denied — plan mode is active]") || !strings.Contains(out, `"write_file"`) {
		t.Fatalf("write_file in plan mode: %v %s", isErr, out)
	}
	out, isErr = worker.call("write_file", map[string]any{"path": file, "content": "three"})
	if !isErr || !strings.Contains(out, `ancestor session "main"`) {
		t.Fatalf("the sub-session's write_file in plan mode: %v %s", isErr, out)
	}
	if slices.Contains(worker.tools(), "write_file") {
		t.Error("the sub-session's list has write_file while its ancestor plans")
	}
	if got := readFile(t, file); got != "two" {
		t.Fatalf("a refused write reached the server: file %q", got)
	}
	if out, isErr := g.call("read_text_file", map[string]any{"path": file}); isErr || !strings.Contains(out, "two") {
		t.Fatalf("read_text_file in plan mode: %v %s", isErr, out)
	}
	var page struct {
		Events []struct {
			SessionID string `json:"session_id"`
			Data      struct {
				Tool     string `json:"tool"`
				Upstream string `json:"upstream"`
			} `json:"data"`
		} `json:"events"`
	}
	if err := json.Unmarshal(mustCall(t, p, "GET", "/v1/events?types=tool_call.denied", "", 200, "Accept", "application/json"), &page); err != nil {
		t.Fatal(err)
	}
	if len(page.Events) != 2 || page.Events[0].Data.Tool != "write_file" || page.Events[0].Data.Upstream != "mcp-server-filesystem" ||
		page.Events[1].SessionID != "main.worker" {
		t.Fatalf("tool_call.denied events = %+v", page.Events)
	}

	// The human approves a plan: the write goes through again (the gate
	// restarts the server outside the sandbox; the host sees nothing of it
	// but a list_changed).
	mustCall(t, p, "PUT", "/v1/sessions/main/plan", `{"content":"# Plan\n1. write notes\n"}`, 201)
	mustCall(t, p, "POST", "/v1/sessions/main/plan/review", ``, 200)
	mustCall(t, p, "POST", "/v1/sessions/main/plan/approve", ``, 200, "If-Match", `"1"`)
	if !slices.Contains(g.tools(), "write_file") {
		t.Fatal("write_file still hidden after the approval")
	}
	if out, isErr := g.call("write_file", map[string]any{"path": file, "content": "three"}); isErr || readFile(t, file) != "three" {
		t.Fatalf("write_file after the approval: %s (file %q)", out, readFile(t, file))
	}
}

// TestGateFailsClosed: with planserver gone mid-session the gate refuses
// writes, saying why, and keeps reads working; a tool the operator
// declared read-only is let through, and the kernel holds the server
// read-only meanwhile.
func TestGateFailsClosed(t *testing.T) {
	p := start(t, filepath.Join(t.TempDir(), "p.db"))
	mustCall(t, p, "POST", "/v1/sessions", `{"id":"main"}`, 201)
	dir := t.TempDir()
	file := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(file, []byte("one"), 0o600); err != nil {
		t.Fatal(err)
	}
	g := startGate(t, p, "main", dir, "--read-only", "create_directory")
	if out, isErr := g.call("write_file", map[string]any{"path": file, "content": "two"}); isErr {
		t.Fatalf("write_file with planserver up: %s", out)
	}

	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	if _, err := waitExit(t, p, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	out, isErr := g.call("write_file", map[string]any{"path": file, "content": "three"})
	if !isErr || !strings.Contains(out, "planserver could not be asked") || !strings.Contains(out, "read-only tools keep working") {
		t.Fatalf("write_file with planserver down: %v %s", isErr, out)
	}
	if got := readFile(t, file); got != "two" {
		t.Fatalf("a write went through with planserver down: file %q", got)
	}
	if out, isErr := g.call("read_text_file", map[string]any{"path": file}); isErr || !strings.Contains(out, "two") {
		t.Fatalf("read_text_file with planserver down: %v %s", isErr, out)
	}
	tools := g.tools()
	if slices.Contains(tools, "write_file") || !slices.Contains(tools, "read_text_file") || !slices.Contains(tools, "create_directory") {
		t.Fatalf("tools with planserver down = %v: want the reads and the declared read-only create_directory", tools)
	}
	// The gate lets a tool declared read-only through, and the kernel
	// holds the server read-only while planserver cannot say the mode: a
	// declaration that is wrong writes nothing either.
	out, isErr = g.call("create_directory", map[string]any{"path": filepath.Join(dir, "sub")})
	if !isErr || strings.Contains(out, "planserver could not be asked") || !strings.Contains(out, "EACCES") {
		t.Fatalf("a tool declared read-only, with planserver down: %v %s", isErr, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "sub")); err == nil {
		t.Fatal("a tool declared read-only wrote with planserver down")
	}
}

// TestGateAnnouncesModeChanges: a host that keeps its tool list is told to
// list again (notifications/tools/list_changed) when the session's mode
// changes, so it need not wait for a refusal to notice.
func TestGateAnnouncesModeChanges(t *testing.T) {
	p := start(t, filepath.Join(t.TempDir(), "p.db"))
	mustCall(t, p, "POST", "/v1/sessions", `{"id":"main"}`, 201)
	changed := make(chan struct{}, 10)
	g := startGateWith(t, p, "main", t.TempDir(), &sdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { changed <- struct{}{} },
	}, "--watch", "50ms")
	g.tools() // the host has a list now
	mustCall(t, p, "PATCH", "/v1/sessions/main/mode", `{"mode":"plan"}`, 200)
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no notifications/tools/list_changed after the mode changed")
	}
	if slices.Contains(g.tools(), "write_file") {
		t.Fatal("the list after the notification still has write_file")
	}
}

// TestGateRegistry: planserver gate add, list and remove manage the
// registrations of /mcp/gate/{name} on the database.
func TestGateRegistry(t *testing.T) {
	db := filepath.Join(t.TempDir(), "p.db")
	var out, errOut strings.Builder
	if err := run(context.Background(), []string{"gate", "add", "notes", "http://127.0.0.1:9/mcp", "--read-only", "save,sync", "--db", db},
		noEnv, &out, &errOut); err != nil {
		t.Fatalf("gate add: %v %s", err, errOut.String())
	}
	if !strings.Contains(errOut.String(), `registered gate "notes"`) || !strings.Contains(errOut.String(), "save, sync") {
		t.Errorf("gate add said %q", errOut.String())
	}
	out.Reset()
	if err := run(context.Background(), []string{"gate", "list", "--db", db}, noEnv, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "notes") || !strings.Contains(out.String(), "http://127.0.0.1:9/mcp") || !strings.Contains(out.String(), "save,sync") {
		t.Errorf("gate list = %q", out.String())
	}
	if err := run(context.Background(), []string{"gate", "add", "Bad Name", "http://x/mcp", "--db", db}, noEnv, io.Discard, io.Discard); err == nil {
		t.Error("gate add accepted a bad name")
	}
	if err := run(context.Background(), []string{"gate", "add", "x", "ftp://x/mcp", "--db", db}, noEnv, io.Discard, io.Discard); err == nil {
		t.Error("gate add accepted an ftp URL")
	}
	if err := run(context.Background(), []string{"gate", "remove", "notes", "--db", db}, noEnv, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	if err := run(context.Background(), []string{"gate", "remove", "notes", "--db", db}, noEnv, io.Discard, io.Discard); err == nil {
		t.Error("removing a gate twice succeeded")
	}
	// The proxy form needs a session and a command.
	var usage strings.Builder
	if err := run(context.Background(), []string{"gate", "--", "cat"}, noEnv, io.Discard, &usage); err == nil || !strings.Contains(usage.String(), "--session is required") {
		t.Errorf("gate without --session: %v %q", err, usage.String())
	}
}
