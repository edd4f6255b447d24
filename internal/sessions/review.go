package sessions

import (
	"fmt"
	"strings"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/apierr"
	"github.com/planserver/planserver/internal/revision"
)

// ReviewComment is a reviewer's comment on one line of the reviewed plan.
type ReviewComment = api.ReviewComment

// ReviewRecord is a review that ended, as the history keeps it.
type ReviewRecord = api.ReviewRecord

// The review workflow: the agent asks for review of the plan revision it
// wrote (exit_plan_mode); a human who read that revision approves it, which
// moves the session's own mode to build, or rejects it with feedback. The
// rules that keep an approval bound to what the human read:
//
//   - Approval names the plan revision the human read (If-Match) and is
//     refused unless that is the current revision and the pending review
//     is for it.
//   - Rewriting the plan withdraws a pending review (state back to none):
//     the agent must ask again for the new revision, so an approval can
//     never apply to a revision the agent did not submit.
//   - Moving the session's own mode from plan to build directly (PATCH
//     …/mode) cancels its pending review: nothing is left to approve.
//
// Every review change bumps the session's revision, since the review is
// part of the session's representation. The functions below are the
// transitions, pure: the current review and plan in, the new review (or a
// coded error) out.

// pendingFor reports whether r is a pending review of plan revision rev.
func pendingFor(r Review, rev int64) bool {
	return r.State == ReviewPending && r.PlanRevision != nil && *r.PlanRevision == rev
}

// requestReview is the agent's exit_plan_mode: the review of the current
// plan revision, pending. changed is false when that review is pending
// already with the same rationale (asking again changes nothing). A
// previous decision and its feedback are cleared: the review describes the
// current round; the event log keeps the earlier ones. Errors: plan_missing,
// and pre's (If-Match names the plan revision the agent means).
func requestReview(s *Session, p *SessionPlan, rationale *string, pre revision.Precondition, now string) (r Review, changed bool, err error) {
	if p == nil {
		return Review{}, false, apierr.New(apierr.PlanMissing, "session %q has no plan to review; write one first (write_session_plan)", s.ID)
	}
	if err := pre.Check(planWhat(s.ID), true, p.Revision); err != nil {
		return Review{}, false, err
	}
	if pendingFor(s.Review, p.Revision) && sameSource(s.Review.Rationale, rationale) {
		return s.Review, false, nil
	}
	rev := p.Revision
	return Review{State: ReviewPending, PlanRevision: &rev, Rationale: rationale, RequestedAt: &now,
		Comments: []ReviewComment{}}, true, nil
}

// decision is what a human sends with an approval or a rejection.
type decision struct {
	state    string
	feedback *string
	comments []ReviewComment
}

// decide is a human's decision (approved or rejected) on the pending
// review of the plan revision pre names, with feedback and comments on
// lines of that revision. Errors: review_not_pending, invalid_argument (a
// comment on a line the plan does not have), and pre's (a plan edited
// since is 412).
//
// The decision records who made it: actor (a token's name or a person's
// email) and, for a signed-in human, person; each comment's author is the
// actor.
func decide(s *Session, p *SessionPlan, d decision, pre revision.Precondition, now, actor string, person *api.Person) (Review, error) {
	if p == nil {
		return Review{}, notPending(s)
	}
	if err := pre.Check(planWhat(s.ID), true, p.Revision); err != nil {
		return Review{}, err
	}
	if !pendingFor(s.Review, p.Revision) {
		return Review{}, notPending(s)
	}
	if err := checkComments(p, d.comments); err != nil {
		return Review{}, err
	}
	r := s.Review
	r.State, r.Feedback, r.DecidedAt, r.DecidedBy, r.DecidedByPerson = d.state, d.feedback, &now, &actor, person
	r.Scope = nil // an approval sets what it grants
	r.Comments = make([]ReviewComment, len(d.comments))
	for i, c := range d.comments {
		c.Author = actor
		r.Comments[i] = c
	}
	return r, nil
}

// approve is the human's approval. Approval must name what the human read:
// no If-Match is 428, and "*" or a list of revisions is 400, since neither
// says which revision was read.
func approve(s *Session, p *SessionPlan, d decision, pre revision.Precondition, now, actor string, person *api.Person) (Review, error) {
	if err := checkApprovalPrecondition(s.ID, pre); err != nil {
		return Review{}, err
	}
	d.state = ReviewApproved
	return decide(s, p, d, pre, now, actor, person)
}

// checkComments checks that each comment is anchored to a line of the
// reviewed plan revision and says something.
func checkComments(p *SessionPlan, comments []ReviewComment) error {
	lines := planLines(p.Content)
	var fields []apierr.FieldError
	for i, c := range comments {
		switch {
		case c.Line > lines:
			fields = append(fields, apierr.FieldError{Field: fmt.Sprintf("comments[%d].line", i),
				Message: fmt.Sprintf("plan revision %d has %d lines; comment on one of them", p.Revision, lines)})
		case strings.TrimSpace(c.Body) == "":
			fields = append(fields, apierr.FieldError{Field: fmt.Sprintf("comments[%d].body", i), Message: "must not be blank"})
		}
	}
	if len(fields) > 0 {
		return apierr.InvalidFields(fields)
	}
	return nil
}

// planLines counts the lines of a plan as a reader numbers them: a final
// newline ends the last line rather than starting another.
func planLines(content string) int {
	if content == "" {
		return 0
	}
	return strings.Count(strings.TrimSuffix(content, "\n"), "\n") + 1
}

// ended is the history's record of review r, which ended in state at at,
// by by (and person, when a signed-in human ended it).
func ended(r Review, state, at, by string, person *api.Person) ReviewRecord {
	comments := r.Comments
	if comments == nil {
		comments = []ReviewComment{}
	}
	return ReviewRecord{PlanRevision: r.PlanRevision, State: state, Rationale: r.Rationale, RequestedAt: r.RequestedAt,
		EndedAt: at, EndedBy: by, EndedByPerson: person, Feedback: r.Feedback, Comments: comments, Scope: r.Scope}
}

// closedReview records a pending review that ended without a decision, in
// the data of the event that ended it.
type closedReview struct {
	PlanRevision    *int64  `json:"plan_revision"`
	Rationale       *string `json:"rationale"`
	RequestedAt     *string `json:"requested_at"`
	SessionRevision int64   `json:"session_revision"`
	Reason          string  `json:"reason"`
}

// noReview is the review of a session that has none: a new session's, and
// what a pending review becomes when it ends without a decision.
func noReview() Review { return Review{State: ReviewNone, Comments: []ReviewComment{}} }

// closeReview ends pending review r without a decision: a plan rewrite
// withdraws it, leaving plan mode directly cancels it. It returns the
// review after (none) and the record of what ended, nil when r was not
// pending. sessionRevision is the session revision the change makes.
func closeReview(r Review, sessionRevision int64, reason string) (Review, *closedReview) {
	if r.State != ReviewPending {
		return r, nil
	}
	return noReview(), &closedReview{PlanRevision: r.PlanRevision, Rationale: r.Rationale,
		RequestedAt: r.RequestedAt, SessionRevision: sessionRevision, Reason: reason}
}

// checkApprovalPrecondition checks that an approval's If-Match names one
// plan revision. A weak tag names no revision and is left to fail the
// precondition.
func checkApprovalPrecondition(sessionID string, pre revision.Precondition) error {
	m := pre.IfMatch
	switch {
	case !m.Present:
		return apierr.New(apierr.PreconditionRequired,
			"approving the plan of session %q requires If-Match with the plan revision you read "+
				"(the ETag of GET /v1/sessions/%s/plan)", sessionID, sessionID)
	case m.Any || len(m.Revisions) > 1:
		return apierr.Invalid("If-Match", "must name the one plan revision you read, such as \"3\"; * and lists are not accepted here")
	}
	return nil
}

// notPending is the 409 for a decision with nothing to decide.
func notPending(s *Session) error {
	detail := fmt.Sprintf("session %q has no pending review (review state %s)", s.ID, s.Review.State)
	if s.Review.State == ReviewNone {
		detail += "; the agent asks for one with POST /v1/sessions/" + s.ID + "/plan/review (exit_plan_mode)"
	}
	return apierr.New(apierr.ReviewNotPending, "%s", detail)
}

// ApprovalNote explains an approval that leaves the session in plan mode:
// its own mode is build now, but an ancestor still in plan mode keeps its
// effective mode plan and its tools gated. Nil when the session left plan
// mode.
func ApprovalNote(s *Session) *string {
	if s.EffectiveMode != Plan || s.ModeSource == nil {
		return nil
	}
	n := fmt.Sprintf("plan approved and session %q's own mode is build, but its effective mode stays plan: "+
		"ancestor session %q is in plan mode, so tools stay gated until that session leaves plan mode",
		s.ID, *s.ModeSource)
	return &n
}
