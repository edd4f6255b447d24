package plans

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/planserver/planserver/internal/apierr"
	"github.com/planserver/planserver/internal/events"
	"github.com/planserver/planserver/internal/revision"
	"github.com/planserver/planserver/internal/sqlite"
	"github.com/planserver/planserver/internal/validation"
)

// Report outcomes, and the step status each one leaves behind.
const (
	OutcomeSuccess = "success"
	OutcomeFailure = "failure"
	OutcomeBlocked = "blocked"
)

// Artifact is one thing a report points at, as in the execution report
// format of the seeds: a file and what happened to it, or a test and its
// result.
type Artifact struct {
	File   string `json:"file,omitempty" validate:"max=4096"`
	Status string `json:"status,omitempty" validate:"max=256"`
	Test   string `json:"test,omitempty" validate:"max=4096"`
	Result string `json:"result,omitempty" validate:"max=4096"`
}

// ReportInput is the body of POST …/steps/{step_id}/reports: the seed's
// execution report. StepID, when sent, must name the step of the URL, and
// Timestamp is the worker's own clock, kept as sent, so a report file
// written in the seed's format can be posted as it is. Worker names the
// claim the report settles: a report naming a worker is accepted only
// while that worker holds the step's claim.
type ReportInput struct {
	StepID    *string    `json:"step_id" validate:"omitnil,max=128"`
	Outcome   string     `json:"outcome" validate:"required,oneof=success failure blocked"`
	Details   string     `json:"details" validate:"max=65536"`
	Artifacts []Artifact `json:"artifacts" validate:"max=1000,dive"`
	Worker    *string    `json:"worker" validate:"omitnil,min=1,max=256"`
	Timestamp *string    `json:"timestamp" validate:"omitnil,max=64"`
}

// Report is a stored execution report.
type Report struct {
	ID        int64      `json:"id"`
	Plan      string     `json:"plan"`
	StepID    string     `json:"step_id"`
	Outcome   string     `json:"outcome"`
	Details   string     `json:"details"`
	Artifacts []Artifact `json:"artifacts"`
	// Actor is who sent the report (the acting token); Worker the claim
	// holder it names, if any.
	Actor  string  `json:"actor"`
	Worker *string `json:"worker"`
	// Timestamp is the worker's clock, as sent; Time the server's.
	Timestamp *string `json:"timestamp"`
	// PlanRevision is the plan revision the report made.
	PlanRevision int64  `json:"plan_revision"`
	Time         string `json:"time"`
}

// ReportList is the answer of GET …/reports.
type ReportList struct {
	Plan    string   `json:"plan"`
	Reports []Report `json:"reports"`
}

// normalize checks what the tags cannot and returns the timestamp in the
// server's format.
func (in *ReportInput) normalize(stepID string) error {
	if err := validation.Struct(in); err != nil {
		return err
	}
	if in.StepID != nil && *in.StepID != stepID {
		return apierr.Invalid("step_id", "is %q but the report is posted to step %q; leave it out or make them agree", *in.StepID, stepID)
	}
	if in.Timestamp != nil {
		t, err := time.Parse(time.RFC3339Nano, *in.Timestamp)
		if err != nil {
			return apierr.Invalid("timestamp", "must be an RFC 3339 time, such as 2026-01-10T17:30:00Z")
		}
		formatted := sqlite.FormatTime(t)
		in.Timestamp = &formatted
	}
	if in.Artifacts == nil {
		in.Artifacts = []Artifact{}
	}
	return nil
}

// AddReport stores an execution report of one step and applies it, as the
// next plan revision: success completes the step (its deps must be
// complete: deps_incomplete otherwise), failure and blocked block it; the
// step's claim is dropped either way.
//
// A report that names a worker is refused with version_conflict unless
// that worker holds the step's claim: when a lease expired and another
// worker claimed the step, the first worker's late report must not settle
// the second one's work. It is not recorded. A report without a worker is
// the coordinator's (or a human's) and is always applied. Errors:
// invalid_argument, not_found, deps_incomplete, version_conflict.
func (st *Store) AddReport(ctx context.Context, name, stepID string, in ReportInput, pre revision.Precondition) (*Report, error) {
	if err := ValidateName(name); err != nil {
		return nil, err
	}
	if err := in.normalize(stepID); err != nil {
		return nil, err
	}
	artifacts, err := json.Marshal(in.Artifacts)
	if err != nil {
		return nil, fmt.Errorf("encode artifacts: %w", err)
	}
	var out *Report
	err = st.changeStep(ctx, name, stepID, pre, func(tx *sql.Tx, steps Steps, rev int64, i int) error {
		s := &steps[i]
		if in.Worker != nil && !s.heldBy(*in.Worker) {
			return lateReport(s, *in.Worker, rev)
		}
		previous := s.Status
		if in.Outcome == OutcomeSuccess {
			if err := depsIncomplete(steps, i, "completed"); err != nil {
				return err
			}
			s.Status = StepComplete
		} else {
			s.Status = StepBlocked
		}
		s.release()
		now := st.now()
		r := Report{Plan: name, StepID: stepID, Outcome: in.Outcome, Details: in.Details, Artifacts: in.Artifacts,
			Actor: events.ActorFrom(ctx), Worker: in.Worker, Timestamp: in.Timestamp, PlanRevision: rev + 1,
			Time: sqlite.FormatTime(now)}
		res, err := tx.ExecContext(ctx, `INSERT INTO step_reports
			(plan, step_id, outcome, details, artifacts, actor, worker, timestamp, plan_revision, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			r.Plan, r.StepID, r.Outcome, r.Details, string(artifacts), r.Actor, r.Worker, r.Timestamp, r.PlanRevision, r.Time)
		if err != nil {
			return fmt.Errorf("store report on step %q of plan %q: %w", stepID, name, err)
		}
		if r.ID, err = res.LastInsertId(); err != nil {
			return fmt.Errorf("store report on step %q of plan %q: %w", stepID, name, err)
		}
		if _, err := st.writeSteps(ctx, tx, name, rev, steps, events.StepReportAdded, &stepChange{
			StepID: stepID, Step: *s, PreviousStatus: previous, ReportID: r.ID, Outcome: r.Outcome,
		}); err != nil {
			return err
		}
		out = &r
		return nil
	})
	return out, err
}

// lateReport is the refusal of a report from a worker that does not hold
// the step's claim.
func lateReport(s *Step, worker string, rev int64) error {
	var e *apierr.Error
	if s.Status == StepInProgress && s.ClaimedBy != nil {
		e = apierr.Conflict(rev, "step %q is claimed by %q, not %q: the lease of %q ran out and the step was claimed again, "+
			"so this report was not recorded", s.ID, *s.ClaimedBy, worker, worker)
		e.Extra = map[string]any{"step_id": s.ID, "claimed_by": *s.ClaimedBy}
	} else {
		e = apierr.Conflict(rev, "step %q is %s and not claimed by %q, so this report was not recorded; "+
			"a report without a worker is the coordinator's and is always applied", s.ID, s.Status, worker)
		e.Extra = map[string]any{"step_id": s.ID}
	}
	return e
}

// Reports lists a plan's execution reports, oldest first, all of them or
// those of one step. Errors: invalid_argument, not_found.
func (st *Store) Reports(ctx context.Context, name, stepID string) (*ReportList, error) {
	out := &ReportList{Plan: name, Reports: []Report{}}
	err := st.read(ctx, name, func(tx *sql.Tx) error {
		if _, exists, err := current(ctx, tx, name); err != nil {
			return err
		} else if !exists {
			return notFound(name)
		}
		query := `SELECT id, step_id, outcome, details, artifacts, actor, worker, timestamp, plan_revision, created_at
			FROM step_reports WHERE plan = ? ORDER BY id`
		args := []any{name}
		if stepID != "" {
			query = `SELECT id, step_id, outcome, details, artifacts, actor, worker, timestamp, plan_revision, created_at
				FROM step_reports WHERE plan = ? AND step_id = ? ORDER BY id`
			args = append(args, stepID)
		}
		rows, err := tx.QueryContext(ctx, query, args...)
		if err != nil {
			return fmt.Errorf("reports of plan %q: %w", name, err)
		}
		defer rows.Close()
		for rows.Next() {
			r := Report{Plan: name}
			var artifacts []byte
			if err := rows.Scan(&r.ID, &r.StepID, &r.Outcome, &r.Details, &artifacts, &r.Actor, &r.Worker, &r.Timestamp,
				&r.PlanRevision, &r.Time); err != nil {
				return fmt.Errorf("reports of plan %q: %w", name, err)
			}
			if err := json.Unmarshal(artifacts, &r.Artifacts); err != nil {
				return fmt.Errorf("report %d of plan %q has unreadable artifacts: %w", r.ID, name, err)
			}
			out.Reports = append(out.Reports, r)
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("reports of plan %q: %w", name, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
