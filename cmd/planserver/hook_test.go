package main

import (
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/planserver/planserver/internal/sandbox/sandboxtest"
)

// The hook command is tested as a host runs it: the built binary, its input
// on stdin, against a planserver serve subprocess (or none, or one that
// never answers).

func hookFixture(t *testing.T, host, name string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "testdata", "hooks", host, name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// hookForm is one way to run the command form: the lean planserver-hook
// (what planserver hook install writes) or planserver hook.
type hookForm struct {
	name string
	argv func(args ...string) []string
}

var hookForms = []hookForm{
	{"planserver-hook", func(args ...string) []string { return append([]string{hookBinary}, args...) }},
	{"planserver hook", func(args ...string) []string { return append([]string{binary, "hook"}, args...) }},
}

// runHookCmd runs planserver-hook with stdin and returns its decoded
// answer; it must exit 0 with one JSON object on stdout, whatever happened.
func runHookCmd(t *testing.T, serverURL, stdin string, env []string, args ...string) (map[string]any, cliResult) {
	t.Helper()
	return runHookForm(t, hookForms[0], serverURL, stdin, env, args...)
}

// runHookForm is runHookCmd with the form f.
func runHookForm(t *testing.T, f hookForm, serverURL, stdin string, env []string, args ...string) (map[string]any, cliResult) {
	t.Helper()
	argv := f.argv(args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "PLANSERVER_URL="+serverURL, "PLANSERVER_TOKEN=", "PLANSERVER_SESSION=", "PLANSERVER_PARENT=")
	cmd.Env = append(cmd.Env, env...)
	var out, errOut strings.Builder
	cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(stdin), &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %v: %v\n%s%s", f.name, args, err, out.String(), errOut.String())
	}
	r := cliResult{stdout: out.String(), stderr: errOut.String()}
	var m map[string]any
	if strings.Count(strings.TrimSpace(r.stdout), "\n") != 0 || json.Unmarshal([]byte(r.stdout), &m) != nil {
		t.Fatalf("%s %v printed no single JSON object: %q (stderr %q)", f.name, args, r.stdout, r.stderr)
	}
	return m, r
}

// claudeDecision reads Claude Code's permissionDecision ("" for none).
func claudeDecision(m map[string]any) (string, string) {
	h, _ := m["hookSpecificOutput"].(map[string]any)
	if h == nil {
		return "", ""
	}
	d, _ := h["permissionDecision"].(string)
	r, _ := h["permissionDecisionReason"].(string)
	return d, r
}

// TestHookCommandDecides: both forms of the command, against a real
// server, answer each host as the host reads it, and record each denial.
func TestHookCommandDecides(t *testing.T) {
	for _, f := range hookForms {
		t.Run(f.name, func(t *testing.T) { testHookCommandDecides(t, f) })
	}
}

func testHookCommandDecides(t *testing.T, f hookForm) {
	p := start(t, filepath.Join(t.TempDir(), "p.db"))
	url := "http://" + p.addr
	mustCall(t, p, "POST", "/v1/sessions", `{"id":"planning","mode":"plan"}`, 201)
	mustCall(t, p, "POST", "/v1/sessions", `{"id":"building"}`, 201)
	plan := []string{"PLANSERVER_SESSION=planning"}
	// A redirection to a file certainly writes: denied before the sandbox
	// (TestHookCommandSandboxes runs what the sandbox gets).
	const shellWrite, denials = "deny", 6
	for _, c := range []struct{ host, fixture, want string }{
		{"claude-code", "read", "allow"},
		{"claude-code", "bash_ls", "allow"},
		{"claude-code", "write", "deny"},
		{"claude-code", "bash_redirect", shellWrite},
		{"claude-code", "agent", "allow"},
		{"claude-code", "subagent_read", "allow"},
		{"claude-code", "subagent_bash_redirect", shellWrite},
		{"claude-code", "subagent_write", "deny"},
	} {
		m, _ := runHookForm(t, f, url, hookFixture(t, c.host, c.fixture), plan, c.host)
		if d, reason := claudeDecision(m); d != c.want {
			t.Errorf("%s in plan mode: %q %q, want %q", c.fixture, d, reason, c.want)
		}
		m, _ = runHookForm(t, f, url, hookFixture(t, c.host, c.fixture), nil, c.host, "--session", "building")
		if len(m) != 0 {
			t.Errorf("%s in build mode: %v, want {}", c.fixture, m)
		}
	}
	m, _ := runHookForm(t, f, url, hookFixture(t, "gemini-cli", "write_file"), plan, "gemini-cli")
	if m["decision"] != "deny" || !strings.Contains(m["reason"].(string), "write_file changes files") {
		t.Errorf("gemini write_file: %v", m)
	}
	m, _ = runHookForm(t, f, url, hookFixture(t, "cursor", "before_shell_npm_install"), plan, "cursor")
	if m["permission"] != "deny" || m["agent_message"] == "" {
		t.Errorf("cursor npm install: %v", m)
	}
	m, _ = runHookForm(t, f, url, hookFixture(t, "opencode", "write"), plan, "opencode")
	if m["decision"] != "deny" {
		t.Errorf("opencode write: %v", m)
	}
	// Each denial is an event naming host, tool, reason and the adapter;
	// the sub-agent's call is judged with the same session.
	_, body := p.call(t, "GET", "/v1/events?session_id=planning&types=tool_call.denied", "", "Accept", "application/json")
	var evs struct {
		Events []struct{ Data map[string]any } `json:"events"`
	}
	if err := json.Unmarshal(body, &evs); err != nil {
		t.Fatal(err)
	}
	sub := false
	for _, e := range evs.Events {
		if e.Data["adapter"] != "command" || e.Data["host"] == nil || e.Data["reason"] == "" {
			t.Errorf("denial event %v", e.Data)
		}
		sub = sub || e.Data["agent_id"] == "a1b2c3"
	}
	if len(evs.Events) != denials+1 || !sub {
		t.Errorf("denial events: %d (sub-agent seen: %v): %s", len(evs.Events), sub, body)
	}
	_, body = p.call(t, "GET", "/v1/sessions/planning", "")
	if !strings.Contains(string(body), `"adapter":"command"`) {
		t.Errorf("enforcement not recorded: %s", body)
	}
}

// TestHookCommandExitPlanMode: ExitPlanMode becomes the review; after the
// human approves, the hook stays out of the way.
func TestHookCommandExitPlanMode(t *testing.T) {
	p := start(t, filepath.Join(t.TempDir(), "p.db"))
	url := "http://" + p.addr
	mustCall(t, p, "POST", "/v1/sessions", `{"id":"root","mode":"plan"}`, 201)
	env := []string{"PLANSERVER_PARENT=root"}
	m, _ := runHookCmd(t, url, hookFixture(t, "claude-code", "exit_plan_mode"), env, "claude-code")
	d, reason := claudeDecision(m)
	if d != "deny" || !strings.Contains(reason, "http://"+p.addr+"/ui/sessions/root/review?revision=1") {
		t.Fatalf("ExitPlanMode: %q %q", d, reason)
	}
	mustCall(t, p, "POST", "/v1/sessions/root/plan/approve", `{}`, 200, "If-Match", `"1"`)
	if m, _ := runHookCmd(t, url, hookFixture(t, "claude-code", "write"), env, "claude-code"); len(m) != 0 {
		t.Errorf("Write after approval: %v, want no decision", m)
	}
	_, body := p.call(t, "GET", "/v1/sessions?parent=root&external_id=abc123", "")
	if !strings.Contains(string(body), `"external_id":"abc123"`) || !strings.Contains(string(body), `"adapter":"command"`) {
		t.Errorf("bound child: %s", body)
	}
}

// TestHookCommandFailsClosed: with planserver down, hanging, or the hook
// misconfigured, reads are allowed and everything else is denied, as JSON
// with exit status 0, within the bounded time.
func TestHookCommandFailsClosed(t *testing.T) {
	for _, f := range hookForms {
		t.Run(f.name, func(t *testing.T) { testHookCommandFailsClosed(t, f) })
	}
}

func testHookCommandFailsClosed(t *testing.T, f hookForm) {
	down := "http://" + freeAddr(t)
	hang, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hang.Close()
	go func() {
		for {
			c, err := hang.Accept()
			if err != nil {
				return
			}
			defer c.Close() // held open, never answered
		}
	}()
	hanging := "http://" + hang.Addr().String()
	session := []string{"PLANSERVER_SESSION=s"}
	for _, server := range []string{down, hanging} {
		for _, c := range []struct{ fixture, want string }{
			{"read", "allow"}, {"bash_ls", "allow"}, {"write", "deny"}, {"bash_redirect", "deny"}, {"edit", "deny"},
		} {
			begin := time.Now()
			m, r := runHookForm(t, f, server, hookFixture(t, "claude-code", c.fixture), session, "claude-code", "--timeout", "300ms")
			if took := time.Since(begin); took > 5*time.Second {
				t.Errorf("%s against %s took %s: not bounded", c.fixture, server, took)
			}
			d, reason := claudeDecision(m)
			if d != c.want {
				t.Errorf("%s against %s: %q %q, want %q", c.fixture, server, d, reason, c.want)
			}
			if d == "deny" && !strings.Contains(reason, "could not be asked") {
				t.Errorf("denial does not say why: %q", reason)
			}
			if !strings.Contains(r.stderr, "planserver") {
				t.Errorf("nothing on stderr: %q", r.stderr)
			}
		}
	}
	// Malformed input, unknown host, huge input: a denial, exit 0.
	for _, c := range []struct{ host, in string }{
		{"claude-code", "not json"},
		{"claude-code", `{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":"x"}`},
		{"gemini-cli", `[]`},
		{"cursor", `{"hook_event_name":"beforeNothing"}`},
		{"claude-code", `{"hook_event_name":"PreToolUse","tool_name":"Write","tool_input":{"content":"` + strings.Repeat("y", 9<<20) + `"}}`},
	} {
		m, _ := runHookForm(t, f, down, c.in, session, c.host)
		denied := m["decision"] == "deny" || m["permission"] == "deny"
		if d, _ := claudeDecision(m); d == "deny" {
			denied = true
		}
		if !denied {
			t.Errorf("%s %.60q: %v", c.host, c.in, m)
		}
	}
	m, _ := runHookForm(t, f, down, "{}", session, "vscode")
	if m["decision"] != "block" || m["permission"] != "deny" {
		t.Errorf("unknown host: %v", m)
	}
	// A token on the command line is refused and never echoed.
	m, r := runHookForm(t, f, down, hookFixture(t, "claude-code", "write"), session, "claude-code", "--token", "sekrit-token")
	if d, reason := claudeDecision(m); d != "deny" || !strings.Contains(reason, "--token is refused") ||
		strings.Contains(r.stdout+r.stderr, "sekrit-token") {
		t.Errorf("--token on argv: %v %q", m, r.stderr)
	}
	// No session configured: reads only.
	if m, _ := runHookForm(t, f, down, hookFixture(t, "claude-code", "write"), nil, "claude-code"); !strings.Contains(
		m["hookSpecificOutput"].(map[string]any)["permissionDecisionReason"].(string), "no session is configured") {
		t.Errorf("no session: %v", m)
	}
}

// TestHookCommandTokenFile: with --auth token the hook authenticates from
// --token-file (or PLANSERVER_TOKEN), and a wrong token fails closed.
func TestHookCommandTokenFile(t *testing.T) {
	dbPath := filepath.Join(t.TempDir(), "p.db")
	admin := strings.TrimSpace(ok(t, &proc{}, "token", "create", "--db", dbPath, "--role", "admin", "--name", "root"))
	p := start(t, dbPath, "--auth", "token")
	mustCall(t, p, "POST", "/v1/sessions", `{"id":"s","mode":"plan"}`, 201, "Authorization", "Bearer "+admin)
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(admin+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	url := "http://" + p.addr
	m, _ := runHookCmd(t, url, hookFixture(t, "claude-code", "write"), []string{"PLANSERVER_SESSION=s"}, "claude-code", "--token-file", tokenFile)
	if d, reason := claudeDecision(m); d != "deny" || !strings.Contains(reason, "plan mode") || strings.Contains(reason, "could not be asked") {
		t.Errorf("with the token file: %q %q", d, reason)
	}
	m, _ = runHookCmd(t, url, hookFixture(t, "claude-code", "write"), []string{"PLANSERVER_SESSION=s", "PLANSERVER_TOKEN=wrong"}, "claude-code")
	if d, reason := claudeDecision(m); d != "deny" || !strings.Contains(reason, "401") {
		t.Errorf("a wrong token: %q %q", d, reason)
	}
	m, _ = runHookCmd(t, url, hookFixture(t, "claude-code", "read"), []string{"PLANSERVER_SESSION=s", "PLANSERVER_TOKEN=wrong"}, "claude-code")
	if d, _ := claudeDecision(m); d != "allow" {
		t.Errorf("a read with a wrong token: %q", d)
	}
}

// TestHookCommandSandboxes runs what the hook answers: in plan mode every
// command comes back wrapped in planserver sandbox --read-only, and run as
// Claude Code would run it, it cannot write the working directory nor
// reach planserver, while its output comes back; any text survives the
// quoting.
func TestHookCommandSandboxes(t *testing.T) {
	sandboxtest.Need(t, "the hook denies instead there (TestHookSandboxRewrite covers that)")
	p := start(t, filepath.Join(t.TempDir(), "p.db"))
	mustCall(t, p, "POST", "/v1/sessions", `{"id":"s","mode":"plan"}`, 201)
	dir := t.TempDir()
	_, port, _ := net.SplitHostPort(p.addr)
	for _, c := range []struct {
		command, wantOut string
		wantFail         bool
	}{
		{"python3 -c \"open('marker.txt', 'w')\"", "", true},
		{"perl -e 'open(F, \">marker.txt\") or die'", "", true},
		{"python3 -c \"import socket; socket.create_connection(('127.0.0.1', " + port + "))\" && echo reached planserver", "", true},
		{"cat <<'EOF'\nit's \"quoted\" $HOME `x`\nEOF\npython3 -c \"open('marker.txt', 'w')\" 2>/dev/null; exit 0", "it's \"quoted\" $HOME `x`\n", false},
		{"printf '%s\\n' 'a\nb' | wc -l; ls; echo done >&2", "2\n", false},
	} {
		in, _ := json.Marshal(map[string]any{"session_id": "c", "hook_event_name": "PreToolUse", "tool_name": "Bash",
			"tool_input": map[string]any{"command": c.command, "description": "d", "timeout": 1000, "run_in_background": false}})
		m, _ := runHookCmd(t, "http://"+p.addr, string(in), []string{"PLANSERVER_SESSION=s"}, "claude-code")
		h, _ := m["hookSpecificOutput"].(map[string]any)
		upd, _ := h["updatedInput"].(map[string]any)
		cmdline, _ := upd["command"].(string)
		if h["permissionDecision"] != "allow" || !strings.Contains(cmdline, " sandbox --read-only ") || upd["description"] != "d" {
			t.Fatalf("%q: %v", c.command, m)
		}
		run := exec.Command("bash", "-c", cmdline)
		run.Dir = dir
		out, err := run.Output()
		if failed := err != nil; failed != c.wantFail || (!c.wantFail && string(out) != c.wantOut) {
			t.Errorf("%q in the sandbox: err %v, out %q; want failure %v, out %q", c.command, err, out, c.wantFail, c.wantOut)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("the sandboxed commands wrote %v", entries)
	}
}

// TestHookFormsAnswerAlike: the lean planserver-hook (its own small HTTP
// client) and planserver hook (net/http) answer every call byte for byte
// alike, an answer far longer than one read included. (planserver sizes its
// answers with Content-Length; hosthookwire's tests cover chunks too.)
func TestHookFormsAnswerAlike(t *testing.T) {
	p := start(t, filepath.Join(t.TempDir(), "p.db"))
	url := "http://" + p.addr
	mustCall(t, p, "POST", "/v1/sessions", `{"id":"planning","mode":"plan"}`, 201)
	fixtures, err := filepath.Glob(filepath.Join("..", "..", "testdata", "hooks", "claude-code", "*.json"))
	if err != nil || len(fixtures) < 10 {
		t.Fatalf("fixtures: %v %v", fixtures, err)
	}
	inputs := map[string]string{}
	for _, f := range fixtures {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		inputs[name] = hookFixture(t, "claude-code", name)
	}
	// A pipe keeps the command a bash -c string, comment and all (plain
	// words would run without bash, and the comment would go).
	long, _ := json.Marshal(map[string]any{"session_id": "x", "hook_event_name": "PreToolUse", "tool_name": "Bash",
		"tool_input": map[string]any{"command": "python3 -c 'print(1)' | cat # " + strings.Repeat("ünïcode \"q\" $x ", 600), "description": "long"}})
	inputs["long command"] = string(long)
	for name, in := range inputs {
		var answers []string
		for _, f := range hookForms {
			_, r := runHookForm(t, f, url, in, []string{"PLANSERVER_SESSION=planning"}, "claude-code")
			answers = append(answers, r.stdout)
		}
		if answers[0] != answers[1] {
			t.Errorf("%s: the forms answer differently:\n%s\n%s", name, answers[0], answers[1])
		}
		if name == "long command" && len(answers[0]) < 8000 {
			t.Errorf("the long command's answer is %d bytes: too short to test a long answer", len(answers[0]))
		}
	}
}

// TestLeanHookAlone: planserver-hook without planserver beside it still
// answers through planserver, and when it cannot (planserver down), it
// denies the call, saying what is missing, instead of letting it through.
func TestLeanHookAlone(t *testing.T) {
	alone := filepath.Join(t.TempDir(), "planserver-hook")
	raw, err := os.ReadFile(hookBinary)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(alone, raw, 0o755); err != nil {
		t.Fatal(err)
	}
	form := hookForm{"lone planserver-hook", func(args ...string) []string { return append([]string{alone}, args...) }}
	p := start(t, filepath.Join(t.TempDir(), "p.db"))
	mustCall(t, p, "POST", "/v1/sessions", `{"id":"planning","mode":"plan"}`, 201)
	session := []string{"PLANSERVER_SESSION=planning"}
	m, _ := runHookForm(t, form, "http://"+p.addr, hookFixture(t, "claude-code", "write"), session, "claude-code")
	if d, reason := claudeDecision(m); d != "deny" || !strings.Contains(reason, "plan mode") {
		t.Errorf("through planserver: %q %q", d, reason)
	}
	m, r := runHookForm(t, form, "http://"+freeAddr(t), hookFixture(t, "claude-code", "read"), session, "claude-code")
	if m["decision"] != "block" || !strings.Contains(m["reason"].(string), "Install planserver beside planserver-hook") ||
		!strings.Contains(r.stderr, "connection refused") {
		t.Errorf("planserver down, no planserver beside: %v (stderr %q)", m, r.stderr)
	}
}
