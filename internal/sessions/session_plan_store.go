package sessions

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/apierr"
	"github.com/planserver/planserver/internal/db"
	"github.com/planserver/planserver/internal/events"
	"github.com/planserver/planserver/internal/revision"
	"github.com/planserver/planserver/internal/validation"
	"github.com/planserver/planserver/internal/versioned"
)

const sessionPlanColumns = `session_id, content, author, revision, created_at, updated_at`

// loadSessionPlan reads the plan of session id; nil when it has none.
func loadSessionPlan(q db.Querier, id string) (*SessionPlan, error) {
	var p SessionPlan
	err := q.QueryRow(`SELECT `+sessionPlanColumns+` FROM session_plans WHERE session_id = ?`, id).
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
func mustExist(q db.Querier, id string) error {
	var n int
	if err := q.QueryRow(`SELECT count(*) FROM sessions WHERE id = ?`, id).Scan(&n); err != nil {
		return fmt.Errorf("find session %q: %w", id, err)
	}
	if n == 0 {
		return NotFound(id)
	}
	return nil
}

// sessionPlanResource is the plan of session id at revision rev (0: none
// written) as a versioned resource.
func sessionPlanResource(id string, rev int64) versioned.Resource {
	return versioned.Resource{Kind: versioned.SessionPlan, Key: id, What: planWhat(id), Revision: rev}
}

// GetSessionPlan returns the plan of session id. Errors: not_found (no
// such session, or no plan written yet).
func (st *Store) GetSessionPlan(ctx context.Context, id string) (*SessionPlan, error) {
	var p *SessionPlan
	err := st.db.Read(ctx, func(tx *db.Tx) error {
		s, err := load(tx, id)
		if err != nil {
			return err
		}
		if p, err = loadSessionPlan(tx, id); err != nil {
			return err
		}
		if p == nil {
			return noPlanYet(id)
		}
		p.Review = &s.Review
		return nil
	})
	return withScope(p), err
}

func noPlanYet(id string) error { return apierr.New(apierr.NotFound, "session %q has no plan yet", id) }

// SessionPlanRevisions lists the readable revisions of the plan of session
// id, newest first, the current one included. Errors: not_found.
func (st *Store) SessionPlanRevisions(ctx context.Context, id string) (*api.SessionPlanRevisions, error) {
	var out *api.SessionPlanRevisions
	err := st.db.Read(ctx, func(tx *db.Tx) error {
		var err error
		out, err = sessionPlanRevisions(tx, id)
		return err
	})
	return out, err
}

// sessionPlanRevisions lists the readable revisions of the plan of
// session id in q, newest first.
func sessionPlanRevisions(q db.Querier, id string) (*api.SessionPlanRevisions, error) {
	if err := mustExist(q, id); err != nil {
		return nil, err
	}
	rows, err := q.Query(`
		SELECT revision, author, updated_at FROM session_plans WHERE session_id = ?
		UNION ALL
		SELECT revision, author, updated_at FROM session_plan_revisions WHERE session_id = ?
		ORDER BY revision DESC`, id, id)
	if err != nil {
		return nil, fmt.Errorf("history of the plan of session %q: %w", id, err)
	}
	defer rows.Close()
	out := &api.SessionPlanRevisions{SessionID: id, Revisions: []api.SessionPlanRevision{}}
	for rows.Next() {
		var r api.SessionPlanRevision
		if err := rows.Scan(&r.Revision, &r.Author, &r.UpdatedAt); err != nil {
			return nil, fmt.Errorf("history of the plan of session %q: %w", id, err)
		}
		out.Revisions = append(out.Revisions, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("history of the plan of session %q: %w", id, err)
	}
	if len(out.Revisions) == 0 {
		return nil, noPlanYet(id)
	}
	return out, nil
}

// GetSessionPlanRevision returns the plan of session id as it was at
// revision n (the current revision included, with its review). A revision
// pruned from the history, or never written, is not_found.
func (st *Store) GetSessionPlanRevision(ctx context.Context, id string, n int64) (*SessionPlan, error) {
	var p *SessionPlan
	err := st.db.Read(ctx, func(tx *db.Tx) error {
		var err error
		p, err = sessionPlanAt(tx, id, n)
		return err
	})
	return withScope(p), err
}

// sessionPlanAt reads revision n of the plan of session id in q.
func sessionPlanAt(q db.Querier, id string, n int64) (*SessionPlan, error) {
	s, err := load(q, id)
	if err != nil {
		return nil, err
	}
	cur, err := loadSessionPlan(q, id)
	if err != nil {
		return nil, err
	}
	if cur == nil {
		return nil, noPlanYet(id)
	}
	if n == cur.Revision {
		cur.Review = &s.Review
		return cur, nil
	}
	p := SessionPlan{SessionID: id, Revision: n, CreatedAt: cur.CreatedAt}
	err = q.QueryRow(`SELECT content, author, updated_at FROM session_plan_revisions WHERE session_id = ? AND revision = ?`, id, n).
		Scan(&p.Content, &p.Author, &p.UpdatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		if n > cur.Revision {
			return nil, apierr.New(apierr.NotFound, "the plan of session %q has no revision %d; it is at revision %d", id, n, cur.Revision)
		}
		return nil, apierr.New(apierr.NotFound, "revision %d of the plan of session %q is not kept; GET …/plan/revisions lists those that are", n, id)
	}
	if err != nil {
		return nil, fmt.Errorf("get revision %d of the plan of session %q: %w", n, id, err)
	}
	return &p, nil
}

// SessionPlanDiff answers how revision to of the plan of session id
// differs from revision from, both read from one snapshot
// (versioned.Compare, which also says what a bound left nil defaults to),
// with the change of the scope the two declare. Errors: not_found.
func (st *Store) SessionPlanDiff(ctx context.Context, id string, from, to *int64) (*api.Diff, error) {
	var c versioned.Compared
	err := st.db.Read(ctx, func(tx *db.Tx) error {
		revisions := func() ([]int64, error) {
			revs, err := sessionPlanRevisions(tx, id)
			if err != nil {
				return nil, err
			}
			out := make([]int64, len(revs.Revisions))
			for i, r := range revs.Revisions {
				out[i] = r.Revision
			}
			return out, nil
		}
		content := func(n int64) (string, error) {
			p, err := sessionPlanAt(tx, id, n)
			if err != nil {
				return "", err
			}
			return p.Content, nil
		}
		var err error
		c, err = versioned.Compare(from, to, revisions, content)
		return err
	})
	if err != nil {
		return nil, err
	}
	d := c.Diff()
	d.Scope = declaredScopeChange(c.A, c.B)
	return d, nil
}

// ReviewHistory returns the current review of session id and every review
// that ended, newest first. Errors: not_found.
func (st *Store) ReviewHistory(ctx context.Context, id string) (*api.ReviewHistory, error) {
	var out *api.ReviewHistory
	err := st.db.Read(ctx, func(tx *db.Tx) error {
		s, err := load(tx, id)
		if err != nil {
			return err
		}
		out = &api.ReviewHistory{SessionID: id, Current: s.Review, Reviews: []ReviewRecord{}}
		rows, err := tx.Query(`SELECT plan_revision, state, rationale, requested_at, ended_at, ended_by, feedback, comments,
			ended_by_person, scope FROM session_reviews WHERE session_id = ? ORDER BY id DESC`, id)
		if err != nil {
			return fmt.Errorf("reviews of session %q: %w", id, err)
		}
		defer rows.Close()
		for rows.Next() {
			var (
				r        ReviewRecord
				comments string
				person   sql.NullString
			)
			if err := rows.Scan(&r.PlanRevision, &r.State, &r.Rationale, &r.RequestedAt, &r.EndedAt, &r.EndedBy,
				&r.Feedback, &comments, &person, &r.Scope); err != nil {
				return fmt.Errorf("reviews of session %q: %w", id, err)
			}
			if r.EndedByPerson, err = events.UnmarshalPerson(person); err != nil {
				return fmt.Errorf("reviews of session %q: %w", id, err)
			}
			if err := json.Unmarshal([]byte(comments), &r.Comments); err != nil {
				return fmt.Errorf("reviews of session %q: %w", id, err)
			}
			out.Reviews = append(out.Reviews, r)
		}
		return rows.Err()
	})
	return out, err
}

// PutSessionPlan creates or replaces the plan of session id and reports
// whether it created it. Writing the content and author it already has is
// a success without a revision bump or event. A rewrite withdraws a
// pending review. Errors: not_found, invalid_argument, payload_too_large,
// version_conflict, already_exists (If-None-Match: *),
// precondition_required.
func (st *Store) PutSessionPlan(ctx context.Context, id string, in api.SessionPlanWrite, maxBytes int64, pre revision.Precondition) (*SessionPlan, bool, error) {
	if err := validation.Struct(in); err != nil {
		return nil, false, err
	}
	if err := validation.PlanContent("content", in.Content, maxBytes); err != nil {
		return nil, false, err
	}
	// A scope a human cannot have enforced is refused here, before anyone
	// reviews it.
	if _, problems := DeclaredScope(in.Content); len(problems) > 0 {
		return nil, false, apierr.InvalidFields(problems)
	}
	var (
		out     *SessionPlan
		created bool
	)
	err := st.db.Write(ctx, func(tx *db.Tx) error {
		s, err := load(tx, id)
		if err != nil {
			return err
		}
		cur, err := loadSessionPlan(tx, id)
		if err != nil {
			return err
		}
		var curRev int64 // 0: no plan written yet
		if cur != nil {
			curRev = cur.Revision
		}
		res := sessionPlanResource(id, curRev)
		if err := res.Check(pre); err != nil {
			return err
		}
		// A revision written without an author is the writer's, never
		// the previous revision's author's (as on shared plans).
		author := events.ActorFrom(tx.Context())
		if in.Author != nil {
			author = *in.Author
		}
		if cur != nil && cur.Content == in.Content && cur.Author == author {
			cur.Review = &s.Review
			out = cur
			return nil
		}
		rev, err := res.Next(tx)
		if err != nil {
			return err
		}
		now := tx.NowText()
		created = cur == nil
		if created {
			_, err = tx.Exec(`INSERT INTO session_plans (`+sessionPlanColumns+`) VALUES (?, ?, ?, ?, ?, ?)`,
				id, in.Content, author, rev, now, now)
		} else if err = st.keepRevision(tx, cur, rev); err == nil {
			_, err = tx.Exec(`UPDATE session_plans SET content = ?, author = ?, revision = ?, updated_at = ?
				WHERE session_id = ?`, in.Content, author, rev, now, id)
		}
		if err != nil {
			return fmt.Errorf("write plan of session %q: %w", id, err)
		}
		// The plan as stored, not read back: on PostgreSQL a read back is
		// a round trip under the write lock. TestReviewAnswersAsStored
		// holds it to a read.
		out = &SessionPlan{SessionID: id, Content: in.Content, Author: author, Revision: rev, CreatedAt: now, UpdatedAt: now}
		if cur != nil {
			out.CreatedAt = cur.CreatedAt
		}
		withScope(out)
		data := sessionPlanUpdate{SessionPlan: *out, Created: created}
		defer func() { out.Review = &s.Review }()
		if s.Review.State == ReviewPending {
			srev, err := resource(id, s.Revision).Next(tx)
			if err != nil {
				return err
			}
			review, closed := closeReview(s.Review, srev,
				fmt.Sprintf("the plan was rewritten (revision %d); ask for review of the new revision", out.Revision))
			if err := saveReview(tx, s, review, srev, now, ""); err != nil {
				return err
			}
			if err := recordReview(tx, id, ended(s.Review, api.ReviewWithdrawn, now, events.ActorFrom(tx.Context()), events.PersonFrom(tx.Context()))); err != nil {
				return err
			}
			data.ReviewWithdrawn = closed
			s.Review = review
		}
		err = events.Record(tx, events.New{Type: events.SessionPlanUpdated, Session: s.link().Ref(), Revision: out.Revision, Data: data})
		return err
	})
	if err != nil {
		return nil, false, err
	}
	return withScope(out), created, nil
}

// keepRevision copies the replaced revision of a session plan into its
// history and prunes the history to the configured length, counting rev,
// the revision that replaces cur.
func (st *Store) keepRevision(tx *db.Tx, cur *SessionPlan, rev int64) error {
	if _, err := tx.Exec(`INSERT INTO session_plan_revisions (session_id, revision, content, author, updated_at)
		VALUES (?, ?, ?, ?, ?)`, cur.SessionID, cur.Revision, cur.Content, cur.Author, cur.UpdatedAt); err != nil {
		return fmt.Errorf("keep revision %d of the plan of session %q: %w", cur.Revision, cur.SessionID, err)
	}
	// History counts the new revision too.
	if _, err := tx.Exec(`DELETE FROM session_plan_revisions WHERE session_id = ? AND revision <= ?`,
		cur.SessionID, rev-int64(st.cfg.History)); err != nil {
		return fmt.Errorf("prune the plan history of session %q: %w", cur.SessionID, err)
	}
	return nil
}

// RequestReview is the agent's exit_plan_mode: it marks the current plan
// revision as awaiting a human's review. It does not change the mode.
// Errors: not_found, plan_missing, invalid_argument, version_conflict,
// precondition_required.
func (st *Store) RequestReview(ctx context.Context, id string, in api.ReviewRequest, pre revision.Precondition) (*Session, error) {
	if err := validation.Struct(in); err != nil {
		return nil, err
	}
	return st.reviewStep(ctx, id, events.SessionReviewRequested, func(tx *db.Tx, s *Session, p *SessionPlan) (Review, bool, error) {
		return requestReview(s, p, in.Rationale, pre, tx.NowText())
	})
}

// Approve is the human's confirmation of the plan revision they read
// (pre's If-Match): in one transaction the review becomes approved, the
// session's own mode becomes build and its own scope grant becomes what
// the approval grants (grantFor: the revision's scope, or none for a full
// build), with what its descendants inherit propagated to them. mayLift
// says the caller may lift a scope (an admin). Errors: not_found,
// precondition_required (no If-Match), invalid_argument (If-Match * or a
// list; scope "plan" for a revision without one), version_conflict (412:
// the plan changed since), review_not_pending, permission_denied (scope
// "full" that lifts a scope, by a caller that may not).
func (st *Store) Approve(ctx context.Context, id string, in api.ReviewApproval, pre revision.Precondition, mayLift bool) (*api.Approval, error) {
	if err := validation.Struct(in); err != nil {
		return nil, err
	}
	var out *api.Approval
	err := st.db.Write(ctx, func(tx *db.Tx) error {
		r, p, err := loadReviewed(tx, id)
		if err != nil {
			return err
		}
		actor, person := events.ActorFrom(tx.Context()), events.PersonFrom(tx.Context())
		review, err := approve(&r.Session, p, decision{feedback: in.Feedback, comments: in.Comments}, pre, tx.NowText(), actor, person)
		if err != nil {
			return err
		}
		kind, grant, err := grantFor(&r.Session, p, r.grant, in.Scope, mayLift, tx.NowText(), actor, person)
		if err != nil {
			return err
		}
		review.Scope = &kind
		if err := recordReview(tx, id, ended(review, ReviewApproved, tx.NowText(), actor, person)); err != nil {
			return err
		}
		rev, err := resource(id, r.Revision).Next(tx)
		if err != nil {
			return err
		}
		reason := scopeGranted
		if grant == nil {
			reason = scopeLifted
		}
		sess, err := applyChange(tx, r, rev, selfChange{mode: Build, grant: grant, review: review, scopeReason: reason})
		if err != nil {
			return err
		}
		out = &api.Approval{Session: sess, Note: ApprovalNote(sess), Scope: kind}
		err = events.Record(tx, events.New{Type: events.SessionReviewApproved, Session: r.link().Ref(), Revision: sess.Revision, Data: out})
		return err
	})
	return out, err
}

// Reject is the human's refusal of the pending review, with feedback for
// the agent. The mode is unchanged: the agent keeps planning. If-Match,
// when sent, names the plan revision the human read. Errors: not_found,
// invalid_argument, version_conflict, precondition_required,
// review_not_pending.
func (st *Store) Reject(ctx context.Context, id string, in api.ReviewRejection, pre revision.Precondition) (*Session, error) {
	if err := validation.Struct(in); err != nil {
		return nil, err
	}
	return st.reviewStep(ctx, id, events.SessionReviewRejected, func(tx *db.Tx, s *Session, p *SessionPlan) (Review, bool, error) {
		actor, person := events.ActorFrom(tx.Context()), events.PersonFrom(tx.Context())
		r, err := decide(s, p, decision{state: ReviewRejected, feedback: in.Feedback, comments: in.Comments}, pre, tx.NowText(), actor, person)
		if err != nil {
			return Review{}, false, err
		}
		return r, true, recordReview(tx, id, ended(r, ReviewRejected, tx.NowText(), actor, person))
	})
}

// loadReviewed loads what a review transition decides on: the session,
// with its effective mode, and its plan (nil when it has none).
func loadReviewed(tx *db.Tx, id string) (*record, *SessionPlan, error) {
	r, err := get(tx, id)
	if err != nil {
		return nil, nil, err
	}
	p, err := loadSessionPlan(tx, id)
	if err != nil {
		return nil, nil, err
	}
	return r, p, nil
}

// reviewStep runs a review transition that changes only the review: load
// the session and its plan, decide, and store the new review as the next
// session revision with an event of type typ. A transition that reports
// no change writes nothing.
func (st *Store) reviewStep(ctx context.Context, id, typ string,
	step func(tx *db.Tx, s *Session, p *SessionPlan) (Review, bool, error)) (*Session, error) {
	var out *Session
	err := st.db.Write(ctx, func(tx *db.Tx) error {
		r, p, err := loadReviewed(tx, id)
		if err != nil {
			return err
		}
		review, changed, err := step(tx, &r.Session, p)
		if err != nil {
			return err
		}
		if !changed {
			out = &r.Session
			return nil
		}
		rev, err := resource(id, r.Revision).Next(tx)
		if err != nil {
			return err
		}
		now := tx.NowText()
		if err := saveReview(tx, r, review, rev, now, ""); err != nil {
			return err
		}
		r = r.reviewed(review, rev, now)
		out = &r.Session
		err = events.Record(tx, events.New{Type: typ, Session: r.link().Ref(), Revision: rev, Data: out})
		return err
	})
	return out, err
}
