package mcp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/planserver/planserver/internal/apitest"
	"github.com/planserver/planserver/internal/gates/proxy"
)

// stdioUpstream is a real MCP server (the Go SDK's) on pipes, as a gate's
// CMD would be on its stdin and stdout, with a tool that writes.
type stdioUpstream struct {
	mu     sync.Mutex
	writes int
}

func startStdioGate(t *testing.T, env *apitest.Env, session string) (hostIn io.WriteCloser, hostOut *bufio.Reader, up *stdioUpstream) {
	t.Helper()
	up = &stdioUpstream{}
	s := sdk.NewServer(&sdk.Implementation{Name: "up", Version: "1"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "write_note"}, func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
		up.mu.Lock()
		up.writes++
		up.mu.Unlock()
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "written"}}}, nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "read_notes", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "notes"}}}, nil, nil
		})
	upInR, upInW := io.Pipe()   // gate → upstream
	upOutR, upOutW := io.Pipe() // upstream → gate
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = s.Run(ctx, &sdk.IOTransport{Reader: upInR, Writer: upOutW}) }()

	hostInR, hostInW := io.Pipe()
	hostOutR, hostOutW := io.Pipe()
	g := &proxy.StdioGate{
		Policy: proxy.Policy{Upstream: "up", Checker: proxy.RemoteChecker{Server: env.Server.URL, Session: session}},
		Log:    slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	go func() { _ = g.Run(ctx, hostInR, hostOutW, upInW, upOutR) }()
	return hostInW, bufio.NewReader(hostOutR), up
}

func send(t *testing.T, w io.Writer, v any) {
	t.Helper()
	raw, _ := json.Marshal(v)
	if _, err := w.Write(append(raw, '\n')); err != nil {
		t.Fatal(err)
	}
}

func receive(t *testing.T, r *bufio.Reader) string {
	t.Helper()
	done := make(chan string, 1)
	go func() {
		line, _ := r.ReadString('\n')
		done <- line
	}()
	select {
	case line := <-done:
		return line
	case <-time.After(10 * time.Second):
		t.Fatal("no answer through the gate")
		return ""
	}
}

// TestStdioGateBatch: a JSON-RPC batch (revision 2025-03-26) cannot carry a
// call past the gate: each of its calls is judged; the refused one is
// answered by the gate, the rest reach the upstream.
func TestStdioGateBatch(t *testing.T) {
	env := apitest.New(t)
	session(t, env, map[string]any{"id": "s", "mode": "plan"})
	in, out, up := startStdioGate(t, env, "s")

	send(t, in, map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{
		"protocolVersion": "2025-03-26", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "host", "version": "1"}}})
	if line := receive(t, out); !strings.Contains(line, `"protocolVersion":"2025-03-26"`) {
		t.Fatalf("initialize: %s", line)
	}
	send(t, in, map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	send(t, in, []map[string]any{
		{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": map[string]any{"name": "write_note", "arguments": map[string]any{}}},
		{"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": map[string]any{"name": "read_notes", "arguments": map[string]any{}}},
	})
	got := receive(t, out) + receive(t, out)
	if !strings.Contains(got, `"id":2`) || !strings.Contains(got, "plan mode is active") || !strings.Contains(got, `"notes"`) {
		t.Fatalf("answers to the batch: %s", got)
	}
	up.mu.Lock()
	writes := up.writes
	up.mu.Unlock()
	if writes != 0 {
		t.Fatalf("a refused call inside a batch reached the upstream (%d writes)", writes)
	}
	var page struct {
		Events []map[string]any `json:"events"`
	}
	mustStatus(t, env.Call("GET", "/v1/events?types=tool_call.denied", nil, "Accept", "application/json"), http.StatusOK)
	env.Call("GET", "/v1/events?types=tool_call.denied", nil, "Accept", "application/json").JSON(t, &page)
	if len(page.Events) != 1 {
		t.Fatalf("tool_call.denied events: %v", page.Events)
	}
}
