package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/client"
	"github.com/planserver/planserver/internal/cli"
	"github.com/spf13/cobra"
)

// The API commands are tested as a user runs them: the built binary, a
// subprocess, against a planserver serve subprocess on a real database.

// serveAt starts planserver serve on db at addr, so that a restart comes
// back where its clients look for it.
func serveAt(t *testing.T, db, addr string, extra ...string) *proc {
	t.Helper()
	args := append([]string{"serve", "--addr", addr, "--db", db}, extra...)
	return startCmd(t, addr, exec.Command(binary, args...), serverReady)
}

// stopServer ends p with SIGTERM, as an operator restarting it would.
func stopServer(t *testing.T, p *proc) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.done:
		p.done <- err // for the cleanup
	case <-time.After(20 * time.Second):
		t.Fatal("planserver did not stop")
	}
}

// cliResult is what a command printed and how it exited.
type cliResult struct {
	stdout, stderr string
	code           int
}

// cliCmd prepares the planserver binary with args against p, with extra
// environment variables (NAME=value).
func cliCmd(t *testing.T, p *proc, env []string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(), "PLANSERVER_URL=http://"+p.addr, "PLANSERVER_BIN="+binary)
	cmd.Env = append(cmd.Env, env...)
	return cmd
}

// cli runs the planserver binary with args against p, stdin as its input.
func cliRun(t *testing.T, p *proc, stdin string, env []string, args ...string) cliResult {
	t.Helper()
	cmd := cliCmd(t, p, env, args...)
	var out, errOut bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(stdin), &out, &errOut
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("planserver %v did not finish", args)
	}
	r := cliResult{stdout: out.String(), stderr: errOut.String()}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		r.code = exit.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return r
}

// ok runs a command that must succeed and returns its stdout.
func ok(t *testing.T, p *proc, args ...string) string {
	t.Helper()
	r := cliRun(t, p, "", nil, args...)
	if r.code != 0 {
		t.Fatalf("planserver %s: exit %d\n%s%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return r.stdout
}

// fails runs a command that must exit with code and returns its stderr.
func fails(t *testing.T, p *proc, code int, args ...string) string {
	t.Helper()
	r := cliRun(t, p, "", nil, args...)
	if r.code != code {
		t.Fatalf("planserver %s: exit %d, want %d\n%s%s", strings.Join(args, " "), r.code, code, r.stdout, r.stderr)
	}
	return r.stderr
}

// decode reads a command's --json output.
func decode[T any](t *testing.T, out string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	return v
}

// apiClient is a Go client of p, to set up what the commands act on.
func apiClient(t *testing.T, p *proc, opts ...client.Option) *client.Client {
	t.Helper()
	c, err := client.New("http://"+p.addr, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCLISessions(t *testing.T) {
	p := start(t, filepath.Join(t.TempDir(), "p.db"))
	main := decode[api.Session](t, ok(t, p, "session", "create", "--id", "main", "--title", "Refactor billing", "--agent", "coder", "--json"))
	if main.ID != "main" || main.Title != "Refactor billing" || main.Revision != 1 {
		t.Fatalf("created %+v", main)
	}
	// Flags after the arguments, metadata as JSON.
	ok(t, p, "session", "create", "--parent", "main", "--id", "main.worker", "--metadata", `{"pane":2}`)
	if out := ok(t, p, "session", "mode", "main", "plan"); !strings.Contains(out, "mode:") || !strings.Contains(out, "plan") {
		t.Errorf("mode:\n%s", out)
	}
	out := ok(t, p, "session", "get", "main.worker")
	if !regexp.MustCompile(`mode:\s+build \(effective plan, from main\)`).MatchString(out) {
		t.Errorf("get:\n%s", out)
	}
	out = ok(t, p, "session", "list")
	if !strings.Contains(out, "ID") || !regexp.MustCompile(`main\.worker\s+build\s+plan\s+none`).MatchString(out) {
		t.Errorf("list:\n%s", out)
	}
	if list := decode[[]api.Session](t, ok(t, p, "session", "list", "--parent", "main", "--json")); len(list) != 1 || list[0].Metadata["pane"] != float64(2) {
		t.Errorf("list --json: %+v", list)
	}
	if list := decode[[]api.Session](t, ok(t, p, "session", "list", "--limit", "1", "--json")); len(list) != 1 {
		t.Errorf("list --limit 1: %+v", list)
	}

	// Errors by class: conflict, not found, invalid, usage.
	if msg := fails(t, p, cli.ExitConflict, "session", "mode", "main", "build", "--if-match", "1"); !strings.Contains(msg, "version_conflict") {
		t.Errorf("stale --if-match: %s", msg)
	}
	fails(t, p, cli.ExitConflict, "session", "create", "--id", "main")
	if msg := fails(t, p, cli.ExitNotFound, "session", "get", "nobody"); !strings.HasPrefix(msg, "planserver: ") || !strings.Contains(msg, "not_found") {
		t.Errorf("missing: %s", msg)
	}
	if msg := fails(t, p, cli.ExitFailure, "session", "create", "--mode", "sideways"); !strings.Contains(msg, "invalid_argument") || !strings.Contains(msg, "mode: ") {
		t.Errorf("invalid mode: %s", msg)
	}
	fails(t, p, cli.ExitUsage, "session", "get")
	fails(t, p, cli.ExitUsage, "session", "get", "a", "b")
	fails(t, p, cli.ExitUsage, "session", "create", "--metadata", "[1]")
	fails(t, p, cli.ExitUsage, "session", "frobnicate")
}

func TestCLIPlans(t *testing.T) {
	p := start(t, filepath.Join(t.TempDir(), "p.db"))
	dir := t.TempDir()
	file := filepath.Join(dir, "release.md")
	if err := os.WriteFile(file, []byte("# Release 1.0\n\n- [ ] freeze\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := ok(t, p, "plan", "put", "release", file); out != "plan release created: revision 1\n" {
		t.Errorf("put: %q", out)
	}
	fails(t, p, cli.ExitConflict, "plan", "put", "release", file, "--create")
	// From standard input, with a title and a status.
	r := cliRun(t, p, "# Release 1.0\n\n- [ ] freeze\n- [ ] tag\n", nil, "plan", "put", "release", "--title", "Release 1.0",
		"--status", "draft", "--if-match", "1", "--json")
	if r.code != 0 || decode[api.Plan](t, r.stdout).Revision != 2 {
		t.Fatalf("put from stdin: %d %s %s", r.code, r.stdout, r.stderr)
	}
	out := ok(t, p, "plan", "get", "release")
	if !strings.Contains(out, "plan release, revision 2: Release 1.0") || !strings.Contains(out, "status draft") ||
		!strings.HasSuffix(out, "\n# Release 1.0\n\n- [ ] freeze\n- [ ] tag\n") {
		t.Errorf("get:\n%s", out)
	}
	if out := ok(t, p, "plan", "get", "release", "--markdown", "--revision", "1"); out != "# Release 1.0\n\n- [ ] freeze\n" {
		t.Errorf("get --markdown --revision 1: %q", out)
	}
	if pl := decode[api.Plan](t, ok(t, p, "plan", "get", "release", "--json")); pl.Status != "draft" {
		t.Errorf("get --json: %+v", pl)
	}
	// The YAML document round-trips through a file.
	doc := ok(t, p, "plan", "get", "release", "--yaml")
	yamlFile := filepath.Join(dir, "release.yaml")
	if err := os.WriteFile(yamlFile, []byte(strings.Replace(doc, "status: draft", "status: review", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	ok(t, p, "plan", "put", "release", yamlFile, "--if-match", "2")
	if out := ok(t, p, "plan", "status", "release"); out != "release: review (revision 3)\n" {
		t.Errorf("status: %q", out)
	}
	if st := decode[api.PlanStatus](t, ok(t, p, "plan", "status", "release", "in-progress", "--json")); st.Revision != 4 {
		t.Errorf("set status: %+v", st)
	}
	fails(t, p, cli.ExitConflict, "plan", "status", "release", "done", "--if-match", "3")
	out = ok(t, p, "plan", "history", "release")
	if !regexp.MustCompile(`(?s)REV\s+UPDATED.*\n4\s.*in-progress.*\n3\s.*review.*\n2\s.*\n1\s`).MatchString(out) {
		t.Errorf("history:\n%s", out)
	}
	out = ok(t, p, "plan", "diff", "release", "--from", "1", "--to", "2")
	if !strings.Contains(out, "--- plan release@1\n+++ plan release@2\n") || !strings.Contains(out, "\n+- [ ] tag\n") {
		t.Errorf("diff:\n%s", out)
	}
	if out := ok(t, p, "plan", "diff", "release", "--from", "3"); out != "" {
		t.Errorf("diff of status changes: %q", out)
	}
	if d := decode[api.Diff](t, ok(t, p, "plan", "diff", "release", "--from", "0", "--to", "1", "--json")); d.From != 0 || len(d.Hunks) != 1 {
		t.Errorf("diff --json: %+v", d)
	}
	fails(t, p, cli.ExitNotFound, "plan", "get", "nothing")
	fails(t, p, cli.ExitUsage, "plan", "get", "release", "--yaml", "--json")
	fails(t, p, cli.ExitUsage, "plan", "put", "x", yamlFile, "--title", "T")
}

// editor writes a shell script to use as $EDITOR and returns its path.
func editor(t *testing.T, script string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "editor.sh")
	if err := os.WriteFile(path, []byte("#!/bin/sh\nset -e\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// keptFile is the path plan edit says it kept the edit in.
var keptFile = regexp.MustCompile(`kept in (\S+planserver-\S+\.md)`)

func TestCLIPlanEdit(t *testing.T) {
	p := start(t, filepath.Join(t.TempDir(), "p.db"))
	c := apiClient(t, p)
	if _, err := c.PutPlanContent(t.Context(), "release", "# Release 1.0\n- [ ] freeze\n"); err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	env := []string{"TMPDIR=" + tmp}

	// The editor appends a line: written back with If-Match, temp file gone.
	appendLine := editor(t, `echo '- [ ] tag v1.0' >> "$1"`+"\n")
	r := cliRun(t, p, "", append(env, "EDITOR="+appendLine), "plan", "edit", "release")
	if r.code != 0 || r.stdout != "plan release updated: revision 2\n" {
		t.Fatalf("edit: %d %q %s", r.code, r.stdout, r.stderr)
	}
	if cur, _ := c.GetPlanContent(t.Context(), "release"); cur.Body != "# Release 1.0\n- [ ] freeze\n- [ ] tag v1.0\n" {
		t.Errorf("after edit: %q", cur.Body)
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "*")); len(left) != 0 {
		t.Errorf("temp files left: %v", left)
	}

	// An editor that changes nothing writes nothing.
	r = cliRun(t, p, "", append(env, "EDITOR=true"), "plan", "edit", "release")
	if st, _ := c.GetPlanStatus(t.Context(), "release"); r.code != 0 || !strings.Contains(r.stderr, "no changes") || st.Revision != 2 {
		t.Errorf("unchanged edit: %d %s, revision %d", r.code, r.stderr, st.Revision)
	}

	// Someone writes while the editor is open: nothing is written, the
	// edit is kept and its path printed.
	racing := editor(t, `"$PLANSERVER_BIN" plan status release in-progress >/dev/null
echo '- [ ] announce' >> "$1"
`)
	r = cliRun(t, p, "", append(env, "EDITOR="+racing), "plan", "edit", "release")
	if r.code != cli.ExitConflict || !strings.Contains(r.stderr, "conflict: plan release changed since you read revision 2 (it is at revision 3 now)") {
		t.Fatalf("edit under a concurrent write: %d %s", r.code, r.stderr)
	}
	m := keptFile.FindStringSubmatch(r.stderr)
	if m == nil {
		t.Fatalf("no kept file named: %s", r.stderr)
	}
	kept, err := os.ReadFile(strings.TrimSuffix(m[1], ";"))
	if err != nil || string(kept) != "# Release 1.0\n- [ ] freeze\n- [ ] tag v1.0\n- [ ] announce\n" {
		t.Errorf("kept file %s: %q %v", m[1], kept, err)
	}
	if cur, _ := c.GetPlanContent(t.Context(), "release"); cur.Revision != 3 || strings.Contains(cur.Body, "announce") {
		t.Errorf("the concurrent writer's plan was overwritten: %+v", cur)
	}

	// An editor that fails writes nothing and keeps the file.
	r = cliRun(t, p, "", append(env, "EDITOR=false"), "plan", "edit", "release")
	if r.code != cli.ExitFailure || keptFile.FindString(r.stderr) == "" {
		t.Errorf("failing editor: %d %s", r.code, r.stderr)
	}
	fails(t, p, cli.ExitNotFound, "plan", "edit", "nothing")
}

func TestCLISteps(t *testing.T) {
	p := start(t, filepath.Join(t.TempDir(), "p.db"))
	ok(t, p, "plan", "put", "csv", filepath.Join("..", "..", "docs", "examples", "csv-upload-plan.yaml"))
	out := ok(t, p, "steps", "ready", "csv")
	if !regexp.MustCompile(`STEP\s+OWNER\s+DEPS\s+DESCRIPTION\n1\s+DB-Agent\s+-\s+Design the database schema`).MatchString(out) {
		t.Errorf("ready:\n%s", out)
	}
	res := decode[api.StepResult](t, ok(t, p, "steps", "claim", "csv", "--worker", "db-1", "--lease", "10m", "--json"))
	if res.Step.ID != "1" || *res.Step.ClaimedBy != "db-1" {
		t.Fatalf("claim: %+v", res)
	}
	if msg := fails(t, p, cli.ExitNotFound, "steps", "claim", "csv", "--worker", "w2"); !strings.Contains(msg, "no step of plan csv is ready") {
		t.Errorf("nothing ready: %s", msg)
	}
	fails(t, p, cli.ExitConflict, "steps", "claim", "csv", "1", "--worker", "intruder")
	if out := ok(t, p, "steps", "claim", "csv", "1", "--worker", "db-1"); !strings.HasPrefix(out, "claimed step 1 of plan csv for db-1 until ") {
		t.Errorf("renew: %s", out)
	}
	out = ok(t, p, "steps", "report", "csv", "1", "--outcome", "success", "--worker", "db-1",
		"--details", "table added", "--artifact", "migrations/0042.sql:created")
	if !strings.HasPrefix(out, "reported success on step 1 of plan csv") {
		t.Errorf("report: %s", out)
	}
	if out := ok(t, p, "steps", "ready", "csv", "--owner", "Backend-Agent"); !strings.Contains(out, "\n2 ") {
		t.Errorf("ready after the report:\n%s", out)
	}
	ok(t, p, "steps", "claim", "csv", "--worker", "api-1", "--owner", "Backend-Agent")
	rep := decode[api.Report](t, ok(t, p, "steps", "report", "csv", "2", "--file", filepath.Join("..", "..", "docs", "examples", "report-step-2.json"), "--json"))
	if rep.Outcome != api.OutcomeSuccess || len(rep.Artifacts) != 3 || rep.Timestamp == nil {
		t.Errorf("report file: %+v", rep)
	}
	fails(t, p, cli.ExitUsage, "steps", "claim", "csv")
	fails(t, p, cli.ExitUsage, "steps", "report", "csv", "3")
	if msg := fails(t, p, cli.ExitConflict, "steps", "report", "csv", "4", "--outcome", "success"); !strings.Contains(msg, "deps_incomplete") {
		t.Errorf("report on a waiting step: %s", msg)
	}
}

// TestCLIExitStatuses: the classes a script tells apart, through the
// binary.
func TestCLIExitStatuses(t *testing.T) {
	db := filepath.Join(t.TempDir(), "p.db")
	p := start(t, db, "--auth", "token")
	admin := strings.TrimSpace(ok(t, p, "token", "create", "--role", "admin", "--name", "alice", "--db", db))
	// The CLI's message names its own ways to give a token, not the
	// HTTP header.
	if msg := fails(t, p, cli.ExitDenied, "session", "list"); !strings.Contains(msg, "unauthenticated") ||
		!strings.Contains(msg, "--token") || !strings.Contains(msg, "PLANSERVER_TOKEN") || strings.Contains(msg, "Authorization") {
		t.Errorf("no token: %s", msg)
	}
	if msg := fails(t, p, cli.ExitDenied, "session", "list", "--token", "ps_not-a-token"); !strings.Contains(msg, "--token") {
		t.Errorf("a bad token: %s", msg)
	}
	ok(t, p, "session", "create", "--id", "s", "--mode", "plan", "--token", admin)
	c := apiClient(t, p, client.WithToken(admin))
	agent, err := c.CreateToken(t.Context(), api.TokenCreate{Role: api.RoleAgent, SessionID: "s", Name: "coder"})
	if err != nil {
		t.Fatal(err)
	}
	r := cliRun(t, p, "", []string{"PLANSERVER_TOKEN=" + agent.Secret}, "session", "mode", "s", "build")
	if r.code != cli.ExitDenied || !strings.Contains(r.stderr, "permission_denied") {
		t.Errorf("agent leaving plan mode: %d %s", r.code, r.stderr)
	}
	// A --token on the command line wins over PLANSERVER_TOKEN.
	if r := cliRun(t, p, "", []string{"PLANSERVER_TOKEN=" + agent.Secret}, "session", "mode", "s", "build", "--token", admin); r.code != 0 {
		t.Errorf("admin token over the environment's: %d %s", r.code, r.stderr)
	}
	r = cliRun(t, p, "", nil, "session", "list", "--server", "http://"+freeAddr(t))
	if r.code != cli.ExitUnavailable || !strings.Contains(r.stderr, "cannot reach the planserver at http://") {
		t.Errorf("no server: %d %s", r.code, r.stderr)
	}
	fails(t, p, cli.ExitUsage, "session", "list", "--server", "localhost:8080")
}

// TestCLIHelp: --help on every API command prints its synopsis, only its
// own flags in --double-dash form with the environment variables of the
// connection flags, and the exit statuses, on stdout, and succeeds.
func TestCLIHelp(t *testing.T) {
	singleDash := regexp.MustCompile(`(^|[\s(\[])-[a-z][a-z-]+`)
	for group, cmds := range apiGroups() {
		for _, cmd := range cmds {
			var out, errOut bytes.Buffer
			args := append(strings.Fields(cmd), "--help")
			if err := run(context.Background(), args, noEnv, &out, &errOut); err != nil || errOut.Len() > 0 {
				t.Errorf("%v: %v %s", args, err, errOut.String())
				continue
			}
			help := out.String()
			for _, want := range []string{"Usage: planserver " + cmd, "--server url", "PLANSERVER_URL", "--token token",
				"PLANSERVER_TOKEN", "--json", "Exit status:", "  4  conflict"} {
				if !strings.Contains(help, want) {
					t.Errorf("%v: help lacks %q:\n%s", args, want, help)
				}
			}
			if m := singleDash.FindString(help); m != "" {
				t.Errorf("%v: single-dash flag %q:\n%s", args, m, help)
			}
			// Only its own flags: no other command's, and no environment
			// variable but the connection's.
			if cmd != "steps claim" && cmd != "steps report" && strings.Contains(help, "--worker") {
				t.Errorf("%v lists --worker", args)
			}
			if strings.Count(help, "PLANSERVER_") != 2 {
				t.Errorf("%v: environment variables beyond --server and --token:\n%s", args, help)
			}
		}
		var out bytes.Buffer
		if err := run(context.Background(), []string{group, "--help"}, noEnv, &out, noStderr(t)); err != nil ||
			(len(cmds) > 1 && !strings.Contains(out.String(), "planserver "+cmds[1])) {
			t.Errorf("%s --help: %v\n%s", group, err, out.String())
		}
	}
	var out bytes.Buffer
	if err := run(context.Background(), []string{"--help"}, noEnv, &out, noStderr(t)); err != nil ||
		!strings.Contains(out.String(), "planserver review list|show|approve|reject") {
		t.Errorf("planserver --help: %v\n%s", err, out.String())
	}
	// Through the binary: 0 for help, 2 for a wrong flag.
	for args, want := range map[string]int{"plan edit --help": 0, "review approve -h": 0, "events --frobnicate": 2} {
		err := exec.Command(binary, strings.Fields(args)...).Run()
		code := 0
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			code = exit.ExitCode()
		}
		if code != want {
			t.Errorf("planserver %s exited %d, want %d", args, code, want)
		}
	}
}

// apiGroups are the API commands' names ("plan get"), from the command
// tree, by their first word.
func apiGroups() map[string][]string {
	groups := map[string][]string{}
	var walk func(group string, c *cobra.Command)
	walk = func(group string, c *cobra.Command) {
		if !cli.IsGroup(c) {
			groups[group] = append(groups[group], c.CommandPath())
		}
		for _, sub := range c.Commands() {
			walk(group, sub)
		}
	}
	for _, c := range cli.APICommands(cli.Env{Getenv: noEnv}) {
		walk(c.Name(), c)
	}
	return groups
}

// noStderr is a writer that fails the test when written to: help goes to
// stdout.
func noStderr(t *testing.T) *failWriter { return &failWriter{t} }

type failWriter struct{ t *testing.T }

func (w *failWriter) Write(b []byte) (int, error) {
	w.t.Errorf("wrote to stderr: %s", b)
	return len(b), nil
}
