package hosts

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/planserver/planserver/internal/hosttest"
)

// claude runs the real Claude Code CLI non-interactively in dir, against
// the scripted model, with --dangerously-skip-permissions (so nothing but
// planserver's hook stands between the model and the disk) and the given
// extra arguments (--settings with hooks, --mcp-config); extra arguments
// that name a --permission-mode replace --dangerously-skip-permissions. It
// returns the
// output of --output-format json.
func claude(t *testing.T, model *hosttest.Model, egress *hosttest.Egress, dir, prompt string, env []string, extra ...string) (string, error) {
	t.Helper()
	bin := host(t, "claude")
	args := []string{"-p", prompt, "--output-format", "json", "--model", "claude-sonnet-4-5"}
	if !slices.Contains(extra, "--permission-mode") {
		args = append(args, "--dangerously-skip-permissions")
	}
	args = append(args, extra...)
	return run(t, egress, dir, 3*time.Minute, append([]string{
		"ANTHROPIC_BASE_URL=" + model.URL,
		"ANTHROPIC_API_KEY=sk-ant-scripted",
		// Offline: no telemetry, error reports, update checks or other
		// traffic that is not the model's.
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_AUTOUPDATER=1",
		"DISABLE_TELEMETRY=1",
		"DISABLE_ERROR_REPORTING=1",
		"DISABLE_BUG_COMMAND=1",
		"CLAUDE_CODE_ENABLE_TELEMETRY=0",
		"CLAUDE_CODE_DISABLE_TERMINAL_TITLE=1",
		"IS_SANDBOX=1", // --dangerously-skip-permissions refuses root otherwise
		// MCP tools offered to the model directly, not deferred behind
		// ToolSearch, so a test sees the host list them.
		"ENABLE_TOOL_SEARCH=false",
		// Under -p Claude Code 2.1 does not wait for MCP servers (it
		// offers the model WaitForMcpServers instead); a busy machine
		// connects late, so the tests make it wait.
		"MCP_CONNECTION_NONBLOCKING=false",
		"MCP_CONNECT_TIMEOUT_MS=60000",
	}, env...), bin, args...)
}

// TestClaudeCodeWithoutPlanserverWrites is the control for the plan-mode
// tests: the same script, with no hook, lists the directory and writes a
// file. So the harness really drives Claude Code's tools, and a test that
// finds the directory unchanged under planserver has planserver to thank.
func TestClaudeCodeWithoutPlanserverWrites(t *testing.T) {
	dir := project(t)
	model := hosttest.Start(t, hosttest.Script{Marker: "CONTROL-RUN", Turns: []hosttest.Turn{
		hosttest.Use("Bash", map[string]any{"command": "ls", "description": "List files"}),
		hosttest.Use("Bash", map[string]any{"command": "echo pwned > marker.txt", "description": "Write a marker"}),
		hosttest.Use("Write", map[string]any{"file_path": filepath.Join(dir, "written.txt"), "content": "written\n"}),
		hosttest.Say("done"),
	}})
	egress := hosttest.StartEgress(t)
	out, err := claude(t, model, egress, dir, "CONTROL-RUN: look around", nil)
	if err != nil {
		t.Fatalf("claude: %v\n%s", err, out)
	}
	ls, ok := model.ToolResult(hosttest.CallID("anthropic", 0, 0, 0))
	if !ok || !strings.Contains(ls, "main.go") || !strings.Contains(ls, "README.md") {
		t.Errorf("ls did not reach the model: %q (found %v)", ls, ok)
	}
	for _, name := range []string{"marker.txt", "written.txt"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("without planserver, %s should have been written: %v", name, err)
		}
	}
	if got := egress.Targets(); len(got) > 0 {
		t.Logf("Claude Code tried to reach, through the refusing proxy: %q", got)
	}
	for _, r := range model.Requests() {
		t.Logf("model: %s script %d turn %d", r.Path, r.Script, r.Turn)
	}
}

// hookSettings is Claude Code's --settings with planserver as its
// PreToolUse hook for every tool: the HTTP form (Claude Code posts the
// hook input to planserver; onFailure "block" makes an unreachable
// planserver a denial, as Claude Code would otherwise run the tool), or
// the command form (planserver-hook claude-code, the lean binary that
// planserver hook install writes, configured from the environment).
func hookSettings(t *testing.T, form, serverURL, session string) string {
	t.Helper()
	var hook map[string]any
	switch form {
	case "http":
		hook = map[string]any{"type": "http", "url": serverURL + "/v1/hooks/claude-code?session=" + session,
			"timeout": 10, "onFailure": "block"}
	case "command":
		hook = map[string]any{"type": "command", "command": "planserver-hook claude-code", "timeout": 10}
	default:
		t.Fatalf("no hook form %q", form)
	}
	b, err := json.Marshal(map[string]any{"hooks": map[string]any{
		"PreToolUse": []any{map[string]any{"matcher": "*", "hooks": []any{hook}}}}})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// hookEnv is the environment of the command form.
func hookEnv(serverURL, session string) []string {
	return []string{"PLANSERVER_URL=" + serverURL, "PLANSERVER_SESSION=" + session}
}

// planScript is what a model in plan mode tries: look around, write
// through the shell, Write, Edit (after a Read, as Claude Code requires),
// and a sub-agent that writes through the shell.
func planScript(dir string) []hosttest.Script {
	return []hosttest.Script{{Marker: "PLAN-RUN", Turns: []hosttest.Turn{
		/* 0 */ hosttest.Use("Bash", map[string]any{"command": "ls", "description": "List files"}),
		/* 1 */ hosttest.Use("Bash", map[string]any{"command": "echo pwned > marker.txt", "description": "Write a marker"}),
		/* 2 */ hosttest.Use("Write", map[string]any{"file_path": filepath.Join(dir, "written.txt"), "content": "written\n"}),
		/* 3 */ hosttest.Use("Read", map[string]any{"file_path": filepath.Join(dir, "src", "util.go")}),
		/* 4 */ hosttest.Use("Edit", map[string]any{"file_path": filepath.Join(dir, "src", "util.go"),
			"old_string": `Version = "1"`, "new_string": `Version = "2"`}),
		/* 5 */ hosttest.Use("Agent", map[string]any{"description": "Write from a sub-agent",
			"prompt": "SUBAGENT-RUN: write sub.txt", "subagent_type": "general-purpose"}),
		/* 6 */ hosttest.Say("planned"),
	}}, {Marker: "SUBAGENT-RUN", Turns: []hosttest.Turn{
		hosttest.Use("Bash", map[string]any{"command": "echo sub > sub.txt", "description": "Write from the sub-agent"}),
		hosttest.Say("sub-agent done"),
	}}}
}

// buildScript is what the model does once the plan is approved.
func buildScript(dir, marker string) []hosttest.Script {
	return []hosttest.Script{{Marker: marker, Turns: []hosttest.Turn{
		hosttest.Use("Bash", map[string]any{"command": "echo built > marker.txt", "description": "Write a marker"}),
		hosttest.Use("Write", map[string]any{"file_path": filepath.Join(dir, "written.txt"), "content": "written\n"}),
		hosttest.Say("done"),
	}}}
}

// TestClaudeCodePlanMode is issue 24's proof with the real Claude Code:
// under --dangerously-skip-permissions, with planserver's hook (both
// forms), plan mode leaves the working directory byte-for-byte unchanged
// (Bash redirect, Write, Edit, a sub-agent's Bash) while ls works; the
// model asks for review through planserver's MCP tools (in plan mode
// still); once an admin approves, the same writes happen; and with
// planserver down, writes are denied. TestClaudeCodeExitPlanMode and
// TestClaudeCodeSandbox cover Claude Code's own ExitPlanMode and the
// sandboxed shell.
func TestClaudeCodePlanMode(t *testing.T) {
	for _, form := range hookForms {
		t.Run(form, func(t *testing.T) { testClaudeCodePlanMode(t, form) })
	}
}

func testClaudeCodePlanMode(t *testing.T, form string) {
	srv := startServer(t, "--auth", "none")
	srv.call("POST", "/v1/sessions", `{"id":"cc","title":"Claude Code"}`, 201, nil)
	srv.call("PATCH", "/v1/sessions/cc/mode", `{"mode":"plan"}`, 200, nil)
	dir := project(t)
	before := hashDir(t, dir)
	egress := hosttest.StartEgress(t)
	settings := hookSettings(t, form, srv.URL, "cc")
	env := hookEnv(srv.URL, "cc")

	model := hosttest.Start(t, planScript(dir)...)
	out, err := claude(t, model, egress, dir, "PLAN-RUN: plan the version bump", env, "--settings", settings)
	if err != nil {
		t.Fatalf("claude: %v\n%s", err, out)
	}
	if after := hashDir(t, dir); after != before {
		t.Errorf("plan mode changed the working directory:\n%s", listDir(t, dir))
	}
	result := func(script, turn int) string {
		t.Helper()
		r, ok := model.ToolResult(hosttest.CallID("anthropic", script, turn, 0))
		if !ok {
			t.Fatalf("no tool result for script %d turn %d reached the model; claude said:\n%s", script, turn, out)
		}
		return r
	}
	if ls := result(0, 0); !strings.Contains(ls, "main.go") || !strings.Contains(ls, "README.md") {
		t.Errorf("ls in plan mode: %q, want the listing", ls)
	}
	for turn, what := range map[int]string{2: "Write", 4: "Edit"} {
		if r := result(0, turn); !strings.Contains(r, "plan mode") {
			t.Errorf("%s in plan mode: the model got %q, want planserver's plan-mode reason", what, r)
		}
	}
	if !model.Played(1, 1) {
		t.Fatalf("the sub-agent never came back after its Bash call; claude said:\n%s", out)
	}
	// A shell write, the parent's or the sub-agent's: the classifier
	// cannot prove it read-only, so it runs in the read-only sandbox and
	// fails there (or, where the kernel has no sandbox, is denied).
	for _, c := range [][2]int{{0, 1}, {1, 0}} {
		if r := result(c[0], c[1]); !strings.Contains(r, "Permission denied") && !strings.Contains(r, "plan mode") {
			t.Errorf("script %d turn %d, a shell write in plan mode: the model got %q, want the sandbox's permission error or planserver's reason", c[0], c[1], r)
		}
	}
	// The model asks for review through planserver's own MCP tools, which
	// the hook lets through in plan mode: the plan becomes the session
	// plan's revision and a review is pending.
	model = hosttest.Start(t, hosttest.Script{Marker: "MCP-REVIEW-RUN", Turns: []hosttest.Turn{
		hosttest.Use("mcp__planserver__write_session_plan", map[string]any{"content": "# Plan\n1. Bump Version in src/util.go\n2. Write marker.txt\n"}),
		hosttest.Use("mcp__planserver__exit_plan_mode", map[string]any{"rationale": "ls showed the layout"}),
		hosttest.Say("waiting for the review"),
	}})
	mcpConfig := fmt.Sprintf(`{"mcpServers":{"planserver":{"type":"http","url":%q,"headers":{"Planserver-Session":"cc"}}}}`, srv.URL+"/mcp")
	out, err = claude(t, model, egress, dir, "MCP-REVIEW-RUN: ask for review", env, "--settings", settings, "--mcp-config", mcpConfig)
	if err != nil {
		t.Fatalf("claude: %v\n%s", err, out)
	}
	if r := result(0, 1); !strings.Contains(r, "/ui/sessions/cc/review") {
		t.Errorf("exit_plan_mode: the model got %q, want the review page's URL", r)
	}
	var plan struct {
		Content  string `json:"content"`
		Revision int    `json:"revision"`
	}
	srv.call("GET", "/v1/sessions/cc/plan", "", 200, &plan)
	if !strings.Contains(plan.Content, "Bump Version in src/util.go") {
		t.Errorf("the session plan after exit_plan_mode: %+v", plan)
	}
	var session struct {
		Mode   string `json:"mode"`
		Review *struct {
			State        string `json:"state"`
			PlanRevision int    `json:"plan_revision"`
		} `json:"review"`
	}
	srv.call("GET", "/v1/sessions/cc", "", 200, &session)
	if session.Review == nil || session.Review.State != "pending" || session.Review.PlanRevision != plan.Revision {
		t.Fatalf("the review after exit_plan_mode: %+v (plan revision %d)", session.Review, plan.Revision)
	}
	// Every denial is a tool_call.denied event naming the host and tool.
	events := string(srv.call("GET", "/v1/events?session=cc&type=tool_call.denied", "", 200, nil))
	for _, tool := range []string{"Write", "Edit"} {
		if !strings.Contains(events, `"`+tool+`"`) || !strings.Contains(events, "claude-code") {
			t.Errorf("no tool_call.denied event for %s from claude-code in %s", tool, events)
		}
	}

	// An admin approves: the session is in build mode, and the same
	// writes go through the same hook.
	srv.call("POST", "/v1/sessions/cc/plan/approve", "", 200, nil, "If-Match", fmt.Sprintf(`"%d"`, plan.Revision))
	model = hosttest.Start(t, buildScript(dir, "BUILD-RUN")...)
	if out, err := claude(t, model, egress, dir, "BUILD-RUN: do it", env, "--settings", settings); err != nil {
		t.Fatalf("claude after approval: %v\n%s", err, out)
	}
	for _, name := range []string{"marker.txt", "written.txt"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("after approval %s should have been written: %v", name, err)
		}
	}

	// planserver goes down, in plan mode again: writes are denied.
	srv.call("PATCH", "/v1/sessions/cc/mode", `{"mode":"plan"}`, 200, nil)
	for _, name := range []string{"marker.txt", "written.txt"} {
		_ = os.Remove(filepath.Join(dir, name))
	}
	before = hashDir(t, dir)
	srv.stop()
	model = hosttest.Start(t, buildScript(dir, "DOWN-RUN")...)
	out, err = claude(t, model, egress, dir, "DOWN-RUN: do it", env, "--settings", settings)
	if err != nil {
		t.Fatalf("claude with planserver down: %v\n%s", err, out)
	}
	if after := hashDir(t, dir); after != before {
		t.Errorf("with planserver down, the working directory changed:\n%s", listDir(t, dir))
	}
	for turn := 0; turn < 2; turn++ {
		if _, ok := model.ToolResult(hosttest.CallID("anthropic", 0, turn, 0)); !ok {
			t.Errorf("with planserver down, turn %d's tool call got no answer; claude said:\n%s", turn, out)
		}
	}
	if got := egress.Targets(); len(got) > 0 {
		t.Errorf("Claude Code tried to leave loopback: %q", got)
	}
}

// listDir lists dir's files, for a failure message.
func listDir(t *testing.T, dir string) string {
	var b strings.Builder
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil {
			rel, _ := filepath.Rel(dir, path)
			fmt.Fprintln(&b, rel)
		}
		return nil
	})
	return b.String()
}

// hookForms are the two forms of planserver's Claude Code hook: the HTTP
// hook (POST /v1/hooks/claude-code) and the command (planserver-hook
// claude-code).
var hookForms = []string{"http", "command"}

// planSession starts planserver (--auth none) with session cc in plan
// mode, and a project directory.
func planSession(t *testing.T) (*server, string) {
	t.Helper()
	srv := startServer(t, "--auth", "none")
	srv.call("POST", "/v1/sessions", `{"id":"cc","title":"Claude Code"}`, 201, nil)
	srv.call("PATCH", "/v1/sessions/cc/mode", `{"mode":"plan"}`, 200, nil)
	return srv, project(t)
}

// TestClaudeCodeSandbox: in plan mode a Bash command the classifier cannot
// prove read-only (Python writing a file) runs inside planserver sandbox
// --read-only through Claude Code's updatedInput, and its write fails with
// a permission error the model sees; the directory is unchanged.
func TestClaudeCodeSandbox(t *testing.T) {
	for _, form := range hookForms {
		t.Run(form, func(t *testing.T) {
			srv, dir := planSession(t)
			before := hashDir(t, dir)
			egress := hosttest.StartEgress(t)
			model := hosttest.Start(t, hosttest.Script{Marker: "SANDBOX-RUN", Turns: []hosttest.Turn{
				hosttest.Use("Bash", map[string]any{"command": `python3 -c "print(open('main.go').read()); open('py.txt','w').write('x')"`, "description": "Python reads, then writes"}),
				hosttest.Say("done"),
			}})
			out, err := claude(t, model, egress, dir, "SANDBOX-RUN: run python", hookEnv(srv.URL, "cc"), "--settings", hookSettings(t, form, srv.URL, "cc"))
			if err != nil {
				t.Fatalf("claude: %v\n%s", err, out)
			}
			if after := hashDir(t, dir); after != before {
				t.Errorf("the sandboxed command changed the working directory:\n%s", listDir(t, dir))
			}
			r, ok := model.ToolResult(hosttest.CallID("anthropic", 0, 0, 0))
			if !ok {
				t.Fatalf("no tool result reached the model; claude said:\n%s", out)
			}
			// It ran (its read printed main.go), and its write failed.
			if !strings.Contains(r, "package main") || !strings.Contains(r, "PermissionError") {
				t.Errorf("python in the sandbox: the model got %q, want main.go's text and a PermissionError", r)
			}
		})
	}
}
