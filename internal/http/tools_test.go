package http_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/apitest"
	"github.com/planserver/planserver/internal/app"
)

type checkResult = api.CheckResult

func check(t *testing.T, env *apitest.Env, id string, tool map[string]any) checkResult {
	t.Helper()
	r := env.Call("POST", "/v1/sessions/"+id+"/tools/check", tool)
	if r.Status != 200 {
		t.Fatalf("check %v on %s: %d %s", tool, id, r.Status, r.Body)
	}
	var c checkResult
	r.JSON(t, &c)
	return c
}

func TestToolCheckDeniesAndRecords(t *testing.T) {
	env := apitest.New(t)
	createSession(t, env, map[string]any{"id": "root", "mode": "plan"})
	createSession(t, env, map[string]any{"id": "sub", "parent_id": "root"})
	createSession(t, env, map[string]any{"id": "free"})

	c := check(t, env, "sub", map[string]any{"name": "write_file", "annotations": map[string]any{"readOnlyHint": false}})
	if c.Allowed || c.EffectiveMode != "plan" || !strings.HasPrefix(c.Reason, "[Tool denied — plan mode is active]") ||
		!strings.Contains(c.Reason, "write_session_plan") || !strings.Contains(c.Reason, `"root"`) {
		t.Errorf("denied check of a sub-session: %+v", c)
	}
	if c := check(t, env, "sub", map[string]any{"name": "shell"}); c.Allowed || !strings.Contains(c.Reason, "no annotations.readOnlyHint") {
		t.Errorf("tool without annotations: %+v", c)
	}
	for _, tool := range []map[string]any{
		{"name": "read_file", "annotations": map[string]any{"readOnlyHint": true}},
		{"name": "exit_plan_mode"},
		{"name": "todo_write", "annotations": nil},
	} {
		if c := check(t, env, "sub", tool); !c.Allowed {
			t.Errorf("%v denied in plan mode: %+v", tool, c)
		}
	}
	if c := check(t, env, "free", map[string]any{"name": "shell"}); !c.Allowed || c.EffectiveMode != "build" {
		t.Errorf("build session: %+v", c)
	}
	denied := eventData(t, env, "tool_call.denied", "sub")
	if len(denied) != 2 || denied[0]["tool"] != "write_file" || denied[1]["tool"] != "shell" ||
		denied[0]["mode_source"] != "root" || !strings.Contains(denied[0]["reason"].(string), "plan mode is active") {
		t.Errorf("denial events: %v", denied)
	}
	if n := countRows(t, env, "events", "type = 'tool_call.denied'"); n != 2 {
		t.Errorf("tool_call.denied events = %d, want 2 (allowed calls write nothing)", n)
	}
	if r := env.Call("POST", "/v1/sessions/nobody/tools/check", map[string]any{"name": "x"}); r.Status != 404 {
		t.Errorf("check on a missing session: %d", r.Status)
	}
	if r := env.Call("POST", "/v1/sessions/nobody/tools/filter", map[string]any{"tools": []any{}}); r.Status != 404 {
		t.Errorf("filter on a missing session: %d", r.Status)
	}
}

func TestPlanModeAllowlistIsConfigurable(t *testing.T) {
	env := apitest.New(t, func(c *app.Config) { c.PlanModeAllow = []string{"plan_write", "plan_exit"} })
	createSession(t, env, map[string]any{"id": "s", "mode": "plan"})
	f := filter(t, env, "s")
	if strings.Join(f.Allowed, ",") != "read_file" || !strings.Contains(*f.Reminder, "write_session_plan") {
		t.Errorf("custom allowlist filter: %+v", f)
	}
	r := env.Call("POST", "/v1/sessions/s/tools/filter", map[string]any{"tools": []any{
		map[string]any{"name": "plan_write"}, map[string]any{"name": "plan_exit"}, map[string]any{"name": "write_session_plan"},
	}})
	var g filterResult
	r.JSON(t, &g)
	if strings.Join(g.Allowed, ",") != "plan_write,plan_exit" || !strings.Contains(*g.Reminder, "with plan_write") ||
		!strings.Contains(*g.Reminder, "call plan_exit") {
		t.Errorf("harness tools: %+v", g)
	}
	if c := check(t, env, "s", map[string]any{"name": "write_session_plan"}); c.Allowed || !strings.Contains(c.Reason, "plan_write, plan_exit") {
		t.Errorf("check against a custom allowlist: %+v", c)
	}
	none := apitest.New(t, func(c *app.Config) { c.PlanModeAllow = []string{} })
	createSession(t, none, map[string]any{"id": "s", "mode": "plan"})
	if f := filter(t, none, "s"); strings.Join(f.Allowed, ",") != "read_file" {
		t.Errorf("empty allowlist: %+v", f)
	}
}

func TestToolFilterTakesAThousandTools(t *testing.T) {
	env := apitest.New(t)
	createSession(t, env, map[string]any{"id": "s", "mode": "plan"})
	tools := make([]any, 1000)
	for i := range tools {
		tools[i] = map[string]any{"name": fmt.Sprintf("t%d", i), "annotations": map[string]any{"readOnlyHint": i%2 == 0}}
	}
	r := env.Call("POST", "/v1/sessions/s/tools/filter", map[string]any{"tools": tools})
	var f filterResult
	r.JSON(t, &f)
	if len(f.Allowed) != 500 || len(f.Removed) != 500 {
		t.Errorf("1000 tools: %d allowed, %d removed", len(f.Allowed), len(f.Removed))
	}
	tools = append(tools, map[string]any{"name": "one-too-many"})
	if r := env.Bad("POST", "/v1/sessions/s/tools/filter", map[string]any{"tools": tools}); r.Status != 400 ||
		!strings.Contains(string(r.Body), `"field":"tools"`) {
		t.Errorf("1001 tools: %d %.200s", r.Status, r.Body)
	}
}
