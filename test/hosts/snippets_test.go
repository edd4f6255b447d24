package hosts

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/planserver/planserver/internal/hosttest"
)

// snippet returns the code block docs/host-snippets.md marks
// "<!-- snippet: name (tested) -->", with planserver's address changed to
// addr: the text a user copies, as printed.
func snippet(t *testing.T, name, addr string) string {
	t.Helper()
	doc, err := os.ReadFile("../../docs/host-snippets.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "<!-- snippet: "+name+" (tested) -->\n```")
	if !ok {
		t.Fatalf("docs/host-snippets.md has no tested snippet %q", name)
	}
	_, rest, _ = strings.Cut(rest, "\n") // the fence's language
	block, _, ok := strings.Cut(rest, "```")
	if !ok {
		t.Fatalf("docs/host-snippets.md: snippet %q is not closed", name)
	}
	if !strings.Contains(block, "127.0.0.1:8080") {
		t.Fatalf("snippet %q does not name 127.0.0.1:8080", name)
	}
	return strings.ReplaceAll(block, "127.0.0.1:8080", addr)
}

// snippetServer is planserver under --auth token with session "snip" and
// an agent token bound to it (the token a snippet reads from
// PLANSERVER_TOKEN), and the admin token that checks the result.
type snippetServer struct {
	*server
	agent, admin string
}

func startSnippetServer(t *testing.T) *snippetServer {
	t.Helper()
	srv := startServer(t, "--auth", "token")
	token := func(args ...string) string {
		out, err := exec.Command(binary, append([]string{"token", "create", "--db", srv.db}, args...)...).Output()
		if err != nil {
			t.Fatalf("token create %v: %v", args, err)
		}
		return strings.TrimSpace(string(out))
	}
	s := &snippetServer{server: srv, admin: token("--role", "admin", "--name", "admin")}
	srv.call("POST", "/v1/sessions", `{"id":"snip","title":"snippets"}`, 201, nil, "Authorization", "Bearer "+s.admin)
	s.agent = token("--role", "agent", "--session", "snip", "--name", "host")
	return s
}

// writePlanScript has the model call planserver's write_session_plan, by
// whatever name the host gives it.
func writePlanScript(marker, host string) hosttest.Script {
	return hosttest.Script{Marker: marker, Turns: []hosttest.Turn{
		{Calls: []hosttest.Call{{NameFrom: hosttest.ToolEndingIn("write_session_plan"),
			Input: map[string]any{"content": "# Plan written by " + host + "\n"}}}},
		hosttest.Say("done"),
	}}
}

// checkToolCall asserts the three things a snippet must give: the host
// offered the model planserver's tools, the model's call reached
// planserver, and planserver's state shows it.
func (s *snippetServer) checkToolCall(t *testing.T, model *hosttest.Model, api, host, out string) {
	t.Helper()
	var offered []string
	for _, r := range model.Requests() {
		if r.Script == 0 && r.Turn == 0 {
			offered = hosttest.OfferedTools(r.Body)
		}
	}
	var ours []string
	for _, name := range offered {
		if strings.Contains(name, "write_session_plan") || strings.Contains(name, "exit_plan_mode") || strings.Contains(name, "read_plan") {
			ours = append(ours, name)
		}
	}
	if len(ours) < 3 {
		t.Fatalf("%s did not offer the model planserver's tools; it offered %q; it said:\n%s", host, offered, out)
	}
	result, ok := model.ToolResult(hosttest.CallID(api, 0, 0, 0))
	if !ok {
		t.Fatalf("the result of write_session_plan never reached the model; %s said:\n%s", host, out)
	}
	var plan struct {
		Content string `json:"content"`
		Author  string `json:"author"`
	}
	s.call("GET", "/v1/sessions/snip/plan", "", 200, &plan, "Authorization", "Bearer "+s.admin)
	if plan.Content != "# Plan written by "+host+"\n" {
		t.Errorf("the session plan after %s's call: %+v (the model got %q)", host, plan, result)
	}
}

func TestSnippetClaudeCode(t *testing.T) {
	s := startSnippetServer(t)
	dir := t.TempDir()
	config := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(config, []byte(snippet(t, "claude-code", s.addr)), 0o644); err != nil {
		t.Fatal(err)
	}
	model := hosttest.Start(t, writePlanScript("SNIPPET-CLAUDE", "claude-code"))
	egress := hosttest.StartEgress(t)
	out, err := claude(t, model, egress, dir, "SNIPPET-CLAUDE: write the plan", []string{"PLANSERVER_TOKEN=" + s.agent}, "--mcp-config", config)
	if err != nil {
		t.Fatalf("claude: %v\n%s", err, out)
	}
	s.checkToolCall(t, model, "anthropic", "claude-code", out)
}

func TestSnippetClaudeCodeCLI(t *testing.T) {
	s := startSnippetServer(t)
	claudeBin := host(t, "claude")
	dir := t.TempDir()
	home := filepath.Join(t.TempDir(), "home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	egress := hosttest.StartEgress(t)
	env := []string{"HOME=" + home, "PLANSERVER_TOKEN=" + s.agent, "PATH=" + filepath.Dir(claudeBin) + ":" + os.Getenv("PATH")}
	// The snippet, run by a shell as printed.
	if out, err := run(t, egress, dir, time.Minute, env, "bash", "-c", snippet(t, "claude-code-cli", s.addr)); err != nil {
		t.Fatalf("claude mcp add: %v\n%s", err, out)
	}
	out, err := run(t, egress, dir, time.Minute, env, claudeBin, "mcp", "list")
	if err != nil || !strings.Contains(out, "planserver") || !strings.Contains(out, "Connected") {
		t.Fatalf("claude mcp list after the snippet: %v\n%s", err, out)
	}
	model := hosttest.Start(t, writePlanScript("SNIPPET-CLAUDE-CLI", "claude-code"))
	out, err = claude(t, model, egress, dir, "SNIPPET-CLAUDE-CLI: write the plan", env)
	if err != nil {
		t.Fatalf("claude: %v\n%s", err, out)
	}
	s.checkToolCall(t, model, "anthropic", "claude-code", out)
}

func TestSnippetOpencode(t *testing.T) {
	s := startSnippetServer(t)
	var cfg map[string]any
	if err := json.Unmarshal([]byte(snippet(t, "opencode", s.addr)), &cfg); err != nil {
		t.Fatalf("the opencode snippet is not JSON: %v", err)
	}
	model := hosttest.Start(t, writePlanScript("SNIPPET-OPENCODE", "opencode"))
	egress := hosttest.StartEgress(t)
	out, err := opencode(t, egress, t.TempDir(), opencodeConfig(t, model, map[string]any{"mcp": cfg["mcp"]}),
		"SNIPPET-OPENCODE: write the plan", []string{"PLANSERVER_TOKEN=" + s.agent})
	if err != nil {
		t.Fatalf("opencode: %v\n%s", err, out)
	}
	s.checkToolCall(t, model, "chat", "opencode", out)
}

func TestSnippetCodex(t *testing.T) {
	s := startSnippetServer(t)
	codexBin := host(t, "codex")
	model := hosttest.Start(t, writePlanScript("SNIPPET-CODEX", "codex"))
	codexHome := t.TempDir()
	// The scripted model as Codex's provider (top-level keys first, as
	// TOML wants), then the snippet as printed.
	config := `model = "scripted"
model_provider = "scripted"

[model_providers.scripted]
name = "Scripted model"
base_url = "` + model.URL + `/v1"
wire_api = "responses"
env_key = "SCRIPTED_API_KEY"

` + snippet(t, "codex", s.addr)
	if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	egress := hosttest.StartEgress(t)
	out, err := run(t, egress, t.TempDir(), 3*time.Minute,
		[]string{"CODEX_HOME=" + codexHome, "SCRIPTED_API_KEY=scripted", "PLANSERVER_TOKEN=" + s.agent},
		codexBin, "exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox", "SNIPPET-CODEX: write the plan")
	if err != nil {
		t.Fatalf("codex: %v\n%s", err, out)
	}
	s.checkToolCall(t, model, "responses", "codex", out)
}

func TestSnippetGeminiCLI(t *testing.T) {
	s := startSnippetServer(t)
	geminiBin := host(t, "gemini")
	var settings map[string]any
	if err := json.Unmarshal([]byte(snippet(t, "gemini-cli", s.addr)), &settings); err != nil {
		t.Fatalf("the Gemini CLI snippet is not JSON: %v", err)
	}
	settings["security"] = map[string]any{"auth": map[string]any{"selectedType": "gemini-api-key"}}
	settings["privacy"] = map[string]any{"usageStatisticsEnabled": false}
	home := filepath.Join(t.TempDir(), "home")
	b, _ := json.Marshal(settings)
	if err := os.MkdirAll(filepath.Join(home, ".gemini"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".gemini", "settings.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	model := hosttest.Start(t, writePlanScript("SNIPPET-GEMINI", "gemini-cli"))
	egress := hosttest.StartEgress(t)
	out, err := run(t, egress, t.TempDir(), 3*time.Minute,
		[]string{"HOME=" + home, "GEMINI_API_KEY=scripted", "GOOGLE_GEMINI_BASE_URL=" + model.URL, "PLANSERVER_TOKEN=" + s.agent},
		geminiBin, "-p", "SNIPPET-GEMINI: write the plan", "--yolo", "--skip-trust", "--model", "gemini-2.5-flash")
	if err != nil {
		t.Fatalf("gemini: %v\n%s", err, out)
	}
	s.checkToolCall(t, model, "gemini", "gemini-cli", out)
}
