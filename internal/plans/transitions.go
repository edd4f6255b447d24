package plans

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/apierr"
	"github.com/planserver/planserver/internal/events"
)

// The step transitions, pure: the plan's steps and revision and the
// request in; the steps after and the event to append out, or a coded
// error. Stores load, call one, save, append. Every transition works on a
// copy: the steps it was given are left as they were.

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

// stepMove is the outcome of a step transition: the steps after it, the
// position of the step it changed, and its event. A nil move changes
// nothing.
type stepMove struct {
	steps Steps
	i     int
	typ   string
	data  stepChange
	// renewal marks a change that only renews the holder's lease.
	renewal bool
}

// event returns the move's event for plan name at revision rev.
func (m *stepMove) event(name string, rev int64) events.New {
	m.data.Plan, m.data.Revision = name, rev
	return events.New{Type: m.typ, Plan: name, Revision: rev, Data: m.data}
}

// patchStep sets step i's status or owner. Starting or completing a step
// whose deps are not all complete is deps_incomplete; any status but
// in_progress drops the step's claim. A patch that changes nothing is a
// nil move.
func patchStep(steps Steps, i int, patch api.StepPatch) (*stepMove, error) {
	steps = steps.clone()
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
				return nil, err
			}
		case StepComplete:
			if err := depsIncomplete(steps, i, "completed"); err != nil {
				return nil, err
			}
		}
		if s.Status != StepInProgress {
			release(s)
		}
	}
	if s.Owner == old.Owner && s.Status == old.Status {
		return nil, nil
	}
	return &stepMove{steps: steps, i: i, typ: events.StepUpdated, data: stepChange{
		StepID: s.ID, Step: *s, PreviousStatus: old.Status, PreviousOwner: old.Owner,
	}}, nil
}

// claimNext is the coordinator's dispatch: the first step ready at now in
// plan order (of owner, when given), claimed for worker. A nil move when
// none is ready.
func claimNext(steps Steps, owner, worker string, lease int, now time.Time) *stepMove {
	for _, i := range Ready(steps, now) {
		if owner != "" && steps[i].Owner != owner {
			continue
		}
		return claimAt(steps, i, worker, lease, now)
	}
	return nil
}

// claimStep takes step i for worker, or renews the lease the worker holds
// on it (even one that expired, as long as nobody else has claimed the
// step since). A step held by another worker under a live lease, or not
// pending, is version_conflict (rev is the plan's revision, for the
// error); a pending step whose deps are not complete is deps_incomplete.
func claimStep(steps Steps, i int, worker string, lease int, now time.Time, rev int64) (*stepMove, error) {
	s := &steps[i]
	switch {
	case heldBy(s, worker):
	case claimable(s, now):
		if err := depsIncomplete(steps, i, "claimed"); err != nil {
			return nil, err
		}
	default:
		return nil, claimConflict(s, rev)
	}
	return claimAt(steps, i, worker, lease, now), nil
}

// claimAt gives step i to worker for lease seconds from now, or renews
// the lease the worker already holds.
func claimAt(steps Steps, i int, worker string, lease int, now time.Time) *stepMove {
	steps = steps.clone()
	s := &steps[i]
	m := &stepMove{steps: steps, i: i, typ: events.StepClaimed, renewal: heldBy(s, worker),
		data: stepChange{StepID: s.ID, PreviousStatus: s.Status}}
	m.data.Renewed = m.renewal
	if !m.renewal && s.ClaimedBy != nil {
		m.data.PreviousClaimedBy = s.ClaimedBy
	}
	claim(s, worker, now, lease)
	m.data.Step = *s
	return m
}

// report applies an execution report to step i: success completes it (its
// deps must be complete: deps_incomplete otherwise), failure and blocked
// block it; its claim is dropped either way. A report that names a worker
// is refused with version_conflict unless that worker holds the step's
// claim: when a lease expired and another worker claimed the step, the
// first worker's late report must not settle the second one's work. A
// report without a worker is the coordinator's (or a human's) and always
// applies.
func report(steps Steps, i int, outcome string, worker *string, rev int64) (*stepMove, error) {
	steps = steps.clone()
	s := &steps[i]
	if worker != nil && !heldBy(s, *worker) {
		return nil, lateReport(s, *worker, rev)
	}
	previous := s.Status
	if outcome == OutcomeSuccess {
		if err := depsIncomplete(steps, i, "completed"); err != nil {
			return nil, err
		}
		s.Status = StepComplete
	} else {
		s.Status = StepBlocked
	}
	release(s)
	return &stepMove{steps: steps, i: i, typ: events.StepReportAdded, data: stepChange{
		StepID: s.ID, Step: *s, PreviousStatus: previous, Outcome: outcome,
	}}, nil
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

// clone returns a copy of s whose steps can be changed without touching
// s's (their slices are not shared either).
func (s Steps) clone() Steps {
	out := make(Steps, len(s))
	for i, st := range s {
		st.Deps, st.Commands, st.Files = slices.Clone(st.Deps), slices.Clone(st.Commands), slices.Clone(st.Files)
		out[i] = st
	}
	return out
}

// ExecutingStatus reports whether moving a step to status executes it:
// starting it or completing it. Plan mode keeps execution from agents
// (auth.ExecuteSteps); pending and blocked, like owners and descriptions,
// are planning.
func ExecutingStatus(status string) bool {
	return status == StepInProgress || status == StepComplete
}

// FirstExecution returns the position in next of the first step that a
// whole-plan write replacing old with next would execute, and what it
// would do to it; -1 when the write only plans. A step executes when its
// status moves to in_progress or complete (a step new to the plan moves
// from nothing), or when its claim is set or changed (taken, renewed or
// extended), which only claim_step may do for a worker. Steps are matched
// by id, so reordering or renaming cannot launder a status: a renamed step
// that is complete is a new step that is complete.
func FirstExecution(old, next Steps) (int, string) {
	before := make(map[string]*Step, len(old))
	for j := range old {
		before[old[j].ID] = &old[j]
	}
	for i := range next {
		n := &next[i]
		o := before[n.ID]
		switch {
		case ExecutingStatus(n.Status) && (o == nil || o.Status != n.Status):
			return i, "moving it to " + n.Status
		case n.ClaimedBy != nil && (o == nil || o.ClaimedBy == nil || *o.ClaimedBy != *n.ClaimedBy):
			return i, "setting its claim"
		case n.ClaimExpiresAt != nil && (o == nil || o.ClaimExpiresAt == nil || *o.ClaimExpiresAt != *n.ClaimExpiresAt):
			return i, "changing its claim's lease"
		}
	}
	return -1, ""
}
