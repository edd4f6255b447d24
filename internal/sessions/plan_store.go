package sessions

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/planserver/planserver/internal/apierr"
	"github.com/planserver/planserver/internal/events"
	"github.com/planserver/planserver/internal/revision"
	"github.com/planserver/planserver/internal/sqlite"
	"github.com/planserver/planserver/internal/validation"
)

const planColumns = `session_id, content, author, revision, created_at, updated_at`

// getPlan loads the plan of session id; nil when it has none.
func getPlan(ctx context.Context, q querier, id string) (*SessionPlan, error) {
	var p SessionPlan
	err := q.QueryRowContext(ctx, `SELECT `+planColumns+` FROM session_plans WHERE session_id = ?`, id).
		Scan(&p.SessionID, &p.Content, &p.Author, &p.Revision, &p.CreatedAt, &p.UpdatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get plan of session %q: %w", id, err)
	}
	return &p, nil
}

// mustExist returns not_found when session id does not exist.
func mustExist(ctx context.Context, q querier, id string) error {
	var n int
	if err := q.QueryRowContext(ctx, `SELECT count(*) FROM sessions WHERE id = ?`, id).Scan(&n); err != nil {
		return fmt.Errorf("find session %q: %w", id, err)
	}
	if n == 0 {
		return notFound(id)
	}
	return nil
}

// GetPlan returns the plan of session id. Errors: not_found (no such
// session, or no plan written yet).
func (st *Store) GetPlan(ctx context.Context, id string) (*SessionPlan, error) {
	var p *SessionPlan
	err := st.db.Read(ctx, func(tx *sql.Tx) error {
		if err := mustExist(ctx, tx, id); err != nil {
			return err
		}
		var err error
		if p, err = getPlan(ctx, tx, id); err != nil {
			return err
		}
		if p == nil {
			return apierr.New(apierr.NotFound, "session %q has no plan yet", id)
		}
		return nil
	})
	return p, err
}

// PutPlan creates or replaces the plan of session id and reports whether it
// created it. Writing the content and author it already has is a success
// without a revision bump or event. A rewrite withdraws a pending review
// (see review.go). Errors: not_found, invalid_argument, payload_too_large,
// version_conflict, already_exists (If-None-Match: *),
// precondition_required.
func (st *Store) PutPlan(ctx context.Context, id string, in PlanInput, maxBytes int64, pre revision.Precondition) (*SessionPlan, bool, error) {
	if err := validation.Struct(in); err != nil {
		return nil, false, err
	}
	if err := CheckPlanContent(in.Content, maxBytes); err != nil {
		return nil, false, err
	}
	var (
		out     *SessionPlan
		created bool
	)
	err := st.db.Write(ctx, func(tx *sql.Tx) error {
		s, err := get(ctx, tx, id)
		if err != nil {
			return err
		}
		cur, err := getPlan(ctx, tx, id)
		if err != nil {
			return err
		}
		var rev int64
		if cur != nil {
			rev = cur.Revision
		}
		if err := pre.Check(planWhat(id), cur != nil, rev); err != nil {
			return err
		}
		author := events.ActorFrom(ctx)
		if cur != nil {
			author = cur.Author
		}
		if in.Author != nil {
			author = *in.Author
		}
		if cur != nil && cur.Content == in.Content && cur.Author == author {
			out = cur
			return nil
		}
		now := sqlite.FormatTime(time.Now())
		if cur == nil {
			created = true
			var first int64
			if first, err = sqlite.FirstRevision(ctx, tx, sqlite.FloorSessionPlan, id); err != nil {
				return err
			}
			_, err = tx.ExecContext(ctx, `INSERT INTO session_plans (`+planColumns+`) VALUES (?, ?, ?, ?, ?, ?)`,
				id, in.Content, author, first, now, now)
		} else {
			_, err = tx.ExecContext(ctx, `UPDATE session_plans SET content = ?, author = ?, revision = revision + 1, updated_at = ?
				WHERE session_id = ?`, in.Content, author, now, id)
		}
		if err != nil {
			return fmt.Errorf("write plan of session %q: %w", id, err)
		}
		if out, err = getPlan(ctx, tx, id); err != nil {
			return err
		}
		data := planUpdate{SessionPlan: *out, Created: created}
		if s.Review.State == ReviewPending {
			srev, err := saveReview(ctx, tx, id, Review{State: ReviewNone}, now, true)
			if err != nil {
				return err
			}
			data.ReviewWithdrawn = closeReview(s.Review, srev,
				fmt.Sprintf("the plan was rewritten (revision %d); ask for review of the new revision", out.Revision))
		}
		_, err = events.Append(ctx, tx, events.SessionPlanUpdated, id, "", out.Revision, data)
		return err
	})
	if err != nil {
		return nil, false, err
	}
	return out, created, nil
}

// saveReview writes session id's review and returns the session's
// revision, bumped when bump is set. Callers that also change the mode
// leave the bump to setMode, so one change is one revision.
func saveReview(ctx context.Context, tx *sql.Tx, id string, r Review, now string, bump bool) (int64, error) {
	q := `UPDATE sessions SET review_state = ?, review_plan_revision = ?, review_rationale = ?, review_feedback = ?,
		review_requested_at = ?, review_decided_at = ?, review_decided_by = ?, updated_at = ?`
	if bump {
		q += `, revision = revision + 1`
	}
	var rev int64
	err := tx.QueryRowContext(ctx, q+` WHERE id = ? RETURNING revision`,
		r.State, r.PlanRevision, r.Rationale, r.Feedback, r.RequestedAt, r.DecidedAt, r.DecidedBy, now, id).Scan(&rev)
	if err != nil {
		return 0, fmt.Errorf("save review of session %q: %w", id, err)
	}
	return rev, nil
}

// reviewed loads session id and its plan for a review step, inside tx.
func reviewed(ctx context.Context, tx *sql.Tx, id string) (*Session, *SessionPlan, error) {
	s, err := get(ctx, tx, id)
	if err != nil {
		return nil, nil, err
	}
	p, err := getPlan(ctx, tx, id)
	if err != nil {
		return nil, nil, err
	}
	return s, p, nil
}

// RequestReview is the agent's exit_plan_mode: it marks the current plan
// revision as awaiting a human's review. It does not change the mode.
// Asking again for the same revision with the same rationale changes
// nothing. If-Match, when sent, names the plan revision the agent means.
// Errors: not_found, plan_missing, invalid_argument, version_conflict,
// precondition_required.
func (st *Store) RequestReview(ctx context.Context, id string, in ReviewRequest, pre revision.Precondition) (*Session, error) {
	if err := validation.Struct(in); err != nil {
		return nil, err
	}
	var out *Session
	err := st.db.Write(ctx, func(tx *sql.Tx) error {
		s, p, err := reviewed(ctx, tx, id)
		if err != nil {
			return err
		}
		if p == nil {
			return apierr.New(apierr.PlanMissing, "session %q has no plan to review; write one first (write_session_plan)", id)
		}
		if err := pre.Check(planWhat(id), true, p.Revision); err != nil {
			return err
		}
		if s.Review.pendingFor(p.Revision) && sameSource(s.Review.Rationale, in.Rationale) {
			out = s
			return nil
		}
		now := sqlite.FormatTime(time.Now())
		if _, err := saveReview(ctx, tx, id, requested(p.Revision, in.Rationale, now), now, true); err != nil {
			return err
		}
		if out, err = get(ctx, tx, id); err != nil {
			return err
		}
		_, err = events.Append(ctx, tx, events.SessionReviewRequested, id, "", out.Revision, out)
		return err
	})
	return out, err
}

// Approval is the answer to an approval: the session and, when an
// ancestor keeps it in plan mode, a note saying so.
type Approval struct {
	*Session
	Note *string `json:"note"`
}

// Approve is the human's confirmation of the plan revision they read
// (pre's If-Match): in one transaction the review becomes approved and the
// session's own mode becomes build, with the effective-mode change
// propagated to its descendants. Errors: not_found, precondition_required
// (no If-Match), invalid_argument (If-Match * or a list), version_conflict
// (412: the plan changed since), review_not_pending.
func (st *Store) Approve(ctx context.Context, id string, pre revision.Precondition) (*Approval, error) {
	var out *Approval
	err := st.db.Write(ctx, func(tx *sql.Tx) error {
		s, p, err := reviewed(ctx, tx, id)
		if err != nil {
			return err
		}
		if err := checkApprovalPrecondition(id, pre); err != nil {
			return err
		}
		if p == nil {
			return notPending(s)
		}
		if err := pre.Check(planWhat(id), true, p.Revision); err != nil {
			return err
		}
		if !s.Review.pendingFor(p.Revision) {
			return notPending(s)
		}
		now := sqlite.FormatTime(time.Now())
		r := decided(s.Review, ReviewApproved, nil, now, events.ActorFrom(ctx))
		var sess *Session
		if s.Mode == Build {
			if _, err := saveReview(ctx, tx, id, r, now, true); err != nil {
				return err
			}
			if sess, err = get(ctx, tx, id); err != nil {
				return err
			}
		} else {
			if _, err := saveReview(ctx, tx, id, r, now, false); err != nil {
				return err
			}
			if sess, err = setMode(ctx, tx, s, Build, nil); err != nil {
				return err
			}
		}
		out = &Approval{Session: sess, Note: ApprovalNote(sess)}
		_, err = events.Append(ctx, tx, events.SessionReviewApproved, id, "", sess.Revision, out)
		return err
	})
	return out, err
}

// Reject is the human's refusal of the pending review, with feedback for
// the agent. The mode is unchanged: the agent keeps planning. If-Match,
// when sent, names the plan revision the human read. Errors: not_found,
// invalid_argument, version_conflict, precondition_required,
// review_not_pending.
func (st *Store) Reject(ctx context.Context, id string, in ReviewRejection, pre revision.Precondition) (*Session, error) {
	if err := validation.Struct(in); err != nil {
		return nil, err
	}
	var out *Session
	err := st.db.Write(ctx, func(tx *sql.Tx) error {
		s, p, err := reviewed(ctx, tx, id)
		if err != nil {
			return err
		}
		if p == nil {
			return notPending(s)
		}
		if err := pre.Check(planWhat(id), true, p.Revision); err != nil {
			return err
		}
		if !s.Review.pendingFor(p.Revision) {
			return notPending(s)
		}
		now := sqlite.FormatTime(time.Now())
		if _, err := saveReview(ctx, tx, id, decided(s.Review, ReviewRejected, in.Feedback, now, events.ActorFrom(ctx)), now, true); err != nil {
			return err
		}
		if out, err = get(ctx, tx, id); err != nil {
			return err
		}
		_, err = events.Append(ctx, tx, events.SessionReviewRejected, id, "", out.Revision, out)
		return err
	})
	return out, err
}
