package http_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/apitest"
	"github.com/planserver/planserver/internal/app"
	"github.com/planserver/planserver/internal/auth"
	"github.com/planserver/planserver/internal/hosthook"
	"github.com/planserver/planserver/internal/sandbox"
)

// fixture reads a host's documented hook input from testdata/hooks.
func fixture(t *testing.T, host, name string) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "testdata", "hooks", host, name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// hookCall posts raw to the HTTP form and returns the decision header and
// the decoded answer; every answer must be 200 JSON.
func hookCall(t *testing.T, env *apitest.Env, host, query string, raw []byte) (string, map[string]any) {
	t.Helper()
	r := env.Call("POST", "/v1/hooks/"+host+"?"+query, raw)
	if r.Status != 200 {
		t.Fatalf("hook %s?%s: %d %s", host, query, r.Status, r.Body)
	}
	var out map[string]any
	if err := json.Unmarshal(r.Body, &out); err != nil {
		t.Fatalf("hook %s answered no JSON object: %s", host, r.Body)
	}
	return r.Header.Get("Planserver-Hook-Decision"), out
}

// verdict reads the permission out of a host's answer: allow, deny or ""
// (no decision), and the reason the model gets.
func verdict(t *testing.T, host string, out map[string]any) (string, string) {
	t.Helper()
	str := func(m map[string]any, k string) string { s, _ := m[k].(string); return s }
	switch host {
	case "claude-code":
		h, _ := out["hookSpecificOutput"].(map[string]any)
		if h == nil {
			if str(out, "decision") == "block" {
				// The block every Claude Code event understands.
				return "deny", str(out, "reason")
			}
			return "", ""
		}
		if str(h, "hookEventName") != "PreToolUse" {
			t.Errorf("claude-code answer without hookEventName PreToolUse: %v", out)
		}
		return str(h, "permissionDecision"), str(h, "permissionDecisionReason")
	case "gemini-cli":
		return str(out, "decision"), str(out, "reason")
	case "cursor":
		return str(out, "permission"), str(out, "agent_message")
	}
	d := str(out, "decision")
	if d == "none" {
		d = ""
	}
	return d, str(out, "reason")
}

// TestHookFixtures runs every documented input of every host through the
// HTTP form in plan mode and in build mode.
func TestHookFixtures(t *testing.T) {
	env := apitest.New(t)
	createSession(t, env, map[string]any{"id": "planning", "mode": "plan"})
	createSession(t, env, map[string]any{"id": "building"})
	// mcp__github__create_issue is declared read-only by no one; a gate
	// that declares one tool read-only lets that one through.
	if r := env.Call("PUT", "/v1/gates/memory", map[string]any{"url": "http://127.0.0.1:9/mcp", "read_only_tools": []string{"read_graph"}}); r.Status != 201 {
		t.Fatalf("register gate: %d %s", r.Status, r.Body)
	}
	cases := []struct {
		host, fixture string
		plan          string // the plan-mode decision header
		reasonHas     string
	}{
		{"claude-code", "read", "allow", ""},
		{"claude-code", "write", "deny", "Write changes files (/path/to/file.txt)"},
		{"claude-code", "edit", "deny", "write_session_plan"},
		{"claude-code", "notebook_edit", "deny", "changes files"},
		{"claude-code", "bash_ls", "allow", ""},
		{"claude-code", "bash_redirect", "deny", "marker.txt"},
		{"claude-code", "agent", "allow", ""},
		{"claude-code", "subagent_read", "allow", ""},
		{"claude-code", "subagent_bash_redirect", "deny", "`>` writes sub-marker.txt"},
		{"claude-code", "todowrite", "allow", ""},
		{"claude-code", "webfetch", "allow", ""},
		{"claude-code", "mcp_memory", "deny", `MCP tool "create_entities" of server "memory"`},
		{"claude-code", "mcp_planserver_write_plan", "allow", ""},
		{"claude-code", "mcp_planserver_claim", "deny", "plan mode is active"},
		{"claude-code", "unknown_tool", "deny", `"FrobnicateRepo" is a tool planserver does not know`},
		{"gemini-cli", "read_file", "allow", ""},
		{"gemini-cli", "write_file", "deny", "write_file changes files"},
		{"gemini-cli", "replace", "deny", "write_session_plan"},
		{"gemini-cli", "shell_ls", "allow", ""},
		{"gemini-cli", "shell_rm", "deny", "`rm` removes files"},
		{"gemini-cli", "mcp_tool", "deny", `server "github"`},
		{"cursor", "before_shell_ls", "allow", ""},
		{"cursor", "before_shell_npm_install", "deny", "`npm install` changes installed packages"},
		{"cursor", "before_mcp", "deny", "database_query"},
		{"cursor", "before_mcp_object_input", "deny", "database_query"},
		{"cursor", "before_read_file", "allow", ""},
		{"cursor", "pre_tool_write", "deny", "Write changes files"},
		{"opencode", "bash_ls", "allow", ""},
		{"opencode", "bash_write", "deny", "`>` writes marker.txt"},
		{"opencode", "write", "deny", "write changes files"},
		{"opencode", "read", "allow", ""},
		{"opencode", "task", "allow", ""},
	}
	for _, c := range cases {
		t.Run(c.host+"/"+c.fixture, func(t *testing.T) {
			raw := fixture(t, c.host, c.fixture)
			dec, out := hookCall(t, env, c.host, "session=planning", raw)
			perm, reason := verdict(t, c.host, out)
			if dec != c.plan || perm != c.plan {
				t.Errorf("plan mode: decision %q, answer %q (%v); want %q", dec, perm, out, c.plan)
			}
			if !strings.Contains(reason, c.reasonHas) {
				t.Errorf("plan mode reason %q lacks %q", reason, c.reasonHas)
			}
			if perm == "ask" {
				t.Errorf("plan mode answered ask: %v", out)
			}
			dec, out = hookCall(t, env, c.host, "session=building", raw)
			if perm, _ := verdict(t, c.host, out); dec != "none" || perm != "" {
				t.Errorf("build mode: decision %q, answer %v; want no decision", dec, out)
			}
			if c.host != "opencode" && len(out) != 0 {
				t.Errorf("build mode answer %v, want {}", out)
			}
		})
	}
	// Every denial is one tool_call.denied naming host, tool and reason.
	denied := eventData(t, env, "tool_call.denied", "planning")
	want := 0
	for _, c := range cases {
		if c.plan == "deny" {
			want++
		}
	}
	if len(denied) != want {
		t.Fatalf("tool_call.denied events = %d, want %d", len(denied), want)
	}
	if d := denied[0]; d["host"] != "claude-code" || d["tool"] != "Write" || d["adapter"] != "http" ||
		d["effective_mode"] != "plan" || !strings.Contains(fmt.Sprint(d["reason"]), "changes files") {
		t.Errorf("first denial event: %v", d)
	}
	for _, d := range denied {
		if d["tool"] == "Bash" && d["agent_id"] == "a1b2c3" {
			return
		}
	}
	t.Errorf("no denial event names the sub-agent a1b2c3: %v", denied)
}

// TestHookMCPDeclaredReadOnly lets through an MCP tool the gate registry
// declares read-only, and a Cursor call that goes through a planserver
// gate.
func TestHookMCPDeclaredReadOnly(t *testing.T) {
	env := apitest.New(t)
	createSession(t, env, map[string]any{"id": "p", "mode": "plan"})
	if r := env.Call("PUT", "/v1/gates/memory", map[string]any{"url": "http://127.0.0.1:9/mcp", "read_only_tools": []string{"read_graph"}}); r.Status != 201 {
		t.Fatalf("register gate: %d %s", r.Status, r.Body)
	}
	in := `{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"mcp__memory__read_graph","tool_input":{}}`
	if dec, out := hookCall(t, env, "claude-code", "session=p", []byte(in)); dec != "allow" {
		t.Errorf("declared read-only tool: %s %v", dec, out)
	}
	in = `{"hook_event_name":"beforeMCPExecution","conversation_id":"c","tool_name":"create_entities","tool_input":{},"url":"http://127.0.0.1:8080/mcp/gate/memory"}`
	if dec, out := hookCall(t, env, "cursor", "session=p", []byte(in)); dec != "allow" {
		t.Errorf("a call through /mcp/gate/memory is judged there: %s %v", dec, out)
	}
	in = `{"hook_event_name":"beforeMCPExecution","conversation_id":"c","tool_name":"create_entities","tool_input":{},"url":"http://127.0.0.1:8080/mcp/gate/nosuch"}`
	if dec, _ := hookCall(t, env, "cursor", "session=p", []byte(in)); dec != "deny" {
		t.Errorf("an unknown gate: %s", dec)
	}
}

// TestHookExitPlanModeReview: ExitPlanMode stores the plan, requests the
// review and is denied with the console link; after the human approves,
// the hook gives no decision. The review is the plan-mode holder's: a
// child bound with ?parent= asks the parent's reviewer.
func TestHookExitPlanModeReview(t *testing.T) {
	env := apitest.New(t)
	createSession(t, env, map[string]any{"id": "p", "mode": "plan"})
	raw := fixture(t, "claude-code", "exit_plan_mode")
	dec, out := hookCall(t, env, "claude-code", "parent=p", raw)
	perm, reason := verdict(t, "claude-code", out)
	if dec != "deny" || perm != "deny" || !strings.Contains(reason, "/ui/sessions/p/review?revision=1") ||
		!strings.Contains(reason, "wait for the human") {
		t.Fatalf("ExitPlanMode: %s %v", dec, out)
	}
	plan := env.Call("GET", "/v1/sessions/p/plan", nil)
	var p struct {
		Content, Author string
		Revision        int64
	}
	plan.JSON(t, &p)
	if plan.Status != 200 || !strings.HasPrefix(p.Content, "# Plan") || p.Author != "claude-code" || p.Revision != 1 {
		t.Fatalf("stored plan: %d %s", plan.Status, plan.Body)
	}
	if s := getSession(t, env, "p"); s.Review.State != "pending" || s.Review.PlanRevision == nil || *s.Review.PlanRevision != 1 {
		t.Fatalf("review not requested: %+v", s.Review)
	}
	// A second ExitPlanMode is the next revision.
	hookCall(t, env, "claude-code", "parent=p", []byte(strings.Replace(string(raw), "# Plan", "# Plan v2", 1)))
	if r := env.Call("POST", "/v1/sessions/p/plan/approve", map[string]any{}, "If-Match", `"2"`); r.Status != 200 {
		t.Fatalf("approve: %d %s", r.Status, r.Body)
	}
	dec, out = hookCall(t, env, "claude-code", "parent=p", fixture(t, "claude-code", "write"))
	if dec != "none" || len(out) != 0 {
		t.Errorf("after approval Write gets %s %v, want no decision", dec, out)
	}
	if n := len(eventData(t, env, "session.review_requested", "p")); n != 2 {
		t.Errorf("review_requested events = %d, want 2", n)
	}
}

// TestHookParentBinding: ?parent=P finds or creates the child of P that
// stands for the host's conversation, once, and records enforcement.
func TestHookParentBinding(t *testing.T) {
	env := apitest.New(t)
	createSession(t, env, map[string]any{"id": "p", "mode": "plan"})
	for i := 0; i < 3; i++ {
		if dec, _ := hookCall(t, env, "claude-code", "parent=p", fixture(t, "claude-code", "write")); dec != "deny" {
			t.Fatalf("call %d: %s", i, dec)
		}
	}
	r := env.Call("GET", "/v1/sessions?parent=p&external_id=abc123", nil)
	var list struct{ Sessions []session }
	r.JSON(t, &list)
	if r.Status != 200 || len(list.Sessions) != 1 {
		t.Fatalf("children of p for abc123: %d %s", r.Status, r.Body)
	}
	child := list.Sessions[0]
	if child.ExternalID == nil || *child.ExternalID != "abc123" || child.EffectiveMode != "plan" || child.Mode != "build" {
		t.Errorf("child: %+v", child)
	}
	if len(child.Enforcement) != 1 || child.Enforcement[0].Host != "claude-code" || child.Enforcement[0].Adapter != "http" ||
		child.Enforcement[0].LastDecisionAt == nil {
		t.Errorf("enforcement: %+v", child.Enforcement)
	}
	if n := countRows(t, env, "sessions", "parent_id = 'p'"); n != 1 {
		t.Errorf("children of p = %d, want 1", n)
	}
	// The command adapter is a second entry; the denials are the child's.
	env.Call("POST", "/v1/hooks/claude-code?parent=p", fixture(t, "claude-code", "read"), "Planserver-Hook-Adapter", "command")
	if s := getSession(t, env, child.ID); len(s.Enforcement) != 2 || s.Enforcement[1].Adapter != "command" {
		t.Errorf("enforcement after a command call: %+v", s.Enforcement)
	}
	if n := len(eventData(t, env, "tool_call.denied", child.ID)); n != 3 {
		t.Errorf("denials of the child = %d, want 3", n)
	}
	// The user's mode switch on p covers the child.
	setMode(t, env, "p", "build", 200)
	if dec, _ := hookCall(t, env, "claude-code", "parent=p", fixture(t, "claude-code", "write")); dec != "none" {
		t.Errorf("after p went to build: %s", dec)
	}
	// external_id is unique among a parent's children.
	createSession(t, env, map[string]any{"parent_id": "p", "external_id": "x"})
	if r := env.Call("POST", "/v1/sessions", map[string]any{"parent_id": "p", "external_id": "x"}); r.Status != 409 || r.Code() != "already_exists" {
		t.Errorf("duplicate external_id: %d %s", r.Status, r.Body)
	}
	createSession(t, env, map[string]any{"external_id": "x"}) // another parent: free
	if r := env.Bad("POST", "/v1/sessions", map[string]any{"external_id": "bad\nid"}); r.Status != 400 {
		t.Errorf("external_id with a newline: %d %s", r.Status, r.Body)
	}
	if r := env.Call("GET", "/v1/sessions?parent=p&parent_id=q", nil); r.Status != 400 {
		t.Errorf("parent and parent_id disagree: %d %s", r.Status, r.Body)
	}
}

// TestHookBadInput: whatever the input, once the host is known the answer
// is a 200 denial in the host's format that says why, never a crash or an
// error status a host would run the tool on.
func TestHookBadInput(t *testing.T) {
	env := apitest.New(t)
	createSession(t, env, map[string]any{"id": "p", "mode": "plan"})
	createSession(t, env, map[string]any{"id": "b"})
	huge := `{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Write","tool_input":{"content":"` +
		strings.Repeat("x", 9<<20) + `"}}`
	cases := []struct {
		name, host, query, body, reasonHas string
	}{
		{"not json", "claude-code", "session=p", `not json`, "not a JSON object"},
		{"array", "gemini-cli", "session=p", `[1,2]`, "not a JSON object"},
		{"two values", "cursor", "session=p", `{} {}`, "more than one JSON value"},
		{"wrong event", "claude-code", "session=p", `{"hook_event_name":"Stop","tool_name":"Write"}`, "answers Claude Code's PreToolUse"},
		{"no tool", "claude-code", "session=p", `{"hook_event_name":"PreToolUse"}`, "no tool_name"},
		{"tool input not an object", "claude-code", "session=p", `{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":7}`, "tool_input must be a JSON object"},
		{"tool name not a string", "gemini-cli", "session=p", `{"hook_event_name":"BeforeTool","tool_name":5}`, "tool_name must be a string"},
		{"unknown cursor event", "cursor", "session=p", `{"hook_event_name":"afterFileEdit"}`, "beforeShellExecution"},
		{"no session", "claude-code", "", string(fixture(t, "claude-code", "read")), "?session="},
		{"unknown session", "claude-code", "session=nobody", string(fixture(t, "claude-code", "read")), `"nobody" not found`},
		{"unknown parent", "claude-code", "parent=nobody", string(fixture(t, "claude-code", "read")), `no session "nobody"`},
		{"both", "claude-code", "session=p&parent=p", string(fixture(t, "claude-code", "read")), "not both"},
		{"huge", "claude-code", "session=b", huge, "larger than"},
		{"no conversation for parent", "opencode", "parent=p", `{"tool":"read","args":{}}`, "no conversation id"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := env.Bad("POST", "/v1/hooks/"+c.host+"?"+c.query, []byte(c.body))
			var out map[string]any
			if r.Status != 200 || json.Unmarshal(r.Body, &out) != nil {
				t.Fatalf("%d %.300s", r.Status, r.Body)
			}
			perm, reason := verdict(t, c.host, out)
			if perm != "deny" || !strings.Contains(reason, c.reasonHas) || !strings.Contains(reason, "[planserver hook]") {
				t.Errorf("answer %q %q, want a denial saying %q", perm, reason, c.reasonHas)
			}
		})
	}
	// A wrong or missing media type is refused like any other bad input:
	// a denial the host obeys, not a 415 it would run the tool on.
	for _, ct := range []string{"text/plain", ""} {
		r := env.Bad("POST", "/v1/hooks/claude-code?session=b", fixture(t, "claude-code", "read"), "Content-Type", ct)
		var out map[string]any
		if r.Status != 200 || json.Unmarshal(r.Body, &out) != nil {
			t.Fatalf("Content-Type %q: %d %.300s", ct, r.Status, r.Body)
		}
		if perm, reason := verdict(t, "claude-code", out); perm != "deny" || !strings.Contains(reason, "Content-Type") {
			t.Errorf("Content-Type %q: answer %q %q, want a denial naming the Content-Type", ct, perm, reason)
		}
	}
	if r := env.Bad("POST", "/v1/hooks/vscode?session=p", []byte(`{}`)); r.Status != 404 || r.Code() != "not_found" ||
		!strings.Contains(string(r.Body), "claude-code, codex, gemini-cli, cursor, opencode") {
		t.Errorf("unknown host: %d %s", r.Status, r.Body)
	}
}

// TestHookAccess: an agent token decides its own subtree's calls and can
// bind children under its session; another session is a denial that
// cannot tell "outside your scope" from "does not exist".
func TestHookAccess(t *testing.T) {
	env := apitest.New(t, func(c *app.Config) { c.Auth = "token" })
	admin := env.As(env.Token(auth.Admin, "admin", ""))
	createSession(t, admin, map[string]any{"id": "mine", "mode": "plan"})
	createSession(t, admin, map[string]any{"id": "theirs", "mode": "plan"})
	agent := env.As(env.Token(auth.Agent, "agent", "mine"))
	if dec, _ := hookCall(t, agent, "claude-code", "session=mine", fixture(t, "claude-code", "write")); dec != "deny" {
		t.Errorf("own session: %s", dec)
	}
	if dec, _ := hookCall(t, agent, "claude-code", "parent=mine", fixture(t, "claude-code", "read")); dec != "allow" {
		t.Errorf("child of own session: %s", dec)
	}
	_, out := hookCall(t, agent, "claude-code", "session=theirs", fixture(t, "claude-code", "read"))
	_, none := hookCall(t, agent, "claude-code", "session=nosuch", fixture(t, "claude-code", "read"))
	_, r1 := verdict(t, "claude-code", out)
	_, r2 := verdict(t, "claude-code", none)
	if !strings.Contains(r1, `session "theirs" not found`) || strings.Replace(r1, "theirs", "nosuch", 1) != r2 {
		t.Errorf("outside the scope: %q vs %q", r1, r2)
	}
	_, out = hookCall(t, agent, "claude-code", "parent=theirs", fixture(t, "claude-code", "read"))
	if _, r := verdict(t, "claude-code", out); !strings.Contains(r, `no session "theirs"`) {
		t.Errorf("binding under another session: %q", r)
	}
	if r := env.Call("POST", "/v1/hooks/claude-code?session=mine", fixture(t, "claude-code", "read")); r.Status != 401 {
		t.Errorf("no token: %d", r.Status)
	}
}

// withCommand is a fixture with its shell command replaced.
func withCommand(t *testing.T, host, name, inputField, cmd string) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(fixture(t, host, name), &m); err != nil {
		t.Fatal(err)
	}
	in := m
	if inputField != "" {
		in = m[inputField].(map[string]any)
	}
	in["command"] = cmd
	raw, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// TestHookSandboxRewrite: in plan mode, where the sandbox is available and
// the host can rewrite the input, every shell command runs inside planserver
// sandbox --read-only, reads included: the whole input comes back with only
// the command changed. A command that certainly writes is denied first,
// saying what it writes. Where the host cannot rewrite the input (Cursor's
// beforeShellExecution), or the sandbox is missing, only a plain read on
// the allowlist runs.
func TestHookSandboxRewrite(t *testing.T) {
	wrap := func(cmd string, _ hosthook.Wrap) (string, error) {
		return sandbox.WrapCommand("/opt/planserver", cmd, nil)
	}
	env := apitest.New(t, func(c *app.Config) {
		c.Hooks.Shell.Sandbox = hosthook.Sandbox{Available: true, Wrap: wrap}
	})
	createSession(t, env, map[string]any{"id": "p", "mode": "plan"})
	const probe = "python3 tools/probe.py --dry"
	want, _ := wrap(probe, hosthook.Wrap{})

	dec, out := hookCall(t, env, "claude-code", "session=p", withCommand(t, "claude-code", "bash_redirect", "tool_input", probe))
	h, _ := out["hookSpecificOutput"].(map[string]any)
	in, _ := h["updatedInput"].(map[string]any)
	if dec != "rewrite" || h["permissionDecision"] != "allow" || in["command"] != want ||
		in["description"] != "Write a marker" || in["timeout"] != float64(120000) || in["run_in_background"] != false || len(in) != 4 {
		t.Errorf("claude-code rewrite: %s %v", dec, out)
	}
	if !strings.Contains(h["permissionDecisionReason"].(string), "read-only sandbox") {
		t.Errorf("the reason does not say why: %v", h["permissionDecisionReason"])
	}
	// ls is no exception: every command runs in the sandbox.
	lsWant, _ := wrap("ls -la", hosthook.Wrap{})
	dec, out = hookCall(t, env, "claude-code", "session=p", fixture(t, "claude-code", "bash_ls"))
	if in, _ := out["hookSpecificOutput"].(map[string]any)["updatedInput"].(map[string]any); dec != "rewrite" || in["command"] != lsWant {
		t.Errorf("ls: %s %v", dec, out)
	}
	dec, out = hookCall(t, env, "gemini-cli", "session=p", withCommand(t, "gemini-cli", "shell_rm", "tool_input", probe))
	gin, _ := out["hookSpecificOutput"].(map[string]any)["tool_input"].(map[string]any)
	if dec != "rewrite" || out["decision"] != "allow" || gin["command"] != want || gin["description"] != "Clean" {
		t.Errorf("gemini-cli rewrite: %s %v", dec, out)
	}
	dec, out = hookCall(t, env, "cursor", "session=p", fixture(t, "cursor", "pre_tool_shell"))
	cin, _ := out["updated_input"].(map[string]any)
	if w, _ := wrap("go generate ./...", hosthook.Wrap{}); dec != "rewrite" || out["permission"] != "allow" || cin["command"] != w || cin["cwd"] != "/path/to/project" {
		t.Errorf("cursor preToolUse rewrite: %s %v", dec, out)
	}
	dec, out = hookCall(t, env, "opencode", "session=p", withCommand(t, "opencode", "bash_write", "args", probe))
	oargs, _ := out["args"].(map[string]any)
	if dec != "rewrite" || out["decision"] != "allow" || oargs["command"] != want || oargs["description"] != "Write a marker" {
		t.Errorf("opencode rewrite: %s %v", dec, out)
	}
	// A certain writer is denied before the sandbox, saying what it writes.
	for _, host := range []struct{ host, fixture string }{{"claude-code", "bash_redirect"}, {"opencode", "bash_write"}} {
		dec, out := hookCall(t, env, host.host, "session=p", fixture(t, host.host, host.fixture))
		if d, r := verdict(t, host.host, out); dec != "deny" || d != "deny" || !strings.Contains(r, "marker.txt") {
			t.Errorf("%s, a redirection to a file: %s %q", host.host, dec, r)
		}
	}
	// Cursor's beforeShellExecution cannot rewrite: the allowlist alone.
	if dec, out := hookCall(t, env, "cursor", "session=p", withCommand(t, "cursor", "before_shell_npm_install", "", "git log")); dec != "deny" ||
		!strings.Contains(out["agent_message"].(string), "cannot change the command") {
		t.Errorf("cursor beforeShellExecution cannot be rewritten: %s %v", dec, out)
	}
	if dec, out := hookCall(t, env, "cursor", "session=p", withCommand(t, "cursor", "before_shell_npm_install", "", "grep -rn TODO .")); dec != "allow" {
		t.Errorf("cursor beforeShellExecution, a plain read: %s %v", dec, out)
	}
	// A NUL byte cannot be passed to a shell: denied, not run unsandboxed.
	nul := `{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"printf 'a\u0000b'"}}`
	if dec, out := hookCall(t, env, "claude-code", "session=p", []byte(nul)); dec != "deny" {
		t.Errorf("NUL command: %s %v", dec, out)
	}
	// Rewrites are not denials: no event for them.
	if n := len(eventData(t, env, "tool_call.denied", "p")); n != 4 {
		t.Errorf("denials = %d, want 4 (two redirections, cursor's git log, the NUL command)", n)
	}

	// Without the sandbox only a plain read on the allowlist runs.
	off := apitest.New(t, func(c *app.Config) {
		c.Hooks.Shell.Sandbox = hosthook.Sandbox{Why: "Landlock ABI 2 is below 6"}
	})
	createSession(t, off, map[string]any{"id": "p", "mode": "plan"})
	_, out = hookCall(t, off, "claude-code", "session=p", withCommand(t, "claude-code", "bash_redirect", "tool_input", probe))
	if d, r := verdict(t, "claude-code", out); d != "deny" || !strings.Contains(r, "Landlock ABI 2 is below 6") {
		t.Errorf("no sandbox: %q %q", d, r)
	}
	if dec, _ := hookCall(t, off, "claude-code", "session=p", fixture(t, "claude-code", "bash_ls")); dec != "allow" {
		t.Errorf("no sandbox, ls: %s", dec)
	}
}

// TestHookCodex: Codex reads Claude Code's answer shape but takes no plain
// allow, so a call plan mode lets through as it is gets no decision; its
// shell is rewritten into the sandbox with only the command changed, and
// its patches are denied. Its after-tool report is read too.
func TestHookCodex(t *testing.T) {
	wrap := func(cmd string, w hosthook.Wrap) (string, error) {
		return sandbox.WrapCommand("/opt/planserver", cmd, nil)
	}
	env := apitest.New(t, func(c *app.Config) {
		c.Hooks.Shell.Sandbox = hosthook.Sandbox{Available: true, Wrap: wrap}
	})
	createSession(t, env, map[string]any{"id": "p", "mode": "plan"})
	dec, out := hookCall(t, env, "codex", "session=p", fixture(t, "codex", "bash_ls"))
	h, _ := out["hookSpecificOutput"].(map[string]any)
	in, _ := h["updatedInput"].(map[string]any)
	if want, _ := wrap("ls -la", hosthook.Wrap{}); dec != "rewrite" || h["permissionDecision"] != "allow" || in["command"] != want || len(in) != 1 {
		t.Errorf("codex Bash: %s %v", dec, out)
	}
	for _, f := range []struct{ fixture, reason string }{
		{"bash_redirect", "`>` writes marker.txt"}, {"apply_patch", "apply_patch changes files"}, {"write_stdin", "does not know"},
	} {
		dec, out := hookCall(t, env, "codex", "session=p", fixture(t, "codex", f.fixture))
		h, _ := out["hookSpecificOutput"].(map[string]any)
		if reason, _ := h["permissionDecisionReason"].(string); dec != "deny" || h["permissionDecision"] != "deny" || !strings.Contains(reason, f.reason) {
			t.Errorf("codex %s: %s %v, want a denial with %q", f.fixture, dec, out, f.reason)
		}
	}
	// A read plan mode allows: no decision (Codex refuses a bare allow).
	if dec, out := hookCall(t, env, "codex", "session=p", fixture(t, "codex", "view_image")); dec != "allow" || len(out) != 0 {
		t.Errorf("codex view_image: %s %v, want allow answered as no decision", dec, out)
	}
	if dec, out := hookCall(t, env, "codex", "session=p", fixture(t, "codex", "post_bash")); len(out) != 0 {
		t.Errorf("codex PostToolUse: %s %v, want a report answered with nothing", dec, out)
	}
}

// claudeWrite is Claude Code's Write of file in project /work/p, by
// sub-agent agent ("" for the main one).
func claudeWrite(t *testing.T, file, agent string) []byte {
	t.Helper()
	m := map[string]any{"session_id": "conv-1", "transcript_path": "/home/u/.claude/projects/p/x.jsonl", "cwd": "/work/p",
		"hook_event_name": "PreToolUse", "tool_name": "Write", "tool_input": map[string]any{"file_path": file, "content": "x"},
		"tool_use_id": "toolu_1"}
	if agent != "" {
		m["agent_id"], m["agent_type"] = agent, "general-purpose"
	}
	raw, _ := json.Marshal(m)
	return raw
}

// TestHookScopedBuild: a session approved with a scope gets no decision
// for writes inside it, a denial naming the scope for writes outside it
// (a tool_call.out_of_scope event each, a sub-agent's named), and its
// shell commands run in the sandbox with the scope's paths and network,
// never planserver's own port; a sub-session is held to the same scope;
// lifting it restores full build.
func TestHookScopedBuild(t *testing.T) {
	wrap := func(cmd string, w hosthook.Wrap) (string, error) {
		o := sandbox.WrapOptions{Explain: w.Explain}
		if w.Scope != nil {
			o.AllowWrite, o.Project, o.AllowConnect, o.Scoped = w.Scope.Files, w.Scope.Project, w.Scope.Connect, true
		}
		return sandbox.Wrap("/opt/planserver", cmd, o)
	}
	env := apitest.New(t, func(c *app.Config) {
		c.Hooks.Shell.Sandbox = hosthook.Sandbox{Available: true, Wrap: wrap}
	})
	createSession(t, env, map[string]any{"id": "s", "mode": "plan"})
	createSession(t, env, map[string]any{"id": "sub", "parent_id": "s"})
	pendingWith(t, env, "s", scopedPlan)
	act(t, env, "s", "approve", nil, 200, "If-Match", `"1"`)

	if dec, _ := hookCall(t, env, "claude-code", "session=s", claudeWrite(t, "/work/p/src/app.go", "")); dec != "none" {
		t.Errorf("a write inside the scope: %s", dec)
	}
	dec, out := hookCall(t, env, "claude-code", "session=s", claudeWrite(t, "/work/p/README.md", ""))
	_, reason := verdict(t, "claude-code", out)
	if dec != "deny" || !strings.Contains(reason, "README.md") || !strings.Contains(reason, "```scope") || !strings.Contains(reason, "revision 1") {
		t.Errorf("a write outside the scope: %s %s", dec, reason)
	}
	// A sub-agent's write, and a sub-session's: the same scope.
	if dec, _ := hookCall(t, env, "claude-code", "session=s", claudeWrite(t, "/work/p/docs/x.md", "agent-7")); dec != "deny" {
		t.Errorf("a sub-agent's write outside: %s", dec)
	}
	if dec, _ := hookCall(t, env, "claude-code", "session=sub", claudeWrite(t, "/etc/passwd", "")); dec != "deny" {
		t.Errorf("a sub-session's write outside: %s", dec)
	}
	if dec, _ := hookCall(t, env, "claude-code", "session=sub", claudeWrite(t, "/work/p/src/app.go", "")); dec != "none" {
		t.Errorf("a sub-session's write inside: %s", dec)
	}
	var page api.EventPage
	env.Call("GET", "/v1/events?types=tool_call.out_of_scope,tool_call.denied", nil).JSON(t, &page)
	var got []string
	for _, e := range page.Events {
		var d struct {
			Path          string `json:"path"`
			AgentID       string `json:"agent_id"`
			ScopeRevision int64  `json:"scope_revision"`
			ScopeSession  string `json:"scope_session"`
			Host          string `json:"host"`
			Tool          string `json:"tool"`
		}
		_ = json.Unmarshal(e.Data, &d)
		got = append(got, strings.Join([]string{e.Type, e.SessionID, d.Tool, d.Path, d.AgentID, d.ScopeSession, d.Host, fmt.Sprint(d.ScopeRevision)}, "|"))
	}
	want := []string{
		"tool_call.out_of_scope|s|Write|README.md||s|claude-code|1",
		"tool_call.out_of_scope|s|Write|docs/x.md|agent-7|s|claude-code|1",
		"tool_call.out_of_scope|sub|Write|/etc/passwd||s|claude-code|1",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("events:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// A shell command runs in the sandbox with the scope.
	dec, out = hookCall(t, env, "claude-code", "session=s", withCommand(t, "claude-code", "bash_ls", "tool_input", "sed -i s/1/2/ src/app.go"))
	in, _ := out["hookSpecificOutput"].(map[string]any)["updatedInput"].(map[string]any)
	cmd, _ := in["command"].(string)
	if dec != "rewrite" || !strings.Contains(cmd, "--allow-write 'src/app.go'") || !strings.Contains(cmd, "--build-scope") ||
		!strings.Contains(cmd, "--allow-connect 'proxy.golang.org:443'") {
		t.Errorf("a shell command in scoped build: %s %s", dec, cmd)
	}

	// Lifted: full build, no decision.
	env.Call("DELETE", "/v1/sessions/s/scope", nil)
	if dec, _ := hookCall(t, env, "claude-code", "session=s", claudeWrite(t, "/work/p/README.md", "")); dec != "none" {
		t.Errorf("after lifting: %s", dec)
	}
}

// TestCursorSecondHookSeesTheRewrite: Cursor runs beforeShellExecution on
// the command its preToolUse hook returned. That command, exactly as the
// rewrite made it, runs (it is in the sandbox already); any other line that
// looks like it (another binary, another flag, something after it) is
// judged like any command, and the allowlist refuses it. In scoped build
// the same holds with the scope's sandbox.
func TestCursorSecondHookSeesTheRewrite(t *testing.T) {
	wrap := func(cmd string, w hosthook.Wrap) (string, error) {
		o := sandbox.WrapOptions{Explain: w.Explain}
		if w.Scope != nil {
			o.AllowWrite, o.Project, o.AllowConnect, o.Scoped = w.Scope.Files, w.Scope.Project, w.Scope.Connect, true
		}
		return sandbox.Wrap("/opt/planserver", cmd, o)
	}
	env := apitest.New(t, func(c *app.Config) {
		c.Hooks.Shell.Sandbox = hosthook.Sandbox{Available: true, Wrap: wrap, Unwrap: sandbox.Unwrap}
	})
	createSession(t, env, map[string]any{"id": "p", "mode": "plan"})
	rewritten := func(session, command string) string {
		t.Helper()
		dec, out := hookCall(t, env, "cursor", "session="+session, withCommand(t, "cursor", "pre_tool_shell", "tool_input", command))
		in, _ := out["updated_input"].(map[string]any)
		line, _ := in["command"].(string)
		if dec != "rewrite" || line == "" {
			t.Fatalf("preToolUse did not rewrite %q: %s %v", command, dec, out)
		}
		return line
	}
	second := func(session, line string) string {
		t.Helper()
		dec, _ := hookCall(t, env, "cursor", "session="+session, withCommand(t, "cursor", "before_shell_ls", "", line))
		return dec
	}
	line := rewritten("p", "python3 tools/probe.py --dry && cat go.mod")
	if dec := second("p", line); dec != "allow" {
		t.Errorf("the rewritten command in beforeShellExecution: %s", dec)
	}
	plain, _ := sandbox.Wrap("/opt/planserver", "touch x", sandbox.WrapOptions{})
	for name, forged := range map[string]string{
		"another binary":   strings.Replace(line, "/opt/planserver", "/tmp/planserver", 1),
		"a flag added":     strings.Replace(line, "--read-only", "--read-only --allow-write '/'", 1),
		"a network opened": strings.Replace(line, "--read-only", "--read-only --allow-connect '127.0.0.1:9'", 1),
		"a command after":  line + "; touch x",
		"a command before": "touch x; " + line,
		"a redirection":    line + " > x",
		"not a sandbox":    strings.Replace(plain, "sandbox --read-only", "--read-only", 1),
	} {
		if dec := second("p", forged); dec != "deny" {
			t.Errorf("%s: %s for %q", name, dec, forged)
		}
	}

	// Scoped build: the scope's sandbox line passes, plan mode's does not.
	createSession(t, env, map[string]any{"id": "s", "mode": "plan"})
	pendingWith(t, env, "s", scopedPlan)
	act(t, env, "s", "approve", nil, 200, "If-Match", `"1"`)
	scoped := rewritten("s", "sed -i s/1/2/ src/app.go")
	if !strings.Contains(scoped, "--build-scope") {
		t.Fatalf("no scoped sandbox: %s", scoped)
	}
	if dec := second("s", scoped); dec != "none" {
		t.Errorf("the scoped rewrite in beforeShellExecution: %s", dec)
	}
	if dec := second("s", strings.Replace(scoped, "--allow-write 'src/app.go'", "--allow-write 'src/app.go' --allow-write 'README.md'", 1)); dec != "deny" {
		t.Errorf("a scoped line with a path added: %s", dec)
	}
	if dec := second("s", line); dec != "deny" {
		t.Errorf("plan mode's line in scoped build: %s", dec)
	}
}

// TestCursorShellRefusesTerminalControls: where the hook cannot rewrite the
// command (Cursor's beforeShellExecution), a command with a character a
// terminal acts on as it is typed is refused, whether the allowlist would
// take it or it is the sandbox line preToolUse made: Ctrl-U, Ctrl-A and a
// tab can erase, move or complete the line in an interactive shell, so
// what runs is not what was judged. Where the hook rewrites, the same
// command runs in the sandbox.
func TestCursorShellRefusesTerminalControls(t *testing.T) {
	wrap := func(cmd string, _ hosthook.Wrap) (string, error) {
		return sandbox.WrapCommand("/opt/planserver", cmd, nil)
	}
	env := apitest.New(t, func(c *app.Config) {
		c.Hooks.Shell.Sandbox = hosthook.Sandbox{Available: true, Wrap: wrap, Unwrap: sandbox.Unwrap}
	})
	createSession(t, env, map[string]any{"id": "p", "mode": "plan"})
	for _, cmd := range []string{
		"ls '\x15touch /tmp/x #'", "ls 'x\x01touch /tmp/x; : \x05'", "cat '/etc/hostnam\t; touch /tmp/x #'",
		"echo '\x1b\x7ftouch x'", "ls '\u009btouch x'", "ls \x03",
	} {
		if dec, out := hookCall(t, env, "cursor", "session=p", withCommand(t, "cursor", "before_shell_ls", "", cmd)); dec != "deny" ||
			!strings.Contains(out["agent_message"].(string), "control character") {
			t.Errorf("beforeShellExecution %q: %s %v", cmd, dec, out)
		}
		line, _ := wrap(cmd, hosthook.Wrap{})
		if dec, _ := hookCall(t, env, "cursor", "session=p", withCommand(t, "cursor", "before_shell_ls", "", line)); dec != "deny" {
			t.Errorf("beforeShellExecution, the sandbox line of %q: %s", cmd, dec)
		}
		if dec, _ := hookCall(t, env, "cursor", "session=p", withCommand(t, "cursor", "pre_tool_shell", "tool_input", cmd)); dec != "rewrite" {
			t.Errorf("preToolUse %q: %s", cmd, dec)
		}
	}
	for _, cmd := range []string{"ls -la\nls src", "grep -rn 'é' .", "ls '\uFFFD'"} {
		if dec, out := hookCall(t, env, "cursor", "session=p", withCommand(t, "cursor", "before_shell_ls", "", cmd)); dec != "allow" {
			t.Errorf("beforeShellExecution %q: %s %v", cmd, dec, out)
		}
	}
}
