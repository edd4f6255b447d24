package attacks

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/planserver/planserver/internal/hosthook"
	"github.com/planserver/planserver/internal/sandbox"
	"github.com/planserver/planserver/internal/shellclass"
)

// fuzzParts are the pieces FuzzAttack composes a command from: effects,
// the forms that run them, the glue between them and the quoting that
// hides them. Every payload and wrapper of the corpus is among them.
var (
	fuzzEffects = append(append([]string{}, payloads...),
		"python3 -c \"open('pwned','w')\"", "cp notes.md pwned", "ln -s notes.md pwned", "truncate -s0 victim.txt",
		"git commit --allow-empty -qm x", "git config user.name x", "touch -d 2000-01-01 victim.txt",
		"sort -o pwned notes.md", "find . -name victim.txt -delete", "sed -i s/a/b/ victim.txt",
		"awk 'BEGIN{system(\"touch pwned\")}'", "ls", "cat notes.md", "grep -r TODO .", "git log -1")
	fuzzWrappers = wrappers
	fuzzGlue     = []string{"; ", " && ", " || ", " | ", "\n", " & "}
	fuzzQuotes   = []func(string) string{
		func(s string) string { return s },
		func(s string) string { return "eval " + sandbox.Quote(s) },
		func(s string) string { return "bash -c " + sandbox.Quote(s) },
		func(s string) string { return "x=" + sandbox.Quote(s) + "; $x" },
		func(s string) string { return "IFS=_; x=" + strings.ReplaceAll(s, " ", "_") + "; $x" },
		func(s string) string { return "f() { " + s + "; }; f" },
		func(s string) string { return "echo $(" + s + ")" },
		func(s string) string { return "cat <(" + s + ")" },
		func(s string) string { return "printf '%s\\n' " + sandbox.Quote(s) + " | sh" },
	}
)

// compose turns fuzz bytes into a command line: each pair of bytes picks
// an effect, a wrapper or quoting for it, and the glue to the next.
func compose(data []byte) string {
	var b strings.Builder
	for i := 0; i+2 < len(data) && i < 24; i += 3 {
		effect := fuzzEffects[int(data[i])%len(fuzzEffects)]
		var cmd string
		if data[i+1]&1 == 0 {
			cmd = fmt.Sprintf(fuzzWrappers[int(data[i+1]>>1)%len(fuzzWrappers)], effect)
		} else {
			cmd = fuzzQuotes[int(data[i+1]>>1)%len(fuzzQuotes)](effect)
		}
		if b.Len() > 0 {
			b.WriteString(fuzzGlue[int(data[i+2])%len(fuzzGlue)])
		}
		b.WriteString(cmd)
	}
	return b.String()
}

// FuzzAttack runs random compositions of the corpus's pieces through the
// hook's decision, as planserver takes it, with the real classifier and
// the real sandbox: rewritten into the sandbox where the host can rewrite
// (Claude Code), judged by the allowlist alone where it cannot (Cursor's
// beforeShellExecution). Whatever the decision lets run is run, and the
// disk, the sockets and the bystander are checked as the corpus checks
// them. `make fuzz` runs it at length; its seeds run in every make test.
func FuzzAttack(f *testing.F) {
	for _, seed := range [][]byte{
		{0, 0, 0}, {1, 2, 0, 3, 4, 1}, {7, 1, 2, 9, 3, 0}, {10, 5, 3, 2, 0, 1, 8, 9, 5},
		{11, 6, 0, 12, 8, 1, 20, 3, 4}, {14, 13, 2, 15, 15, 3}, {16, 17, 1, 24, 7, 0}, {5, 11, 4, 22, 1, 2},
	} {
		f.Add(seed)
	}
	policy := hosthook.Policy{Writes: shellclass.Writes, Strict: shellclass.StrictJudge(nil), Sandbox: hosthook.Sandbox{
		Available: true,
		Wrap: func(command string, w hosthook.Wrap) (string, error) {
			return sandbox.Wrap(binary, command, sandbox.WrapOptions{Explain: w.Explain})
		},
	}}
	f.Fuzz(func(t *testing.T, data []byte) {
		cmd := compose(data)
		if cmd == "" {
			return
		}
		for _, rewrite := range []bool{true, false} {
			e := newScene(t, nil)
			command := e.expand(cmd)
			call := hosthook.Call{Host: hosthook.ClaudeCode, Tool: "Bash", Kind: hosthook.Shell, Command: command}
			if rewrite {
				call.CanRewrite, call.CommandField = true, "command"
				call.Input = map[string]json.RawMessage{"command": json.RawMessage(`""`)}
			}
			d := hosthook.Decide(call, hosthook.Mode{Session: "fuzzed", Plan: true}, policy, hosthook.Facts{})
			before := e.snapshot(t)
			run := ""
			switch d.Outcome {
			case hosthook.Allow:
				run = command
			case hosthook.Rewrite:
				run = d.Command
			case hosthook.Deny:
			default:
				t.Fatalf("plan mode answered %v for %q", d.Outcome, command)
			}
			var out string
			if run != "" {
				out, _ = e.shell(run, true)
			}
			if problems := e.check(t, before); len(problems) > 0 {
				t.Fatalf("rewrite %v, %v: %q\noutput: %s\n- %s", rewrite, d.Outcome, command, clip(out, 1500), strings.Join(problems, "\n- "))
			}
		}
	})
}
