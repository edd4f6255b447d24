package mcp_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/apitest"
	"github.com/planserver/planserver/internal/mcp"
)

// TestSharedPlanTools drives every shared-plan tool through the SDK's
// client over HTTP, and checks each write against the HTTP API: the same
// plan, revisions and events.
func TestSharedPlanTools(t *testing.T) {
	env := apitest.New(t)
	c := connect(t, env, clientOpts{})

	var p api.Plan
	c.ok("write_plan", map[string]any{"name": "release", "title": "Release", "content": "# Release\n1. Tag\n2. Ship\n",
		"author": "planner", "status": "draft", "steps": []map[string]any{
			{"id": "tag", "description": "Tag it", "owner": "ops"},
			{"id": "ship", "description": "Ship it", "owner": "ops", "deps": []string{"tag"}},
		}}, &p)
	if p.Revision != 1 || p.Title != "Release" || p.Status != "draft" || len(p.Steps) != 2 {
		t.Fatalf("write_plan = %+v", p)
	}
	var viaHTTP api.Plan
	env.Call("GET", "/v1/plans/release", nil).JSON(t, &viaHTTP)
	if viaHTTP.Content != p.Content || viaHTTP.Revision != 1 || viaHTTP.Author != "planner" {
		t.Fatalf("GET /v1/plans/release = %+v", viaHTTP)
	}

	// Fields left out keep their value; last_known_revision guards.
	c.ok("write_plan", map[string]any{"name": "release", "content": "# Release\n1. Tag\n2. Test\n3. Ship\n", "last_known_revision": 1}, &p)
	if p.Revision != 2 || p.Title != "Release" || p.Status != "draft" || len(p.Steps) != 2 {
		t.Fatalf("second write_plan = %+v", p)
	}

	var read struct {
		api.Plan
		Lines struct{ Offset, Count, Total int } `json:"lines"`
	}
	c.ok("read_plan", map[string]any{"name": "release"}, &read)
	if read.Content != p.Content || read.Lines.Total != 4 || read.Lines.Count != 4 {
		t.Fatalf("read_plan = %+v", read)
	}
	c.ok("read_plan", map[string]any{"name": "release", "offset": 2, "limit": 2}, &read)
	if read.Content != "1. Tag\n2. Test\n" || read.Lines.Offset != 2 || read.Lines.Count != 2 || read.Lines.Total != 4 || read.Revision != 2 {
		t.Fatalf("read_plan lines 2-3 = %q %+v", read.Content, read.Lines)
	}
	c.ok("read_plan", map[string]any{"name": "release", "offset": 4, "limit": 10}, &read)
	if read.Content != "3. Ship\n" || read.Lines.Count != 1 {
		t.Fatalf("read_plan from the last line = %q %+v", read.Content, read.Lines)
	}
	c.fails("read_plan", map[string]any{"name": "release", "offset": 9}, "offset", "4 lines")
	c.fails("read_plan", map[string]any{"name": "nope"}, "not_found", `plan "nope" not found`)

	var status api.PlanStatus
	c.ok("set_plan_status", map[string]any{"name": "release", "status": "in-progress", "last_known_revision": 2}, &status)
	if status.Status != "in-progress" || status.Revision != 3 {
		t.Fatalf("set_plan_status = %+v", status)
	}
	c.ok("get_plan_status", map[string]any{"name": "release"}, &status)
	if status.Status != "in-progress" || status.Revision != 3 {
		t.Fatalf("get_plan_status = %+v", status)
	}

	c.ok("write_plan", map[string]any{"name": "notes", "content": "n", "status": "idle"}, nil)
	var page api.PlanPage
	c.ok("list_plans", map[string]any{}, &page)
	if len(page.Plans) != 2 || page.Plans[0].Name != "notes" || page.Plans[1].Name != "release" {
		t.Fatalf("list_plans = %+v", page)
	}
	c.ok("list_plans", map[string]any{"status": "idle"}, &page)
	if len(page.Plans) != 1 || page.Plans[0].Name != "notes" {
		t.Fatalf("list_plans status=idle = %+v", page)
	}

	var deleted struct{ Deleted string }
	c.ok("delete_plan", map[string]any{"name": "notes", "last_known_revision": 1}, &deleted)
	if deleted.Deleted != "notes" {
		t.Fatalf("delete_plan = %+v", deleted)
	}
	mustStatus(t, env.Call("GET", "/v1/plans/notes", nil), http.StatusNotFound)
	c.fails("delete_plan", map[string]any{"name": "notes"}, "not_found")

	// The events are the HTTP routes' events.
	for _, typ := range []string{"plan.created", "plan.updated", "plan.status_changed", "plan.deleted"} {
		if len(events(t, env, 0, typ)) == 0 {
			t.Errorf("no %s event", typ)
		}
	}
}

// TestVersionConflicts: every write that takes last_known_revision refuses
// a stale one with a tool error that names the current revision and says
// to re-read and retry, and writes nothing.
func TestVersionConflicts(t *testing.T) {
	env := apitest.New(t)
	c := connect(t, env, clientOpts{})
	c.ok("write_plan", map[string]any{"name": "p", "content": "one\n"}, nil)
	c.ok("write_plan", map[string]any{"name": "p", "content": "two\n"}, nil) // revision 2

	before := head(t, env)
	for _, tc := range []struct {
		tool string
		args map[string]any
		read string
	}{
		{"write_plan", map[string]any{"name": "p", "content": "three\n", "last_known_revision": 1}, "read_plan"},
		{"edit_plan", map[string]any{"name": "p", "old_string": "two", "new_string": "2", "last_known_revision": 1}, "read_plan"},
		{"set_plan_status", map[string]any{"name": "p", "status": "done", "last_known_revision": 1}, "get_plan_status"},
		{"delete_plan", map[string]any{"name": "p", "last_known_revision": 1}, "get_plan_status"},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			c.fails(tc.tool, tc.args, "version_conflict", "current revision is 2", "re-read with "+tc.read,
				"retry with last_known_revision: 2", "Nothing was written")
		})
	}
	// A plan that must not exist yet (last_known_revision 0).
	c.fails("write_plan", map[string]any{"name": "p", "content": "x", "last_known_revision": 0}, "version_conflict", "current revision is 2")
	if got := head(t, env); got != before {
		t.Fatalf("refused writes appended events: head %d, was %d", got, before)
	}
	var p api.Plan
	env.Call("GET", "/v1/plans/p", nil).JSON(t, &p)
	if p.Revision != 2 || p.Content != "two\n" {
		t.Fatalf("plan after refused writes = %+v", p)
	}
	// Retrying with the revision named works.
	c.ok("write_plan", map[string]any{"name": "p", "content": "three\n", "last_known_revision": 2}, nil)
}

// TestBadArguments: arguments that break the schema or the API's rules
// are a tool error that names what to fix, and nothing is written.
func TestBadArguments(t *testing.T) {
	env := apitest.New(t)
	session(t, env, map[string]any{"id": "s"})
	c := connect(t, env, clientOpts{session: "s"})
	c.ok("write_plan", map[string]any{"name": "p", "content": "# P\n", "steps": []map[string]any{
		{"id": "a", "description": "A", "owner": "dev"}}}, nil)
	before := head(t, env)
	for _, tc := range []struct {
		tool string
		args map[string]any
		want []string
	}{
		{"write_plan", map[string]any{"name": "p"}, []string{"invalid_argument", "content"}},
		{"write_plan", map[string]any{"name": "P/../x", "content": "x"}, []string{"invalid_argument", "name", "must match"}},
		{"write_plan", map[string]any{"name": "p", "content": "x", "colour": "red"}, []string{"invalid_argument", "colour"}},
		{"write_plan", map[string]any{"name": "p", "content": 7}, []string{"invalid_argument", "content"}},
		{"write_plan", map[string]any{"name": "p", "content": "   "}, []string{"invalid_argument", "content"}},
		{"write_plan", map[string]any{"name": "p", "content": "x", "last_known_revision": -1}, []string{"invalid_argument", "last_known_revision"}},
		{"write_plan", map[string]any{"name": "p", "content": "x", "steps": []map[string]any{
			{"id": "a", "description": "A", "owner": "dev", "deps": []string{"a"}}}}, []string{"invalid_argument", "steps[0].deps"}},
		{"write_plan", map[string]any{"name": "p", "content": "x", "steps": []map[string]any{
			{"id": "a", "description": "A", "owner": "dev", "deps": []string{"zz"}}}}, []string{"invalid_argument", "zz"}},
		{"set_plan_status", map[string]any{"name": "p"}, []string{"invalid_argument", "status"}},
		{"set_plan_status", map[string]any{"name": "nope", "status": "x"}, []string{"not_found"}},
		{"edit_plan", map[string]any{"name": "p", "old_string": "missing", "new_string": "x"}, []string{"invalid_argument", "old_string", "does not occur"}},
		{"edit_plan", map[string]any{"name": "p", "old_string": "P"}, []string{"invalid_argument", "new_string"}},
		{"edit_plan", map[string]any{"name": "p"}, []string{"invalid_argument", "nothing to edit"}},
		{"write_session_plan", map[string]any{}, []string{"invalid_argument", "content"}},
		{"write_session_plan", map[string]any{"content": ""}, []string{"invalid_argument", "content"}},
		{"todo_write", map[string]any{"todos": []map[string]any{
			{"content": "a", "status": "in_progress"}, {"content": "b", "status": "in_progress"}}}, []string{"invalid_argument", "in_progress"}},
		{"todo_write", map[string]any{"todos": []map[string]any{{"content": "a", "status": "started"}}}, []string{"invalid_argument", "status"}},
		{"todo_write", map[string]any{"todos": []map[string]any{{"status": "pending"}}}, []string{"invalid_argument", "content"}},
		{"claim_step", map[string]any{"name": "p", "lease_seconds": 0}, []string{"invalid_argument", "lease_seconds"}},
		{"claim_step", map[string]any{"name": "p", "step_id": "a", "owner": "dev"}, []string{"invalid_argument", "owner"}},
		{"report_step", map[string]any{"name": "p", "step_id": "a", "outcome": "great"}, []string{"invalid_argument", "outcome"}},
		{"report_step", map[string]any{"name": "p", "outcome": "success"}, []string{"invalid_argument", "step_id"}},
		{"report_step", map[string]any{"name": "p", "step_id": "no such/id", "outcome": "success"},
			[]string{"invalid_argument", "step_id", `step id "no such/id" must match`}},
		{"claim_step", map[string]any{"name": "p", "step_id": "no such/id"}, []string{"invalid_argument", "step_id", `step id "no such/id" must match`}},
		{"list_steps", map[string]any{"name": "p", "status": "sleeping"}, []string{"invalid_argument", "status"}},
		{"exit_plan_mode", map[string]any{"rationale": 3}, []string{"invalid_argument", "rationale"}},
		{"plan_enter", map[string]any{"mode": "build"}, []string{"invalid_argument", "mode"}},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			msg := c.fails(tc.tool, tc.args, tc.want...)
			if strings.HasPrefix(msg, "internal") {
				t.Errorf("%s: bad arguments answered as an internal error: %s", tc.tool, msg)
			}
		})
	}
	if got := head(t, env); got != before {
		t.Fatalf("bad arguments wrote: event head %d, was %d", got, before)
	}
}

// TestEditPlan edits a plan by exact replacement through the tool: one
// replacement, several in order, replace_all; an ambiguous or missing
// old_string changes nothing.
func TestEditPlan(t *testing.T) {
	env := apitest.New(t)
	c := connect(t, env, clientOpts{})
	c.ok("write_plan", map[string]any{"name": "p", "status": "draft", "content": "# Plan\n- [ ] tag\n- [ ] ship\n- [ ] tell\n"}, nil)

	var out struct {
		api.PlanSummary
		Replacements int `json:"replacements"`
	}
	c.ok("edit_plan", map[string]any{"name": "p", "old_string": "- [ ] tag", "new_string": "- [x] tag", "last_known_revision": 1}, &out)
	if out.Revision != 2 || out.Replacements != 1 || out.Status != "draft" {
		t.Fatalf("edit_plan = %+v", out)
	}
	c.fails("edit_plan", map[string]any{"name": "p", "old_string": "- [ ]", "new_string": "- [x]"}, "occurs 2 times", "replace_all")
	c.ok("edit_plan", map[string]any{"name": "p", "edits": []map[string]any{
		{"old_string": "- [ ] ship", "new_string": "- [x] ship"},
		{"old_string": "- [ ] tell", "new_string": "- [ ] tell everyone"},
	}}, &out)
	if out.Revision != 3 || out.Replacements != 2 {
		t.Fatalf("edit_plan with edits = %+v", out)
	}
	// All or none: the second edit fails, so the first is not made.
	c.fails("edit_plan", map[string]any{"name": "p", "edits": []map[string]any{
		{"old_string": "# Plan", "new_string": "# The plan"},
		{"old_string": "nowhere", "new_string": "x"},
	}}, "edits[1].old_string", "does not occur")
	c.ok("edit_plan", map[string]any{"name": "p", "old_string": "- [x]", "new_string": "- [v]", "replace_all": true}, &out)
	if out.Replacements != 2 {
		t.Fatalf("replace_all replaced %d", out.Replacements)
	}
	var p api.Plan
	env.Call("GET", "/v1/plans/p", nil).JSON(t, &p)
	if want := "# Plan\n- [v] tag\n- [v] ship\n- [ ] tell everyone\n"; p.Content != want || p.Revision != 4 || p.Status != "draft" {
		t.Fatalf("plan after edits = %q rev %d status %q", p.Content, p.Revision, p.Status)
	}
}

func TestApplyEdits(t *testing.T) {
	for _, tc := range []struct {
		name    string
		content string
		edits   []mcp.Edit
		want    string
		n       int
		err     string
	}{
		{"once", "a b c", []mcp.Edit{{OldString: "b", NewString: "B"}}, "a B c", 1, ""},
		{"in order", "a b", []mcp.Edit{{OldString: "a", NewString: "x"}, {OldString: "x b", NewString: "y"}}, "y", 2, ""},
		{"all", "a a a", []mcp.Edit{{OldString: "a", NewString: "b", ReplaceAll: true}}, "b b b", 3, ""},
		{"twice", "a a", []mcp.Edit{{OldString: "a", NewString: "b"}}, "", 0, "occurs 2 times"},
		{"missing", "a", []mcp.Edit{{OldString: "z", NewString: "b"}}, "", 0, "does not occur"},
		{"empty", "a", []mcp.Edit{{OldString: "", NewString: "b"}}, "", 0, "is empty"},
		{"same", "a", []mcp.Edit{{OldString: "a", NewString: "a"}}, "", 0, "same as new_string"},
		{"later one fails", "a b", []mcp.Edit{{OldString: "a", NewString: "x"}, {OldString: "a", NewString: "y"}}, "", 0, "edits[1].old_string"},
		{"whitespace counts", "a  b", []mcp.Edit{{OldString: "a b", NewString: "x"}}, "", 0, "does not occur"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, n, err := mcp.ApplyEdits(tc.content, tc.edits, 1<<20)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want || n != tc.n {
				t.Fatalf("= %q, %d, %v; want %q, %d", got, n, err, tc.want, tc.n)
			}
		})
	}
}
