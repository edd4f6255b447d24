//go:build linux && (amd64 || arm64)

package sandbox

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// wrapCases are commands whose text must reach bash -c unchanged.
var wrapCases = map[string]string{
	"plain":          "ls -la",
	"single quotes":  `echo 'it'\''s' "it's" 'a''b'`,
	"here-document":  "cat <<'EOF'\n$HOME `x` 'q' \"d\"\nEOF\ncat <<EOF\n$((1+2))\nEOF",
	"newlines":       "echo one\necho two\n\n\necho three\n",
	"binary-looking": "printf '%s' '\x01\x02\x1b[31m\x7f\x80\xfe\xff' # \xc3\x28",
	"expansions":     `echo $HOME ${PATH%%:*} $(echo sub) ` + "`echo bq`" + ` !! \$ \\ *`,
	"quote at ends":  `'`,
	"empty":          "",
}

// TestWrapCommandQuoting runs the wrapped line with bash, with a stand-in
// for planserver that prints its arguments NUL-separated: bash must hand
// it exactly sandbox --read-only [--allow-connect L] -- bash -c COMMAND.
func TestWrapCommandQuoting(t *testing.T) {
	dir := t.TempDir()
	dump := filepath.Join(dir, "it's a planserver")
	if err := os.WriteFile(dump, []byte("#!/bin/sh\nfor a; do printf '%s\\0' \"$a\"; done\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, command := range wrapCases {
		for _, allow := range [][]string{nil, {"127.0.0.1:8080", "example.com:443"}} {
			line, err := WrapCommand(dump, command, allow)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			out, err := exec.Command("bash", "-c", line).Output()
			if err != nil {
				t.Fatalf("%s: bash -c %q: %v", name, line, err)
			}
			want := []string{"sandbox", "--read-only"}
			if allow != nil {
				want = append(want, "--allow-connect", strings.Join(allow, ","))
			}
			want = append(want, "--", "bash", "-c", command)
			got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
			if strings.Join(got, "\x00") != strings.Join(want, "\x00") {
				t.Errorf("%s: bash passed %q, want %q", name, got, want)
			}
		}
	}
}

// TestWrapScoped: the scoped build's flags reach the sandbox exactly,
// quoted like the command (a glob, a quote, a space survive).
func TestWrapScoped(t *testing.T) {
	dir := t.TempDir()
	dump := filepath.Join(dir, "planserver")
	if err := os.WriteFile(dump, []byte("#!/bin/sh\nfor a; do printf '%s\\0' \"$a\"; done\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	o := WrapOptions{Project: "/p/it's here", AllowWrite: []string{"src/**/*.go", "docs/", "a b'c"}, Scoped: true,
		AllowConnect: []string{"proxy.golang.org:443"}, Explain: "widen the scope"}
	line, err := Wrap(dump, "sed -i s/a/b/ src/app.go", o)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("bash", "-c", line).Output()
	if err != nil {
		t.Fatalf("bash -c %q: %v", line, err)
	}
	want := []string{"sandbox", "--read-only", "--allow-connect", "proxy.golang.org:443", "--project", "/p/it's here",
		"--allow-write", "src/**/*.go", "--allow-write", "docs/", "--allow-write", "a b'c", "--build-scope",
		"--explain", "widen the scope", "--", "bash", "-c", "sed -i s/a/b/ src/app.go"}
	if got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00"); strings.Join(got, "\x00") != strings.Join(want, "\x00") {
		t.Errorf("bash passed %q, want %q", got, want)
	}
	if _, err := Wrap(dump, "true", WrapOptions{AllowWrite: []string{"a\x00"}}); err == nil {
		t.Errorf("a NUL in --allow-write was accepted")
	}
}

// TestWrapCommandRunsTheSame runs each command through the real sandbox
// (the test binary as planserver) and directly: same output, same status.
func TestWrapCommandRunsTheSame(t *testing.T) {
	needSandbox(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The stand-in answers "sandbox --read-only -- …" by running Run, as
	// planserver's own command does.
	for name, command := range wrapCases {
		line, err := WrapCommand(exe, command, nil)
		if err != nil {
			t.Fatal(err)
		}
		wrapped := exec.Command("bash", "-c", line)
		wrapped.Env = append(os.Environ(), "SANDBOX_TEST_CLI=1")
		var got, want bytes.Buffer
		wrapped.Stdout = &got
		errWrapped := wrapped.Run()
		plain := exec.Command("bash", "-c", command)
		plain.Stdout = &want
		errPlain := plain.Run()
		if got.String() != want.String() || exitCode(errWrapped) != exitCode(errPlain) {
			t.Errorf("%s: sandboxed %q (%v), direct %q (%v)", name, got.String(), errWrapped, want.String(), errPlain)
		}
	}
}

// TestWrapNamesTheLeanBinary: with planserver-sandbox beside planserver
// (as make build puts them), the line names it, not planserver sandbox,
// and --explain reaches it unchanged.
func TestWrapNamesTheLeanBinary(t *testing.T) {
	dir := t.TempDir()
	dump := "#!/bin/sh\nprintf '%s\\0' \"$0\"; for a; do printf '%s\\0' \"$a\"; done\n"
	for _, name := range []string{"planserver", LeanName} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(dump), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	explain := "Call ExitPlanMode; it's how"
	line, err := Wrap(filepath.Join(dir, "planserver"), "ls", WrapOptions{AllowConnect: []string{"localhost:80"}, Explain: explain})
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("bash", "-c", line).Output()
	if err != nil {
		t.Fatalf("bash -c %q: %v", line, err)
	}
	got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	want := []string{filepath.Join(dir, LeanName), "--read-only", "--allow-connect", "localhost:80", "--explain", explain, "--", "bash", "-c", "ls"}
	if strings.Join(got, "\x00") != strings.Join(want, "\x00") {
		t.Errorf("bash passed %q, want %q", got, want)
	}
	// Not executable: planserver sandbox again.
	if err := os.Chmod(filepath.Join(dir, LeanName), 0o644); err != nil {
		t.Fatal(err)
	}
	if line, _ := WrapCommand(filepath.Join(dir, "planserver"), "ls", nil); !strings.Contains(line, "planserver' sandbox --read-only") {
		t.Errorf("without an executable planserver-sandbox: %s", line)
	}
}

func TestWrapCommandRefusesNUL(t *testing.T) {
	if _, err := WrapCommand("/bin/planserver", "echo a\x00b", nil); err == nil {
		t.Error("a command with NUL was wrapped")
	}
	if _, err := WrapCommand("/bin/planserver", "ls", []string{"nohost"}); err == nil {
		t.Error("a bad --allow-connect was wrapped")
	}
	if _, err := WrapCommand("", "ls", nil); err == nil {
		t.Error("an empty planserver path was wrapped")
	}
}

// TestUnwrap: Unwrap gives back the command and explanation of every line
// Wrap makes, and takes it apart into the very words bash hands the
// sandbox (a stand-in prints them); a line with any other shell syntax is
// not of Wrap's shape.
func TestUnwrap(t *testing.T) {
	dir := t.TempDir()
	dump := filepath.Join(dir, "it's a planserver")
	if err := os.WriteFile(dump, []byte("#!/bin/sh\nfor a; do printf '%s\\0' \"$a\"; done\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	options := []WrapOptions{
		{},
		{AllowConnect: []string{"127.0.0.1:8080"}, Explain: "[planserver] plan mode: it's read-only; write the plan"},
		{Project: "/p q", AllowWrite: []string{"src/*.go", "it's.md"}, Scoped: true, Explain: "scoped"},
	}
	for name, command := range wrapCases {
		for _, o := range options {
			line, err := Wrap(dump, command, o)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			got, explain, ok := Unwrap(line)
			if !ok || got != command || explain != o.Explain {
				t.Errorf("%s: Unwrap(%q) = %q, %q, %v", name, line, got, explain, ok)
				continue
			}
			out, err := exec.Command("bash", "-c", line).Output()
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			words, _ := unquoteWords(line)
			bash := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
			if strings.Join(words[1:], "\x00") != strings.Join(bash, "\x00") {
				t.Errorf("%s: unquoteWords %q, bash %q", name, words[1:], bash)
			}
		}
	}
	// The words form: the words come back quoted, as a command of them,
	// and bash hands the sandbox exactly those words.
	for _, argv := range [][]string{{"ls", "-la"}, {"git", "log", "--", "it's a file"}, {"grep", "-r", `a\b`, "--", "-x"}} {
		o := WrapOptions{Explain: "-- bash -c", Argv: argv}
		line, err := Wrap(dump, "the command these words are", o)
		if err != nil {
			t.Fatal(err)
		}
		got, explain, ok := Unwrap(line)
		quoted := make([]string, len(argv))
		for i, w := range argv {
			quoted[i] = Quote(w)
		}
		if !ok || got != strings.Join(quoted, " ") || explain != o.Explain {
			t.Errorf("Unwrap(%q) = %q, %q, %v", line, got, explain, ok)
		}
		out, err := exec.Command("bash", "-c", line).Output()
		if err != nil {
			t.Fatal(err)
		}
		want := append([]string{"sandbox", "--read-only", "--explain", o.Explain, "--"}, argv...)
		if bash := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00"); strings.Join(bash, "\x00") != strings.Join(want, "\x00") {
			t.Errorf("%q: bash passed %q, want %q", line, bash, want)
		}
	}
	line, _ := Wrap(dump, "ls", WrapOptions{})
	for _, bad := range []string{
		line + "; touch x", line + " && touch x", line + " > f", "touch x; " + line, "$(touch x) " + line,
		line + " `touch x`", line + "\ntouch x", line + " ", " " + line, strings.Replace(line, " --read-only", "  --read-only", 1),
		"FOO=1 " + line, line[:len(line)-1], `"` + dump + `" --read-only -- bash -c 'ls'`,
		"ls", "", "-- bash -c", "x -- bash -c 'ls' 'more'", "x -- 'bash' 'ls'", "x --", "x --read-only",
		"x --explain", "x --unknown -- 'ls'", "x sandbox --explain 'e' --",
	} {
		if command, _, ok := Unwrap(bad); ok {
			t.Errorf("Unwrap(%q) = %q, ok: not Wrap's shape", bad, command)
		}
	}
}

// TestQuoteReadsAlikeInEveryShell: what Quote writes, bash, sh, zsh and
// fish each read back as the very bytes quoted. fish reads \' and \\
// inside single quotes as escapes, so a quoting that is right for POSIX
// shells alone would let a command that ends in a backslash close the
// quotes early there (and run what follows outside the sandbox). CI
// installs zsh and fish (PLANSERVER_REQUIRE_SANDBOX=1 makes them
// required); elsewhere a missing one is skipped, saying so.
func TestQuoteReadsAlikeInEveryShell(t *testing.T) {
	cases := []string{`a\`, `\'; touch marker #`, `\\`, `'\''`, `\`, `'`, `a\'b`, `x\\'y`, "tab\there", "é ü ∀"}
	for _, c := range wrapCases {
		cases = append(cases, c)
	}
	dir := t.TempDir()
	for _, shell := range []string{"bash", "sh", "zsh", "fish"} {
		path, err := exec.LookPath(shell)
		if err != nil {
			if shell == "bash" || shell == "sh" || os.Getenv("PLANSERVER_REQUIRE_SANDBOX") == "1" {
				t.Fatalf("%s is not installed: %v", shell, err)
			}
			t.Logf("%s is not installed here: not checked", shell)
			continue
		}
		for _, s := range cases {
			if strings.ContainsRune(s, utf8.RuneError) || !utf8.ValidString(s) {
				if shell == "fish" || shell == "zsh" {
					continue // they keep bytes that are not UTF-8 in ways of their own; bash and sh check those
				}
			}
			cmd := exec.Command(path, "-c", "printf '%s' "+Quote(s))
			cmd.Dir = dir
			out, err := cmd.Output()
			if err != nil || string(out) != s {
				t.Errorf("%s read %q back as %q (%v)", shell, s, out, err)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "marker")); !os.IsNotExist(err) {
		t.Error("a quoted string ran as a command")
	}
}
