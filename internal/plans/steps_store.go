package plans

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/apierr"
	"github.com/planserver/planserver/internal/db"
	"github.com/planserver/planserver/internal/events"
	"github.com/planserver/planserver/internal/revision"
	"github.com/planserver/planserver/internal/validation"
)

// Step operations keep the steps in the plan row: every change of a step
// is a new revision of its plan, with the replaced one in the history, the
// plan's preconditions, and its event in the same transaction. Claims are
// atomic because write transactions are serialized (db.Write) and each
// operation reads the steps inside its own write transaction: two
// claimers run one after the other, and the second sees the first one's
// claim.

// StepQuery filters the steps of a plan. Empty fields do not filter.
type StepQuery struct {
	Status string
	Owner  string
	// Ready, when set, keeps only the steps that are (true) or are not
	// (false) ready now.
	Ready *bool
}

// The step wire types.
type (
	StepList         = api.StepList
	StepResult       = api.StepResult
	StepPatch        = api.StepPatch
	ClaimRequest     = api.ClaimRequest
	StepClaimRequest = api.StepClaimRequest
)

func leaseOf(seconds *int) int {
	if seconds == nil {
		return DefaultLeaseSeconds
	}
	return *seconds
}

// stepsHead is a plan's steps with what a step write needs of its row.
type stepsHead struct {
	head
	steps Steps
}

// stepsHeadSQL is loadSteps' read of a plan's head and steps, by name.
const stepsHeadSQL = `SELECT revision, content_rev, renewed, status, steps FROM plans WHERE name = ?`

// loadSteps reads a plan's head and steps (not its content).
func loadSteps(q db.Querier, name string) (*stepsHead, error) {
	return scanSteps(q.QueryRow(stepsHeadSQL, name), name)
}

// scanSteps reads a plan's head and steps from row, the answer of
// stepsHeadSQL for plan name.
func scanSteps(row *db.Row, name string) (*stepsHead, error) {
	var (
		h       stepsHead
		renewed int
		raw     []byte
	)
	err := row.Scan(&h.revision, &h.contentRev, &renewed, &h.status, &raw)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound(name)
	}
	if err != nil {
		return nil, fmt.Errorf("get steps of plan %q: %w", name, err)
	}
	h.renewed = renewed == 1
	if h.steps, err = decodeStoredSteps(raw); err != nil {
		return nil, fmt.Errorf("plan %q revision %d has unreadable steps: %w", name, h.revision, err)
	}
	return &h, nil
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

// Steps lists a plan's steps in plan order, filtered by q. Errors:
// invalid_argument, not_found.
func (st *Store) Steps(ctx context.Context, name string, q StepQuery) (*StepList, error) {
	if err := ValidateName(name); err != nil {
		return nil, err
	}
	if q.Status != "" {
		if err := ParseStepStatus("status", q.Status); err != nil {
			return nil, err
		}
	}
	h, err := loadSteps(st.db.Reader(ctx), name)
	if err != nil {
		return nil, err
	}
	now := st.db.Now()
	ready := map[int]bool{}
	for _, i := range Ready(h.steps, now) {
		ready[i] = true
	}
	out := &StepList{Steps: []StepView{}, Revision: h.revision}
	for i, v := range h.steps.View(now) {
		if (q.Status != "" && v.Status != q.Status) || (q.Owner != "" && v.Owner != q.Owner) ||
			(q.Ready != nil && ready[i] != *q.Ready) {
			continue
		}
		out.Steps = append(out.Steps, v)
	}
	return out, nil
}

// GetStep returns one step of a plan. Errors: invalid_argument, not_found.
func (st *Store) GetStep(ctx context.Context, name, id string) (*StepResult, error) {
	if err := ValidateName(name); err != nil {
		return nil, err
	}
	h, err := loadSteps(st.db.Reader(ctx), name)
	if err != nil {
		return nil, err
	}
	i, err := findStep(h.steps, name, id)
	if err != nil {
		return nil, err
	}
	return &StepResult{Step: h.steps.View(st.db.Now())[i], Revision: h.revision}, nil
}

// UpdateStep sets a step's status or owner (see patchStep). A patch that
// changes nothing is answered with the current revision and writes
// nothing. Errors: invalid_argument, not_found, deps_incomplete,
// version_conflict, precondition_required.
func (st *Store) UpdateStep(ctx context.Context, name, id string, patch StepPatch, pre revision.Precondition) (*StepResult, error) {
	if err := ValidateName(name); err != nil {
		return nil, err
	}
	if err := validation.Struct(patch); err != nil {
		return nil, err
	}
	return st.moveStep(ctx, name, id, pre, func(tx *db.Tx, h *stepsHead, i int, _ int64) (*stepMove, error) {
		return patchStep(h.steps, i, patch)
	})
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
	return st.moveSteps(ctx, name, pre, func(tx *db.Tx, h *stepsHead, _ int64) (*stepMove, error) {
		return claimNext(h.steps, req.Owner, req.Worker, leaseOf(req.LeaseSeconds), tx.Now()), nil
	})
}

// ClaimStep takes one named step for a worker, or renews the lease the
// worker holds on it (see claimStep). Errors: invalid_argument, not_found,
// deps_incomplete, version_conflict.
func (st *Store) ClaimStep(ctx context.Context, name, id string, req StepClaimRequest, pre revision.Precondition) (*StepResult, error) {
	if err := ValidateName(name); err != nil {
		return nil, err
	}
	if err := validation.Struct(req); err != nil {
		return nil, err
	}
	return st.moveStep(ctx, name, id, pre, func(tx *db.Tx, h *stepsHead, i int, _ int64) (*stepMove, error) {
		return claimStep(h.steps, i, req.Worker, leaseOf(req.LeaseSeconds), tx.Now(), h.revision)
	})
}

// moveSteps is every step write: in one write transaction, load the
// plan's steps, check the precondition, decide the move (told rev, the
// revision it would be stored as), and store it as that revision with its
// event. A nil move writes nothing and answers nil (claimNext) or the step
// unchanged (moveStep). Callers have validated name (ValidateName) before
// their request, so a bad name and a bad request answer the name's error.
func (st *Store) moveSteps(ctx context.Context, name string, pre revision.Precondition,
	decide func(tx *db.Tx, h *stepsHead, rev int64) (*stepMove, error)) (*StepResult, error) {
	var out *StepResult
	// Keyed, as a Put: a step move reads and changes only the plan's own
	// rows (its head, history, contents, step leases and reports), so
	// claims and reports of different plans run at once on PostgreSQL.
	// Its head is its first read.
	head := db.Query{SQL: stepsHeadSQL, Args: []any{name}}
	err := st.db.WriteKeyedFirst(ctx, planKey(name), head, func(tx *db.Tx, row *db.Row) error {
		h, err := scanSteps(row, name)
		if err != nil {
			return err
		}
		res := resource(name, h.revision)
		if err := res.Check(pre); err != nil {
			return err
		}
		rev, err := res.Next(tx)
		if err != nil {
			return err
		}
		m, err := decide(tx, h, rev)
		if err != nil || m == nil {
			return err
		}
		if err := st.bump(tx, name, &h.head, rev, Change{Steps: m.steps}, m.renewal); err != nil {
			return err
		}
		// A lease that ran out before this move ended it (a takeover, a
		// late report) is reported before the move's own event.
		if err := settleLeases(tx, name, h.revision, h.steps, m.steps); err != nil {
			return err
		}
		if err := events.Record(tx, m.event(name, rev)); err != nil {
			return err
		}
		out = &StepResult{Step: m.steps.View(tx.Now())[m.i], Revision: rev}
		return nil
	})
	return out, err
}

// moveStep is moveSteps for one step, found by id (not_found otherwise).
// A move that changes nothing answers the step as it is.
func (st *Store) moveStep(ctx context.Context, name, id string, pre revision.Precondition,
	decide func(tx *db.Tx, h *stepsHead, i int, rev int64) (*stepMove, error)) (*StepResult, error) {
	var unchanged *StepResult
	out, err := st.moveSteps(ctx, name, pre, func(tx *db.Tx, h *stepsHead, rev int64) (*stepMove, error) {
		i, err := findStep(h.steps, name, id)
		if err != nil {
			return nil, err
		}
		m, err := decide(tx, h, i, rev)
		if m == nil && err == nil {
			unchanged = &StepResult{Step: h.steps.View(tx.Now())[i], Revision: h.revision}
		}
		return m, err
	})
	if out == nil && err == nil {
		return unchanged, nil
	}
	return out, err
}
