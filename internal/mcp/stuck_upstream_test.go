package mcp_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/planserver/planserver/internal/apitest"
	"github.com/planserver/planserver/internal/app"
	"github.com/planserver/planserver/internal/auth"
	planhttp "github.com/planserver/planserver/internal/http"
)

// stuckServer is an MCP server that accepts every request and never
// answers, until the test ends.
func stuckServer(t *testing.T) string {
	release := make(chan struct{})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(ts.Close)
	t.Cleanup(func() { close(release) })
	return ts.URL + "/mcp"
}

// TestStuckUpstreamTimesOut: a call through /mcp/gate/{name} to a tool
// server that never answers ends with an error naming --upstream-timeout
// once it passes, not after the caller gives up.
func TestStuckUpstreamTimesOut(t *testing.T) {
	env := apitest.New(t, func(c *app.Config) {
		c.Auth = planhttp.AuthToken
		c.UpstreamTimeout = 300 * time.Millisecond
	})
	admin := env.As(env.Token(auth.Admin, "root", ""))
	session(t, admin, map[string]any{"id": "s"})
	mustStatus(t, admin.Call("PUT", "/v1/gates/stuck", map[string]any{"url": stuckServer(t)}), http.StatusCreated)
	c := gateConnect(t, env, "stuck", clientOpts{token: env.Token(auth.Agent, "agent-s", "s")})

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	_, err := c.cs.ListTools(ctx, &sdk.ListToolsParams{})
	if err == nil || !strings.Contains(err.Error(), "--upstream-timeout") {
		t.Fatalf("tools/list through a stuck upstream after %s: %v", time.Since(start), err)
	}
	if ctx.Err() != nil {
		t.Fatalf("tools/list through a stuck upstream waited for the caller's own deadline: %v", err)
	}
	res, err := c.cs.CallTool(ctx, &sdk.CallToolParams{Name: "anything", Arguments: map[string]any{}})
	if err != nil || !res.IsError || !strings.Contains(text(res), "--upstream-timeout") {
		t.Fatalf("tools/call through a stuck upstream: %v %+v", err, res)
	}
}

// TestStuckUpstreamHoldsNoLock: while a call hangs on a stuck upstream
// (with a long --upstream-timeout), re-pointing that gate and using
// another gate go on at once: the stuck call holds nothing they need.
func TestStuckUpstreamHoldsNoLock(t *testing.T) {
	notes := newNotesServer(t)
	env := apitest.New(t, func(c *app.Config) {
		c.Auth = planhttp.AuthToken
		c.UpstreamTimeout = time.Minute
	})
	admin := env.As(env.Token(auth.Admin, "root", ""))
	session(t, admin, map[string]any{"id": "s"})
	mustStatus(t, admin.Call("PUT", "/v1/gates/stuck", map[string]any{"url": stuckServer(t)}), http.StatusCreated)
	mustStatus(t, admin.Call("PUT", "/v1/gates/notes", map[string]any{"url": notes.url + "/mcp"}), http.StatusCreated)
	agent := env.Token(auth.Agent, "agent-s", "s")

	stuck := gateConnect(t, env, "stuck", clientOpts{token: agent})
	stuckCtx, stopStuck := context.WithCancel(context.Background())
	defer stopStuck()
	go func() { _, _ = stuck.cs.ListTools(stuckCtx, &sdk.ListToolsParams{}) }()
	time.Sleep(300 * time.Millisecond) // the call is hanging on the upstream now

	// Re-point the stuck gate, then use it and the other gate: each must
	// answer while the first call still hangs.
	mustStatus(t, admin.Call("PUT", "/v1/gates/stuck", map[string]any{"url": notes.url + "/mcp"}), http.StatusOK)
	done := make(chan string, 2)
	for _, name := range []string{"notes", "stuck"} {
		go func() {
			c := gateConnect(t, env, name, clientOpts{token: agent})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			res, err := c.cs.CallTool(ctx, &sdk.CallToolParams{Name: "write_note", Arguments: map[string]any{"text": name}})
			if err != nil {
				done <- name + ": " + err.Error()
				return
			}
			if res.IsError {
				done <- name + ": " + text(res)
				return
			}
			done <- ""
		}()
	}
	for range 2 {
		if msg := <-done; msg != "" {
			t.Fatalf("a gate stalled behind a stuck upstream: %s", msg)
		}
	}
	if got := notes.saved(); got != "notes|stuck" && got != "stuck|notes" {
		t.Fatalf("saved %q", got)
	}
}
