package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// installEnv is a user's machine for planserver hook install: a project
// directory to run in, a home of its own (XDG folders inside it), and a
// planserver to talk to.
type installEnv struct {
	dir, home, server string
	extra             []string
}

func newInstallEnv(t *testing.T, p *proc) *installEnv {
	t.Helper()
	e := &installEnv{dir: filepath.Join(t.TempDir(), "project"), home: filepath.Join(t.TempDir(), "home")}
	for _, d := range []string{e.dir, e.home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if p != nil {
		e.server = "http://" + p.addr
	}
	return e
}

// env is the environment planserver (and the host's hooks) run in: the
// test's own HOME and XDG folders, no PLANSERVER_* of the machine's.
func (e *installEnv) env() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PLANSERVER_") && !strings.HasPrefix(kv, "HOME=") && !strings.HasPrefix(kv, "XDG_") &&
			!strings.HasPrefix(kv, "CLAUDE_CONFIG_DIR=") {
			env = append(env, kv)
		}
	}
	env = append(env, "HOME="+e.home, "XDG_DATA_HOME="+filepath.Join(e.home, ".local", "share"),
		"XDG_CONFIG_HOME="+filepath.Join(e.home, ".config"), "TMPDIR="+e.home)
	if e.server != "" {
		env = append(env, "PLANSERVER_URL="+e.server)
	}
	return append(env, e.extra...)
}

// hook runs planserver hook ARGS in the project and returns its output
// and exit status.
func (e *installEnv) hook(t *testing.T, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"hook"}, args...)...)
	cmd.Dir, cmd.Env = e.dir, e.env()
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), code
}

func (e *installEnv) ok(t *testing.T, args ...string) string {
	t.Helper()
	out, code := e.hook(t, args...)
	if code != 0 {
		t.Fatalf("planserver hook %v: exit %d\n%s", args, code, out)
	}
	return out
}

func (e *installEnv) binDir() string {
	return filepath.Join(e.home, ".local", "share", "planserver", "bin")
}

// sh runs command as a host runs a hook: through sh -c, in the project,
// with input on stdin.
func (e *installEnv) sh(t *testing.T, command, input string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", command)
	cmd.Dir, cmd.Env = e.dir, e.env()
	var out, errOut bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(input), &out, &errOut
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errOut.String(), code
}

func writeJSONFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

func readText(t *testing.T, path string) string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

func sameJSONText(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	ja, _ := json.Marshal(x)
	jb, _ := json.Marshal(y)
	return string(ja) == string(jb)
}

// hookEntries returns the commands of a Claude Code or Gemini CLI settings
// file's event, in order.
func hookEntries(t *testing.T, text, event string) []string {
	t.Helper()
	var s struct {
		Hooks map[string][]struct {
			Command string
			Hooks   []struct{ Command string }
		}
	}
	if err := json.Unmarshal([]byte(text), &s); err != nil {
		t.Fatalf("%v: %s", err, text)
	}
	var out []string
	for _, g := range s.Hooks[event] {
		if g.Command != "" {
			out = append(out, g.Command)
		}
		for _, h := range g.Hooks {
			out = append(out, h.Command)
		}
	}
	return out
}

// planSessionAt creates session id on p, in plan mode when plan.
func planSessionAt(t *testing.T, p *proc, id string, plan bool) {
	t.Helper()
	if st, body := p.call(t, "POST", "/v1/sessions", `{"id":"`+id+`"}`); st != 201 {
		t.Fatalf("create %s: %d %s", id, st, body)
	}
	if plan {
		if st, body := p.call(t, "PATCH", "/v1/sessions/"+id+"/mode", `{"mode":"plan"}`); st != 200 {
			t.Fatalf("plan mode: %d %s", st, body)
		}
	}
}

// TestHookInstallKeepsUserHooks installs every host into settings that
// already hold the user's own hooks, MCP servers and settings, again (it
// replaces its own), and uninstalls: the user's part is untouched, ours is
// there once per event (before and after), the MCP server is planserver's
// /mcp bound to the session, the binaries are copied out of the build
// folder, and uninstall restores every file and removes the binaries.
func TestHookInstallKeepsUserHooks(t *testing.T) {
	p := start(t, filepath.Join(t.TempDir(), "p.db"))
	planSessionAt(t, p, "s1", true)
	e := newInstallEnv(t, p)
	claude := filepath.Join(e.dir, ".claude", "settings.json")
	userClaude := `{
  "model": "opus",
  "hooks": {
    "PreToolUse": [
      {"matcher": "Bash", "hooks": [{"type": "command", "command": "/usr/local/bin/lint-bash"}]}
    ],
    "PostToolUse": [
      {"matcher": "Write", "hooks": [{"type": "command", "command": "prettier --write"}]}
    ]
  },
  "permissions": {"allow": ["Bash(ls:*)"]}
}
`
	writeJSONFile(t, claude, userClaude)
	claudeState := filepath.Join(e.home, ".claude.json")
	userState := `{"numStartups": 3, "mcpServers": {"memory": {"type": "stdio", "command": "mem"}}, "projects": {"/elsewhere": {"allowedTools": []}}}` + "\n"
	writeJSONFile(t, claudeState, userState)
	gemini := filepath.Join(e.home, ".gemini", "settings.json")
	userGemini := `{"theme": "dark", "hooks": {"BeforeTool": [{"matcher": "write_file", "hooks": [{"type": "command", "command": "./audit.sh"}]}]}, "mcpServers": {"github": {"httpUrl": "https://example.invalid/mcp"}}}` + "\n"
	writeJSONFile(t, gemini, userGemini)
	cursor := filepath.Join(e.dir, ".cursor", "hooks.json")
	userCursor := `{"version": 1, "hooks": {"beforeShellExecution": [{"command": "./block-rm.sh"}], "afterFileEdit": [{"command": "./fmt.sh"}]}}` + "\n"
	writeJSONFile(t, cursor, userCursor)
	cursorMCP := filepath.Join(e.dir, ".cursor", "mcp.json")
	userCursorMCP := `{"mcpServers": {"linear": {"url": "https://example.invalid/linear"}}}` + "\n"
	writeJSONFile(t, cursorMCP, userCursorMCP)

	// --dry-run shows the change and writes nothing.
	out := e.ok(t, "install", "claude-code", "--session", "s1", "--dry-run")
	if !strings.Contains(out, "+") || !strings.Contains(out, "/planserver-hook claude-code --server "+e.server+" --session s1 --mcp planserver ||") ||
		!strings.Contains(out, "would copy") || readText(t, claude) != userClaude || readText(t, claudeState) != userState {
		t.Fatalf("dry run: %s", out)
	}
	if _, err := os.Stat(e.binDir()); !os.IsNotExist(err) {
		t.Fatalf("the dry run made %s: %v", e.binDir(), err)
	}
	for _, args := range [][]string{
		{"install", "claude-code", "--session", "s1"},
		{"install", "claude-code", "--session", "s1"}, // again: replaces ours
		{"install", "gemini-cli", "--scope", "user", "--session", "s1"},
		{"install", "cursor", "--session", "s1"},
		{"install", "opencode", "--session", "s1"},
	} {
		if out := e.ok(t, args...); !strings.Contains(out, "self-test passed") || !strings.Contains(out, "denied, as plan mode must") {
			t.Fatalf("%v: %s", args, out)
		}
	}
	// The binaries are out of the build folder, and the hook runs them.
	for _, name := range []string{"planserver-hook", "planserver"} {
		if fi, err := os.Stat(filepath.Join(e.binDir(), name)); err != nil || fi.Mode().Perm()&0o100 == 0 {
			t.Fatalf("%s not copied to %s: %v", name, e.binDir(), err)
		}
	}
	text := readText(t, claude)
	pre, post := hookEntries(t, text, "PreToolUse"), hookEntries(t, text, "PostToolUse")
	failure := hookEntries(t, text, "PostToolUseFailure")
	hookCmd := filepath.Join(e.binDir(), "planserver-hook") + " claude-code --server " + e.server + " --session s1 --mcp planserver"
	if len(pre) != 2 || pre[0] != "/usr/local/bin/lint-bash" || !strings.HasPrefix(pre[1], hookCmd+" || {") ||
		len(post) != 2 || post[0] != "prettier --write" || post[1] != hookCmd+" || true" || len(failure) != 1 || failure[0] != post[1] {
		t.Errorf("claude settings after install:\n%s", text)
	}
	if strings.Index(text, `"model"`) > strings.Index(text, `"hooks"`) || strings.Index(text, `"hooks"`) > strings.Index(text, `"permissions"`) {
		t.Errorf("member order changed: %s", text)
	}
	var state struct {
		NumStartups int
		MCPServers  map[string]any `json:"mcpServers"`
		Projects    map[string]struct {
			MCPServers map[string]struct {
				Type, URL string
				Headers   map[string]string
			} `json:"mcpServers"`
		}
	}
	if err := json.Unmarshal([]byte(readText(t, claudeState)), &state); err != nil {
		t.Fatal(err)
	}
	mcp := state.Projects[e.dir].MCPServers["planserver"]
	if state.NumStartups != 3 || state.MCPServers["memory"] == nil || mcp.Type != "http" || mcp.URL != e.server+"/mcp" ||
		mcp.Headers["Planserver-Session"] != "s1" || len(state.Projects) != 2 {
		t.Errorf("~/.claude.json after install: %s", readText(t, claudeState))
	}
	g := readText(t, gemini)
	if !strings.Contains(g, "./audit.sh") || !strings.Contains(g, `"theme": "dark"`) || !strings.Contains(g, `"github"`) ||
		!strings.Contains(g, `"httpUrl": "`+e.server+`/mcp"`) || len(hookEntries(t, g, "AfterTool")) != 1 ||
		!strings.Contains(hookEntries(t, g, "BeforeTool")[1], "planserver-hook gemini-cli --server "+e.server+" --session s1 --mcp planserver || {") {
		t.Errorf("gemini settings: %s", g)
	}
	cur := readText(t, cursor)
	for _, ev := range []string{"beforeShellExecution", "beforeMCPExecution", "beforeReadFile", "preToolUse",
		"postToolUse", "afterShellExecution", "afterMCPExecution"} {
		if len(hookEntries(t, cur, ev)) == 0 {
			t.Errorf("cursor hooks lack %s: %s", ev, cur)
		}
	}
	if strings.Count(cur, "planserver-hook cursor") != 7 || !strings.Contains(cur, "./block-rm.sh") || !strings.Contains(cur, "./fmt.sh") {
		t.Errorf("cursor hooks: %s", cur)
	}
	if m := readText(t, cursorMCP); !strings.Contains(m, `"linear"`) || !strings.Contains(m, `"url": "`+e.server+`/mcp"`) {
		t.Errorf("cursor mcp.json: %s", m)
	}
	plugin := readText(t, filepath.Join(e.dir, ".opencode", "plugin", "planserver.js"))
	if !strings.Contains(plugin, `const SESSION = "s1"`) || !strings.Contains(plugin, `const SERVER = "`+e.server+`"`) ||
		!strings.Contains(plugin, `const MCP = "planserver"`) || !strings.Contains(plugin, "tool.execute.after") {
		t.Errorf("opencode plugin: %.400s", plugin)
	}
	if oc := readText(t, filepath.Join(e.dir, ".opencode", "opencode.json")); !strings.Contains(oc, `"type": "remote"`) ||
		!strings.Contains(oc, e.server+"/mcp") {
		t.Errorf("opencode.json: %s", oc)
	}

	for _, args := range [][]string{{"uninstall", "claude-code"}, {"uninstall", "gemini-cli", "--scope", "user"},
		{"uninstall", "cursor"}} {
		e.ok(t, args...)
		if _, err := os.Stat(filepath.Join(e.binDir(), "planserver-hook")); err != nil {
			t.Fatalf("after %v the binaries went while opencode's install remains: %v", args, err)
		}
	}
	e.ok(t, "uninstall", "opencode")
	for path, user := range map[string]string{claude: userClaude, gemini: userGemini, cursor: userCursor, cursorMCP: userCursorMCP, claudeState: userState} {
		if !sameJSONText(readText(t, path), user) {
			t.Errorf("%s after uninstall:\n%s\nwant the user's own:\n%s", path, readText(t, path), user)
		}
	}
	for _, gone := range []string{filepath.Join(e.dir, ".opencode", "plugin", "planserver.js"), filepath.Join(e.dir, ".opencode", "opencode.json"),
		filepath.Join(e.binDir(), "planserver-hook"), filepath.Join(e.binDir(), "planserver")} {
		if _, err := os.Stat(gone); !os.IsNotExist(err) {
			t.Errorf("%s still there after uninstall: %v", gone, err)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(e.home, ".local", "share", "planserver", "installs", "*")); len(left) != 0 {
		t.Errorf("records left after uninstall: %v", left)
	}

	// Into no settings at all, and out again: the files go.
	fresh := newInstallEnv(t, p)
	fresh.ok(t, "install", "claude-code", "--session", "s1")
	fresh.ok(t, "uninstall", "claude-code")
	if _, err := os.Stat(filepath.Join(fresh.dir, ".claude", "settings.json")); !os.IsNotExist(err) {
		t.Errorf("settings left after uninstall: %v", err)
	}
	if _, err := os.Stat(filepath.Join(fresh.home, ".claude.json")); !os.IsNotExist(err) {
		t.Errorf("~/.claude.json left after uninstall: %v", err)
	}
	// A server of the user's under planserver's name is kept as it is.
	writeJSONFile(t, filepath.Join(fresh.home, ".gemini", "settings.json"), `{"mcpServers": {"planserver": {"httpUrl": "http://10.0.0.1:9/mcp"}}}`)
	if out := fresh.ok(t, "install", "gemini-cli", "--scope", "user", "--session", "s1"); !strings.Contains(out, `kept the MCP server "planserver"`) {
		t.Errorf("install over the user's own planserver server: %s", out)
	}
	fresh.ok(t, "uninstall", "gemini-cli", "--scope", "user")
	if g := readText(t, filepath.Join(fresh.home, ".gemini", "settings.json")); !strings.Contains(g, "10.0.0.1:9") {
		t.Errorf("uninstall took the user's own server: %s", g)
	}
	// A settings file that is not JSON is left alone, with an error.
	writeJSONFile(t, filepath.Join(fresh.dir, ".claude", "settings.json"), "{oops")
	if out, code := fresh.hook(t, "install", "claude-code", "--session", "s1"); code == 0 || !strings.Contains(out, "not a JSON object") ||
		readText(t, filepath.Join(fresh.dir, ".claude", "settings.json")) != "{oops" {
		t.Errorf("broken settings: %d %s", code, out)
	}
}

// TestHookInstallFailsClosed: the installed before-tool command, run as a
// host runs it (sh -c), answers with the host's denial when its binary is
// gone or crashes, reads included; without the fallback the shell's error
// would reach the host, which runs the tool. The after-tool command never
// blocks.
func TestHookInstallFailsClosed(t *testing.T) {
	p := start(t, filepath.Join(t.TempDir(), "p.db"))
	planSessionAt(t, p, "s1", false)
	e := newInstallEnv(t, p)
	e.ok(t, "install", "claude-code", "--session", "s1")
	e.ok(t, "install", "gemini-cli", "--session", "s1")
	e.ok(t, "install", "cursor", "--session", "s1")
	commands := func(host string) (string, string) {
		t.Helper()
		path := map[string]string{"claude-code": ".claude/settings.json", "gemini-cli": ".gemini/settings.json", "cursor": ".cursor/hooks.json"}[host]
		event := map[string][2]string{"claude-code": {"PreToolUse", "PostToolUse"}, "gemini-cli": {"BeforeTool", "AfterTool"},
			"cursor": {"preToolUse", "postToolUse"}}[host]
		text := readText(t, filepath.Join(e.dir, path))
		return hookEntries(t, text, event[0])[0], hookEntries(t, text, event[1])[0]
	}
	read := map[string]string{
		"claude-code": hookFixture(t, "claude-code", "read"),
		"gemini-cli":  hookFixture(t, "gemini-cli", "read_file"),
		"cursor":      hookFixture(t, "cursor", "pre_tool_write"),
	}
	// Working: in build mode, no decision.
	for host := range read {
		before, _ := commands(host)
		if out, errOut, code := e.sh(t, before, read[host]); code != 0 || strings.TrimSpace(out) != "{}" {
			t.Fatalf("%s with its binary: exit %d %q %q", host, code, out, errOut)
		}
	}
	hook := filepath.Join(e.binDir(), "planserver-hook")
	real := readText(t, hook)
	for _, broken := range []struct {
		name string
		make func()
	}{
		{"missing", func() { _ = os.Remove(hook) }},
		{"crashing", func() {
			writeJSONFile(t, hook, "#!/bin/sh\necho 'SIGSEGV: segmentation violation' >&2\nkill -SEGV $$\n")
			_ = os.Chmod(hook, 0o755)
		}},
		{"not executable", func() { writeJSONFile(t, hook, real); _ = os.Chmod(hook, 0o644) }},
	} {
		broken.make()
		for host := range read {
			before, after := commands(host)
			out, errOut, code := e.sh(t, before, read[host])
			if code != 2 || !strings.Contains(errOut, "planserver hook doctor "+host) {
				t.Errorf("%s, binary %s: exit %d, stderr %q; want exit 2 naming planserver hook doctor", host, broken.name, code, errOut)
			}
			switch host {
			case "gemini-cli":
				var m map[string]string
				if json.Unmarshal([]byte(out), &m) != nil || m["decision"] != "deny" {
					t.Errorf("gemini-cli, binary %s: stdout %q, want its deny JSON", broken.name, out)
				}
			case "cursor":
				var m map[string]string
				if json.Unmarshal([]byte(out), &m) != nil || m["permission"] != "deny" {
					t.Errorf("cursor, binary %s: stdout %q, want its deny JSON", broken.name, out)
				}
			}
			if _, _, code := e.sh(t, after, read[host]); code != 0 {
				t.Errorf("%s, binary %s: the after-tool command exited %d; a report never blocks", host, broken.name, code)
			}
			// The same command without its fallback lets the shell's error
			// through: what Claude Code takes as "run the tool".
			plain, _, _ := strings.Cut(before, " || ")
			if _, _, code := e.sh(t, plain, read[host]); code == 0 || code == 2 {
				t.Errorf("%s, binary %s: without the fallback the command exited %d", host, broken.name, code)
			}
		}
	}
}

// TestHookInstallChecks: install writes the server it was given (flag,
// else PLANSERVER_URL) into the command, refuses a server that does not
// answer and a session that does not exist (naming --create), creates it
// with --create, keeps a token in a file of mode 0600 and never in a
// settings file, and its self-test reports build mode as no decision.
func TestHookInstallChecks(t *testing.T) {
	dbPath := filepath.Join(t.TempDir(), "p.db")
	p := start(t, dbPath, "--auth", "token")
	admin := tokenCreate(t, dbPath, "--role", "admin", "--name", "ops")
	e := newInstallEnv(t, p)
	e.extra = []string{"PLANSERVER_TOKEN=" + admin}
	if out, code := e.hook(t, "install", "claude-code", "--session", "nope"); code == 0 || !strings.Contains(out, `session "nope" does not exist`) ||
		!strings.Contains(out, "--create") {
		t.Fatalf("a missing session: %d %s", code, out)
	}
	down := newInstallEnv(t, nil)
	down.server = "http://" + freeAddr(t)
	if out, code := down.hook(t, "install", "claude-code", "--session", "s"); code == 0 || !strings.Contains(out, "does not answer at "+down.server) {
		t.Fatalf("no server: %d %s", code, out)
	}
	out := e.ok(t, "install", "claude-code", "--session", "made", "--create")
	if !strings.Contains(out, `created session "made"`) || !strings.Contains(out, "no decision, as build mode must") || !strings.Contains(out, "self-test passed") {
		t.Fatalf("install --create: %s", out)
	}
	settings := readText(t, filepath.Join(e.dir, ".claude", "settings.json"))
	state := readText(t, filepath.Join(e.home, ".claude.json"))
	if strings.Contains(settings+state, admin) {
		t.Fatalf("the token is in a settings file:\n%s\n%s", settings, state)
	}
	tokens, _ := filepath.Glob(filepath.Join(e.home, ".local", "share", "planserver", "installs", "*.token"))
	if len(tokens) != 1 || !strings.Contains(settings, "--token-file "+tokens[0]) {
		t.Fatalf("token files %v, settings %s", tokens, settings)
	}
	for _, f := range append(tokens, strings.TrimSuffix(tokens[0], ".token")+".headers.json") {
		if fi, err := os.Stat(f); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want 0600 (%v)", f, fi.Mode().Perm(), err)
		}
	}
	if !strings.Contains(state, `"headersHelper": "cat `) {
		t.Errorf("Claude Code's MCP server does not read its headers from the file: %s", state)
	}
	// --server wins over PLANSERVER_URL, and is what the command names.
	other := newInstallEnv(t, p)
	other.server = "http://" + freeAddr(t) // PLANSERVER_URL: nobody there
	other.extra = e.extra
	other.ok(t, "install", "cursor", "--session", "made", "--server", e.server)
	if c := readText(t, filepath.Join(other.dir, ".cursor", "hooks.json")); !strings.Contains(c, "--server "+e.server) {
		t.Errorf("cursor hooks do not name --server: %s", c)
	}
	// --parent: the self-test's calls act for a child of the parent.
	out = e.ok(t, "install", "gemini-cli", "--parent", "made")
	if !strings.Contains(out, "self-test passed") {
		t.Errorf("install --parent: %s", out)
	}
	// Uninstall takes out the token's files and the headers helper with
	// the rest: the settings and state files install made go with them.
	e.ok(t, "uninstall", "claude-code")
	for _, f := range append(tokens, strings.TrimSuffix(tokens[0], ".token")+".headers.json",
		filepath.Join(e.home, ".claude.json"), filepath.Join(e.dir, ".claude", "settings.json")) {
		if _, err := os.Stat(f); !os.IsNotExist(err) {
			t.Errorf("uninstall left %s: %v", f, err)
		}
	}
}

// TestHookInstallHelp: the help of install says what it does, and does not
// send the user to itself.
func TestHookInstallHelp(t *testing.T) {
	e := newInstallEnv(t, nil)
	for _, args := range [][]string{{"install", "--help"}, {"install", "claude-code", "--help"}, {"doctor", "-h"}} {
		out := e.ok(t, args...)
		if !strings.Contains(out, "fails closed") || !strings.Contains(out, "--bin-dir") || strings.Contains(out, "install --help") {
			t.Errorf("%v: %s", args, out)
		}
	}
	if out, code := e.hook(t, "install", "claude-code"); code != 2 || !strings.Contains(out, "--session") {
		t.Errorf("install without a session: %d %s", code, out)
	}
}

// TestHookDoctor: doctor passes a sound installation, and names each fault
// and its mend: a missing binary, a missing before-tool hook, a server
// that does not answer at the hook's address, a session that does not
// exist, a token the server refuses.
func TestHookDoctor(t *testing.T) {
	db := filepath.Join(t.TempDir(), "p.db")
	p := start(t, db, "--auth", "token")
	admin := tokenCreate(t, db, "--role", "admin", "--name", "ops")
	if st, body := p.call(t, "POST", "/v1/sessions", `{"id":"s1"}`, "Authorization", "Bearer "+admin); st != 201 {
		t.Fatalf("%d %s", st, body)
	}
	// An admin token of its own: an agent token ends with its session,
	// and the session is deleted below.
	hostToken := tokenCreate(t, db, "--role", "admin", "--name", "host")
	e := newInstallEnv(t, p)
	e.extra = []string{"PLANSERVER_TOKEN=" + hostToken}
	e.ok(t, "install", "claude-code", "--session", "s1")
	e.extra = nil // the hook reads its own token file from now on
	if out := e.ok(t, "doctor", "claude-code"); !strings.Contains(out, "in order") {
		t.Fatalf("doctor on a sound installation: %s", out)
	}
	fault := func(want ...string) {
		t.Helper()
		out, code := e.hook(t, "doctor", "claude-code")
		if code != 1 {
			t.Errorf("doctor exited %d, want 1:\n%s", code, out)
		}
		for _, w := range append(want, "mend:") {
			if !strings.Contains(out, w) {
				t.Errorf("doctor does not say %q:\n%s", w, out)
			}
		}
	}
	hook := filepath.Join(e.binDir(), "planserver-hook")
	raw := readText(t, hook)
	_ = os.Remove(hook)
	fault("binary "+hook+" is missing", "planserver hook install claude-code")
	writeJSONFile(t, hook, raw)
	_ = os.Chmod(hook, 0o755)

	settings := filepath.Join(e.dir, ".claude", "settings.json")
	good := readText(t, settings)
	var s map[string]map[string]any
	_ = json.Unmarshal([]byte(good), &s)
	delete(s["hooks"], "PreToolUse")
	edited, _ := json.Marshal(s)
	writeJSONFile(t, settings, string(edited))
	fault("before-tool hook (PreToolUse) is missing")
	_ = json.Unmarshal([]byte(good), &s)
	delete(s["hooks"], "PostToolUseFailure")
	edited, _ = json.Marshal(s)
	writeJSONFile(t, settings, string(edited))
	fault("after-tool hook (PostToolUseFailure) is missing")
	writeJSONFile(t, settings, strings.ReplaceAll(good, e.server, "http://"+freeAddr(t)))
	fault("planserver does not answer at http://127.0.0.1:", "--server URL")
	writeJSONFile(t, settings, good)

	if out := e.ok(t, "doctor", "claude-code"); !strings.Contains(out, "in order") {
		t.Fatalf("doctor after the mends: %s", out)
	}
	if st, body := p.call(t, "DELETE", "/v1/sessions/s1", "", "Authorization", "Bearer "+admin); st != 204 {
		t.Fatalf("%d %s", st, body)
	}
	fault(`session "s1" does not exist`, "--create")
	if st, body := p.call(t, "POST", "/v1/sessions", `{"id":"s1"}`, "Authorization", "Bearer "+admin); st != 201 {
		t.Fatalf("%d %s", st, body)
	}
	out, err := exec.Command(binary, "token", "revoke", "host", "--db", db).CombinedOutput()
	if err != nil {
		t.Fatalf("token revoke: %v %s", err, out)
	}
	fault("refuses the hook's token", "planserver token create --role agent --session s1")
}

func tokenCreate(t *testing.T, db string, args ...string) string {
	t.Helper()
	out, err := exec.Command(binary, append([]string{"token", "create", "--db", db}, args...)...).Output()
	if err != nil {
		t.Fatalf("token create %v: %v", args, err)
	}
	return strings.TrimSpace(string(out))
}

// TestHookInstallWithoutLeanBinary: a planserver with no planserver-hook
// beside it installs planserver hook HOST, from its copy in the bin
// folder; installing again from one that has it replaces that entry with
// the lean form, and uninstall finds either.
func TestHookInstallWithoutLeanBinary(t *testing.T) {
	alone := filepath.Join(t.TempDir(), "planserver")
	if err := os.WriteFile(alone, []byte(readText(t, binary)), 0o755); err != nil {
		t.Fatal(err)
	}
	p := start(t, filepath.Join(t.TempDir(), "p.db"))
	planSessionAt(t, p, "s1", true)
	e := newInstallEnv(t, p)
	settings := filepath.Join(e.dir, ".claude", "settings.json")
	install := func(bin string, args ...string) string {
		t.Helper()
		cmd := exec.Command(bin, append([]string{"hook"}, args...)...)
		cmd.Dir, cmd.Env = e.dir, e.env()
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s hook %v: %v\n%s", bin, args, err, out)
		}
		return string(out)
	}
	if out := install(alone, "install", "claude-code", "--session", "s1"); !strings.Contains(out, "self-test passed") {
		t.Fatalf("install from planserver alone: %s", out)
	}
	full := filepath.Join(e.binDir(), "planserver") + " hook claude-code --server"
	if text := readText(t, settings); !strings.Contains(text, full) {
		t.Fatalf("without planserver-hook beside it: %s", text)
	}
	install(binary, "install", "claude-code", "--session", "s1")
	text := readText(t, settings)
	if strings.Contains(text, full) || strings.Count(text, filepath.Join(e.binDir(), "planserver-hook")+" claude-code --server") != 3 {
		t.Fatalf("the lean form did not replace the old entries: %s", text)
	}
	install(alone, "uninstall", "claude-code")
	if _, err := os.Stat(settings); !os.IsNotExist(err) {
		t.Errorf("uninstall left the lean entry: %v", err)
	}
}

// TestHookInstallLeavesOthersBinaries: a planserver the user keeps in the
// folder named by --bin-dir is neither replaced by install nor removed by
// uninstall; the binaries install copied there itself are replaced by the
// next install and removed by uninstall, and the folder's other files
// stay.
func TestHookInstallLeavesOthersBinaries(t *testing.T) {
	p := start(t, filepath.Join(t.TempDir(), "p.db"))
	planSessionAt(t, p, "s1", true)
	e := newInstallEnv(t, p)
	userBin := filepath.Join(e.home, "bin")
	if err := os.MkdirAll(userBin, 0o755); err != nil {
		t.Fatal(err)
	}
	mine := filepath.Join(userBin, "planserver")
	const script = "#!/bin/sh\necho the user's own planserver\n"
	if err := os.WriteFile(mine, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(userBin, "tool")
	if err := os.WriteFile(other, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	out, code := e.hook(t, "install", "claude-code", "--session", "s1", "--bin-dir", userBin)
	if code == 0 || !strings.Contains(out, mine+" is already there") || !strings.Contains(out, "--bin-dir") {
		t.Fatalf("install over the user's planserver: exit %d\n%s", code, out)
	}
	if readText(t, mine) != script {
		t.Fatal("install replaced the user's planserver")
	}
	if _, err := os.Stat(filepath.Join(e.dir, ".claude", "settings.json")); !os.IsNotExist(err) {
		t.Fatalf("a refused install wrote the settings: %v", err)
	}

	// Elsewhere it installs; again into the same folder replaces its own.
	ours := filepath.Join(e.home, "tools")
	e.ok(t, "install", "claude-code", "--session", "s1", "--bin-dir", ours)
	e.ok(t, "install", "claude-code", "--session", "s1", "--bin-dir", ours)
	if err := os.WriteFile(filepath.Join(ours, "notes.txt"), []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out = e.ok(t, "uninstall", "claude-code")
	for _, name := range []string{"planserver-hook", "planserver"} {
		if _, err := os.Stat(filepath.Join(ours, name)); !os.IsNotExist(err) || !strings.Contains(out, "removed "+filepath.Join(ours, name)) {
			t.Errorf("uninstall left %s: %v\n%s", name, err, out)
		}
	}
	if readText(t, filepath.Join(ours, "notes.txt")) != "mine\n" || readText(t, mine) != script || readText(t, other) != "#!/bin/sh\n" {
		t.Error("uninstall touched a file install did not put there")
	}
}
