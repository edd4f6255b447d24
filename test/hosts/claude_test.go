package hosts

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/planserver/planserver/internal/hosttest"
)

// claude runs the real Claude Code CLI non-interactively in dir, against
// the scripted model, with --dangerously-skip-permissions (so nothing but
// planserver's hook stands between the model and the disk) and the given
// extra arguments (--settings with hooks, --mcp-config). It returns the
// output of --output-format json.
func claude(t *testing.T, model *hosttest.Model, egress *hosttest.Egress, dir, prompt string, env []string, extra ...string) (string, error) {
	t.Helper()
	bin := host(t, "claude")
	args := append([]string{"-p", prompt, "--dangerously-skip-permissions", "--output-format", "json",
		"--model", "claude-sonnet-4-5"}, extra...)
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
