package hosts

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planserver/planserver/internal/hosttest"
)

// scopePlan is a session plan that declares a scope: src/app.go, and
// README.md too when wider.
func scopePlan(wider bool) string {
	files := "[src/app.go]"
	if wider {
		files = "[src/app.go, README.md]"
	}
	return "# Bump the version\n\n1. Set V in src/app.go\n\n```scope\nfiles: " + files + "\ncommands: [go test ./...]\n```\n"
}

// TestClaudeCodeScopedBuild is issue 45's proof with the real Claude Code,
// under --dangerously-skip-permissions, through planserver's hook (both
// forms): a plan that declares src/app.go, approved with its scope, lets a
// Write to src/app.go land and denies one to README.md; Bash sed -i works
// on src/app.go and fails on README.md (the sandbox); a sub-agent's write
// outside the scope is denied; and once the plan is revised to add
// README.md and that revision approved, the write goes through.
func TestClaudeCodeScopedBuild(t *testing.T) {
	for _, form := range hookForms {
		t.Run(form, func(t *testing.T) { testClaudeCodeScopedBuild(t, form) })
	}
}

func testClaudeCodeScopedBuild(t *testing.T, form string) {
	srv := startServer(t, "--auth", "none")
	srv.call("POST", "/v1/sessions", `{"id":"cc","title":"Claude Code","mode":"plan"}`, 201, nil)
	dir := project(t)
	app, readme := filepath.Join(dir, "src", "app.go"), filepath.Join(dir, "README.md")
	if err := os.WriteFile(app, []byte("package src\n\nconst V = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(map[string]string{"content": scopePlan(false)})
	srv.call("PUT", "/v1/sessions/cc/plan", string(body), 201, nil)
	srv.call("POST", "/v1/sessions/cc/plan/review", "", 200, nil)
	var approved struct {
		Scope      string `json:"scope"`
		BuildScope *struct {
			Files []string `json:"files"`
		} `json:"build_scope"`
	}
	srv.call("POST", "/v1/sessions/cc/plan/approve", "", 200, &approved, "If-Match", `"1"`)
	if approved.Scope != "plan" || approved.BuildScope == nil || strings.Join(approved.BuildScope.Files, ",") != "src/app.go" {
		t.Fatalf("the approval did not grant the plan's scope: %+v", approved)
	}

	egress := hosttest.StartEgress(t)
	settings := hookSettings(t, form, srv.URL, "cc")
	env := hookEnv(srv.URL, "cc")
	model := hosttest.Start(t, hosttest.Script{Marker: "SCOPE-RUN", Turns: []hosttest.Turn{
		/* 0 */ hosttest.Use("Read", map[string]any{"file_path": app}),
		/* 1 */ hosttest.Use("Write", map[string]any{"file_path": app, "content": "package src\n\nconst V = 2\n"}),
		/* 2 */ hosttest.Use("Read", map[string]any{"file_path": readme}),
		/* 3 */ hosttest.Use("Write", map[string]any{"file_path": readme, "content": "# written\n"}),
		/* 4 */ hosttest.Use("Bash", map[string]any{"command": "sed -i 's/V = 2/V = 3/' src/app.go", "description": "Bump V"}),
		/* 5 */ hosttest.Use("Bash", map[string]any{"command": "sed -i 's/demo/sed/' README.md", "description": "Edit the README"}),
		/* 6 */ hosttest.Use("Agent", map[string]any{"description": "Write from a sub-agent",
			"prompt": "SUBAGENT-SCOPE: write notes.md", "subagent_type": "general-purpose"}),
		/* 7 */ hosttest.Say("built"),
	}}, hosttest.Script{Marker: "SUBAGENT-SCOPE", Turns: []hosttest.Turn{
		hosttest.Use("Write", map[string]any{"file_path": filepath.Join(dir, "notes.md"), "content": "from the sub-agent\n"}),
		hosttest.Say("sub-agent done"),
	}})
	out, err := claude(t, model, egress, dir, "SCOPE-RUN: bump the version", env, "--settings", settings)
	if err != nil {
		t.Fatalf("claude: %v\n%s", err, out)
	}
	result := func(m *hosttest.Model, script, turn int) string {
		t.Helper()
		r, ok := m.ToolResult(hosttest.CallID("anthropic", script, turn, 0))
		if !ok {
			t.Fatalf("no tool result for script %d turn %d reached the model; claude said:\n%s", script, turn, out)
		}
		return r
	}
	if got := readFile(t, app); got != "package src\n\nconst V = 3\n" {
		t.Errorf("src/app.go: the Write and the sed -i inside the scope should have landed: %q (write: %q, sed: %q)",
			got, result(model, 0, 1), result(model, 0, 4))
	}
	if got := readFile(t, readme); got != "# demo\n" {
		t.Errorf("README.md changed outside the scope: %q", got)
	}
	if r := result(model, 0, 3); !strings.Contains(r, "scoped build") || !strings.Contains(r, "README.md") || !strings.Contains(r, "```scope") {
		t.Errorf("Write to README.md: the model got %q, want the scope's denial and how to widen it", r)
	}
	if r := result(model, 0, 5); !strings.Contains(r, "Permission denied") || !strings.Contains(r, "approved scope") {
		t.Errorf("sed -i on README.md: the model got %q, want the sandbox's permission error and the scope's line", r)
	}
	if !model.Played(1, 0) {
		t.Fatalf("the sub-agent never ran; claude said:\n%s", out)
	}
	if r := result(model, 1, 0); !strings.Contains(r, "scoped build") {
		t.Errorf("the sub-agent's Write outside the scope: the model got %q", r)
	}
	if _, err := os.Stat(filepath.Join(dir, "notes.md")); err == nil {
		t.Error("the sub-agent wrote notes.md outside the scope")
	}
	var page struct {
		Events []struct {
			Type string `json:"type"`
			Data struct {
				Tool          string `json:"tool"`
				Path          string `json:"path"`
				AgentID       string `json:"agent_id"`
				Host          string `json:"host"`
				ScopeRevision int    `json:"scope_revision"`
			} `json:"data"`
		} `json:"events"`
	}
	srv.call("GET", "/v1/events?session_id=cc&types=tool_call.out_of_scope", "", 200, &page, "Accept", "application/json")
	var denied []string
	for _, e := range page.Events {
		who := "main"
		if e.Data.AgentID != "" {
			who = "sub-agent"
		}
		denied = append(denied, fmt.Sprintf("%s %s %s %s r%d", e.Data.Host, e.Data.Tool, e.Data.Path, who, e.Data.ScopeRevision))
	}
	if strings.Join(denied, "; ") != "claude-code Write README.md main r1; claude-code Write notes.md sub-agent r1" {
		t.Errorf("tool_call.out_of_scope events: %q", denied)
	}

	// The plan is revised to add README.md; a human approves that
	// revision, and the write goes through.
	body, _ = json.Marshal(map[string]string{"content": scopePlan(true)})
	srv.call("PUT", "/v1/sessions/cc/plan", string(body), 200, nil)
	srv.call("POST", "/v1/sessions/cc/plan/review", "", 200, nil)
	srv.call("POST", "/v1/sessions/cc/plan/approve", "", 200, nil, "If-Match", `"2"`)
	model = hosttest.Start(t, hosttest.Script{Marker: "WIDER-RUN", Turns: []hosttest.Turn{
		hosttest.Use("Read", map[string]any{"file_path": readme}),
		hosttest.Use("Write", map[string]any{"file_path": readme, "content": "# written\n"}),
		hosttest.Say("done"),
	}})
	if out, err = claude(t, model, egress, dir, "WIDER-RUN: update the README", env, "--settings", settings); err != nil {
		t.Fatalf("claude after the wider approval: %v\n%s", err, out)
	}
	if got := readFile(t, readme); got != "# written\n" {
		t.Errorf("README.md after its revision was approved: %q (the model got %q)", got, result(model, 0, 1))
	}
	if got := egress.Targets(); len(got) > 0 {
		t.Errorf("Claude Code tried to leave loopback: %q", got)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
