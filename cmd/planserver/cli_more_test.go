package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/client"
	"github.com/planserver/planserver/internal/cli"
)

// TestCLIPlanListAndDelete: plan list with the API's filters and paging,
// plan delete with --if-match.
func TestCLIPlanListAndDelete(t *testing.T) {
	p := start(t, filepath.Join(t.TempDir(), "p.db"))
	if out := ok(t, p, "plan", "list"); out != "no plans\n" {
		t.Errorf("empty list: %q", out)
	}
	c := apiClient(t, p)
	for _, pl := range []struct{ name, status string }{{"alpha", "draft"}, {"beta", "done"}, {"gamma", "draft"}} {
		if _, err := c.PutPlan(t.Context(), pl.name, api.PlanWrite{Content: client.Ptr("# " + pl.name + "\n"), Status: client.Ptr(pl.status)}); err != nil {
			t.Fatal(err)
		}
	}
	out := ok(t, p, "plan", "list")
	if !regexp.MustCompile(`(?s)NAME\s+REV\s+STATUS.*\nalpha\s+1\s+draft.*\nbeta\s+1\s+done.*\ngamma\s+1\s+draft`).MatchString(out) {
		t.Errorf("list:\n%s", out)
	}
	if page := decode[api.PlanPage](t, ok(t, p, "plan", "list", "--status", "draft", "--json")); len(page.Plans) != 2 ||
		page.Plans[0].Name != "alpha" || page.Plans[1].Name != "gamma" {
		t.Errorf("--status draft: %+v", page)
	}
	if out := ok(t, p, "plan", "list", "--status", "archived"); out != "no plans with status archived\n" {
		t.Errorf("filtered to nothing: %q", out)
	}
	// One page, then the token that continues it, as the API pages.
	r := cliRun(t, p, "", nil, "plan", "list", "--limit", "2")
	m := regexp.MustCompile(`more plans: add --page-token (\S+)`).FindStringSubmatch(r.stderr)
	if r.code != 0 || m == nil || strings.Contains(r.stdout, "gamma") {
		t.Fatalf("--limit 2: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = cliRun(t, p, "", nil, "plan", "list", "--limit", "2", "--page-token", m[1])
	if r.code != 0 || !strings.Contains(r.stdout, "gamma") || strings.Contains(r.stdout, "alpha") || r.stderr != "" {
		t.Errorf("next page: %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	// Delete: a stale --if-match changes nothing.
	if msg := fails(t, p, cli.ExitConflict, "plan", "delete", "beta", "--if-match", "7"); !strings.Contains(msg, "version_conflict") {
		t.Errorf("stale delete: %s", msg)
	}
	if out := ok(t, p, "plan", "delete", "beta", "--if-match", "1"); out != "plan beta deleted\n" {
		t.Errorf("delete: %q", out)
	}
	fails(t, p, cli.ExitNotFound, "plan", "get", "beta")
	fails(t, p, cli.ExitNotFound, "plan", "delete", "beta")
	fails(t, p, cli.ExitUsage, "plan", "delete")
}

// TestCLISessionPlanAndTodos: session delete, session plan show|put|edit,
// session todos, through the binary.
func TestCLISessionPlanAndTodos(t *testing.T) {
	p := start(t, filepath.Join(t.TempDir(), "p.db"))
	c := apiClient(t, p)
	ok(t, p, "session", "create", "--id", "billing", "--mode", "plan")
	if msg := fails(t, p, cli.ExitNotFound, "session", "plan", "show", "billing"); !strings.Contains(msg, "session billing has no plan yet") {
		t.Errorf("show without a plan: %s", msg)
	}
	fails(t, p, cli.ExitNotFound, "session", "plan", "show", "nobody")

	// put from standard input, then from a file with --if-match.
	r := cliRun(t, p, "# Plan\n1. Move totals\n", nil, "session", "plan", "put", "billing")
	if r.code != 0 || r.stdout != "plan of session billing written: revision 1\n" {
		t.Fatalf("put: %d %q %s", r.code, r.stdout, r.stderr)
	}
	if _, err := c.RequestReview(t.Context(), "billing", api.ReviewRequest{}); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "plan.md")
	if err := os.WriteFile(file, []byte("# Plan\n1. Move totals\n2. Test\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fails(t, p, cli.ExitConflict, "session", "plan", "put", "billing", file, "--if-match", "5")
	fails(t, p, cli.ExitConflict, "session", "plan", "put", "billing", file, "--create")
	if sp := decode[api.SessionPlan](t, ok(t, p, "session", "plan", "put", "billing", file, "--if-match", "1", "--json")); sp.Revision != 2 {
		t.Errorf("put --json: %+v", sp)
	}
	if r := cliRun(t, p, "  \n", nil, "session", "plan", "put", "billing"); r.code != cli.ExitUsage || !strings.Contains(r.stderr, "the plan is empty") {
		t.Errorf("empty plan: %d %s", r.code, r.stderr)
	}
	// The rewrite withdrew the pending review; a rejection shows in show.
	if _, err := c.RequestReview(t.Context(), "billing", api.ReviewRequest{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.RejectPlan(t.Context(), "billing", api.ReviewRejection{Feedback: client.Ptr("Name the callers"),
		Comments: []api.ReviewComment{{Line: 3, Body: "which tests?"}}}, client.IfMatch(2)); err != nil {
		t.Fatal(err)
	}
	out := ok(t, p, "session", "plan", "show", "billing")
	for _, want := range []string{"plan of session billing, revision 2", "review: rejected (revision 2)", "feedback: Name the callers",
		"comment on line 3: which tests?", "\n# Plan\n1. Move totals\n2. Test\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("show lacks %q:\n%s", want, out)
		}
	}
	if out := ok(t, p, "session", "plan", "show", "billing", "--markdown"); out != "# Plan\n1. Move totals\n2. Test\n" {
		t.Errorf("show --markdown: %q", out)
	}

	// edit: written back with If-Match; a write meanwhile keeps the edit.
	tmp := t.TempDir()
	env := []string{"TMPDIR=" + tmp}
	r = cliRun(t, p, "", append(env, "EDITOR="+editor(t, `echo '3. Run the tests' >> "$1"`+"\n")), "session", "plan", "edit", "billing")
	if r.code != 0 || r.stdout != "plan of session billing written: revision 3\n" {
		t.Fatalf("edit: %d %q %s", r.code, r.stdout, r.stderr)
	}
	if sp, _ := c.GetSessionPlan(t.Context(), "billing"); sp.Content != "# Plan\n1. Move totals\n2. Test\n3. Run the tests\n" {
		t.Errorf("after edit: %q", sp.Content)
	}
	racing := editor(t, `printf '# Theirs\n' | "$PLANSERVER_BIN" session plan put billing >/dev/null
echo '4. Ship' >> "$1"
`)
	r = cliRun(t, p, "", append(env, "EDITOR="+racing), "session", "plan", "edit", "billing")
	if r.code != cli.ExitConflict || !strings.Contains(r.stderr, "conflict: the plan of session billing changed since you read revision 3 (it is at revision 4 now)") {
		t.Fatalf("edit under a concurrent write: %d %s", r.code, r.stderr)
	}
	m := keptFile.FindStringSubmatch(r.stderr)
	if m == nil {
		t.Fatalf("no kept file named: %s", r.stderr)
	}
	if kept, err := os.ReadFile(strings.TrimSuffix(m[1], ";")); err != nil || !strings.HasSuffix(string(kept), "3. Run the tests\n4. Ship\n") {
		t.Errorf("kept file: %q %v", kept, err)
	}
	if sp, _ := c.GetSessionPlan(t.Context(), "billing"); sp.Content != "# Theirs\n" {
		t.Errorf("the concurrent write was overwritten: %q", sp.Content)
	}
	// A session without a plan gets its first one from an empty file.
	ok(t, p, "session", "create", "--id", "fresh")
	r = cliRun(t, p, "", append(env, "EDITOR="+editor(t, `echo '# First plan' > "$1"`+"\n")), "session", "plan", "edit", "fresh")
	if r.code != 0 || r.stdout != "plan of session fresh written: revision 1\n" {
		t.Errorf("first plan by edit: %d %q %s", r.code, r.stdout, r.stderr)
	}
	r = cliRun(t, p, "", append(env, "EDITOR=true"), "session", "plan", "edit", "billing")
	if r.code != 0 || !strings.Contains(r.stderr, "no changes: the plan of session billing stays at revision 4") {
		t.Errorf("unchanged edit: %d %s", r.code, r.stderr)
	}

	// todos: none yet, then the agent's list.
	if out := ok(t, p, "session", "todos", "billing"); out != "session billing has no todo list: its agent never wrote one\n" {
		t.Errorf("no todos: %q", out)
	}
	if _, err := c.PutTodos(t.Context(), "billing", []api.TodoWrite{{Content: "Move totals", Status: "completed"},
		{Content: "Run the tests", Status: "in_progress"}, {Content: "Ship", Status: "pending"}}); err != nil {
		t.Fatal(err)
	}
	out = ok(t, p, "session", "todos", "billing")
	if !regexp.MustCompile(`(?s)STATUS\s+TODO\s+ID\n\[x\]\s+completed\s+Move totals\s+todo_\S+\n\[>\]\s+in_progress\s+Run the tests.*\n\[ \]\s+pending\s+Ship`).MatchString(out) {
		t.Errorf("todos:\n%s", out)
	}
	if l := decode[api.TodoList](t, ok(t, p, "session", "todos", "billing", "--json")); len(l.Todos) != 3 {
		t.Errorf("todos --json: %+v", l)
	}

	// delete: stale --if-match refused, then the tree goes.
	ok(t, p, "session", "create", "--id", "billing.worker", "--parent", "billing")
	fails(t, p, cli.ExitConflict, "session", "delete", "billing", "--if-match", "1")
	if out := ok(t, p, "session", "delete", "billing"); out != "session billing deleted, with its descendants\n" {
		t.Errorf("delete: %q", out)
	}
	fails(t, p, cli.ExitNotFound, "session", "get", "billing.worker")
	fails(t, p, cli.ExitNotFound, "session", "todos", "billing")
	fails(t, p, cli.ExitUsage, "session", "plan", "frobnicate", "x")
}

// TestCLIErrorsSayWhatIsWanted: the messages a newcomer hit.
func TestCLIErrorsSayWhatIsWanted(t *testing.T) {
	p := start(t, filepath.Join(t.TempDir(), "p.db"))
	ok(t, p, "plan", "put", "csv", filepath.Join("..", "..", "docs", "examples", "csv-upload-plan.yaml"))

	// A duration without its unit.
	if msg := fails(t, p, cli.ExitUsage, "steps", "claim", "csv", "--worker", "w", "--lease", "10"); !strings.Contains(msg, `invalid value "10" for flag --lease: want a duration such as 10m or 90s`) {
		t.Errorf("--lease 10: %s", msg)
	}
	if r := cliRun(t, p, "", nil, "serve", "--sse-heartbeat", "fast"); r.code != cli.ExitUsage || !strings.Contains(r.stderr, "want a duration such as 10m or 90s") {
		t.Errorf("serve --sse-heartbeat fast: %d %s", r.code, r.stderr)
	}

	// A bad PLANSERVER_URL is blamed on the variable, not on --server.
	r := cliRun(t, p, "", []string{"PLANSERVER_URL=localhost:8080"}, "session", "list")
	if r.code != cli.ExitUsage || !strings.Contains(r.stderr, `PLANSERVER_URL="localhost:8080" (from the environment)`) || strings.Contains(r.stderr, "--server:") {
		t.Errorf("bad PLANSERVER_URL: %d %s", r.code, r.stderr)
	}
	if r := cliRun(t, p, "", []string{"PLANSERVER_URL=http://" + p.addr}, "session", "list", "--server", "localhost:8080"); r.code != cli.ExitUsage || !strings.Contains(r.stderr, "--server: ") {
		t.Errorf("bad --server: %d %s", r.code, r.stderr)
	}
	r = cliRun(t, p, "", []string{"PLANSERVER_URL=http://" + freeAddr(t)}, "session", "list")
	if r.code != cli.ExitUnavailable || !strings.Contains(r.stderr, "(from PLANSERVER_URL)") {
		t.Errorf("unreachable PLANSERVER_URL: %d %s", r.code, r.stderr)
	}

	// invalid_argument: each detail once.
	msg := fails(t, p, cli.ExitFailure, "session", "create", "--mode", "sideways")
	if !strings.Contains(msg, "invalid_argument") || strings.Count(msg, "mode") != 1 {
		t.Errorf("one invalid field, printed more than once: %s", msg)
	}

	// Ids as typed, not as escaped on the wire.
	msg = fails(t, p, cli.ExitFailure, "steps", "claim", "csv", "x/y", "--worker", "w")
	if !strings.Contains(msg, `"x/y"`) || strings.Contains(msg, "%2F") {
		t.Errorf("steps claim csv x/y: %s", msg)
	}

	// Empty answers say so, and why.
	ok(t, p, "steps", "claim", "csv", "--worker", "db-1")
	if out := ok(t, p, "steps", "ready", "csv"); out != "no step is ready: 3 wait on deps, 1 claimed\n" {
		t.Errorf("nothing ready: %q", out)
	}
	if out := ok(t, p, "steps", "ready", "csv", "--owner", "Nobody"); out != "no step of owner Nobody is ready: plan csv has no step of that owner\n" {
		t.Errorf("nothing of that owner: %q", out)
	}
	if l := decode[api.StepList](t, ok(t, p, "steps", "ready", "csv", "--json")); len(l.Steps) != 0 {
		t.Errorf("ready --json: %+v", l)
	}

	// Event lines name the change.
	ok(t, p, "session", "create", "--id", "billing", "--mode", "plan")
	ok(t, p, "session", "mode", "billing", "build")
	ok(t, p, "plan", "status", "csv", "in-progress")
	out := ok(t, p, "events", "--types", "session.mode_changed,plan.status_changed,step.claimed")
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`session\.mode_changed\s+billing plan→build r2  by anonymous`),
		regexp.MustCompile(`plan\.status_changed\s+plan csv \(none\)→in-progress r3  by anonymous`),
		regexp.MustCompile(`step\.claimed\s+plan csv step 1 by db-1 r2  by anonymous`),
	} {
		if !want.MatchString(out) {
			t.Errorf("events lack %s:\n%s", want, out)
		}
	}
}
