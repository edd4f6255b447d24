package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/planserver/planserver/internal/apitest"
	"github.com/planserver/planserver/internal/auth"
	"github.com/planserver/planserver/internal/mcp"
	"github.com/planserver/planserver/internal/plans"
)

// TestOperationsMatchRoutes holds the operations table to the HTTP API's
// access policy, so MCP tools and routes cannot drift: every tool names
// routes that exist, with exactly the tool's action; a tool acts on the
// bound session exactly when its routes target a session; and a tool is
// read-only exactly when its action is one a viewer may take.
func TestOperationsMatchRoutes(t *testing.T) {
	seen := map[string]bool{}
	viewer := auth.Principal{Name: "v", Role: auth.Viewer}
	for _, op := range mcp.Operations {
		if seen[op.Name] {
			t.Errorf("%s is in the table twice", op.Name)
		}
		seen[op.Name] = true
		if len(op.Routes) == 0 {
			t.Errorf("%s names no route", op.Name)
		}
		for _, route := range op.Routes {
			rule, ok := auth.Routes[route]
			switch {
			case !ok:
				t.Errorf("%s: route %s is not in auth.Routes", op.Name, route)
			case rule.Action != op.Action:
				t.Errorf("%s: action %s, but its route %s is %s", op.Name, op.Action, route, rule.Action)
			case (rule.SessionParam != "") != op.Session:
				t.Errorf("%s: Session=%v, but its route %s targets session param %q", op.Name, op.Session, route, rule.SessionParam)
			}
		}
		readAction := auth.Decide(viewer, op.Action, auth.Facts{InScope: true}) == auth.Allow
		if op.ReadOnly != readAction {
			t.Errorf("%s: readOnly %v, but its action %s is a read: %v", op.Name, op.ReadOnly, op.Action, readAction)
		}
		if op.ReadOnly && op.Destructive {
			t.Errorf("%s is both read-only and destructive", op.Name)
		}
		if op.Description == "" || op.Title == "" {
			t.Errorf("%s has no title or description", op.Name)
		}
	}
}

// seedParams are the parameters the tools planserver grew from give each
// tool: a prompt written for them must work unchanged.
var seedParams = map[string][]string{
	"write_plan":         {"name", "content", "title", "author", "status", "last_known_revision"},
	"read_plan":          {"name"},
	"list_plans":         {},
	"delete_plan":        {"name", "last_known_revision"},
	"set_plan_status":    {"name", "status", "last_known_revision"},
	"get_plan_status":    {"name"},
	"write_session_plan": {"content"},
	"read_session_plan":  {},
	"exit_plan_mode":     {},
	"plan_enter":         {},
	"plan_write":         {"content"},
	"plan_exit":          {"rationale"},
	"todo_write":         {"todos"},
}

// TestToolsAsListed checks what a client is told: exactly the tools of the
// table (an admin bound to a session in build mode sees them all), each
// with the table's annotations, openWorldHint false, an object input
// schema holding the seeds' parameters (and requiring no more than the
// seeds do), and an output schema.
func TestToolsAsListed(t *testing.T) {
	env := apitest.New(t)
	session(t, env, map[string]any{"id": "s"})
	c := connect(t, env, clientOpts{session: "s"})
	res, err := c.cs.ListTools(context.Background(), &sdk.ListToolsParams{})
	if err != nil {
		t.Fatal(err)
	}
	var listed, table []string
	for _, op := range mcp.Operations {
		table = append(table, op.Name)
	}
	byName := map[string]*sdk.Tool{}
	for _, tool := range res.Tools {
		listed = append(listed, tool.Name)
		byName[tool.Name] = tool
	}
	sort.Strings(listed)
	sort.Strings(table)
	if !slices.Equal(listed, table) {
		t.Fatalf("tools/list = %v, the table has %v", listed, table)
	}
	for _, op := range mcp.Operations {
		tool := byName[op.Name]
		a := tool.Annotations
		if a == nil || a.ReadOnlyHint != op.ReadOnly || a.IdempotentHint != op.Idempotent ||
			a.DestructiveHint == nil || *a.DestructiveHint != op.Destructive ||
			a.OpenWorldHint == nil || *a.OpenWorldHint {
			t.Errorf("%s annotations = %+v, want readOnly %v destructive %v idempotent %v openWorld false",
				op.Name, a, op.ReadOnly, op.Destructive, op.Idempotent)
		}
		var in struct {
			Type       string                     `json:"type"`
			Properties map[string]json.RawMessage `json:"properties"`
			Required   []string                   `json:"required"`
		}
		raw, _ := json.Marshal(tool.InputSchema)
		if err := json.Unmarshal(raw, &in); err != nil || in.Type != "object" {
			t.Errorf("%s input schema %s is not an object schema", op.Name, raw)
		}
		if params, ok := seedParams[op.Name]; ok {
			for _, p := range params {
				if _, has := in.Properties[p]; !has {
					t.Errorf("%s lacks the seeds' parameter %q: %s", op.Name, p, raw)
				}
			}
			for _, r := range in.Required {
				if !slices.Contains(params, r) {
					t.Errorf("%s requires %q, which the seeds do not have", op.Name, r)
				}
			}
		}
		if tool.OutputSchema == nil {
			t.Errorf("%s has no output schema", op.Name)
		}
	}
	// Nothing offered can approve, reject or leave plan mode.
	for _, name := range listed {
		for _, word := range strings.Split(name, "_") {
			if slices.Contains([]string{"approve", "reject", "build", "leave", "decide"}, word) {
				t.Errorf("tool %s sounds like a way out of plan mode", name)
			}
		}
	}
}

// TestLeaseDefaultAdvertised holds claim_step's description of
// lease_seconds to the default the server applies when it is left out.
func TestLeaseDefaultAdvertised(t *testing.T) {
	env := apitest.New(t)
	session(t, env, map[string]any{"id": "s"})
	c := connect(t, env, clientOpts{session: "s"})
	res, err := c.cs.ListTools(context.Background(), &sdk.ListToolsParams{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range res.Tools {
		if tool.Name != "claim_step" {
			continue
		}
		var in struct {
			Properties map[string]struct {
				Description string `json:"description"`
			} `json:"properties"`
		}
		raw, _ := json.Marshal(tool.InputSchema)
		if err := json.Unmarshal(raw, &in); err != nil {
			t.Fatal(err)
		}
		desc := in.Properties["lease_seconds"].Description
		if want := fmt.Sprintf("default %d)", plans.DefaultLeaseSeconds); !strings.Contains(desc, want) {
			t.Fatalf("claim_step lease_seconds says %q, want it to name %q", desc, want)
		}
		return
	}
	t.Fatal("claim_step is not listed")
}
