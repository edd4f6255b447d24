package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/planserver/planserver/internal/apitest"
	"github.com/planserver/planserver/internal/mcp"
)

// headerTransport adds fixed headers to every request: the bearer token
// and the session an MCP client is configured with.
type headerTransport struct {
	base   http.RoundTripper
	header http.Header
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.header {
		r.Header[k] = v
	}
	return h.base.RoundTrip(r)
}

// client is one MCP client of the server under test.
type client struct {
	t  *testing.T
	cs *sdk.ClientSession
}

// clientOpts configure connect.
type clientOpts struct {
	token, session string
	// version is the protocol revision to speak; the SDK's newest when "".
	version string
	sdk     *sdk.ClientOptions
}

// connect opens an MCP client over real HTTP to env's /mcp.
func connect(t *testing.T, env *apitest.Env, o clientOpts) *client {
	t.Helper()
	return connectURL(t, env, env.Server.URL+"/mcp", o)
}

// connectURL opens an MCP client over real HTTP to endpoint, a URL of env.
func connectURL(t *testing.T, env *apitest.Env, endpoint string, o clientOpts) *client {
	t.Helper()
	h := http.Header{}
	if o.token != "" {
		h.Set("Authorization", "Bearer "+o.token)
	}
	if o.session != "" {
		h.Set(mcp.SessionHeader, o.session)
	}
	hc := &http.Client{Transport: headerTransport{base: env.Client.Transport, header: h}}
	c := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, o.sdk)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc},
		&sdk.ClientSessionOptions{ProtocolVersion: o.version})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return &client{t: t, cs: cs}
}

// names lists the tools the server offers now.
func (c *client) names() []string {
	c.t.Helper()
	res, err := c.cs.ListTools(context.Background(), &sdk.ListToolsParams{})
	if err != nil {
		c.t.Fatalf("tools/list: %v", err)
	}
	var out []string
	for _, tool := range res.Tools {
		out = append(out, tool.Name)
	}
	return out
}

// call calls a tool and returns its result; a protocol error fails the
// test.
func (c *client) call(name string, args map[string]any) *sdk.CallToolResult {
	c.t.Helper()
	res, err := c.cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		c.t.Fatalf("tools/call %s: %v", name, err)
	}
	return res
}

// ok calls a tool that must succeed and decodes its structured output
// into out (when not nil).
func (c *client) ok(name string, args map[string]any, out any) {
	c.t.Helper()
	res := c.call(name, args)
	if res.IsError {
		c.t.Fatalf("%s(%v) failed: %s", name, args, text(res))
	}
	if out != nil {
		raw, err := json.Marshal(res.StructuredContent)
		if err != nil {
			c.t.Fatal(err)
		}
		if err := json.Unmarshal(raw, out); err != nil {
			c.t.Fatalf("%s: decode %s: %v", name, raw, err)
		}
	}
}

// fails calls a tool that must fail and returns the error text, which must
// contain every one of want.
func (c *client) fails(name string, args map[string]any, want ...string) string {
	c.t.Helper()
	res := c.call(name, args)
	msg := text(res)
	if !res.IsError {
		c.t.Fatalf("%s(%v) succeeded, want an error: %s", name, args, msg)
	}
	for _, w := range want {
		if !strings.Contains(msg, w) {
			c.t.Errorf("%s error %q does not say %q", name, msg, w)
		}
	}
	return msg
}

func text(res *sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*sdk.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

// head is the event log's head: a write adds events, a refused one none.
func head(t *testing.T, env *apitest.Env) int64 {
	t.Helper()
	var page struct {
		NextAfter int64 `json:"next_after"`
	}
	env.Call("GET", "/v1/events?limit=1000", nil, "Accept", "application/json").JSON(t, &page)
	return page.NextAfter
}

// events returns the events after seq of the given type.
func events(t *testing.T, env *apitest.Env, after int64, typ string) []map[string]any {
	t.Helper()
	var page struct {
		Events []map[string]any `json:"events"`
	}
	env.Call("GET", fmt.Sprintf("/v1/events?limit=1000&after=%d&types=%s", after, typ), nil, "Accept", "application/json").JSON(t, &page)
	return page.Events
}

// mustStatus fails the test unless resp has status want.
func mustStatus(t *testing.T, resp *apitest.Response, want int) {
	t.Helper()
	if resp.Status != want {
		t.Fatalf("status %d, want %d: %s", resp.Status, want, resp.Body)
	}
}

// session creates a session through the HTTP API.
func session(t *testing.T, env *apitest.Env, body map[string]any) {
	t.Helper()
	mustStatus(t, env.Call("POST", "/v1/sessions", body), http.StatusCreated)
}
