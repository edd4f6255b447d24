package sessions

import (
	"fmt"

	"github.com/planserver/planserver/internal/apierr"
	"github.com/planserver/planserver/internal/revision"
)

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
// part of the session's representation.

// ReviewRequest is the body of POST …/plan/review (exit_plan_mode).
type ReviewRequest struct {
	Rationale *string `json:"rationale" validate:"omitempty,max=65536"`
}

// ReviewRejection is the body of POST …/plan/reject.
type ReviewRejection struct {
	Feedback *string `json:"feedback" validate:"omitempty,max=65536"`
}

// pendingFor reports whether r is a pending review of plan revision rev.
func (r Review) pendingFor(rev int64) bool {
	return r.State == ReviewPending && r.PlanRevision != nil && *r.PlanRevision == rev
}

// requested is the review after the agent asks for review of plan
// revision rev. A previous decision and its feedback are cleared: the
// review object describes the current round; the event log keeps the
// earlier ones.
func requested(rev int64, rationale *string, now string) Review {
	return Review{State: ReviewPending, PlanRevision: &rev, Rationale: rationale, RequestedAt: &now}
}

// decided is r after a human's decision.
func decided(r Review, state string, feedback *string, now, actor string) Review {
	r.State, r.Feedback, r.DecidedAt, r.DecidedBy = state, feedback, &now, &actor
	return r
}

// closeReview records the end of pending review r without a decision.
func closeReview(r Review, sessionRevision int64, reason string) *closedReview {
	return &closedReview{PlanRevision: r.PlanRevision, Rationale: r.Rationale, RequestedAt: r.RequestedAt,
		SessionRevision: sessionRevision, Reason: reason}
}

// checkApprovalPrecondition checks that an approval's If-Match names one
// plan revision. Approval must name what the human read: no If-Match is 428, and
// "*" or a list of revisions is 400, since neither says which revision was
// read. A weak tag names no revision and is left to fail the precondition.
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
