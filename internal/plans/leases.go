package plans

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/planserver/planserver/internal/db"
	"github.com/planserver/planserver/internal/events"
)

// Lease expiry is reported once per lease, when it happens: a lease runs
// out without any write (the step merely becomes claimable again), so the
// table step_leases (migration 00016) lists the leases whose end has not
// been reported yet, and whichever comes first reports it in the same
// transaction that deletes the lease's row:
//
//   - the sweeper (SweepLeases, every SweepInterval on every replica), or
//   - a write that ends the lease after it ran out: a takeover, a late
//     report, a renewal of the expired lease, a whole-plan write
//     (settleLeases, called by every write of a plan's steps).
//
// A lease renewed, released or completed before its end is deleted from
// the table with no event. The writes of one plan's rows are serialized
// (db.WriteKeyed with the plan's key; on PostgreSQL across replicas), and
// the row goes in the transaction that records the event, so no two
// transactions report the same lease. Whether a lease has run out is
// decided by leaseExpired alone; the table's time column only narrows the
// sweeper's search to one index range.

// SweepInterval is how often the sweeper looks for lapsed leases, and so
// about how late after a lease's end its step.claim_expired is recorded
// (plus the wait for the write, when the database is busy).
const SweepInterval = time.Second

// sweepBatch bounds the lapsed leases one sweep looks for, and one sweep
// transaction (of one plan) reports, so a backlog (after downtime) is
// worked off in short writes.
var sweepBatch = 100

// claimExpiry is the data of a step.claim_expired event: whose lease on
// which step ended, and when.
type claimExpiry struct {
	Plan string `json:"plan"`
	// Revision is the plan's revision when the lease ran out (a lease
	// running out makes no revision).
	Revision       int64  `json:"revision"`
	StepID         string `json:"step_id"`
	Owner          string `json:"owner"`
	ClaimedBy      string `json:"claimed_by"`
	ClaimExpiresAt string `json:"claim_expires_at"`
	// Step is the step as stored when its lease ran out.
	Step Step `json:"step"`
}

// expiryEvent is the step.claim_expired event of step s, whose lease ran
// out while plan name was at revision rev.
func expiryEvent(name string, rev int64, s *Step) events.New {
	return events.New{Type: events.StepClaimExpired, Plan: name, Revision: rev, Actor: events.SystemActor,
		Data: claimExpiry{Plan: name, Revision: rev, StepID: s.ID, Owner: s.Owner, ClaimedBy: *s.ClaimedBy,
			ClaimExpiresAt: *s.ClaimExpiresAt, Step: *s}}
}

// settleLeases keeps step_leases in step with a write that replaces the
// steps of plan name (at revision rev) old with next: a lease the write
// ends loses its row, and one that had run out and was not reported yet
// is reported first (the event precedes the write's own); a lease the
// write starts gets one. When old is unknown (new plan, or old steps that
// cannot be read) every lease of next counts as started.
func settleLeases(tx *db.Tx, name string, rev int64, old, next Steps) error {
	ended, started := leaseChanges(old, next)
	now := tx.Now()
	for _, i := range ended {
		s := &old[i]
		if !leaseExpired(s, now) {
			// Renewed, released or completed in time: nothing to report.
			if _, err := tx.Exec(`DELETE FROM step_leases WHERE plan = ? AND step_id = ?`, name, s.ID); err != nil {
				return fmt.Errorf("end the lease on step %q of plan %q: %w", s.ID, name, err)
			}
			continue
		}
		reported, err := takeLease(tx, name, s)
		if err != nil {
			return err
		}
		if !reported {
			continue // the sweeper has reported it
		}
		if err := events.Record(tx, expiryEvent(name, rev, s)); err != nil {
			return err
		}
	}
	for _, i := range started {
		s := &next[i]
		if _, err := tx.Exec(`INSERT INTO step_leases (plan, step_id, claimed_by, claim_expires_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (plan, step_id) DO UPDATE SET claimed_by = excluded.claimed_by, claim_expires_at = excluded.claim_expires_at`,
			name, s.ID, *s.ClaimedBy, leaseEnd(s)); err != nil {
			return fmt.Errorf("record the lease on step %q of plan %q: %w", s.ID, name, err)
		}
	}
	return nil
}

// leaseEnd is s's claim_expires_at as step_leases stores it: in
// db.TimeFormat, whose text order is time order. Stored steps are
// normalized to it already (ParseSteps, claim); an unreadable one is kept
// as it is (leaseExpired counts it as run out, and so does the sweeper
// once it finds it).
func leaseEnd(s *Step) string {
	t, err := time.Parse(time.RFC3339Nano, *s.ClaimExpiresAt)
	if err != nil {
		return *s.ClaimExpiresAt
	}
	return db.FormatTime(t)
}

// takeLease deletes the row of s's lease and reports whether it was there,
// that is, whether the lease's end is this transaction's to report.
func takeLease(tx *db.Tx, name string, s *Step) (bool, error) {
	res, err := tx.Exec(`DELETE FROM step_leases WHERE plan = ? AND step_id = ? AND claimed_by = ? AND claim_expires_at = ?`,
		name, s.ID, *s.ClaimedBy, leaseEnd(s))
	var n int64
	if err == nil {
		n, err = res.RowsAffected()
	}
	if err != nil {
		return false, fmt.Errorf("report the lease on step %q of plan %q: %w", s.ID, name, err)
	}
	return n == 1, nil
}

// dueLease is a row of step_leases whose end has come.
type dueLease struct {
	plan, stepID, claimedBy, expiresAt string
}

// dueLeasesSQL finds the leases whose end is at or before a time: one range
// of step_leases_ends, empty (and nearly free) when none is due.
const dueLeasesSQL = `SELECT plan, step_id, claimed_by, claim_expires_at FROM step_leases
	WHERE claim_expires_at <= ? ORDER BY claim_expires_at LIMIT ?`

// duePlanLeasesSQL is dueLeasesSQL for the leases of one plan.
const duePlanLeasesSQL = `SELECT plan, step_id, claimed_by, claim_expires_at FROM step_leases
	WHERE claim_expires_at <= ? AND plan = ? ORDER BY claim_expires_at LIMIT ?`

// dueLeases returns up to limit leases whose end is at or before now,
// earliest first: of every plan, or of plan alone when it is not "".
func dueLeases(q db.Querier, plan string, now time.Time, limit int) ([]dueLease, error) {
	query, args := dueLeasesSQL, []any{db.FormatTime(now), limit}
	if plan != "" {
		query, args = duePlanLeasesSQL, []any{db.FormatTime(now), plan, limit}
	}
	rows, err := q.Query(query, args...)
	if err != nil {
		return nil, fmt.Errorf("find lapsed leases: %w", err)
	}
	defer rows.Close()
	var out []dueLease
	for rows.Next() {
		var d dueLease
		if err := rows.Scan(&d.plan, &d.stepID, &d.claimedBy, &d.expiresAt); err != nil {
			return nil, fmt.Errorf("find lapsed leases: %w", err)
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("find lapsed leases: %w", err)
	}
	return out, nil
}

// SweepLeases records a step.claim_expired event for each lease that has
// run out and was not reported yet, and returns how many it recorded. It
// looks first with a read (no write, no lock) and writes only when a
// lease is due: one write for each plan with leases due, keyed by the
// plan, which looks again, so replicas sweeping the same database at once
// report each lease once. On PostgreSQL a sweep then holds up the writes
// of the plans it sweeps, not every write.
func (st *Store) SweepLeases(ctx context.Context) (int, error) {
	total := 0
	for {
		due, err := dueLeases(st.db.Reader(ctx), "", st.db.Now(), sweepBatch)
		if err != nil || len(due) == 0 {
			return total, err
		}
		var plans []string
		for _, d := range due {
			if !slices.Contains(plans, d.plan) {
				plans = append(plans, d.plan)
			}
		}
		for _, name := range plans {
			var n int
			err := st.db.WriteKeyed(ctx, planKey(name), func(tx *db.Tx) error {
				var err error
				n, err = sweepPlan(tx, name)
				return err
			})
			total += n
			if err != nil {
				return total, err
			}
		}
		if len(due) < sweepBatch {
			return total, nil
		}
		if ctx.Err() != nil {
			return total, ctx.Err()
		}
	}
}

// sweepPlan reports up to sweepBatch lapsed leases of plan name, and
// drops the rows of leases its steps no longer hold (a plan deleted, or
// steps that cannot be read, offer no claim to report).
func sweepPlan(tx *db.Tx, name string) (int, error) {
	due, err := dueLeases(tx, name, tx.Now(), sweepBatch)
	if err != nil || len(due) == 0 {
		return 0, err
	}
	var (
		rev int64
		raw []byte
	)
	err = tx.QueryRow(`SELECT revision, steps FROM plans WHERE name = ?`, name).Scan(&rev, &raw)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("sweep leases of plan %q: %w", name, err)
	}
	var steps Steps
	if err == nil {
		steps, _ = decodeStoredSteps(raw)
	}
	now, n := tx.Now(), 0
	for _, d := range due {
		var s *Step
		if i := steps.index(d.stepID); i >= 0 && holds(&steps[i], d) {
			s = &steps[i]
		}
		if s != nil && !leaseExpired(s, now) {
			continue // the rule has the last word (the row's end is the step's, so this is never taken)
		}
		if _, err := tx.Exec(`DELETE FROM step_leases WHERE plan = ? AND step_id = ?`, name, d.stepID); err != nil {
			return n, fmt.Errorf("sweep leases of plan %q: %w", name, err)
		}
		if s == nil {
			continue // a row its plan's steps no longer match: nothing to report
		}
		if err := events.Record(tx, expiryEvent(name, rev, s)); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// holds reports whether s holds the lease of row d.
func holds(s *Step, d dueLease) bool {
	l, ok := leaseIn(s)
	return ok && l.claimedBy == d.claimedBy && leaseEnd(s) == d.expiresAt
}
