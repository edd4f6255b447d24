package attacks

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// Case is one attack: setup runs first, outside any sandbox (the hostile
// repository the agent finds); Cmd is what the agent asks its host's shell
// tool to run.
type Case struct {
	Name, Class, Setup, Cmd string
	// Index is the case's place in the corpus.
	Index int
}

// loadCorpus reads corpus.yaml and adds the compositions.
func loadCorpus(t testing.TB) []Case {
	t.Helper()
	raw, err := os.ReadFile("corpus.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var classes []struct {
		Class string `yaml:"class"`
		Setup string `yaml:"setup"`
		Cases []struct {
			Cmd   string `yaml:"cmd"`
			Setup string `yaml:"setup"`
		} `yaml:"cases"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	if err := dec.Decode(&classes); err != nil {
		t.Fatalf("corpus.yaml: %v", err)
	}
	var out []Case
	seen := map[string]bool{}
	for _, cl := range classes {
		for i, c := range cl.Cases {
			if strings.TrimSpace(c.Cmd) == "" {
				t.Fatalf("corpus.yaml: class %q, case %d has no cmd", cl.Class, i+1)
			}
			key := c.Setup + "\x00" + c.Cmd
			if seen[key] {
				t.Fatalf("corpus.yaml: class %q repeats %q", cl.Class, c.Cmd)
			}
			seen[key] = true
			setup := strings.TrimSpace(strings.Join([]string{cl.Setup, c.Setup}, "\n"))
			out = append(out, Case{Name: fmt.Sprintf("%s/%02d", slug(cl.Class), i+1), Class: cl.Class, Setup: setup, Cmd: c.Cmd})
		}
	}
	out = append(out, composed()...)
	for i := range out {
		out[i].Index = i
	}
	return out
}

func slug(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			if b.Len() > 0 && !strings.HasSuffix(b.String(), "-") {
				b.WriteByte('-')
			}
		}
	}
	return strings.TrimSuffix(b.String(), "-")
}

// TestCorpusSize keeps the corpus at the size issue 42 asks for.
func TestCorpusSize(t *testing.T) {
	cases := loadCorpus(t)
	if len(cases) < 400 {
		t.Fatalf("the corpus has %d cases; it must keep at least 400", len(cases))
	}
	classes := map[string]int{}
	for _, c := range cases {
		classes[c.Class]++
	}
	t.Logf("%d cases in %d classes", len(cases), len(classes))
}

// route is one way a host's shell call reaches planserver: the host and
// event it comes as, and the planserver that answers (none: planserver is
// down and the hook judges alone).
type route struct {
	name string
	host string
	// event builds the host's hook input for a command run in dir.
	event func(cmd, dir string) map[string]any
	srv   *server
	// binary is the hook command: planserver-hook, or planserver hook.
	binary []string
	// only, when set, picks the cases the route runs (the allow-connect
	// route runs the network classes only).
	only func(Case) bool
	// then, when set, is the host's second hook on the same call, asked
	// with what the first would run (Cursor: preToolUse may rewrite the
	// command, then beforeShellExecution sees the rewritten line); the
	// command runs only when both let it.
	then func(cmd, dir string) map[string]any
	// sandboxed says every command this route runs is rewritten into the
	// sandbox; PLANSERVER_REQUIRE_SANDBOX=1 (CI) makes a command it runs
	// as it is an error, where it could otherwise fall back to the
	// allowlist on a kernel without the sandbox.
	sandboxed bool
}

func claudeEvent(cmd, dir string) map[string]any {
	return map[string]any{
		"session_id": "attack-conversation", "transcript_path": filepath.Join(dir, "..", "transcript.jsonl"),
		"cwd": dir, "permission_mode": "default", "hook_event_name": "PreToolUse", "tool_name": "Bash",
		"tool_input": map[string]any{"command": cmd, "description": "attack"}, "tool_use_id": "toolu_attack",
	}
}

func cursorPreToolEvent(cmd, dir string) map[string]any {
	return map[string]any{
		"hook_event_name": "preToolUse", "conversation_id": "attack-conversation", "generation_id": "g1",
		"tool_name": "Shell", "tool_input": map[string]any{"command": cmd, "cwd": dir}, "workspace_roots": []string{dir},
	}
}

func cursorShellEvent(cmd, dir string) map[string]any {
	return map[string]any{
		"hook_event_name": "beforeShellExecution", "conversation_id": "attack-conversation",
		"generation_id": "g1", "command": cmd, "cwd": dir, "workspace_roots": []string{dir},
	}
}

// verdict is what the host does with the hook's answer.
type verdict struct {
	// run is the command the host runs; empty when the call is denied.
	run    string
	reason string
	raw    string
}

// ask runs the hook command for cmd and reads its answer as the host would.
func (r route) ask(t *testing.T, cmd, dir string) verdict {
	t.Helper()
	v := r.askOne(t, r.event, cmd, dir)
	if r.then == nil || v.run == "" {
		return v
	}
	second := r.askOne(t, r.then, v.run, dir)
	second.raw = v.raw + "\nthen: " + second.raw
	return second
}

// askOne runs the hook command for one event of the call.
func (r route) askOne(t *testing.T, event func(cmd, dir string) map[string]any, cmd, dir string) verdict {
	t.Helper()
	in, err := json.Marshal(event(cmd, dir))
	if err != nil {
		t.Fatal(err)
	}
	server := "http://127.0.0.1:1" // nothing listens there: planserver is down
	session := "attack-offline"
	if r.srv != nil {
		server, session = r.srv.URL, r.srv.session
	}
	args := append(append([]string{}, r.binary[1:]...), r.host, "--server", server, "--session", session, "--timeout", "10s")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := exec.CommandContext(ctx, r.binary[0], args...)
	c.Stdin = bytes.NewReader(in)
	c.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.TempDir()}
	var stderr bytes.Buffer
	c.Stderr = &stderr
	out, err := c.Output()
	if err != nil {
		t.Fatalf("%s: the hook failed: %v\n%s", r.name, err, stderr.String())
	}
	var ans map[string]any
	if err := json.Unmarshal(out, &ans); err != nil {
		t.Fatalf("%s: the hook answered no JSON object: %v: %s", r.name, err, out)
	}
	v := verdict{raw: string(out)}
	switch r.host {
	case "claude-code":
		hso, _ := ans["hookSpecificOutput"].(map[string]any)
		switch hso["permissionDecision"] {
		case "deny":
			v.reason, _ = hso["permissionDecisionReason"].(string)
			return v
		case "allow":
			v.run = cmd
			if in, ok := hso["updatedInput"].(map[string]any); ok {
				v.run, _ = in["command"].(string)
			}
			return v
		}
		// No decision: Claude Code runs the command as it is.
		v.run = cmd
	case "cursor":
		switch ans["permission"] {
		case "deny":
			v.reason, _ = ans["agent_message"].(string)
			return v
		case "allow":
			v.run = cmd
			if in, ok := ans["updated_input"].(map[string]any); ok {
				v.run, _ = in["command"].(string)
			}
			return v
		}
		v.run = cmd
	}
	return v
}

// routes are every way a plan-mode shell call is judged: rewritten into
// the sandbox (Claude Code's PreToolUse), judged by the classifier alone
// where the host cannot rewrite (Cursor's beforeShellExecution), where the
// server runs no sandbox, and where planserver is down; and, for the
// network classes, rewritten into a sandbox that --allow-connect opens to
// one exact pair.
func routes(t *testing.T) []route {
	sandboxed := startServer(t, "sandboxed")
	strict := startServer(t, "no sandbox", "--hook-sandbox=off")
	// An operator's --hook-sandbox-allow-connect: exactly 127.0.0.1 and the
	// decoy's port ({{ALLOWPORT}}), which a command may reach; every other
	// address and port must stay out of reach, Fast Open and UDP included.
	allowing := startServer(t, "sandboxed, allow-connect", "--hook-sandbox-allow-connect=127.0.0.1:"+decoyPort(t))
	// The routes that repeat another's judgement (the allowlist of a
	// server without the sandbox is the allowlist of Cursor's route; the
	// hook alone sandboxes as the server does) take every fourth case.
	return []route{
		{name: "claude-code", host: "claude-code", event: claudeEvent, srv: sandboxed, binary: []string{hookBinary}, sandboxed: true},
		{name: "cursor-shell", host: "cursor", event: cursorShellEvent, srv: sandboxed, binary: []string{hookBinary}},
		// Cursor's two hooks on one shell call: preToolUse rewrites into
		// the sandbox, beforeShellExecution must then let exactly that
		// line run.
		{name: "cursor-two-hooks", host: "cursor", event: cursorPreToolEvent, then: cursorShellEvent, srv: sandboxed,
			binary: []string{hookBinary}, only: everyNth(2), sandboxed: true},
		{name: "claude-code-no-sandbox", host: "claude-code", event: claudeEvent, srv: strict, binary: []string{hookBinary},
			only: everyNth(4)},
		{name: "claude-code-offline", host: "claude-code", event: claudeEvent, binary: []string{binary, "hook"}, only: everyNth(4)},
		{name: "cursor-shell-offline", host: "cursor", event: cursorShellEvent, binary: []string{binary, "hook"}},
		{name: "claude-code-allow-connect", host: "claude-code", event: claudeEvent, srv: allowing, binary: []string{hookBinary},
			only: networkClass},
	}
}

// everyNth picks every nth case of the corpus (by its place in it).
func everyNth(n int) func(Case) bool {
	return func(c Case) bool { return c.Index%n == 0 }
}

// depth is how much of the corpus a run takes: all of it with
// PLANSERVER_ATTACKS=full (make test-attacks, which CI runs once, without
// the race detector: the code under test runs in other processes), else
// every fifth case on every route, so that make test (with the race
// detector, and the flaky-test hunt under a CPU hog) stays quick.
func depth(cases []Case) []Case {
	if os.Getenv("PLANSERVER_ATTACKS") == "full" {
		return cases
	}
	var out []Case
	for _, c := range cases {
		if c.Index%5 == 0 {
			out = append(out, c)
		}
	}
	return out
}

// networkClass picks the classes about sockets, which the allow-connect
// route runs too: there the command may make TCP sockets, and only the
// exact pair may be reached.
func networkClass(c Case) bool {
	for _, k := range []string{"/dev/tcp", "interpreters", "getent", "network", "allow-connect"} {
		if strings.Contains(c.Class, k) {
			return true
		}
	}
	return false
}

// TestAttackCorpus runs every case of the corpus through every route, for
// real, and checks that nothing changed.
func TestAttackCorpus(t *testing.T) {
	cases := depth(loadCorpus(t))
	rs := routes(t)
	// Every case on every route in one pool, so that the routes whose
	// cases are mostly refused (and quick) fill the time the sandboxed
	// runs spend waiting.
	for _, c := range cases {
		for _, r := range rs {
			if r.only != nil && !r.only(c) {
				continue
			}
			t.Run(r.name+"/"+c.Name, func(t *testing.T) {
				t.Parallel()
				attack(t, r, c)
			})
		}
	}
}

// attack runs one case on one route and checks every effect.
func attack(t *testing.T, r route, c Case) {
	e := newScene(t, r.srv)
	cmd := e.expand(c.Cmd)
	if c.Setup != "" {
		if out, err := e.shell(e.expand(c.Setup), false); err != nil {
			t.Fatalf("setup: %v\n%s", err, out)
		}
	}
	before := e.snapshot(t)
	v := r.ask(t, cmd, e.repo)
	if r.sandboxed && v.run != "" && os.Getenv("PLANSERVER_REQUIRE_SANDBOX") == "1" && !strings.Contains(v.run, " --read-only ") {
		t.Errorf("route %s let %q run outside the sandbox (PLANSERVER_REQUIRE_SANDBOX=1): %s", r.name, cmd, v.raw)
	}
	var out string
	if v.run != "" {
		out, _ = e.shell(v.run, true)
		// Effects that come late (a write from a process left behind)
		// have a moment to land before the checks.
		time.Sleep(150 * time.Millisecond)
	}
	problems := e.check(t, before)
	if len(problems) > 0 {
		t.Errorf("class %s: %q\nhook: %s\nran: %q\noutput: %s\n%s", c.Class, cmd, strings.TrimSpace(v.raw), v.run, clip(out, 2000),
			"- "+strings.Join(problems, "\n- "))
	}
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// TestReadsStillWork runs the reads an agent plans with through the
// sandboxed route, and compares each output with the same command run
// outside the sandbox: the same bytes, status 0.
func TestReadsStillWork(t *testing.T) {
	srv := startServer(t, "sandboxed")
	rs := []route{
		{name: "claude-code", host: "claude-code", event: claudeEvent, srv: srv, binary: []string{hookBinary}},
		{name: "cursor-two-hooks", host: "cursor", event: cursorPreToolEvent, then: cursorShellEvent, srv: srv, binary: []string{hookBinary}},
	}
	reads := []string{
		"ls -la",
		"ls -R src dir",
		"git log --format='%H %s'",
		"git log -p -1",
		"git diff HEAD~1",
		"git diff",
		"git status --porcelain",
		"git show --stat HEAD",
		"git branch --list",
		"grep -r TODO .",
		"grep -rn --include='*.go' func .",
		"go list ./...",
		"go vet ./... && echo vetted",
		"python3 tools/read.py",
		"node -e \"process.stdout.write(require('fs').readFileSync('notes.md', 'utf8'))\"",
		"find . -name '*.go' -not -path './.git/*' | sort",
		"cat notes.md | wc -l",
		"head -3 notes.md; tail -1 victim.txt",
		"sort dir/big.txt | uniq -c | sort -rn | head -3",
		"sed -n '1,2p' notes.md",
		"awk '{ print NR \": \" $0 }' notes.md",
		"jq -c '.' dir/data.json",
		"du -sh src >/dev/null && echo ok",
		"stat -c '%n %s' notes.md",
		"wc -c < notes.md",
		"for f in src/*.go; do echo $f; done",
		"echo \"$(git rev-parse --abbrev-ref HEAD)\"",
		"diff <(cat notes.md) notes.md && echo same",
		"xargs -n1 echo <<< 'a b c'",
		"env | grep -c '^PATH='",
	}
	for _, cmd := range reads {
		for _, r := range rs {
			if r.then != nil && strings.HasPrefix(cmd, "go ") {
				// The Go tool's reads prove the sandbox, not the route:
				// they run once, on Claude Code's, to keep the test quick.
				continue
			}
			t.Run(r.name+"/"+cmd, func(t *testing.T) {
				t.Parallel()
				readStillWorks(t, r, srv, cmd)
			})
		}
	}
}

// readStillWorks runs one read outside, then through route r, and
// compares.
func readStillWorks(t *testing.T, r route, srv *server, cmd string) {
	e := newScene(t, srv)
	want, err := e.shell(cmd, false)
	if err != nil {
		t.Fatalf("outside the sandbox: %v\n%s", err, want)
	}
	before := e.snapshot(t)
	v := r.ask(t, cmd, e.repo)
	if v.run == "" {
		t.Fatalf("plan mode refused a read: %s", v.reason)
	}
	got, err := e.shell(v.run, false)
	if err != nil {
		t.Fatalf("in plan mode: %v\nran: %s\n%s", err, v.run, got)
	}
	if got != want {
		t.Fatalf("in plan mode the output differs\nran: %s\noutside:\n%s\ninside:\n%s", v.run, want, got)
	}
	if !strings.Contains(v.run, " --read-only ") {
		t.Fatalf("the read ran outside the sandbox: %s", v.run)
	}
	if problems := e.check(t, before); len(problems) > 0 {
		t.Fatalf("the read changed something:\n- %s", strings.Join(problems, "\n- "))
	}
}

// httpClient bounds every request of the checks: a server an attack
// stopped must fail the case, not hang it.
var httpClient = &http.Client{Timeout: 3 * time.Second}

// sessionMode reads the session's effective mode from the server.
func (s *server) sessionMode(t *testing.T) string {
	resp, err := httpClient.Get(s.URL + "/v1/sessions/" + s.session)
	if err != nil {
		return "unreachable: " + err.Error()
	}
	defer resp.Body.Close()
	var sess struct {
		EffectiveMode string `json:"effective_mode"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&sess); err != nil {
		return "unreadable: " + err.Error()
	}
	return sess.EffectiveMode
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
