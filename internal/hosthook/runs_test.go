package hosthook

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func fixture(t *testing.T, host Host, name string) Call {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "testdata", "hooks", string(host), name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := Parse(host, raw)
	if err != nil {
		t.Fatalf("%s/%s: %v", host, name, err)
	}
	return c
}

// TestReportsNeverDecide: every host's after-tool report is read as a
// report (After, with the tool and the host's id of the call where it
// sends one), and is answered with no decision in every mode, and when
// planserver cannot be asked: the tool ran already, and a report must
// never block anything.
func TestReportsNeverDecide(t *testing.T) {
	for _, tc := range []struct {
		host       Host
		name, tool string
		runID      string
		kind       Kind
		empty      string
	}{
		{ClaudeCode, "post_write", "Write", "toolu_01ABC123", Write, `{}`},
		{ClaudeCode, "post_failure_bash", "Bash", "toolu_01REDIR", Shell, `{}`},
		{ClaudeCode, "post_subagent_bash", "Bash", "toolu_01SUB", Shell, `{}`},
		{GeminiCLI, "after_shell_rm", "run_shell_command", "", Shell, `{}`},
		{Cursor, "post_tool_write", "Write", "", Write, `{}`},
		{Cursor, "after_shell_npm_install", "Shell", "", Shell, `{}`},
		{Cursor, "after_mcp", "database_query", "", MCP, `{}`},
		{OpenCode, "after_bash_write", "bash", "call_2", Shell, `{"decision":"none"}`},
	} {
		c := fixture(t, tc.host, tc.name)
		if c.Phase != After || c.Tool != tc.tool || c.RunID != tc.runID || c.Kind != tc.kind {
			t.Errorf("%s/%s: phase %v tool %q id %q kind %v, want a report of %q (%q, %v)", tc.host, tc.name, c.Phase, c.Tool, c.RunID, c.Kind, tc.tool, tc.runID, tc.kind)
		}
		for _, mode := range []Mode{planSession(), {Session: "b"}} {
			d := Decide(c, mode, sandboxPolicy(), Facts{})
			if got := string(Render(tc.host, c, d)); d.Outcome != None || got != tc.empty {
				t.Errorf("%s/%s (plan %v): %v %s, want no decision", tc.host, tc.name, mode.Plan, d.Outcome, got)
			}
		}
		if d := Fallback(c, policy(), errors.New("down")); d.Outcome != None {
			t.Errorf("%s/%s with planserver down: %v, want no decision", tc.host, tc.name, d.Outcome)
		}
	}
	if c := fixture(t, ClaudeCode, "write"); c.Phase != Before || c.RunID != "toolu_01ABC123" {
		t.Errorf("a PreToolUse: phase %v id %q", c.Phase, c.RunID)
	}
}

// TestRunKeysMatch: a report finds the decision made about the same call,
// by the host's id where it sends one, else by the call's content (the
// rewritten input too, since a host reports what it ran), and never the
// decision about another call.
func TestRunKeysMatch(t *testing.T) {
	meets := func(a, b []string) bool {
		return slices.ContainsFunc(a, func(k string) bool { return slices.Contains(b, k) })
	}
	// Claude Code: by tool_use_id.
	if before, after := RunKeys(fixture(t, ClaudeCode, "write"), nil), RunKeys(fixture(t, ClaudeCode, "post_write"), nil); !meets(before, after) || !strings.HasPrefix(after[0], "id:") {
		t.Errorf("Claude Code's Write and its PostToolUse: %v, %v", before, after)
	}
	if meets(RunKeys(fixture(t, ClaudeCode, "bash_redirect"), nil), RunKeys(fixture(t, ClaudeCode, "post_write"), nil)) {
		t.Error("two calls of Claude Code share a key")
	}
	// Gemini CLI: by content; the sandbox's rewrite is reported as run.
	before := fixture(t, GeminiCLI, "shell_rm")
	after := fixture(t, GeminiCLI, "after_shell_rm")
	if !meets(RunKeys(before, nil), RunKeys(after, nil)) {
		t.Errorf("Gemini CLI's BeforeTool and AfterTool of one call do not meet: %v %v", RunKeys(before, nil), RunKeys(after, nil))
	}
	before.Command = "ls -la"
	before.Input["command"] = json.RawMessage(`"ls -la"`)
	d := Decide(before, planSession(), sandboxPolicy(), Facts{})
	if d.Outcome != Rewrite {
		t.Fatalf("ls in plan mode: %v", d.Outcome)
	}
	ran := after
	ran.Input = map[string]json.RawMessage{}
	for k, v := range d.Input { // Gemini CLI merges the rewrite over the model's arguments, and reports them
		ran.Input[k] = v
	}
	keys := RunKeys(before, d.Input)
	if len(keys) != 2 || !meets(keys, RunKeys(ran, nil)) {
		t.Errorf("a rewritten call's report does not meet its decision: %v, %v", keys, RunKeys(ran, nil))
	}
	other := after
	other.Conversation = "another conversation"
	if meets(RunKeys(fixture(t, GeminiCLI, "shell_rm"), nil), RunKeys(other, nil)) {
		t.Error("the same call in another conversation meets this one's decision")
	}
	// Cursor: a shell command's two reports meet their own decisions.
	shell, afterShell := fixture(t, Cursor, "before_shell_npm_install"), fixture(t, Cursor, "after_shell_npm_install")
	if !meets(RunKeys(shell, nil), RunKeys(afterShell, nil)) {
		t.Error("Cursor's beforeShellExecution and afterShellExecution do not meet")
	}
	pre := Call{Host: Cursor, Event: "preToolUse", Conversation: shell.Conversation, Tool: "Shell",
		Input: map[string]json.RawMessage{"command": json.RawMessage(`"npm install express"`)}}
	if meets(RunKeys(pre, nil), RunKeys(afterShell, nil)) {
		t.Error("Cursor's preToolUse meets afterShellExecution: one run would be matched twice to one decision")
	}
	// Members in another order, another spacing: the same call.
	a, _ := Parse(GeminiCLI, []byte(`{"hook_event_name":"AfterTool","session_id":"s","tool_name":"write_file","tool_input":{"a":1.50,"b":[1,2]}}`))
	b, _ := Parse(GeminiCLI, []byte(`{"hook_event_name":"BeforeTool","session_id":"s","tool_name":"write_file","tool_input":{ "b": [1, 2], "a": 1.50 }}`))
	if !meets(RunKeys(a, nil), RunKeys(b, nil)) {
		t.Error("the same input, spelled differently, does not meet")
	}
	if fixture(t, Cursor, "before_read_file").Reported() || !fixture(t, Cursor, "pre_tool_write").Reported() {
		t.Error("Reported: beforeReadFile has no report; preToolUse has")
	}
}

// TestNextStepNamesOnlyToolsTheModelHas: a denial tells the model how to
// ask for review with the tools it has: ExitPlanMode only in Claude Code's
// own plan mode, planserver's MCP tools by the name the installation gave
// them as each host spells it, and, without them, to ask the user.
func TestNextStepNamesOnlyToolsTheModelHas(t *testing.T) {
	for _, tc := range []struct {
		call      Call
		want, not []string
	}{
		{Call{Host: ClaudeCode, PermissionMode: "plan", MCPName: "planserver"}, []string{"ExitPlanMode"}, []string{"mcp__"}},
		{Call{Host: ClaudeCode, PermissionMode: "default", MCPName: "planserver"},
			[]string{"mcp__planserver__write_session_plan", "mcp__planserver__exit_plan_mode"}, []string{"ExitPlanMode"}},
		{Call{Host: ClaudeCode, PermissionMode: "bypassPermissions", MCPName: NoMCP}, []string{"no tool to ask for review", "console"},
			[]string{"ExitPlanMode", "write_session_plan"}},
		{Call{Host: ClaudeCode}, []string{"If you have planserver's write_session_plan"}, []string{"ExitPlanMode"}},
		{Call{Host: GeminiCLI, MCPName: "ps"}, []string{"mcp_ps_write_session_plan", "mcp_ps_exit_plan_mode"}, []string{"ExitPlanMode"}},
		{Call{Host: OpenCode, MCPName: "planserver"}, []string{"planserver_write_session_plan", "planserver_exit_plan_mode"}, nil},
		{Call{Host: Cursor, MCPName: "planserver"}, []string{"write_session_plan tool", "exit_plan_mode"}, []string{"mcp_"}},
	} {
		got := NextStep(tc.call)
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%+v: %q lacks %q", tc.call, got, w)
			}
		}
		for _, n := range tc.not {
			if strings.Contains(got, n) {
				t.Errorf("%+v: %q names %q, a tool the model does not have", tc.call, got, n)
			}
		}
	}
	// The denial itself carries it.
	c := fixture(t, ClaudeCode, "write")
	c.MCPName = "planserver"
	if d := Decide(c, planSession(), policy(), Facts{}); !strings.Contains(d.Reason, "mcp__planserver__exit_plan_mode") || strings.Contains(d.Reason, "ExitPlanMode") {
		t.Errorf("a Write outside Claude Code's plan mode: %q", d.Reason)
	}
	if d := Decide(fixture(t, ClaudeCode, "write_plan_mode"), planSession(), policy(), Facts{}); !strings.Contains(d.Reason, "call ExitPlanMode") {
		t.Errorf("a Write in Claude Code's plan mode: %q", d.Reason)
	}
}

// TestGeminiMCPNames: Gemini CLI names an MCP tool mcp_SERVER_TOOL and says
// which in mcp_context; both are read, so planserver's own tools are
// judged as on /mcp (the model's way to ask for review in plan mode).
func TestGeminiMCPNames(t *testing.T) {
	c := fixture(t, GeminiCLI, "mcp_planserver_write_session_plan")
	if c.Kind != MCP || c.MCPServer != "planserver" || c.MCPTool != "write_session_plan" {
		t.Errorf("mcp_context: %v %q %q", c.Kind, c.MCPServer, c.MCPTool)
	}
	c, err := Parse(GeminiCLI, []byte(`{"hook_event_name":"BeforeTool","session_id":"s","tool_name":"mcp_planserver_exit_plan_mode","tool_input":{}}`))
	if err != nil || c.Kind != MCP || c.MCPServer != "planserver" || c.MCPTool != "exit_plan_mode" {
		t.Errorf("the name alone: %v %v %q %q", err, c.Kind, c.MCPServer, c.MCPTool)
	}
	if c := fixture(t, GeminiCLI, "mcp_tool"); c.Kind != MCP || c.MCPServer != "github" {
		t.Errorf("mcp__github__create_issue: %v %q", c.Kind, c.MCPServer)
	}
	if c, _ := Parse(GeminiCLI, []byte(`{"hook_event_name":"BeforeTool","session_id":"s","tool_name":"read_file","tool_input":{}}`)); c.Kind != Read {
		t.Errorf("read_file: %v", c.Kind)
	}
}

// TestOpenCodeMCPNames: opencode names an MCP tool SERVER_TOOL; planserver's
// own are read as its MCP tools (judged as on /mcp), its own tools with an
// underscore (apply_patch) keep their kind.
func TestOpenCodeMCPNames(t *testing.T) {
	for _, tc := range []struct {
		tool         string
		kind         Kind
		server, name string
	}{
		{"planserver_exit_plan_mode", MCP, "planserver", "exit_plan_mode"},
		{"github_create_issue", MCP, "github", "create_issue"},
		{"apply_patch", Write, "", ""},
		{"bash", Shell, "", ""},
		{"frobnicate", Unknown, "", ""},
	} {
		c, err := Parse(OpenCode, []byte(`{"tool":"`+tc.tool+`","sessionID":"s","callID":"c","args":{}}`))
		if err != nil || c.Kind != tc.kind || c.MCPServer != tc.server || c.MCPTool != tc.name {
			t.Errorf("%s: %v %v %q %q", tc.tool, err, c.Kind, c.MCPServer, c.MCPTool)
		}
	}
}
