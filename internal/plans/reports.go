package plans

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/apierr"
	"github.com/planserver/planserver/internal/db"
	"github.com/planserver/planserver/internal/events"
	"github.com/planserver/planserver/internal/revision"
	"github.com/planserver/planserver/internal/validation"
)

// Report outcomes, and the step status each one leaves behind.
const (
	OutcomeSuccess = api.OutcomeSuccess
	OutcomeFailure = api.OutcomeFailure
	OutcomeBlocked = api.OutcomeBlocked
)

// The report wire types.
type (
	Artifact    = api.Artifact
	ReportInput = api.ReportWrite
	Report      = api.Report
	ReportList  = api.ReportList
)

// normalizeReport checks what the tags cannot and returns the timestamp in
// the server's format. StepID, when sent, must name the step of the URL,
// and Timestamp is the worker's own clock, kept as sent, so a report file
// written in the seed's format can be posted as it is.
func normalizeReport(in *ReportInput, stepID string) error {
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
		formatted := db.FormatTime(t)
		in.Timestamp = &formatted
	}
	if in.Artifacts == nil {
		in.Artifacts = []Artifact{}
	}
	return nil
}

// AddReport stores an execution report of one step and applies it (see
// report) as the next plan revision. A refused report is not recorded.
// Errors: invalid_argument, not_found, deps_incomplete, version_conflict.
func (st *Store) AddReport(ctx context.Context, name, stepID string, in ReportInput, pre revision.Precondition) (*Report, error) {
	if err := ValidateName(name); err != nil {
		return nil, err
	}
	if err := normalizeReport(&in, stepID); err != nil {
		return nil, err
	}
	artifacts, err := json.Marshal(in.Artifacts)
	if err != nil {
		return nil, fmt.Errorf("encode artifacts: %w", err)
	}
	var out *Report
	_, err = st.moveStep(ctx, name, stepID, pre, func(tx *db.Tx, h *stepsHead, i int, rev int64) (*stepMove, error) {
		m, err := report(h.steps, i, in.Outcome, in.Worker, h.revision)
		if err != nil {
			return nil, err
		}
		r := Report{Plan: name, StepID: stepID, Outcome: in.Outcome, Details: in.Details, Artifacts: in.Artifacts,
			Actor: events.ActorFrom(tx.Context()), Worker: in.Worker, Timestamp: in.Timestamp, PlanRevision: rev,
			Time: tx.NowText()}
		if err := tx.QueryRow(`INSERT INTO step_reports
			(plan, step_id, outcome, details, artifacts, actor, worker, timestamp, plan_revision, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
			r.Plan, r.StepID, r.Outcome, r.Details, string(artifacts), r.Actor, r.Worker, r.Timestamp, r.PlanRevision, r.Time).Scan(&r.ID); err != nil {
			return nil, fmt.Errorf("store report on step %q of plan %q: %w", stepID, name, err)
		}
		m.data.ReportID = r.ID
		out = &r
		return m, nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Reports lists a plan's execution reports, oldest first, all of them or
// those of one step. Errors: invalid_argument, not_found.
func (st *Store) Reports(ctx context.Context, name, stepID string) (*ReportList, error) {
	if err := ValidateName(name); err != nil {
		return nil, err
	}
	out := &ReportList{Plan: name, Reports: []Report{}}
	err := st.db.Read(ctx, func(tx *db.Tx) error {
		if h, err := loadHead(tx, name); err != nil {
			return err
		} else if h == nil {
			return notFound(name)
		}
		query := `SELECT id, step_id, outcome, details, artifacts, actor, worker, timestamp, plan_revision, created_at
			FROM step_reports WHERE plan = ?`
		args := []any{name}
		if stepID != "" {
			query += ` AND step_id = ?`
			args = append(args, stepID)
		}
		rows, err := tx.Query(query+` ORDER BY id`, args...)
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
