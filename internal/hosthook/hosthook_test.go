package hosthook

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planserver/planserver/internal/shellclass"
)

func policy() Policy {
	return Policy{Writes: shellclass.Writes, Strict: shellclass.StrictJudge(nil)}
}

// sandboxPolicy is policy with a sandbox that wraps a command visibly.
func sandboxPolicy() Policy {
	p := policy()
	p.Sandbox = Sandbox{Available: true, Wrap: func(command string, w Wrap) (string, error) {
		if strings.ContainsRune(command, 0) {
			return "", errors.New("a NUL byte")
		}
		if w.Scope != nil {
			return fmt.Sprintf("SCOPED[%s|%s|%s|%s] %s", w.Scope.Project, strings.Join(w.Scope.Files, ","),
				strings.Join(w.Scope.Connect, ","), w.Explain, command), nil
		}
		return "SANDBOX[" + w.Explain + "] " + command, nil
	}}
	return p
}

// TestDecideShell: in plan mode every command the host lets the hook
// rewrite runs in the sandbox, reads included; a certain writer is denied
// first, saying what it writes; where nothing can be rewritten or no
// sandbox runs, only a plain read on the allowlist runs, as it is.
func TestDecideShell(t *testing.T) {
	rewritable := func(cmd string) Call {
		return Call{Host: ClaudeCode, Tool: "Bash", Kind: Shell, Command: cmd, CanRewrite: true, CommandField: "command", MCPName: "planserver",
			Input: map[string]json.RawMessage{"command": json.RawMessage(`"x"`), "description": json.RawMessage(`"d"`)}}
	}
	fixed := func(cmd string) Call { return Call{Host: Cursor, Tool: "Shell", Kind: Shell, Command: cmd} }
	noSandbox := policy()
	noSandbox.Sandbox = Sandbox{Why: "no Landlock"}
	for _, tc := range []struct {
		name   string
		call   Call
		p      Policy
		want   Outcome
		reason string
	}{
		{"a read runs sandboxed", rewritable("ls -la"), sandboxPolicy(), Rewrite, "read-only sandbox"},
		{"git log runs sandboxed", rewritable("git log | head"), sandboxPolicy(), Rewrite, "read-only sandbox"},
		{"an unknown command runs sandboxed", rewritable("python3 tools/read.py"), sandboxPolicy(), Rewrite, "read-only sandbox"},
		{"a redirection is denied early", rewritable("echo x > notes.txt"), sandboxPolicy(), Deny, "notes.txt"},
		{"rm is denied early", rewritable("rm -rf build"), sandboxPolicy(), Deny, "`rm`"},
		{"git commit is denied early", rewritable("git commit -am x"), sandboxPolicy(), Deny, "git commit"},
		{"a wrap that fails is denied", rewritable("ls\x00"), sandboxPolicy(), Deny, "cannot run in the read-only sandbox"},
		{"no rewrite: a plain read runs", fixed("grep -rn TODO ."), sandboxPolicy(), Allow, "allowlist"},
		{"no rewrite: git is refused", fixed("git log"), sandboxPolicy(), Deny, "cannot change the command"},
		{"no rewrite: a function is refused", fixed("ls; ls() { :; }"), sandboxPolicy(), Deny, "allowlist"},
		{"no sandbox: a plain read runs", rewritable("cat notes.md | wc -l"), noSandbox, Allow, "no Landlock"},
		{"no sandbox: an expansion is refused", rewritable("cat $f"), noSandbox, Deny, "no Landlock"},
		{"no command", rewritable("  "), sandboxPolicy(), Deny, "carried no command"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(tc.call, planSession(), tc.p, Facts{})
			if d.Outcome != tc.want || !strings.Contains(d.Reason, tc.reason) {
				t.Fatalf("%v %q, want %v with %q", d.Outcome, d.Reason, tc.want, tc.reason)
			}
			switch d.Outcome {
			case Rewrite:
				var got string
				if err := json.Unmarshal(d.Input["command"], &got); err != nil || !strings.HasPrefix(got, "SANDBOX[") ||
					!strings.HasSuffix(got, tc.call.Command) || string(d.Input["description"]) != `"d"` {
					t.Fatalf("rewritten input %s", d.Input)
				}
				if !strings.Contains(got, `"root"`) || !strings.Contains(got, "mcp__planserver__exit_plan_mode") {
					t.Fatalf("the sandbox's explanation does not say which session holds plan mode or what to do: %s", got)
				}
			case Deny:
				if !strings.Contains(d.Reason, `"root"`) && tc.reason != "carried no command" {
					t.Fatalf("the denial does not say which session holds plan mode: %s", d.Reason)
				}
			}
		})
	}
}

func planSession() Mode { return Mode{Session: "child", Plan: true, Source: "root"} }

// TestDecideNeverAsks: over every fixture of every host, plan mode answers
// allow, deny, rewrite or review, never anything a click could lift; build
// mode answers nothing.
func TestDecideNeverAsks(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "testdata", "hooks", "*", "*.json"))
	if err != nil || len(files) < 30 {
		t.Fatalf("fixtures: %v (%d)", err, len(files))
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		host, err := ParseHost(filepath.Base(filepath.Dir(f)))
		if err != nil {
			t.Fatal(err)
		}
		c, err := Parse(host, raw)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if c.Phase == After {
			continue // a report: TestReportsNeverDecide
		}
		if d := Decide(c, Mode{Session: "b"}, policy(), Facts{}); d.Outcome != None {
			t.Errorf("%s in build mode: %v", f, d.Outcome)
		}
		d := Decide(c, planSession(), policy(), Facts{})
		out := string(Render(host, c, d))
		if strings.Contains(out, `"ask"`) || d.Outcome == None {
			t.Errorf("%s in plan mode: %v %s", f, d.Outcome, out)
		}
		if d.Outcome == Deny && !strings.Contains(d.Reason, `"root"`) && !strings.Contains(d.Reason, "carried no") &&
			!strings.Contains(d.Reason, "plan mode is active") {
			t.Errorf("%s: the reason does not say which session holds plan mode: %s", f, d.Reason)
		}
	}
}

// TestFallbackReadsOnly: when planserver cannot be asked, reads and plain
// reads on the allowlist pass, a command the host can rewrite runs in the
// sandbox, and nothing else passes.
func TestFallbackReadsOnly(t *testing.T) {
	for _, c := range []struct {
		call Call
		want Outcome
	}{
		{Call{Tool: "Read", Kind: Read}, Allow},
		{Call{Tool: "Agent", Kind: Agent}, Allow},
		{Call{Tool: "Bash", Kind: Shell, Command: "grep -rn TODO . | head"}, Allow},
		// git is never on the strict table: a repository's configuration can make it run programs.
		{Call{Tool: "Bash", Kind: Shell, Command: "git log --oneline | head"}, Deny},
		{Call{Tool: "Bash", Kind: Shell, Command: "ls > out"}, Deny},
		{Call{Tool: "Bash", Kind: Shell, Command: strings.Repeat("ls ", shellclass.MaxCommandBytes)}, Deny},
		{Call{Tool: "Write", Kind: Write}, Deny},
		{Call{Tool: "mcp__x__y", Kind: MCP}, Deny},
		{Call{Tool: "ExitPlanMode", Kind: ExitPlan}, Deny},
		{Call{Tool: "Zap", Kind: Unknown}, Deny},
	} {
		if d := Fallback(c.call, policy(), os.ErrDeadlineExceeded); d.Outcome != c.want {
			t.Errorf("%s %q: %v, want %v", c.call.Tool, c.call.Command, d.Outcome, c.want)
		}
	}
	sandboxed := Call{Tool: "Bash", Kind: Shell, Command: "git log", CanRewrite: true, CommandField: "command",
		Input: map[string]json.RawMessage{"command": json.RawMessage(`"git log"`)}}
	if d := Fallback(sandboxed, sandboxPolicy(), os.ErrDeadlineExceeded); d.Outcome != Rewrite {
		t.Errorf("a rewritable command while planserver is down: %v, want it sandboxed", d.Outcome)
	}
	sandboxed.Command = "rm -rf build"
	if d := Fallback(sandboxed, sandboxPolicy(), os.ErrDeadlineExceeded); d.Outcome != Deny {
		t.Errorf("a certain writer while planserver is down: %v, want deny", d.Outcome)
	}
}

// FuzzParseRender: no input makes an adapter panic, and every answer is
// one JSON object; an input that cannot be read is refused.
func FuzzParseRender(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "hooks", "*", "*.json"))
	for _, file := range files {
		raw, _ := os.ReadFile(file)
		f.Add(filepath.Base(filepath.Dir(file)), raw)
	}
	f.Add("cursor", []byte(`{"hook_event_name":"beforeMCPExecution","tool_input":"{\"a\":"}`))
	f.Fuzz(func(t *testing.T, hostName string, raw []byte) {
		host, err := ParseHost(hostName)
		if err != nil {
			host = ClaudeCode
		}
		c, err := Parse(host, raw)
		d := Decide(c, planSession(), policy(), Facts{})
		if err != nil {
			d = Refusal(err.Error())
		}
		var m map[string]any
		if json.Unmarshal(Render(host, c, d), &m) != nil {
			t.Fatalf("not JSON: %s", Render(host, c, d))
		}
		if err != nil && d.Outcome != Deny {
			t.Fatalf("unreadable input not refused")
		}
	})
}

// TestClaudePlanFile: in plan mode Claude Code has the model write its
// plan to <config>/plans/NAME.md before ExitPlanMode; that one file is the
// model's notes (Planning), while every other write, however it is
// spelled, stays a Write.
func TestClaudePlanFile(t *testing.T) {
	const transcript = "/home/ann/.claude/projects/-work-repo/0b7c.jsonl"
	for _, tc := range []struct {
		tool, file, transcript string
		want                   Kind
	}{
		{"Write", "/home/ann/.claude/plans/quiet-fox.md", transcript, Planning},
		{"Edit", "/home/ann/.claude/plans/quiet-fox.md", transcript, Planning},
		{"MultiEdit", "/home/ann/.claude/plans/quiet-fox.md", transcript, Write},
		{"Write", "/home/ann/.claude/plans/quiet-fox.txt", transcript, Write},
		{"Write", "/home/ann/.claude/plans/sub/x.md", transcript, Write},
		{"Write", "/home/ann/.claude/plans/../settings.md", transcript, Write},
		{"Write", "/home/ann/.claude/plans/../../.bashrc", transcript, Write},
		{"Write", "/work/repo/.claude/plans/x.md", transcript, Write},
		{"Write", "plans/x.md", transcript, Write},
		{"Write", "/home/ann/.claude/plans/x.md", "/tmp/0b7c.jsonl", Write},
		{"Write", "/home/ann/.claude/plans/x.md", "", Write},
		{"Write", "/cfg/plans/x.md", "/cfg/projects/p/t.jsonl", Planning},
	} {
		raw, err := json.Marshal(map[string]any{"hook_event_name": "PreToolUse", "session_id": "s", "tool_name": tc.tool,
			"transcript_path": tc.transcript, "tool_input": map[string]any{"file_path": tc.file, "content": "# plan"}})
		if err != nil {
			t.Fatal(err)
		}
		c, err := Parse(ClaudeCode, raw)
		if err != nil {
			t.Fatalf("%s %s: %v", tc.tool, tc.file, err)
		}
		if c.Kind != tc.want {
			t.Errorf("%s %s (transcript %q): kind %v, want %v", tc.tool, tc.file, tc.transcript, c.Kind, tc.want)
		}
	}
}
