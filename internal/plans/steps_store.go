package plans

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/planserver/planserver/internal/apierr"
	"github.com/planserver/planserver/internal/events"
	"github.com/planserver/planserver/internal/revision"
	"github.com/planserver/planserver/internal/validation"
)

// Step operations keep the steps in the plan row: every change of a step
// is a new revision of its plan, with the replaced one in the history, the
// plan's preconditions, and its event in the same transaction. Claims are
// atomic because every write runs on the one writer connection inside
// BEGIN IMMEDIATE, and each operation reads the steps inside its own write
// transaction: two claimers are serialized, and the second sees the first
// one's claim.

// StepQuery filters the steps of a plan. Empty fields do not filter.
type StepQuery struct {
	Status string
	Owner  string
	// Ready, when set, keeps only the steps that are (true) or are not
	// (false) ready now.
	Ready *bool
}

// StepList is the answer of GET …/steps.
type StepList struct {
	Steps    []StepView `json:"steps"`
	Revision int64      `json:"revision"`
}

// StepResult is one step and the plan revision it belongs to.
type StepResult struct {
	Step     StepView `json:"step"`
	Revision int64    `json:"revision"`
}

// StepPatch is the body of PATCH …/steps/{step_id}; nil keeps the value.
type StepPatch struct {
	Status *string `json:"status" validate:"omitnil,oneof=pending in_progress complete blocked"`
	Owner  *string `json:"owner" validate:"omitnil,min=1,max=256"`
}

// ClaimRequest is the body of POST …/steps/claim: the worker taking a step,
// the owner role it works as (optional), and the lease it asks for.
type ClaimRequest struct {
	Worker       string `json:"worker" validate:"required,max=256"`
	Owner        string `json:"owner" validate:"max=256"`
	LeaseSeconds *int   `json:"lease_seconds" validate:"omitnil,min=1,max=86400"`
}

// StepClaimRequest is the body of POST …/steps/{step_id}/claim: a worker
// takes that step, or renews the lease it holds on it.
type StepClaimRequest struct {
	Worker       string `json:"worker" validate:"required,max=256"`
	LeaseSeconds *int   `json:"lease_seconds" validate:"omitnil,min=1,max=86400"`
}

func leaseOf(seconds *int) int {
	if seconds == nil {
		return DefaultLeaseSeconds
	}
	return *seconds
}

// stepChange is the data of the step.* events: the plan and its new
// revision, the step after the change, and what it was before.
type stepChange struct {
	Plan           string `json:"plan"`
	Revision       int64  `json:"revision"`
	StepID         string `json:"step_id"`
	Step           Step   `json:"step"`
	PreviousStatus string `json:"previous_status"`
	// PreviousOwner is set by step.updated.
	PreviousOwner string `json:"previous_owner,omitempty"`
	// Renewed is set by step.claimed when the holder renewed its lease.
	Renewed bool `json:"renewed,omitempty"`
	// PreviousClaimedBy is set by step.claimed when the step is taken over
	// from a worker whose lease expired.
	PreviousClaimedBy *string `json:"previous_claimed_by,omitempty"`
	// ReportID and Outcome are set by step.report_added.
	ReportID int64  `json:"report_id,omitempty"`
	Outcome  string `json:"outcome,omitempty"`
}

// loadSteps reads a plan's revision and steps (not its content) inside tx.
func loadSteps(ctx context.Context, q querier, name string) (Steps, int64, error) {
	var (
		rev int64
		raw []byte
	)
	err := q.QueryRowContext(ctx, `SELECT revision, steps FROM plans WHERE name = ?`, name).Scan(&rev, &raw)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, 0, notFound(name)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("get steps of plan %q: %w", name, err)
	}
	steps, err := decodeStoredSteps(raw)
	if err != nil {
		return nil, 0, fmt.Errorf("plan %q revision %d has unreadable steps: %w", name, rev, err)
	}
	return steps, rev, nil
}

func stepNotFound(name, id string) error {
	return apierr.New(apierr.NotFound, "plan %q has no step %q", name, id)
}

// findStep returns the position of step id, or not_found.
func findStep(steps Steps, name, id string) (int, error) {
	if i := steps.index(id); i >= 0 {
		return i, nil
	}
	return -1, stepNotFound(name, id)
}

// depsIncomplete is the 409 of starting or completing step i too early.
func depsIncomplete(steps Steps, i int, doing string) error {
	missing := steps.IncompleteDeps(i)
	if len(missing) == 0 {
		return nil
	}
	e := apierr.New(apierr.DepsIncomplete, "step %q cannot be %s: its deps %s are not complete",
		steps[i].ID, doing, strings.Join(quoteAll(missing), ", "))
	e.Extra = map[string]any{"step_id": steps[i].ID, "incomplete_deps": missing}
	return e
}

func quoteAll(ids []string) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = fmt.Sprintf("%q", id)
	}
	return out
}

// writeSteps stores steps as the next revision of plan name (at rev) and
// appends the event typ with data, completed with the new revision.
func (st *Store) writeSteps(ctx context.Context, tx *sql.Tx, name string, rev int64, steps Steps, typ string, data *stepChange) (int64, error) {
	if err := st.bump(ctx, tx, name, rev, Change{Steps: steps}); err != nil {
		return 0, err
	}
	data.Plan, data.Revision = name, rev+1
	if _, err := events.Append(ctx, tx, typ, "", name, rev+1, data); err != nil {
		return 0, err
	}
	return rev + 1, nil
}

// Steps lists a plan's steps in plan order, filtered by q. Errors:
// invalid_argument, not_found.
func (st *Store) Steps(ctx context.Context, name string, q StepQuery) (*StepList, error) {
	if q.Status != "" {
		if err := ParseStepStatus("status", q.Status); err != nil {
			return nil, err
		}
	}
	var out *StepList
	err := st.read(ctx, name, func(tx *sql.Tx) error {
		steps, rev, err := loadSteps(ctx, tx, name)
		if err != nil {
			return err
		}
		now := st.now()
		ready := map[int]bool{}
		for _, i := range Ready(steps, now) {
			ready[i] = true
		}
		views := steps.View(now)
		out = &StepList{Steps: []StepView{}, Revision: rev}
		for i, v := range views {
			if (q.Status != "" && v.Status != q.Status) || (q.Owner != "" && v.Owner != q.Owner) ||
				(q.Ready != nil && ready[i] != *q.Ready) {
				continue
			}
			out.Steps = append(out.Steps, v)
		}
		return nil
	})
	return out, err
}

// GetStep returns one step of a plan. Errors: invalid_argument, not_found.
func (st *Store) GetStep(ctx context.Context, name, id string) (*StepResult, error) {
	var out *StepResult
	err := st.read(ctx, name, func(tx *sql.Tx) error {
		steps, rev, err := loadSteps(ctx, tx, name)
		if err != nil {
			return err
		}
		i, err := findStep(steps, name, id)
		if err != nil {
			return err
		}
		out = &StepResult{Step: steps.View(st.now())[i], Revision: rev}
		return nil
	})
	return out, err
}

// UpdateStep sets a step's status or owner. Starting or completing a step
// whose deps are not all complete is deps_incomplete; any status but
// in_progress drops the step's claim. A patch that changes nothing is
// answered with the current revision and writes nothing. Errors:
// invalid_argument, not_found, deps_incomplete, version_conflict,
// precondition_required.
func (st *Store) UpdateStep(ctx context.Context, name, id string, patch StepPatch, pre revision.Precondition) (*StepResult, error) {
	if err := ValidateName(name); err != nil {
		return nil, err
	}
	if err := validation.Struct(patch); err != nil {
		return nil, err
	}
	var out *StepResult
	err := st.changeStep(ctx, name, id, pre, func(tx *sql.Tx, steps Steps, rev int64, i int) error {
		old := steps[i]
		s := &steps[i]
		if patch.Owner != nil {
			s.Owner = *patch.Owner
		}
		if patch.Status != nil && *patch.Status != old.Status {
			s.Status = *patch.Status
			switch s.Status {
			case StepInProgress:
				if err := depsIncomplete(steps, i, "started"); err != nil {
					return err
				}
			case StepComplete:
				if err := depsIncomplete(steps, i, "completed"); err != nil {
					return err
				}
			}
			if s.Status != StepInProgress {
				s.release()
			}
		}
		if s.Owner == old.Owner && s.Status == old.Status {
			out = &StepResult{Step: steps.View(st.now())[i], Revision: rev}
			return nil
		}
		newRev, err := st.writeSteps(ctx, tx, name, rev, steps, events.StepUpdated, &stepChange{
			StepID: id, Step: *s, PreviousStatus: old.Status, PreviousOwner: old.Owner,
		})
		if err != nil {
			return err
		}
		out = &StepResult{Step: steps.View(st.now())[i], Revision: newRev}
		return nil
	})
	return out, err
}

// Claim is the coordinator's dispatch: in one write transaction it takes
// the first ready step in plan order (of owner req.Owner, when given),
// makes it in_progress and records the worker's lease. It returns nil when
// no step is ready. Errors: invalid_argument, not_found, version_conflict.
func (st *Store) Claim(ctx context.Context, name string, req ClaimRequest, pre revision.Precondition) (*StepResult, error) {
	if err := ValidateName(name); err != nil {
		return nil, err
	}
	if err := validation.Struct(req); err != nil {
		return nil, err
	}
	var out *StepResult
	err := st.changeSteps(ctx, name, pre, func(tx *sql.Tx, steps Steps, rev int64) error {
		var err error
		for _, i := range Ready(steps, st.now()) {
			if req.Owner != "" && steps[i].Owner != req.Owner {
				continue
			}
			out, err = st.claimAt(ctx, tx, name, rev, steps, i, req.Worker, leaseOf(req.LeaseSeconds))
			return err
		}
		return nil
	})
	return out, err
}

// ClaimStep takes one named step for a worker, or renews the lease the
// worker holds on it (even one that expired, as long as nobody else has
// claimed the step since). A step held by another worker under a live
// lease, or not pending, is version_conflict; a pending step whose deps
// are not complete is deps_incomplete. Errors: invalid_argument,
// not_found, deps_incomplete, version_conflict.
func (st *Store) ClaimStep(ctx context.Context, name, id string, req StepClaimRequest, pre revision.Precondition) (*StepResult, error) {
	if err := ValidateName(name); err != nil {
		return nil, err
	}
	if err := validation.Struct(req); err != nil {
		return nil, err
	}
	var out *StepResult
	err := st.changeStep(ctx, name, id, pre, func(tx *sql.Tx, steps Steps, rev int64, i int) error {
		s := &steps[i]
		switch {
		case s.heldBy(req.Worker):
		case s.claimable(st.now()):
			if err := depsIncomplete(steps, i, "claimed"); err != nil {
				return err
			}
		default:
			return claimConflict(s, rev)
		}
		var err error
		out, err = st.claimAt(ctx, tx, name, rev, steps, i, req.Worker, leaseOf(req.LeaseSeconds))
		return err
	})
	return out, err
}

// changeSteps runs change on plan name's steps in one write transaction,
// once the plan exists and its precondition holds: the opening every step
// write shares.
func (st *Store) changeSteps(ctx context.Context, name string, pre revision.Precondition,
	change func(tx *sql.Tx, steps Steps, rev int64) error) error {
	return st.db.Write(ctx, func(tx *sql.Tx) error {
		steps, rev, err := loadSteps(ctx, tx, name)
		if err != nil {
			return err
		}
		if err := pre.Check(what(name), true, rev); err != nil {
			return err
		}
		return change(tx, steps, rev)
	})
}

// changeStep is changeSteps for one step, found by id (not_found
// otherwise); i is its index in steps.
func (st *Store) changeStep(ctx context.Context, name, id string, pre revision.Precondition,
	change func(tx *sql.Tx, steps Steps, rev int64, i int) error) error {
	return st.changeSteps(ctx, name, pre, func(tx *sql.Tx, steps Steps, rev int64) error {
		i, err := findStep(steps, name, id)
		if err != nil {
			return err
		}
		return change(tx, steps, rev, i)
	})
}

// claimConflict explains why a step cannot be claimed.
func claimConflict(s *Step, rev int64) error {
	var e *apierr.Error
	switch {
	case s.Status == StepInProgress && s.ClaimedBy != nil:
		e = apierr.Conflict(rev, "step %q is claimed by %q until %s", s.ID, *s.ClaimedBy, *s.ClaimExpiresAt)
	case s.Status == StepInProgress:
		e = apierr.Conflict(rev, "step %q is in_progress without a claim (set by hand); set it back to pending to hand it out", s.ID)
	default:
		e = apierr.Conflict(rev, "step %q is %s; only a pending step, or one whose lease expired, can be claimed", s.ID, s.Status)
	}
	e.Extra = map[string]any{"step_id": s.ID}
	return e
}

// claimAt gives step i to worker for lease seconds, or renews the lease
// the worker already holds, as the next revision.
func (st *Store) claimAt(ctx context.Context, tx *sql.Tx, name string, rev int64, steps Steps, i int, worker string, lease int) (*StepResult, error) {
	s := &steps[i]
	data := &stepChange{StepID: s.ID, PreviousStatus: s.Status, Renewed: s.heldBy(worker)}
	if !data.Renewed && s.ClaimedBy != nil {
		data.PreviousClaimedBy = s.ClaimedBy
	}
	now := st.now()
	s.claim(worker, now, lease)
	data.Step = *s
	newRev, err := st.writeSteps(ctx, tx, name, rev, steps, events.StepClaimed, data)
	if err != nil {
		return nil, err
	}
	return &StepResult{Step: steps.View(now)[i], Revision: newRev}, nil
}
