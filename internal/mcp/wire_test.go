package mcp_test

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/planserver/planserver/internal/apitest"
	"github.com/planserver/planserver/internal/app"
	"github.com/planserver/planserver/internal/auth"
	"github.com/planserver/planserver/internal/gates/proxy"
	planhttp "github.com/planserver/planserver/internal/http"
)

// confusing are tools/call messages the gate could judge by one reading
// and an upstream execute by another: the read-only "look" and the
// state-changing "todo_write" named by keys that differ only in case, a
// repeated key, and envelope members in another case.
var confusing = []string{
	`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"look","Name":"todo_write","arguments":{}}}`,
	`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"Name":"todo_write","name":"look","arguments":{}}}`,
	`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"look","name":"todo_write","arguments":{}}}`,
	`{"jsonrpc":"2.0","id":7,"method":"tools/list","Method":"tools/call","params":{"name":"todo_write","arguments":{}}}`,
	`{"jsonrpc":"2.0","id":7,"Method":"tools/call","params":{"name":"todo_write","arguments":{}}}`,
	`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"look"},"PARAMS":{"name":"todo_write"}}`,
}

// TestStdioGateRefusesAmbiguousMessages: through planserver gate in plan
// mode, none of the confusing messages reaches the upstream; each is
// answered with a JSON-RPC error, and a plain read-only call still works.
func TestStdioGateRefusesAmbiguousMessages(t *testing.T) {
	im := &impostor{}
	env := apitest.New(t)
	session(t, env, map[string]any{"id": "s", "mode": "plan"})
	upInR, upInW := io.Pipe()
	upOutR, upOutW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = im.server().Run(ctx, &sdk.IOTransport{Reader: upInR, Writer: upOutW}) }()
	hostInR, in := io.Pipe()
	hostOutR, hostOutW := io.Pipe()
	g := &proxy.StdioGate{
		Policy: proxy.Policy{Upstream: "impostor", Checker: proxy.RemoteChecker{Server: env.Server.URL, Session: "s"}},
		Log:    slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	go func() { _ = g.Run(ctx, hostInR, hostOutW, upInW, upOutR) }()
	out := bufio.NewReader(hostOutR)
	send(t, in, map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{
		"protocolVersion": "2025-06-18", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "host", "version": "1"}}})
	receive(t, out)
	send(t, in, map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	for _, m := range confusing {
		if _, err := in.Write([]byte(m + "\n")); err != nil {
			t.Fatal(err)
		}
		if ans := receive(t, out); !strings.Contains(ans, `"error"`) || !strings.Contains(ans, "refused") {
			t.Errorf("%s through the stdio gate: %s", m, ans)
		}
	}
	send(t, in, map[string]any{"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": map[string]any{"name": "look", "arguments": map[string]any{}}})
	if ans := receive(t, out); !strings.Contains(ans, "looked") {
		t.Fatalf("a plain read-only call: %s", ans)
	}
	if got := im.called(); got != "" {
		t.Fatalf("an ambiguous message ran %s upstream", got)
	}
}

// TestHTTPGateRefusesAmbiguousMessages: the same through /mcp/gate/{name}.
func TestHTTPGateRefusesAmbiguousMessages(t *testing.T) {
	im := &impostor{}
	srv := im.server()
	ts := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, &sdk.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(ts.Close)
	env := apitest.New(t, func(c *app.Config) { c.Auth = planhttp.AuthToken })
	admin := env.As(env.Token(auth.Admin, "root", ""))
	session(t, admin, map[string]any{"id": "s"}) // build mode: only the reading decides
	mustStatus(t, admin.Call("PUT", "/v1/gates/impostor", map[string]any{"url": ts.URL + "/mcp"}), http.StatusCreated)
	agent := env.As(env.Token(auth.Agent, "agent-s", "s"))
	for _, m := range confusing {
		r := agent.Do(apitest.Request{Method: "POST", Path: "/mcp/gate/impostor", Body: []byte(m), Invalid: true,
			Header: map[string]string{"Accept": streamableAccept}})
		if r.Status != http.StatusBadRequest || !strings.Contains(string(r.Body), "refused") {
			t.Errorf("%s through the HTTP gate: %d %s", m, r.Status, r.Body)
		}
	}
	if got := im.called(); got != "" {
		t.Fatalf("an ambiguous message ran %s upstream", got)
	}
}
