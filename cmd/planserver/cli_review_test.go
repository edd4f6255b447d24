package main

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/client"
	"github.com/planserver/planserver/internal/cli"
)

// planSession makes a session in plan mode whose agent wrote content and
// asked for review.
func planSession(t *testing.T, c *client.Client, id, content string) {
	t.Helper()
	ctx := t.Context()
	if _, err := c.CreateSession(ctx, api.SessionCreate{ID: client.Ptr(id), Title: "Refactor " + id, Agent: "coder", Mode: "plan"}); err != nil {
		t.Fatal(err)
	}
	rewrite(t, c, id, content)
}

// rewrite is the agent writing its plan again and asking for review.
func rewrite(t *testing.T, c *client.Client, id, content string) {
	t.Helper()
	if _, err := c.PutSessionPlan(t.Context(), id, api.SessionPlanWrite{Content: content}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.RequestReview(t.Context(), id, api.ReviewRequest{Rationale: client.Ptr("ready")}); err != nil {
		t.Fatal(err)
	}
}

func TestCLIReview(t *testing.T) {
	p := start(t, filepath.Join(t.TempDir(), "p.db"))
	c := apiClient(t, p)
	planSession(t, c, "billing", "# Plan\n1. Move totals\n2. Update callers\n")
	if _, err := c.CreateSession(t.Context(), api.SessionCreate{ID: client.Ptr("quiet")}); err != nil {
		t.Fatal(err)
	}

	out := ok(t, p, "review", "list")
	if !regexp.MustCompile(`SESSION\s+PLAN REV\s+REQUESTED.*\nbilling\s+1\s+\S+\s+coder\s+Refactor billing\s+ready\n$`).MatchString(out) {
		t.Errorf("inbox:\n%s", out)
	}
	out = ok(t, p, "review", "show", "billing")
	for _, want := range []string{"review pending of plan revision 1", "rationale: ready", "   2  1. Move totals\n",
		"no revision was reviewed before"} {
		if !strings.Contains(out, want) {
			t.Errorf("show lacks %q:\n%s", want, out)
		}
	}

	// Rejected with feedback and a comment on line 3.
	fails(t, p, cli.ExitUsage, "review", "reject", "billing")
	fails(t, p, cli.ExitUsage, "review", "reject", "billing", "--comment", "three:x")
	out = ok(t, p, "review", "reject", "billing", "--feedback", "Run the tests.", "--comment", "3:and the tests?")
	if out != "rejected revision 1 of the plan of session billing; it stays in plan mode\n" {
		t.Errorf("reject: %q", out)
	}
	if s, _ := c.GetSession(t.Context(), "billing"); len(s.Review.Comments) != 1 || s.Review.Comments[0].Line != 3 {
		t.Errorf("comments %+v", s.Review.Comments)
	}

	// Revision 2: show diffs it against the rejected revision 1.
	rewrite(t, c, "billing", "# Plan\n1. Move totals\n2. Update callers\n3. Run go test ./billing/...\n")
	out = ok(t, p, "review", "show", "billing")
	if !strings.Contains(out, `changes since revision 1, rejected by anonymous ("Run the tests."):`) ||
		!strings.Contains(out, "+3. Run go test ./billing/...\n") {
		t.Errorf("show after a rewrite:\n%s", out)
	}
	if v := decode[map[string]any](t, ok(t, p, "review", "show", "billing", "--json")); v["diff"] == nil || v["plan"] == nil {
		t.Errorf("show --json: %v", v)
	}

	// Asked on the terminal: anything but yes approves nothing.
	r := cliRun(t, p, "n\n", nil, "review", "approve", "billing")
	if r.code != cli.ExitFailure || !strings.Contains(r.stderr, "Approve revision 2 of the plan of session billing? [y/N]") ||
		!strings.Contains(r.stderr, "not approved") || !strings.Contains(r.stdout, "+3. Run go test") {
		t.Errorf("declined: %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	r = cliRun(t, p, "", nil, "review", "approve", "billing")
	if s, _ := c.GetSession(t.Context(), "billing"); r.code != cli.ExitFailure || s.Review.State != api.ReviewPending {
		t.Errorf("no answer: %d %s; review %s", r.code, r.stderr, s.Review.State)
	}
	r = cliRun(t, p, "yes\n", nil, "review", "approve", "billing", "--feedback", "Go.")
	if r.code != 0 || !strings.HasSuffix(r.stdout, "approved revision 2 of the plan of session billing: its mode is build\n") {
		t.Fatalf("approved: %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if s, _ := c.GetSession(t.Context(), "billing"); s.Mode != api.ModeBuild || *s.Review.Feedback != "Go." {
		t.Errorf("after approval: %+v", s.Review)
	}
	if out := ok(t, p, "review", "list"); strings.Contains(out, "billing") {
		t.Errorf("inbox after approval:\n%s", out)
	}
	// Nothing pending: the server says so, without a question.
	if msg := fails(t, p, cli.ExitConflict, "review", "approve", "billing"); !strings.Contains(msg, "review_not_pending") {
		t.Errorf("approve again: %s", msg)
	}

	// --yes approves at once, for scripts.
	planSession(t, c, "batch", "# Plan\n1. Do it\n")
	a := decode[api.Approval](t, ok(t, p, "review", "approve", "batch", "--yes", "--json"))
	if a.Mode != api.ModeBuild || a.Review.State != api.ReviewApproved {
		t.Errorf("--yes --json: %+v", a)
	}
	fails(t, p, cli.ExitNotFound, "review", "show", "nobody")
	if msg := fails(t, p, cli.ExitNotFound, "review", "show", "quiet"); !strings.Contains(msg, "has no plan yet") {
		t.Errorf("no plan: %s", msg)
	}
}

// TestCLIApproveBindsWhatWasShown: the agent rewrites its plan while the
// human reads the question; the approval names the revision shown, so it
// is refused and the new revision stays unapproved.
func TestCLIApproveBindsWhatWasShown(t *testing.T) {
	p := start(t, filepath.Join(t.TempDir(), "p.db"))
	c := apiClient(t, p)
	planSession(t, c, "s", "# Plan\n1. Small change\n")

	cmd := cliCmd(t, p, nil, "review", "approve", "s")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	br := bufio.NewReader(stderr)
	question := make([]byte, len("Approve revision 1"))
	if _, err := io.ReadFull(br, question); err != nil || string(question) != "Approve revision 1" {
		t.Fatalf("question %q %v", question, err)
	}
	rewrite(t, c, "s", "# Plan\n1. Small change\n2. rm -rf everything\n")
	io.WriteString(stdin, "y\n")
	stdin.Close()
	rest, _ := io.ReadAll(br)
	err = cmd.Wait()
	if cmd.ProcessState.ExitCode() != cli.ExitConflict ||
		!strings.Contains(string(rest), "changed since revision 1 was shown (it is at revision 2 now)") {
		t.Fatalf("approve of a rewritten plan: %v\n%s\n%s", err, stdout.String(), rest)
	}
	if s, _ := c.GetSession(t.Context(), "s"); s.Mode != api.ModePlan || s.Review.State != api.ReviewPending || *s.Review.PlanRevision != 2 {
		t.Errorf("after the refused approval: mode %s, review %+v", s.Mode, s.Review)
	}
}

// TestCLIReviewScope: review show says the scope an approval grants,
// review approve grants it (or, --scope full, a full build) and says so,
// and a scope that is neither is a usage error.
func TestCLIReviewScope(t *testing.T) {
	p := start(t, filepath.Join(t.TempDir(), "p.db"))
	c := apiClient(t, p)
	planSession(t, c, "scoped", "# Plan\n\n```scope\nfiles: [src/app.go]\n```\n")
	if out := ok(t, p, "review", "show", "scoped"); !strings.Contains(out, "scope an approval grants: files src/app.go; commands none; network none") {
		t.Errorf("show:\n%s", out)
	}
	fails(t, p, cli.ExitUsage, "review", "approve", "scoped", "--yes", "--scope", "narrow")
	if out := ok(t, p, "review", "approve", "scoped", "--yes"); !strings.Contains(out, "scoped build: files src/app.go") {
		t.Errorf("approve:\n%s", out)
	}
	planSession(t, c, "full", "# Plan\n\n```scope\nfiles: [docs/]\n```\n")
	if out := ok(t, p, "review", "approve", "full", "--yes", "--scope", "full"); !strings.Contains(out, "full build: no scope limits it") {
		t.Errorf("approve --scope full:\n%s", out)
	}
	if _, err := c.LiftScope(t.Context(), "scoped"); err != nil {
		t.Fatalf("lift: %v", err)
	}
	if _, err := c.LiftScope(t.Context(), "scoped"); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("lifting twice: %v", err)
	}
}
