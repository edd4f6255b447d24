package hosts

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/planserver/planserver/internal/hosttest"
)

// opencodeConfig is the opencode.json of the tests: the scripted model as
// an OpenAI-compatible provider (the provider package opencode bundles),
// and, merged in, whatever the test adds (mcp servers).
func opencodeConfig(t *testing.T, model *hosttest.Model, extra map[string]any) string {
	t.Helper()
	cfg := map[string]any{
		"$schema": "https://opencode.ai/config.json",
		"model":   "scripted/scripted",
		"provider": map[string]any{"scripted": map[string]any{
			"npm":     "@ai-sdk/openai-compatible",
			"name":    "Scripted model",
			"options": map[string]any{"baseURL": model.URL + "/v1", "apiKey": "scripted"},
			"models":  map[string]any{"scripted": map[string]any{"name": "scripted", "tool_call": true}},
		}},
		"autoupdate": false,
		"share":      "disabled",
	}
	for k, v := range extra {
		cfg[k] = v
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// withPlugin installs planserver's opencode plugin as a project plugin
// (.opencode/plugin/), as planserver hook install opencode --scope project
// does, in a directory next to the project (so the project stays
// unchanged): opencode reads its config from OPENCODE_CONFIG_DIR.
func withPlugin(t *testing.T) string {
	t.Helper()
	src, err := os.ReadFile("../../integrations/opencode/planserver.js")
	if err != nil {
		t.Fatal(err)
	}
	cfgDir := filepath.Join(t.TempDir(), "opencode-config")
	if err := os.MkdirAll(filepath.Join(cfgDir, "plugin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cfgDir, "plugin", "planserver.js"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	return cfgDir
}

// opencode runs opencode run non-interactively in dir with config.
func opencode(t *testing.T, egress *hosttest.Egress, dir, config, prompt string, env []string) (string, error) {
	t.Helper()
	bin := host(t, "opencode")
	// opencode takes its time to start (it tries, and fails, to install
	// its plugin SDK from npm for the config directory; the egress proxy
	// refuses at once) and answers slowly on a busy machine (a plan-mode run
	// of ten model turns took over 5 minutes at a load of 45), hence the
	// longer limit.
	return run(t, egress, dir, 8*time.Minute, append([]string{
		"OPENCODE_CONFIG_CONTENT=" + config,
		"OPENCODE_DISABLE_AUTOUPDATE=1",
		"OPENCODE_DISABLE_MODELS_FETCH=1",
		"OPENCODE_DISABLE_DEFAULT_PLUGINS=1",
		"OPENCODE_DISABLE_LSP_DOWNLOAD=1",
		"OPENCODE_DISABLE_SHARE=1",
	}, env...), bin, "run", "--print-logs", prompt)
}

// TestOpencodeWithoutPlanserverWrites is the control: the scripted model
// drives opencode's own tools, and without the plugin its writes land.
func TestOpencodeWithoutPlanserverWrites(t *testing.T) {
	dir := project(t)
	model := hosttest.Start(t, hosttest.Script{Marker: "OC-CONTROL", Turns: []hosttest.Turn{
		hosttest.Use("bash", map[string]any{"command": "ls", "description": "List files"}),
		hosttest.Use("bash", map[string]any{"command": "echo pwned > marker.txt", "description": "Write a marker"}),
		hosttest.Use("write", map[string]any{"filePath": filepath.Join(dir, "written.txt"), "content": "written\n"}),
		hosttest.Say("done"),
	}})
	egress := hosttest.StartEgress(t)
	out, err := opencode(t, egress, dir, opencodeConfig(t, model, nil), "OC-CONTROL: look around", nil)
	if err != nil {
		t.Fatalf("opencode: %v\n%s", err, out)
	}
	ls, ok := model.ToolResult(hosttest.CallID("chat", 0, 0, 0))
	if !ok || !strings.Contains(ls, "main.go") {
		t.Errorf("ls did not reach the model: %q (found %v)\n%s", ls, ok, out)
	}
	for _, name := range []string{"marker.txt", "written.txt"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("without planserver, %s should have been written: %v", name, err)
		}
	}
	t.Logf("opencode tried to reach: %q", egress.Targets())
	for _, r := range model.Requests() {
		t.Logf("model: %s script %d turn %d", r.Path, r.Script, r.Turn)
	}
}

// TestOpencodePlanMode is issue 24's proof with the real opencode and
// planserver's plugin (integrations/opencode, tool.execute.before): in
// plan mode, bash with a redirect, write, edit and a sub-agent's (task)
// bash leave the directory unchanged, with planserver's reason reaching
// the model, while ls works; after an admin approves the review, the
// writes land; with planserver down, writes are refused.
func TestOpencodePlanMode(t *testing.T) {
	srv := startServer(t, "--auth", "none")
	srv.call("POST", "/v1/sessions", `{"id":"oc","title":"opencode"}`, 201, nil)
	srv.call("PATCH", "/v1/sessions/oc/mode", `{"mode":"plan"}`, 200, nil)
	dir := project(t)
	before := hashDir(t, dir)
	egress := hosttest.StartEgress(t)
	env := []string{"OPENCODE_CONFIG_DIR=" + withPlugin(t), "PLANSERVER_URL=" + srv.URL, "PLANSERVER_SESSION=oc"}

	util := filepath.Join(dir, "src", "util.go")
	model := hosttest.Start(t, hosttest.Script{Marker: "OC-PLAN", Turns: []hosttest.Turn{
		/* 0 */ hosttest.Use("bash", map[string]any{"command": "ls", "description": "List files"}),
		/* 1 */ hosttest.Use("bash", map[string]any{"command": "echo pwned > marker.txt", "description": "Write a marker"}),
		/* 2 */ hosttest.Use("write", map[string]any{"filePath": filepath.Join(dir, "written.txt"), "content": "written\n"}),
		/* 3 */ hosttest.Use("read", map[string]any{"filePath": util}),
		/* 4 */ hosttest.Use("edit", map[string]any{"filePath": util, "oldString": `Version = "1"`, "newString": `Version = "2"`}),
		/* 5 */ hosttest.Use("task", map[string]any{"description": "Write from a sub-agent", "prompt": "OC-SUB: write sub.txt", "subagent_type": "general"}),
		/* 6 */ hosttest.Say("planned"),
	}}, hosttest.Script{Marker: "OC-SUB", Turns: []hosttest.Turn{
		hosttest.Use("bash", map[string]any{"command": "echo sub > sub.txt", "description": "Write from the sub-agent"}),
		hosttest.Say("sub-agent done"),
	}})
	out, err := opencode(t, egress, dir, opencodeConfig(t, model, nil), "OC-PLAN: plan the version bump", env)
	if err != nil {
		t.Fatalf("opencode: %v\n%s", err, out)
	}
	if after := hashDir(t, dir); after != before {
		t.Errorf("plan mode changed the working directory:\n%s", listDir(t, dir))
	}
	result := func(script, turn int) string {
		t.Helper()
		r, ok := model.ToolResult(hosttest.CallID("chat", script, turn, 0))
		if !ok {
			t.Fatalf("no tool result for script %d turn %d reached the model; opencode said:\n%s", script, turn, out)
		}
		return r
	}
	if ls := result(0, 0); !strings.Contains(ls, "main.go") || !strings.Contains(ls, "README.md") {
		t.Errorf("ls in plan mode: %q, want the listing", ls)
	}
	for turn, what := range map[int]string{2: "write", 4: "edit"} {
		if r := result(0, turn); !strings.Contains(r, "plan mode") {
			t.Errorf("%s in plan mode: the model got %q, want planserver's plan-mode reason", what, r)
		}
	}
	// A shell write, the parent's or the sub-agent's: the plugin rewrites
	// the command to run in the read-only sandbox, where it fails (or,
	// where the kernel has no sandbox, planserver denies it).
	for _, c := range [][2]int{{0, 1}, {1, 0}} {
		if r := result(c[0], c[1]); !strings.Contains(r, "Permission denied") && !strings.Contains(r, "plan mode") {
			t.Errorf("script %d turn %d, a shell write in plan mode: the model got %q, want the sandbox's permission error or planserver's reason", c[0], c[1], r)
		}
	}
	events := string(srv.call("GET", "/v1/events?session=oc&type=tool_call.denied", "", 200, nil))
	if !strings.Contains(events, "opencode") || !strings.Contains(events, `"write"`) {
		t.Errorf("no tool_call.denied event for write from opencode in %s", events)
	}

	// Review through the HTTP API (opencode has no ExitPlanMode of its
	// own), then an admin approves: the writes land.
	srv.call("PUT", "/v1/sessions/oc/plan", `{"content":"# Plan\n1. Bump Version\n"}`, 201, nil)
	approveAfterReview(t, srv, "oc")
	model = hosttest.Start(t, hosttest.Script{Marker: "OC-BUILD", Turns: []hosttest.Turn{
		hosttest.Use("bash", map[string]any{"command": "echo built > marker.txt", "description": "Write a marker"}),
		hosttest.Use("write", map[string]any{"filePath": filepath.Join(dir, "written.txt"), "content": "written\n"}),
		hosttest.Say("done"),
	}})
	if out, err := opencode(t, egress, dir, opencodeConfig(t, model, nil), "OC-BUILD: do it", env); err != nil {
		t.Fatalf("opencode after approval: %v\n%s", err, out)
	}
	for _, name := range []string{"marker.txt", "written.txt"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("after approval %s should have been written: %v", name, err)
		}
		_ = os.Remove(filepath.Join(dir, name))
	}

	// planserver down: writes are refused.
	before = hashDir(t, dir)
	srv.stop()
	model = hosttest.Start(t, hosttest.Script{Marker: "OC-DOWN", Turns: []hosttest.Turn{
		hosttest.Use("bash", map[string]any{"command": "echo built > marker.txt", "description": "Write a marker"}),
		hosttest.Use("write", map[string]any{"filePath": filepath.Join(dir, "written.txt"), "content": "written\n"}),
		hosttest.Say("done"),
	}})
	out, err = opencode(t, egress, dir, opencodeConfig(t, model, nil), "OC-DOWN: do it", env)
	if err != nil {
		t.Fatalf("opencode with planserver down: %v\n%s", err, out)
	}
	if after := hashDir(t, dir); after != before {
		t.Errorf("with planserver down, the working directory changed:\n%s", listDir(t, dir))
	}
	for turn := 0; turn < 2; turn++ {
		if r, ok := model.ToolResult(hosttest.CallID("chat", 0, turn, 0)); !ok || !strings.Contains(r, "could not be asked") {
			t.Errorf("with planserver down, turn %d: the model got %q, want the plugin's refusal", turn, r)
		}
	}
}

// approveAfterReview requests the review of session id's plan over MCP
// (exit_plan_mode, as a host's model would) and approves it as an admin.
func approveAfterReview(t *testing.T, srv *server, id string) {
	t.Helper()
	srv.call("POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"exit_plan_mode","arguments":{}}}`, 200, nil,
		"Planserver-Session", id, "Accept", "application/json, text/event-stream")
	var plan struct {
		Revision int `json:"revision"`
	}
	srv.call("GET", "/v1/sessions/"+id+"/plan", "", 200, &plan)
	srv.call("POST", "/v1/sessions/"+id+"/plan/approve", "", 200, nil, "If-Match", `"`+strconv.Itoa(plan.Revision)+`"`)
}
