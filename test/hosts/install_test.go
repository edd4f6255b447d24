package hosts

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/planserver/planserver/internal/hosttest"
)

// A user's machine set up by planserver hook install alone: a fresh HOME
// (its XDG folders inside), the project the host works in, and nothing
// else: no --settings, no --mcp-config, no PLANSERVER_* in the host's
// environment. Whatever the host does with planserver, install wrote.

// machine is one user's HOME and project.
type machine struct {
	home, dir string
	// server and session are planserver's URL and the session, for hosts
	// set up by hand (Codex).
	server, session string
}

func newMachine(t *testing.T) *machine {
	t.Helper()
	m := &machine{home: filepath.Join(t.TempDir(), "home"), dir: project(t)}
	if err := os.MkdirAll(m.home, 0o755); err != nil {
		t.Fatal(err)
	}
	return m
}

// env is the machine's environment for planserver and the hosts: run()
// puts these after its own, and the last of a name wins.
func (m *machine) env() []string {
	return []string{"HOME=" + m.home, "XDG_CONFIG_HOME=" + filepath.Join(m.home, ".config"),
		"XDG_DATA_HOME=" + filepath.Join(m.home, ".local", "share"), "XDG_CACHE_HOME=" + filepath.Join(m.home, ".cache"),
		"XDG_STATE_HOME=" + filepath.Join(m.home, ".local", "state")}
}

func (m *machine) binDir() string {
	return filepath.Join(m.home, ".local", "share", "planserver", "bin")
}

// install runs planserver hook install HOST ARGS in the project, against
// srv, and returns what it printed; it fails the test unless the install
// and its self-test pass.
func (m *machine) install(t *testing.T, srv *server, host string, args ...string) string {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"hook", "install", host, "--server", srv.URL}, args...)...)
	cmd.Dir = m.dir
	cmd.Env = append(os.Environ(), m.env()...)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "self-test passed") {
		t.Fatalf("planserver hook install %s %v: %v\n%s", host, args, err, out)
	}
	return string(out)
}

// webhookReceiver is a loopback Standard Webhooks receiver: it records the
// bodies it is sent.
type webhookReceiver struct {
	URL string
	mu  sync.Mutex
	got []map[string]any
	srv *http.Server
}

func startReceiver(t *testing.T) *webhookReceiver {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &webhookReceiver{URL: "http://" + ln.Addr().String() + "/hook"}
	r.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		r.mu.Lock()
		r.got = append(r.got, m)
		r.mu.Unlock()
	})}
	go func() { _ = r.srv.Serve(ln) }()
	t.Cleanup(func() { _ = r.srv.Close() })
	return r
}

// wait returns the first delivery of type typ within d.
func (r *webhookReceiver) wait(typ string, d time.Duration) map[string]any {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		r.mu.Lock()
		for _, m := range r.got {
			if m["type"] == typ {
				r.mu.Unlock()
				return m
			}
		}
		r.mu.Unlock()
	}
	return nil
}

// unjudged returns the session's tool_call.unjudged events' data.
func (s *server) unjudged(session string) []map[string]any {
	var page struct {
		Events []struct {
			Data map[string]any `json:"data"`
		} `json:"events"`
	}
	s.call("GET", "/v1/events?session_id="+session+"&types=tool_call.unjudged", "", 200, &page, "Accept", "application/json")
	var out []map[string]any
	for _, e := range page.Events {
		out = append(out, e.Data)
	}
	return out
}

// approve approves the pending review of session id's current plan, as the
// console's Approve button does.
func (s *server) approve(t *testing.T, id string) {
	t.Helper()
	var plan struct {
		Revision int `json:"revision"`
	}
	s.call("GET", "/v1/sessions/"+id+"/plan", "", 200, &plan)
	s.call("POST", "/v1/sessions/"+id+"/plan/approve", `{}`, 200, nil, "If-Match", fmt.Sprintf(`"%d"`, plan.Revision))
}

// removeBeforeHooks takes the before-tool hooks out of a settings file by
// hand, as a user (or a broken upgrade) might, and keeps the rest.
func removeBeforeHooks(t *testing.T, path string, events ...string) {
	t.Helper()
	var s map[string]any
	raw, err := os.ReadFile(path)
	if err == nil {
		err = json.Unmarshal(raw, &s)
	}
	if err != nil {
		t.Fatal(err)
	}
	hooks, _ := s["hooks"].(map[string]any)
	for _, ev := range events {
		if _, ok := hooks[ev]; !ok {
			t.Fatalf("%s has no %s hooks to remove: %s", path, ev, raw)
		}
		delete(hooks, ev)
	}
	out, _ := json.MarshalIndent(s, "", "  ")
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestClaudeCodeInstalled is issue 43's proof with the real Claude Code,
// set up by planserver hook install alone on a fresh HOME: in plan mode a
// Write and a shell write are refused and the directory is unchanged, the
// denial naming only the tools the model has; the model writes its plan
// and asks for review with the MCP tools the installer set up; a human
// approves through the HTTP API the console uses, and the writes land.
// With the installed binary deleted, writes are still denied. With the
// before-hook taken out of the settings by hand, the next write is
// reported by the after-hook as tool_call.unjudged, which a webhook
// receiver gets.
func TestClaudeCodeInstalled(t *testing.T) {
	srv := startServer(t, "--auth", "none", "--webhook-allow-hosts", "127.0.0.1")
	srv.call("POST", "/v1/sessions", `{"id":"cc","title":"Claude Code, installed"}`, 201, nil)
	srv.call("PATCH", "/v1/sessions/cc/mode", `{"mode":"plan"}`, 200, nil)
	m := newMachine(t)
	m.install(t, srv, "claude-code", "--session", "cc")
	before := hashDir(t, m.dir)
	egress := hosttest.StartEgress(t)
	env := m.env()

	// Plan mode holds.
	model := hosttest.Start(t, hosttest.Script{Marker: "INSTALLED-PLAN", Turns: []hosttest.Turn{
		hosttest.Use("Bash", map[string]any{"command": "ls", "description": "List files"}),
		hosttest.Use("Bash", map[string]any{"command": "echo pwned > marker.txt", "description": "Write a marker"}),
		hosttest.Use("Write", map[string]any{"file_path": filepath.Join(m.dir, "written.txt"), "content": "written\n"}),
		hosttest.Say("planned"),
	}})
	out, err := claude(t, model, egress, m.dir, "INSTALLED-PLAN: plan the version bump", env)
	if err != nil {
		t.Fatalf("claude: %v\n%s", err, out)
	}
	if after := hashDir(t, m.dir); after != before {
		t.Errorf("plan mode changed the working directory:\n%s", listDir(t, m.dir))
	}
	result := func(model *hosttest.Model, turn int) string {
		t.Helper()
		r, ok := model.ToolResult(hosttest.CallID("anthropic", 0, turn, 0))
		if !ok {
			t.Fatalf("no tool result for turn %d reached the model; claude said:\n%s", turn, out)
		}
		return r
	}
	if ls := result(model, 0); !strings.Contains(ls, "main.go") {
		t.Errorf("ls in plan mode: %q, want the listing", ls)
	}
	if r := result(model, 1); !strings.Contains(r, "Permission denied") && !strings.Contains(r, "plan mode") {
		t.Errorf("a shell write in plan mode: %q", r)
	}
	write := result(model, 2)
	if !strings.Contains(write, "plan mode") || !strings.Contains(write, "mcp__planserver__exit_plan_mode") || strings.Contains(write, "ExitPlanMode") {
		t.Errorf("Write in plan mode: the model got %q, want the plan-mode reason naming mcp__planserver__exit_plan_mode and not ExitPlanMode", write)
	}

	// The model asks for review with the tools the installer set up.
	model = hosttest.Start(t, hosttest.Script{Marker: "INSTALLED-REVIEW", Turns: []hosttest.Turn{
		hosttest.Use("mcp__planserver__write_session_plan", map[string]any{"content": "# Plan\n1. Write marker.txt and written.txt\n"}),
		hosttest.Use("mcp__planserver__exit_plan_mode", map[string]any{"rationale": "ls showed the layout"}),
		hosttest.Say("waiting for the review"),
	}})
	out, err = claude(t, model, egress, m.dir, "INSTALLED-REVIEW: ask for review", env)
	if err != nil {
		t.Fatalf("claude: %v\n%s", err, out)
	}
	if r := result(model, 1); !strings.Contains(r, "/ui/sessions/cc/review") {
		t.Fatalf("exit_plan_mode: the model got %q, want the review page's URL; claude said:\n%s", r, out)
	}
	var session struct {
		Review struct{ State string } `json:"review"`
	}
	srv.call("GET", "/v1/sessions/cc", "", 200, &session)
	if session.Review.State != "pending" {
		t.Fatalf("the review after exit_plan_mode: %+v", session.Review)
	}
	// A human approves; the writes land.
	srv.approve(t, "cc")
	model = hosttest.Start(t, buildScript(m.dir, "INSTALLED-BUILD")...)
	if out, err := claude(t, model, egress, m.dir, "INSTALLED-BUILD: do it", env); err != nil {
		t.Fatalf("claude after approval: %v\n%s", err, out)
	}
	for _, name := range []string{"marker.txt", "written.txt"} {
		if _, err := os.Stat(filepath.Join(m.dir, name)); err != nil {
			t.Errorf("after approval %s should have been written: %v", name, err)
		}
		_ = os.Remove(filepath.Join(m.dir, name))
	}
	if got := srv.unjudged("cc"); len(got) != 0 {
		t.Errorf("runs planserver judged were reported unjudged: %v", got)
	}

	// Fails closed: in plan mode again, with the installed binary gone,
	// writes are still denied.
	srv.call("PATCH", "/v1/sessions/cc/mode", `{"mode":"plan"}`, 200, nil)
	hook := filepath.Join(m.binDir(), "planserver-hook")
	saved, err := os.ReadFile(hook)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(hook); err != nil {
		t.Fatal(err)
	}
	before = hashDir(t, m.dir)
	model = hosttest.Start(t, buildScript(m.dir, "INSTALLED-GONE")...)
	out, err = claude(t, model, egress, m.dir, "INSTALLED-GONE: do it", env)
	if err != nil {
		t.Fatalf("claude without the hook's binary: %v\n%s", err, out)
	}
	if after := hashDir(t, m.dir); after != before {
		t.Errorf("with the hook's binary deleted, the working directory changed:\n%s", listDir(t, m.dir))
	}
	if r := result(model, 1); !strings.Contains(r, "planserver hook doctor claude-code") {
		t.Errorf("Write without the hook's binary: the model got %q, want the fallback's denial", r)
	}
	if err := os.WriteFile(hook, saved, 0o755); err != nil {
		t.Fatal(err)
	}

	// Sees what it could not stop: the before-hook taken out by hand, a
	// write runs, and the after-hook reports it; a webhook receiver gets
	// tool_call.unjudged.
	receiver := startReceiver(t)
	srv.call("POST", "/v1/webhooks", `{"url":"`+receiver.URL+`","events":["tool_call.unjudged"]}`, 201, nil)
	removeBeforeHooks(t, filepath.Join(m.dir, ".claude", "settings.json"), "PreToolUse")
	model = hosttest.Start(t, hosttest.Script{Marker: "INSTALLED-UNJUDGED", Turns: []hosttest.Turn{
		hosttest.Use("Write", map[string]any{"file_path": filepath.Join(m.dir, "unjudged.txt"), "content": "nobody judged this\n"}),
		hosttest.Say("done"),
	}})
	if out, err := claude(t, model, egress, m.dir, "INSTALLED-UNJUDGED: write", env); err != nil {
		t.Fatalf("claude without the before-hook: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(m.dir, "unjudged.txt")); err != nil {
		t.Fatalf("without the before-hook the Write should have run (that is the point): %v", err)
	}
	got := srv.unjudged("cc")
	if len(got) != 1 || got[0]["tool"] != "Write" || got[0]["host"] != "claude-code" || got[0]["reason"] != "no_decision" ||
		got[0]["effective_mode"] != "plan" || got[0]["tool_use_id"] == nil {
		t.Fatalf("tool_call.unjudged events: %v", got)
	}
	delivery := receiver.wait("tool_call.unjudged", 30*time.Second)
	if delivery == nil {
		t.Fatal("the webhook receiver got no tool_call.unjudged")
	}
	if data, _ := delivery["data"].(map[string]any); data == nil || data["session_id"] != "cc" {
		t.Errorf("the delivery: %v", delivery)
	}
	if got := egress.Targets(); len(got) > 0 {
		t.Errorf("Claude Code tried to leave loopback: %q", got)
	}
}

// TestClaudeCodeInstalledOwnPlanMode: the two plan modes together. In
// Claude Code's own plan mode (--permission-mode plan, which the installer
// never sets) a denial tells the model to call ExitPlanMode, the tool it
// has there, and ExitPlanMode becomes planserver's review. Once a human
// approved it, planserver holds nothing: in Claude Code's plan mode what
// stops a write is Claude Code's own prompt, not planserver, and a
// headless run as installed writes.
func TestClaudeCodeInstalledOwnPlanMode(t *testing.T) {
	srv := startServer(t, "--auth", "none")
	srv.call("POST", "/v1/sessions", `{"id":"cc","title":"Claude Code, its own plan mode"}`, 201, nil)
	srv.call("PATCH", "/v1/sessions/cc/mode", `{"mode":"plan"}`, 200, nil)
	m := newMachine(t)
	m.install(t, srv, "claude-code", "--session", "cc")
	before := hashDir(t, m.dir)
	egress := hosttest.StartEgress(t)
	env := m.env()
	model := hosttest.Start(t, hosttest.Script{Marker: "OWN-PLAN", Turns: []hosttest.Turn{
		hosttest.Use("Write", map[string]any{"file_path": filepath.Join(m.dir, "notes.txt"), "content": "not yet\n"}),
		{Calls: []hosttest.Call{{Name: "Write", InputFrom: func(request []byte) any {
			return map[string]any{"file_path": claudePlanFile(request), "content": "# Plan\n1. Write written.txt\n"}
		}}}},
		hosttest.Use("ExitPlanMode", map[string]any{}),
		hosttest.Say("waiting for the review"),
	}})
	out, err := claude(t, model, egress, m.dir, "OWN-PLAN: plan", env, reviewArgs...)
	if err != nil {
		t.Fatalf("claude: %v\n%s", err, out)
	}
	if after := hashDir(t, m.dir); after != before {
		t.Errorf("plan mode changed the working directory:\n%s", listDir(t, m.dir))
	}
	for turn, want := range map[int]string{0: "call ExitPlanMode", 2: "/ui/sessions/cc/review"} {
		r, ok := model.ToolResult(hosttest.CallID("anthropic", 0, turn, 0))
		if !ok || !strings.Contains(r, want) {
			t.Errorf("turn %d: the model got %q, want %q; claude said:\n%s", turn, r, want, out)
		}
	}
	if r, _ := model.ToolResult(hosttest.CallID("anthropic", 0, 0, 0)); strings.Contains(r, "mcp__planserver__") {
		t.Errorf("in Claude Code's plan mode the denial names the MCP tools instead of ExitPlanMode: %q", r)
	}
	srv.approve(t, "cc")
	// In Claude Code's own plan mode still, planserver no longer decides.
	model = hosttest.Start(t, buildScript(m.dir, "OWN-STILL")...)
	if out, err = claude(t, model, egress, m.dir, "OWN-STILL: write", env, reviewArgs...); err != nil {
		t.Fatalf("claude: %v\n%s", err, out)
	}
	if r, ok := model.ToolResult(hosttest.CallID("anthropic", 0, 1, 0)); !ok || strings.Contains(r, "planserver") {
		t.Errorf("after approval, in Claude Code's plan mode, the Write got %q: planserver still holds it", r)
	}
	// Headless as installed: the writes land.
	model = hosttest.Start(t, buildScript(m.dir, "OWN-BUILD")...)
	if out, err = claude(t, model, egress, m.dir, "OWN-BUILD: write", env); err != nil {
		t.Fatalf("claude: %v\n%s", err, out)
	}
	for _, name := range []string{"marker.txt", "written.txt"} {
		if _, err := os.Stat(filepath.Join(m.dir, name)); err != nil {
			t.Errorf("after approval, headless as installed, %s should have been written: %v", name, err)
		}
	}
}

// reviewByMCP is the model asking for review with planserver's MCP tools,
// by whatever names the host gives them.
func reviewByMCP(marker string) hosttest.Script {
	return hosttest.Script{Marker: marker, Turns: []hosttest.Turn{
		{Calls: []hosttest.Call{{NameFrom: hosttest.ToolEndingIn("write_session_plan"),
			Input: map[string]any{"content": "# Plan\n1. Write marker.txt and written.txt\n"}}}},
		{Calls: []hosttest.Call{{NameFrom: hosttest.ToolEndingIn("exit_plan_mode"),
			Input: map[string]any{"rationale": "ls showed the layout"}}}},
		hosttest.Say("waiting for the review"),
	}}
}

// TestOpencodeInstalled: opencode set up by planserver hook install alone
// (--scope user: the plugin and the MCP server in ~/.config/opencode, the
// project untouched): plan mode holds, the model asks for review with the
// MCP tools the installer set up, a human approves, the writes land.
func TestOpencodeInstalled(t *testing.T) {
	srv := startServer(t, "--auth", "none")
	srv.call("POST", "/v1/sessions", `{"id":"oc","title":"opencode, installed"}`, 201, nil)
	srv.call("PATCH", "/v1/sessions/oc/mode", `{"mode":"plan"}`, 200, nil)
	m := newMachine(t)
	m.install(t, srv, "opencode", "--session", "oc", "--scope", "user")
	before := hashDir(t, m.dir)
	egress := hosttest.StartEgress(t)
	env := m.env()
	model := hosttest.Start(t, hosttest.Script{Marker: "OCI-PLAN", Turns: []hosttest.Turn{
		hosttest.Use("bash", map[string]any{"command": "ls", "description": "List files"}),
		hosttest.Use("bash", map[string]any{"command": "echo pwned > marker.txt", "description": "Write a marker"}),
		hosttest.Use("write", map[string]any{"filePath": filepath.Join(m.dir, "written.txt"), "content": "written\n"}),
		hosttest.Say("planned"),
	}})
	out, err := opencode(t, egress, m.dir, opencodeConfig(t, model, nil), "OCI-PLAN: plan the version bump", env)
	if err != nil {
		t.Fatalf("opencode: %v\n%s", err, out)
	}
	if after := hashDir(t, m.dir); after != before {
		t.Errorf("plan mode changed the working directory:\n%s", listDir(t, m.dir))
	}
	result := func(model *hosttest.Model, turn int) string {
		t.Helper()
		r, ok := model.ToolResult(hosttest.CallID("chat", 0, turn, 0))
		if !ok {
			t.Fatalf("no tool result for turn %d reached the model; opencode said:\n%s", turn, out)
		}
		return r
	}
	if ls := result(model, 0); !strings.Contains(ls, "main.go") {
		t.Errorf("ls in plan mode: %q", ls)
	}
	if r := result(model, 1); !strings.Contains(r, "Permission denied") && !strings.Contains(r, "plan mode") {
		t.Errorf("a shell write in plan mode: %q", r)
	}
	if r := result(model, 2); !strings.Contains(r, "plan mode") || !strings.Contains(r, "planserver_exit_plan_mode") {
		t.Errorf("write in plan mode: the model got %q, want the reason naming planserver_exit_plan_mode", r)
	}
	model = hosttest.Start(t, reviewByMCP("OCI-REVIEW"))
	out, err = opencode(t, egress, m.dir, opencodeConfig(t, model, nil), "OCI-REVIEW: ask for review", env)
	if err != nil {
		t.Fatalf("opencode: %v\n%s", err, out)
	}
	if r := result(model, 1); !strings.Contains(r, "/ui/sessions/oc/review") {
		t.Fatalf("exit_plan_mode: the model got %q; opencode said:\n%s", r, out)
	}
	srv.approve(t, "oc")
	model = hosttest.Start(t, hosttest.Script{Marker: "OCI-BUILD", Turns: []hosttest.Turn{
		hosttest.Use("bash", map[string]any{"command": "echo built > marker.txt", "description": "Write a marker"}),
		hosttest.Use("write", map[string]any{"filePath": filepath.Join(m.dir, "written.txt"), "content": "written\n"}),
		hosttest.Say("done"),
	}})
	if out, err := opencode(t, egress, m.dir, opencodeConfig(t, model, nil), "OCI-BUILD: do it", env); err != nil {
		t.Fatalf("opencode after approval: %v\n%s", err, out)
	}
	for _, name := range []string{"marker.txt", "written.txt"} {
		if _, err := os.Stat(filepath.Join(m.dir, name)); err != nil {
			t.Errorf("after approval %s should have been written: %v", name, err)
		}
	}
	if got := srv.unjudged("oc"); len(got) != 0 {
		t.Errorf("runs planserver judged were reported unjudged: %v", got)
	}
}

// TestGeminiCLIInstalled: Gemini CLI set up by planserver hook install
// alone (--scope user, into the user's settings, which keep their own
// keys): plan mode holds, the model asks for review with the MCP tools the
// installer set up, a human approves, the writes land; with the installed
// binary deleted writes are still denied; with the before-hook taken out
// by hand, the next write is reported as tool_call.unjudged.
func TestGeminiCLIInstalled(t *testing.T) {
	srv := startServer(t, "--auth", "none")
	srv.call("POST", "/v1/sessions", `{"id":"gm","title":"Gemini CLI, installed"}`, 201, nil)
	srv.call("PATCH", "/v1/sessions/gm/mode", `{"mode":"plan"}`, 200, nil)
	geminiBin := host(t, "gemini")
	m := newMachine(t)
	settings := filepath.Join(m.home, ".gemini", "settings.json")
	if err := os.MkdirAll(filepath.Dir(settings), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(settings, []byte(`{"security": {"auth": {"selectedType": "gemini-api-key"}}, "privacy": {"usageStatisticsEnabled": false}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	m.install(t, srv, "gemini-cli", "--session", "gm", "--scope", "user")
	before := hashDir(t, m.dir)
	egress := hosttest.StartEgress(t)
	gemini := func(model *hosttest.Model, prompt string) string {
		t.Helper()
		out, err := run(t, egress, m.dir, 3*time.Minute, append(m.env(), "GEMINI_API_KEY=scripted", "GOOGLE_GEMINI_BASE_URL="+model.URL),
			geminiBin, "-p", prompt, "--yolo", "--skip-trust", "--model", "gemini-2.5-flash")
		if err != nil {
			t.Fatalf("gemini: %v\n%s", err, out)
		}
		return out
	}
	result := func(model *hosttest.Model, turn int, out string) string {
		t.Helper()
		r, ok := model.ToolResult(hosttest.CallID("gemini", 0, turn, 0))
		if !ok {
			t.Fatalf("no tool result for turn %d reached the model; gemini said:\n%s", turn, out)
		}
		return r
	}
	model := hosttest.Start(t, hosttest.Script{Marker: "GMI-PLAN", Turns: []hosttest.Turn{
		hosttest.Use("run_shell_command", map[string]any{"command": "ls", "description": "List files"}),
		hosttest.Use("run_shell_command", map[string]any{"command": "echo pwned > marker.txt", "description": "Write a marker"}),
		hosttest.Use("write_file", map[string]any{"file_path": filepath.Join(m.dir, "written.txt"), "content": "written\n"}),
		hosttest.Say("planned"),
	}})
	out := gemini(model, "GMI-PLAN: plan the version bump")
	if after := hashDir(t, m.dir); after != before {
		t.Errorf("plan mode changed the working directory:\n%s", listDir(t, m.dir))
	}
	if ls := result(model, 0, out); !strings.Contains(ls, "main.go") {
		t.Errorf("ls in plan mode: %q", ls)
	}
	if r := result(model, 1, out); !strings.Contains(r, "Permission denied") && !strings.Contains(r, "plan mode") {
		t.Errorf("a shell write in plan mode: %q", r)
	}
	if r := result(model, 2, out); !strings.Contains(r, "plan mode") || !strings.Contains(r, "mcp_planserver_exit_plan_mode") {
		t.Errorf("write_file in plan mode: the model got %q, want the reason naming mcp_planserver_exit_plan_mode", r)
	}
	model = hosttest.Start(t, reviewByMCP("GMI-REVIEW"))
	out = gemini(model, "GMI-REVIEW: ask for review")
	if r := result(model, 1, out); !strings.Contains(r, "/ui/sessions/gm/review") {
		t.Fatalf("exit_plan_mode: the model got %q; gemini said:\n%s", r, out)
	}
	srv.approve(t, "gm")
	model = hosttest.Start(t, hosttest.Script{Marker: "GMI-BUILD", Turns: []hosttest.Turn{
		hosttest.Use("run_shell_command", map[string]any{"command": "echo built > marker.txt", "description": "Write a marker"}),
		hosttest.Use("write_file", map[string]any{"file_path": filepath.Join(m.dir, "written.txt"), "content": "written\n"}),
		hosttest.Say("done"),
	}})
	out = gemini(model, "GMI-BUILD: do it")
	for _, name := range []string{"marker.txt", "written.txt"} {
		if _, err := os.Stat(filepath.Join(m.dir, name)); err != nil {
			t.Errorf("after approval %s should have been written: %v\n%s", name, err, out)
		}
		_ = os.Remove(filepath.Join(m.dir, name))
	}
	if got := srv.unjudged("gm"); len(got) != 0 {
		t.Errorf("runs planserver judged were reported unjudged: %v", got)
	}

	// In plan mode again, the installed binary gone: still denied.
	srv.call("PATCH", "/v1/sessions/gm/mode", `{"mode":"plan"}`, 200, nil)
	hook := filepath.Join(m.binDir(), "planserver-hook")
	saved, err := os.ReadFile(hook)
	if err != nil {
		t.Fatal(err)
	}
	_ = os.Remove(hook)
	before = hashDir(t, m.dir)
	model = hosttest.Start(t, hosttest.Script{Marker: "GMI-GONE", Turns: []hosttest.Turn{
		hosttest.Use("write_file", map[string]any{"file_path": filepath.Join(m.dir, "written.txt"), "content": "written\n"}),
		hosttest.Say("done"),
	}})
	out = gemini(model, "GMI-GONE: write")
	if after := hashDir(t, m.dir); after != before {
		t.Errorf("with the hook's binary deleted, the working directory changed:\n%s", listDir(t, m.dir))
	}
	if r := result(model, 0, out); !strings.Contains(r, "planserver hook doctor gemini-cli") {
		t.Errorf("write_file without the hook's binary: the model got %q, want the fallback's denial", r)
	}
	if err := os.WriteFile(hook, saved, 0o755); err != nil {
		t.Fatal(err)
	}
	// The before-hook taken out by hand: the write runs, and is reported.
	removeBeforeHooks(t, settings, "BeforeTool")
	model = hosttest.Start(t, hosttest.Script{Marker: "GMI-UNJUDGED", Turns: []hosttest.Turn{
		hosttest.Use("write_file", map[string]any{"file_path": filepath.Join(m.dir, "unjudged.txt"), "content": "nobody judged this\n"}),
		hosttest.Say("done"),
	}})
	gemini(model, "GMI-UNJUDGED: write")
	got := srv.unjudged("gm")
	if len(got) != 1 || got[0]["tool"] != "write_file" || got[0]["host"] != "gemini-cli" || got[0]["tool_use_id"] != nil {
		t.Fatalf("tool_call.unjudged events: %v", got)
	}
	if got := egress.Targets(); len(got) > 0 {
		t.Logf("Gemini CLI tried to reach, through the refusing proxy: %q", got)
	}
}
