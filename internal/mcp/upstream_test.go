package mcp_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/planserver/planserver/internal/apitest"
	"github.com/planserver/planserver/internal/app"
	"github.com/planserver/planserver/internal/auth"
	planhttp "github.com/planserver/planserver/internal/http"
	"github.com/planserver/planserver/internal/mcp"
)

// notesServer is a real streamable-HTTP MCP server (the Go SDK's) with a
// read-only tool and two that write: the upstream of a gate.
type notesServer struct {
	mu    sync.Mutex
	notes []string
	url   string
}

func newNotesServer(t *testing.T) *notesServer {
	n := &notesServer{}
	s := sdk.NewServer(&sdk.Implementation{Name: "notes", Version: "1"}, nil)
	type note struct {
		Text string `json:"text"`
	}
	sdk.AddTool(s, &sdk.Tool{Name: "read_notes", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			n.mu.Lock()
			defer n.mu.Unlock()
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: strings.Join(n.notes, "|")}}}, nil, nil
		})
	add := func(_ context.Context, _ *sdk.CallToolRequest, in note) (*sdk.CallToolResult, any, error) {
		n.mu.Lock()
		defer n.mu.Unlock()
		n.notes = append(n.notes, in.Text)
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "saved"}}}, nil, nil
	}
	// No annotations at all: state-changing, as MCP's defaults say.
	sdk.AddTool(s, &sdk.Tool{Name: "write_note"}, add)
	sdk.AddTool(s, &sdk.Tool{Name: "pin_note"}, add)
	ts := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, &sdk.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(ts.Close)
	n.url = ts.URL
	return n
}

func (n *notesServer) saved() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return strings.Join(n.notes, "|")
}

// gateConnect connects an MCP client to /mcp/gate/{name}.
func gateConnect(t *testing.T, env *apitest.Env, name string, o clientOpts) *client {
	t.Helper()
	return connectURL(t, env, env.Server.URL+"/mcp/gate/"+name, o)
}

// TestHTTPGate: a streamable-HTTP MCP server an admin registered is reached
// through /mcp/gate/{name}, bound to the caller's session: in plan mode
// its state-changing tools are hidden and refused (recorded with the
// upstream) and never reach it; reads work; the operator's read-only
// declaration is honoured; after approval the writes work again.
func TestHTTPGate(t *testing.T) {
	notes := newNotesServer(t)
	env := apitest.New(t, func(c *app.Config) { c.Auth = planhttp.AuthToken })
	admin := env.As(env.Token(auth.Admin, "root", ""))
	session(t, admin, map[string]any{"id": "s"})
	mustStatus(t, admin.Call("PUT", "/v1/gates/notes", map[string]any{"url": notes.url + "/mcp", "read_only_tools": []string{"pin_note"}}), http.StatusCreated)
	agent := env.Token(auth.Agent, "agent-s", "s")

	c := gateConnect(t, env, "notes", clientOpts{token: agent})
	sameSet(t, "build-mode list", c.names(), []string{"pin_note", "read_notes", "write_note"})
	c.ok("write_note", map[string]any{"text": "one"}, nil)
	if notes.saved() != "one" {
		t.Fatalf("saved %q", notes.saved())
	}

	mustStatus(t, admin.Call("PATCH", "/v1/sessions/s/mode", map[string]any{"mode": "plan"}), http.StatusOK)
	sameSet(t, "plan-mode list", c.names(), []string{"pin_note", "read_notes"})
	before := head(t, admin)
	c.fails("write_note", map[string]any{"text": "two"}, "[Tool denied — plan mode is active]", `"write_note"`)
	if notes.saved() != "one" {
		t.Fatalf("a refused call reached the upstream: %q", notes.saved())
	}
	denied := events(t, admin, before, "tool_call.denied")
	if len(denied) != 1 || denied[0]["data"].(map[string]any)["upstream"] != "notes" || denied[0]["actor"] != "agent-s" {
		t.Fatalf("tool_call.denied = %v", denied)
	}
	c.ok("pin_note", map[string]any{"text": "pinned"}, nil) // declared read-only by the operator
	res := c.call("read_notes", map[string]any{})
	if res.IsError || text(res) != "one|pinned" {
		t.Fatalf("read_notes in plan mode: %s", text(res))
	}

	mustStatus(t, admin.Call("PUT", "/v1/sessions/s/plan", map[string]any{"content": "# p"}), http.StatusCreated)
	mustStatus(t, admin.Call("POST", "/v1/sessions/s/plan/review", nil), http.StatusOK)
	mustStatus(t, admin.Call("POST", "/v1/sessions/s/plan/approve", nil, "If-Match", `"1"`), http.StatusOK)
	c.ok("write_note", map[string]any{"text": "three"}, nil)
	if notes.saved() != "one|pinned|three" {
		t.Fatalf("saved %q", notes.saved())
	}

	// A viewer reads only; a caller without a session gets nothing; an
	// unknown gate is 404.
	viewer := gateConnect(t, env, "notes", clientOpts{token: env.Token(auth.Viewer, "v", ""), session: "s"})
	sameSet(t, "viewer's list", viewer.names(), []string{"pin_note", "read_notes"})
	viewer.fails("write_note", map[string]any{"text": "x"}, "viewer", "read-only tools only")
	noSession := gateConnect(t, env, "notes", clientOpts{token: env.Token(auth.Admin, "ops", "")})
	if _, err := noSession.cs.ListTools(context.Background(), &sdk.ListToolsParams{}); err == nil || !strings.Contains(err.Error(), mcp.SessionHeader) {
		t.Fatalf("tools/list without a session: %v", err)
	}
	r := admin.Call("POST", "/mcp/gate/nope", listRequest, "Accept", streamableAccept)
	mustStatus(t, r, http.StatusNotFound)
	if notes.saved() != "one|pinned|three" {
		t.Fatalf("saved %q", notes.saved())
	}
}
