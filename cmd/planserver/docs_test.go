package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestWalkthroughRunsAsWritten runs the shell blocks of docs/walkthrough.md
// in order, as a reader pasting them into a terminal would, against a real
// server on a fresh database, from the repository root. A block fenced
// "sh background" is one the reader leaves running in a terminal of its
// own: it is started in the background and stopped at the end.
//
// It fails when a command exits non-zero (bash -euo pipefail) and when a
// request is answered with a status the document does not show: every
// curl the blocks run goes through a wrapper on PATH that records, with
// the document line of the command (bash's DEBUG trap exports $LINENO),
// the status of the answer. An error status (400 and above) must be one
// the comment under that command shows ("status":412, # 204, HTTP/1.1
// 404), and a status the comment shows must be the one answered.
func TestWalkthroughRunsAsWritten(t *testing.T) {
	realCurl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("the walk-through needs curl, which this machine lacks:", err)
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	doc := filepath.Join(root, "docs", "walkthrough.md")
	src, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(src), "\n")
	script, blocks := walkthroughScript(lines)
	if blocks == 0 {
		t.Fatal("docs/walkthrough.md has no sh blocks")
	}

	p := start(t, filepath.Join(t.TempDir(), "walk.db"))
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	statusLog := filepath.Join(dir, "statuses")
	// The wrapper adds a trace file (which no snippet uses) to learn the
	// status, so the snippet's own -i, -D, -o and -w work as written.
	wrapper := `#!/bin/sh
trace=$(mktemp)
` + strconv.Quote(realCurl) + ` "$@" --trace-ascii "$trace"
rc=$?
status=$(sed -n 's/^0000: HTTP\/[0-9.]* \([0-9][0-9][0-9]\).*/\1/p' "$trace" | tail -n 1)
echo "${PLANSERVER_DOC_LINE:-0} ${status:-none} $rc" >>` + strconv.Quote(statusLog) + `
rm -f "$trace"
exit $rc
`
	if err := os.WriteFile(filepath.Join(bin, "curl"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	scriptFile := filepath.Join(dir, "walkthrough.sh")
	if err := os.WriteFile(scriptFile, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", scriptFile)
	cmd.Dir = root
	cmd.Env = append(os.Environ(),
		"PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"PLANSERVER_URL=http://"+p.addr,
		"WALKTHROUGH_BG="+dir,
		"EDITOR=false")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("docs/walkthrough.md failed (%v); the command that failed is the last one traced:\n%s", err, tail(string(out), 4000))
	}
	if !strings.Contains(string(out), "WALKTHROUGH DONE") {
		t.Fatalf("the walk-through stopped early:\n%s", tail(string(out), 4000))
	}

	// Every status, checked against what the document shows.
	f, err := os.Open(statusLog)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	seen := map[int]map[int]bool{} // command's first line -> statuses answered
	sc := bufio.NewScanner(f)
	requests := 0
	for sc.Scan() {
		var line, status, rc int
		var st string
		if _, err := fmt.Sscanf(sc.Text(), "%d %s %d", &line, &st, &rc); err != nil {
			t.Fatalf("status log: %q: %v", sc.Text(), err)
		}
		if st == "none" {
			// Only a stream stopped at the end has no status line yet.
			t.Errorf("docs/walkthrough.md:%d: curl got no answer (exit %d)", line, rc)
			continue
		}
		status, _ = strconv.Atoi(st)
		requests++
		first, want := expectedStatuses(lines, line-1)
		if seen[first] == nil {
			seen[first] = map[int]bool{}
		}
		seen[first][status] = true
		if status >= 400 && !want[status] {
			t.Errorf("docs/walkthrough.md:%d: answered %d, which the comment under the command does not show", line, status)
		}
	}
	for first, got := range seen {
		_, want := expectedStatuses(lines, first)
		for w := range want {
			if !got[w] {
				t.Errorf("docs/walkthrough.md:%d: the comment shows %d, the answers were %v", first+1, w, got)
			}
		}
	}
	if requests < 50 {
		t.Errorf("only %d requests recorded: the wrapper is not being used", requests)
	}
	// The script waited for the first stream left running to show the
	// mode change made after it started.
	if logs, _ := filepath.Glob(filepath.Join(dir, "bg-*.log")); len(logs) == 0 {
		t.Error("no background block ran")
	}
}

// walkthroughScript turns the document into one bash script whose line n
// is the document's line n, when that line is in an sh block (blank
// otherwise), so that $LINENO names the document's line. A background
// block runs in a subshell with its output in $WALKTHROUGH_BG/bg-N.log,
// stopped when the script ends.
func walkthroughScript(lines []string) (string, int) {
	out := make([]string, len(lines)+1)
	blocks := 0
	in, bg := false, false
	firstBG := ""
	for i, l := range lines {
		switch {
		case !in && (l == "```sh" || l == "```sh background"):
			in, bg = true, l == "```sh background"
			blocks++
			if bg {
				out[i] = "("
			}
		case in && l == "```":
			in = false
			if bg {
				// Wait for the stream to show it has started, so that what
				// the next blocks change is what it shows.
				log := fmt.Sprintf(`"$WALKTHROUGH_BG/bg-%d.log"`, i+1)
				out[i] = `) >` + log + ` 2>&1 & bgpids+=($!); waitfor ` + log + ` 'retry:'`
				if firstBG == "" {
					firstBG = log
				}
			}
		case in:
			out[i] = l
		}
	}
	// Line 1 is the title, never in a block: it carries the preamble.
	// The streams left running are stopped with their children (the curl
	// wrapper and curl) when the script ends; /proc lists a process's
	// children without procps. waitfor waits up to 60 s
	// for a pattern in a stream's output.
	out[0] = `set -euo pipefail -o functrace; bgpids=(); ` +
		`killtree() { local c; for c in $(cat /proc/"$1"/task/*/children 2>/dev/null); do killtree "$c"; done; kill "$1" 2>/dev/null || true; }; ` +
		`trap 'for p in "${bgpids[@]}"; do killtree "$p"; done' EXIT; ` +
		`waitfor() { for _ in $(seq 600); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done; echo "no $2 in $1:" >&2; cat "$1" >&2; return 1; }; ` +
		`trap 'export PLANSERVER_DOC_LINE=$LINENO' DEBUG`
	end := `trap - DEBUG; `
	if firstBG != "" {
		// The first stream shows the changes the later blocks made.
		end += `waitfor ` + firstBG + ` 'event: session.mode_changed'; `
	}
	out[len(lines)] = end + `echo WALKTHROUGH DONE`
	return strings.Join(out, "\n") + "\n", blocks
}

// expectedStatuses finds the command around line i (0-based) — the run of
// non-blank, non-comment lines it is in — and returns its first line and
// the statuses the comment lines right under it show.
func expectedStatuses(lines []string, i int) (int, map[int]bool) {
	isCmd := func(l string) bool {
		l = strings.TrimSpace(l)
		return l != "" && !strings.HasPrefix(l, "#") && !strings.HasPrefix(l, "```")
	}
	first, last := i, i
	for first > 0 && isCmd(lines[first-1]) {
		first--
	}
	for last+1 < len(lines) && isCmd(lines[last+1]) {
		last++
	}
	want := map[int]bool{}
	var shown []string
	for j := first; j <= last; j++ {
		if _, c, ok := strings.Cut(lines[j], " # "); ok {
			shown = append(shown, "# "+c)
		}
	}
	for j := last + 1; j < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[j]), "#"); j++ {
		shown = append(shown, strings.TrimSpace(lines[j]))
	}
	for _, c := range shown {
		for _, re := range statusShown {
			for _, m := range re.FindAllStringSubmatch(c, -1) {
				n, _ := strconv.Atoi(m[1])
				want[n] = true
			}
		}
	}
	return first, want
}

// statusShown are the ways a comment shows an answer's status.
var statusShown = []*regexp.Regexp{
	regexp.MustCompile(`"status":\s*(\d{3})\b`),
	regexp.MustCompile(`^#\s*(\d{3})\s*$`),
	regexp.MustCompile(`HTTP/[\d.]+ (\d{3})\b`),
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// TestCLIReferenceIsCurrent: docs/cli.md is what 'planserver docs cli'
// generates from the command tree now, so a flag or command added
// without regenerating it (make docs) fails here.
func TestCLIReferenceIsCurrent(t *testing.T) {
	want := cliReference()
	got, err := os.ReadFile(filepath.Join("..", "..", "docs", "cli.md"))
	if err != nil {
		t.Fatalf("%v: generate it with make docs", err)
	}
	if string(got) != want {
		gl, wl := strings.Split(string(got), "\n"), strings.Split(want, "\n")
		for i := 0; i < min(len(gl), len(wl)); i++ {
			if gl[i] != wl[i] {
				t.Fatalf("docs/cli.md is stale (run make docs): line %d is\n  %q\nwant\n  %q", i+1, gl[i], wl[i])
			}
		}
		t.Fatalf("docs/cli.md is stale (run make docs): %d lines, want %d", len(gl), len(wl))
	}
	// It documents what the commands are, not a list kept by hand.
	for _, c := range []string{"## planserver serve", "## planserver token create", "## planserver plan list",
		"## planserver session plan edit", "## planserver gate add", "--if-match", "PLANSERVER_ADDR"} {
		if !strings.Contains(want, c) {
			t.Errorf("the reference lacks %q", c)
		}
	}
}

// TestPackageListsAreComplete: docs/architecture.md and docs/development.md
// each list every package of the module, one line each on what it owns,
// and no package that is gone: a newcomer reads the layout there.
func TestPackageListsAreComplete(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.Dir}}", "github.com/planserver/planserver/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	var pkgs []string
	for _, dir := range strings.Fields(string(out)) {
		rel, err := filepath.Rel(root, dir)
		if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, filepath.ToSlash(rel)+"/")
	}
	listed := regexp.MustCompile(`(?m)^((?:api|client|cmd|integrations|internal|test|migrations|web)(?:/[a-z0-9-]+)*/)\s`)
	for _, doc := range []string{"architecture.md", "development.md"} {
		text, err := os.ReadFile(filepath.Join(root, "docs", doc))
		if err != nil {
			t.Fatal(err)
		}
		names := map[string]bool{}
		for _, m := range listed.FindAllStringSubmatch(string(text), -1) {
			names[m[1]] = true
		}
		for _, p := range pkgs {
			if !names[p] {
				t.Errorf("docs/%s does not list %s", doc, p)
			}
			delete(names, p)
		}
		for n := range names {
			if _, err := os.Stat(filepath.Join(root, n)); err != nil {
				t.Errorf("docs/%s lists %s, which is gone", doc, n)
			}
		}
	}
}
