package shellclass

import (
	"slices"
	"testing"
)

// TestArgv: only a command bash would run with execve alone, word for
// word, comes back as words; anything a shell would expand, redirect,
// combine or run as a builtin does not.
func TestArgv(t *testing.T) {
	plain := map[string][]string{
		"ls -la":                     {"ls", "-la"},
		"git log --oneline -- 'a b'": {"git", "log", "--oneline", "--", "a b"},
		`grep -r "needle" src # why`: {"grep", "-r", "needle", "src"},
		`printf-x 'it'\''s'`:         {"printf-x", "it's"},
		"rg -n 'x*' --glob '*.go'":   {"rg", "-n", "x*", "--glob", "*.go"},
		"ls \\\n  -l":                {"ls", "-l"},
		"go list ./...":              {"go", "list", "./..."},
		"python3 -c 'print(1)'":      {"python3", "-c", "print(1)"},
		"ls \\*":                     {"ls", "*"},
		"cat 'a]b' \"[x\"":           {"cat", "a]b", "[x"},
	}
	for command, want := range plain {
		got, ok := Argv(command)
		if !ok || !slices.Equal(got, want) {
			t.Errorf("Argv(%q) = %q, %v; want %q", command, got, ok, want)
		}
	}
	for _, command := range []string{
		"", "ls *.go", "ls ?", "ls [ab]", "ls ~", "ls ~/x", "echo {a,b}", "ls $HOME", `ls "$HOME"`, "ls $(pwd)",
		"ls `pwd`", "ls $'a'", "ls > f", "ls 2>/dev/null", "ls < f", "ls | head", "ls; ls", "ls && ls", "ls &",
		"! ls", "X=1 ls", "(ls)", "{ ls; }", "echo hi", "cd /", "test -f x", "[ -f x ]", "[[ -f x ]]", "true",
		"exec ls", "command ls", "time ls", "type ls", "kill 1", "printf x", "pwd", "read x", "./script", "/bin/ls",
		"bin/tool x", "bash -c ls", "bash", "'' x", "ls <<EOF\nx\nEOF", "ls @(a|b)", "coproc ls", "if true; then ls; fi",
		"ls 'a'\\''b'*", "ls \r# ; touch x", "ls \"y\"\r", "ls a\\", "ls \\", "ls a\\\\\\",
	} {
		if got, ok := Argv(command); ok {
			t.Errorf("Argv(%q) = %q: needs a shell", command, got)
		}
	}
}

// TestReadsOtherwise: a command bash reads otherwise than the parser (a
// carriage return, a backslash at the very end) is neither allowed by the
// strict judge nor run as plain words; an escaped backslash at the end
// is what it looks like.
func TestReadsOtherwise(t *testing.T) {
	for _, command := range []string{"ls \r# ; touch x", "ls\r# ; touch x", "ls notes.md\r", "ls a\\", "ls a\\\\\\"} {
		if v := Strict(command, nil); v.Allowed {
			t.Errorf("Strict(%q) allowed it", command)
		}
		if _, ok := Argv(command); ok {
			t.Errorf("Argv(%q) took it for plain words", command)
		}
	}
	if got, ok := Argv(`ls a\\`); !ok || !slices.Equal(got, []string{"ls", `a\`}) {
		t.Errorf("Argv(`ls a\\\\`) = %q, %v", got, ok)
	}
	if v := Strict(`ls a\\`, nil); !v.Allowed {
		t.Errorf("Strict(`ls a\\\\`): %s", v.Reason)
	}
}
