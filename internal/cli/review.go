package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/client"
	"github.com/spf13/pflag"
)

var reviewListCmd = &cliCommand{
	name: "review list", args: "", minArgs: 0, maxArgs: 0,
	summary: "list the sessions whose plan waits for review",
	help:    "List the sessions whose plan waits for a human's review: the inbox.\n",
	flags: func(fs *pflag.FlagSet) func(*cli, []string) error {
		return func(x *cli, _ []string) error {
			list, err := collectSessions(x, client.SessionQuery{ReviewState: api.ReviewPending}, 0)
			if err != nil {
				return err
			}
			return x.out(list, func(w io.Writer) {
				rows := make([][]string, len(list))
				for i, s := range list {
					rows[i] = []string{s.ID, revisionOf(s.Review.PlanRevision), OrDash(s.Review.RequestedAt), s.Agent,
						oneLine(s.Title, 30), oneLine(OrDash(s.Review.Rationale), 50)}
				}
				table(w, "SESSION\tPLAN REV\tREQUESTED\tAGENT\tTITLE\tRATIONALE", rows)
			})
		}
	},
}

var reviewShowCmd = &cliCommand{
	name: "review show", args: "SESSION", minArgs: 1, maxArgs: 1,
	summary: "show a session's plan and what changed since the last review",
	help: `Show a session's review, its plan with line numbers (for --comment), and
how the plan changed since the last revision a human approved or rejected.
`,
	flags: func(fs *pflag.FlagSet) func(*cli, []string) error {
		return func(x *cli, args []string) error {
			v, err := loadReview(x, args[0])
			if err != nil {
				return err
			}
			return x.out(v, func(w io.Writer) { v.print(w) })
		}
	},
}

var reviewApproveCmd = &cliCommand{
	name: "review approve", args: "SESSION", minArgs: 1, maxArgs: 1,
	summary: "approve a session's plan, which ends its plan mode",
	help: `Show the session's plan and what changed since the last review (as
'review show' does), ask for confirmation on the terminal, then approve
exactly the revision shown: if the agent rewrote the plan meanwhile, the
approval is refused and nothing changes. Approval sets the session's own
mode to build, limited to the scope the revision declares (its ` + "```" + `scope
block) when it declares one; --scope full approves for a full build
instead, which only an admin may do where a scope is declared. --yes
approves without asking.
`,
	flags: func(fs *pflag.FlagSet) func(*cli, []string) error {
		var yes bool
		var feedback optString
		var comments repeated
		fs.BoolVar(&yes, "yes", false, "approve without asking")
		fs.Var(&feedback, "feedback", "`text` for the agent, kept with the review")
		fs.Var(&comments, "comment", "a comment on a line of the plan, as `LINE:TEXT` (repeatable)")
		scope := fs.String("scope", "", "what the approval grants: `plan` (the revision's scope; the default when it declares one) or full")
		return func(x *cli, args []string) error {
			lines, err := parseComments(comments)
			if err != nil {
				return x.usage("%v", err)
			}
			if *scope != "" && *scope != api.ApproveScopePlan && *scope != api.ApproveScopeFull {
				return x.usage("--scope %q: want plan or full", *scope)
			}
			v, err := loadReview(x, args[0])
			if err != nil {
				return err
			}
			pending := v.Session.Review.State == api.ReviewPending
			if pending && !yes {
				// The JSON answer goes to stdout; what people read to
				// decide goes with the question.
				w := x.stdout
				if x.json {
					w = x.stderr
				}
				v.print(w)
				grant := ""
				switch {
				case v.Plan.Scope != nil && *scope != api.ApproveScopeFull:
					grant = " with its scope"
				case v.Plan.Scope != nil:
					grant = " for a FULL build, lifting its scope"
				}
				ok, err := confirm(x, fmt.Sprintf("Approve revision %d of the plan of session %s%s? [y/N] ", v.Plan.Revision, v.Session.ID, grant))
				if err != nil {
					return err
				}
				if !ok {
					return cliFail(nil, "not approved: nothing was changed")
				}
			}
			// A review that is not pending is sent all the same: the server
			// refuses it (review_not_pending) and says why.
			a, err := x.c.ApprovePlan(x.ctx, v.Session.ID, v.Plan.Revision, api.ReviewApproval{Feedback: feedback.v, Comments: lines, Scope: *scope})
			var e *client.Error
			if errors.Is(err, client.ErrVersionConflict) && errors.As(err, &e) && e.CurrentRevision != nil {
				return cliFail(err, "conflict: the plan of session %s changed since revision %d was shown (it is at revision %d now), "+
					"so it was not approved. Run 'planserver review show %s' and decide again.", v.Session.ID, v.Plan.Revision, *e.CurrentRevision, v.Session.ID)
			}
			if err != nil {
				return err
			}
			return x.out(a, func(w io.Writer) {
				fmt.Fprintf(w, "approved revision %d of the plan of session %s: its mode is %s", v.Plan.Revision, a.ID, a.Mode)
				if a.EffectiveMode != a.Mode {
					fmt.Fprintf(w, " (effective %s, from %s)", a.EffectiveMode, OrDash(a.ModeSource))
				}
				fmt.Fprintln(w)
				if b := a.BuildScope; b != nil {
					fmt.Fprintf(w, "scoped build: %s\n", scopeText(b.Scope))
				} else if a.Scope == api.ApproveScopeFull && v.Plan.Scope != nil {
					fmt.Fprintln(w, "full build: no scope limits it")
				}
				if a.Note != nil {
					fmt.Fprintln(w, *a.Note)
				}
			})
		}
	},
}

var reviewRejectCmd = &cliCommand{
	name: "review reject", args: "SESSION", minArgs: 1, maxArgs: 1,
	summary: "reject a session's plan with feedback",
	help: `Reject the plan under review with feedback and comments on its lines (see
'review show' for the numbers); the session stays in plan mode, and its
agent reads them with the plan. The rejection names the revision under
review: if the plan changed meanwhile, it is refused.
`,
	flags: func(fs *pflag.FlagSet) func(*cli, []string) error {
		var feedback optString
		var comments repeated
		fs.Var(&feedback, "feedback", "what the agent should change (`text`)")
		fs.Var(&comments, "comment", "a comment on a line of the plan, as `LINE:TEXT` (repeatable)")
		scope := fs.String("scope", "", "what the approval grants: `plan` (the revision's scope; the default when it declares one) or full")
		return func(x *cli, args []string) error {
			lines, err := parseComments(comments)
			if err != nil {
				return x.usage("%v", err)
			}
			if *scope != "" && *scope != api.ApproveScopePlan && *scope != api.ApproveScopeFull {
				return x.usage("--scope %q: want plan or full", *scope)
			}
			if feedback.v == nil && len(lines) == 0 {
				return x.usage("say why: --feedback, --comment or both")
			}
			s, err := x.c.GetSession(x.ctx, args[0])
			if err != nil {
				return err
			}
			var opts []client.CallOption
			if s.Review.State == api.ReviewPending && s.Review.PlanRevision != nil {
				// The comments are on this revision's lines.
				opts = append(opts, client.IfMatch(*s.Review.PlanRevision))
			}
			r, err := x.c.RejectPlan(x.ctx, s.ID, api.ReviewRejection{Feedback: feedback.v, Comments: lines}, opts...)
			if err != nil {
				return err
			}
			return x.out(r, func(w io.Writer) {
				fmt.Fprintf(w, "rejected revision %s of the plan of session %s; it stays in %s mode\n",
					revisionOf(r.Review.PlanRevision), r.ID, r.EffectiveMode)
			})
		}
	},
}

// reviewView is what a reviewer reads before deciding.
type reviewView struct {
	Session *api.Session     `json:"session"`
	Plan    *api.SessionPlan `json:"plan"`
	// LastDecision is the newest review a human decided (approved or
	// rejected), nil before the first.
	LastDecision *api.ReviewRecord `json:"last_decision"`
	// Diff is how the plan changed since LastDecision's revision; nil
	// without one, or when that revision is no longer kept.
	Diff *api.Diff `json:"diff"`
	// diffText is Diff as a unified diff; pruned says LastDecision's
	// revision is no longer kept, so there is no diff.
	diffText string
	pruned   bool
}

// loadReview reads a session, its plan and its review history, and diffs
// the plan against the last revision a human decided on.
func loadReview(x *cli, id string) (*reviewView, error) {
	s, err := x.c.GetSession(x.ctx, id)
	if err != nil {
		return nil, err
	}
	plan, err := x.c.GetSessionPlan(x.ctx, id)
	if errors.Is(err, client.ErrNotFound) {
		return nil, cliFail(err, "session %s has no plan yet: nothing to review", id)
	}
	if err != nil {
		return nil, err
	}
	h, err := x.c.ReviewHistory(x.ctx, id)
	if err != nil {
		return nil, err
	}
	v := &reviewView{Session: s, Plan: plan}
	for i, r := range h.Reviews {
		if (r.State == api.ReviewApproved || r.State == api.ReviewRejected) && r.PlanRevision != nil {
			v.LastDecision = &h.Reviews[i]
			break
		}
	}
	if v.LastDecision == nil || *v.LastDecision.PlanRevision == plan.Revision {
		return v, nil
	}
	r := client.DiffRange{From: v.LastDecision.PlanRevision, To: &plan.Revision}
	v.diffText, err = x.c.DiffSessionPlanText(x.ctx, id, r)
	if err == nil && x.json {
		v.Diff, err = x.c.DiffSessionPlan(x.ctx, id, r)
	}
	if errors.Is(err, client.ErrNotFound) {
		v.pruned = true
		return v, nil
	}
	return v, err
}

// print shows the review for people.
func (v *reviewView) print(w io.Writer) {
	s, p := v.Session, v.Plan
	fmt.Fprintf(w, "session %s", s.ID)
	if s.Title != "" {
		fmt.Fprintf(w, ": %s", s.Title)
	}
	fmt.Fprintf(w, " (agent %s, mode %s)\n", orNone(s.Agent), s.EffectiveMode)
	fmt.Fprintf(w, "review %s", s.Review.State)
	if s.Review.PlanRevision != nil {
		fmt.Fprintf(w, " of plan revision %d", *s.Review.PlanRevision)
	}
	if s.Review.RequestedAt != nil {
		fmt.Fprintf(w, ", requested %s", *s.Review.RequestedAt)
	}
	fmt.Fprintln(w)
	if s.Review.Rationale != nil {
		fmt.Fprintf(w, "rationale: %s\n", *s.Review.Rationale)
	}
	fmt.Fprintf(w, "\nplan revision %d, by %s, %s:\n", p.Revision, orNone(p.Author), p.UpdatedAt)
	for i, line := range strings.Split(strings.TrimSuffix(p.Content, "\n"), "\n") {
		fmt.Fprintf(w, "%4d  %s\n", i+1, line)
	}
	if p.Scope != nil {
		fmt.Fprintf(w, "\nscope an approval grants: %s\n", scopeText(*p.Scope))
	} else {
		fmt.Fprintln(w, "\nno scope declared: an approval is a full build")
	}
	d := v.LastDecision
	switch {
	case d == nil:
		fmt.Fprintln(w, "\nno revision was reviewed before: all of it is new.")
	case *d.PlanRevision == p.Revision:
		fmt.Fprintf(w, "\nthis revision was %s already, by %s.\n", d.State, d.EndedBy)
	default:
		fmt.Fprintf(w, "\nchanges since revision %d, %s by %s", *d.PlanRevision, d.State, d.EndedBy)
		if d.Feedback != nil {
			fmt.Fprintf(w, " (%q)", *d.Feedback)
		}
		fmt.Fprintln(w, ":")
		switch {
		case v.pruned:
			fmt.Fprintln(w, "(that revision is no longer kept)")
		case v.diffText == "":
			fmt.Fprintln(w, "(the content is the same)")
		}
		fmt.Fprint(w, v.diffText)
	}
}

// confirm asks question on stderr and reads the answer from stdin: only y
// or yes is a yes; no answer (end of input) is a no.
func confirm(x *cli, question string) (bool, error) {
	fmt.Fprint(x.stderr, question)
	line, err := bufio.NewReader(x.stdin).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return false, err
	}
	answer := strings.ToLower(strings.TrimSpace(line))
	if errors.Is(err, io.EOF) && line == "" {
		fmt.Fprintln(x.stderr)
	}
	return answer == "y" || answer == "yes", nil
}

// parseComments parses --comment LINE:TEXT values.
func parseComments(values []string) ([]api.ReviewComment, error) {
	var out []api.ReviewComment
	for _, v := range values {
		line, text, ok := strings.Cut(v, ":")
		n, err := strconv.Atoi(strings.TrimSpace(line))
		if !ok || err != nil || n < 1 || strings.TrimSpace(text) == "" {
			return nil, fmt.Errorf("--comment %q: want LINE:TEXT, e.g. 3:\"add a test step\"", v)
		}
		out = append(out, api.ReviewComment{Line: n, Body: strings.TrimSpace(text)})
	}
	return out, nil
}

// revisionOf shows an optional revision.
func revisionOf(rev *int64) string {
	if rev == nil {
		return "-"
	}
	return strconv.FormatInt(*rev, 10)
}

// scopeText is a scope on one line.
func scopeText(s api.Scope) string {
	list := func(l []string) string {
		if len(l) == 0 {
			return "none"
		}
		return strings.Join(l, ", ")
	}
	return "files " + list(s.Files) + "; commands " + list(s.Commands) + "; network " + list(s.Connect)
}
