package plans

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/planserver/planserver/internal/db"
	"github.com/planserver/planserver/internal/dbtest"
	"github.com/planserver/planserver/internal/dbtest/migrated"
	"github.com/planserver/planserver/internal/events"
	"github.com/planserver/planserver/internal/revision"
)

// TestPostgresStepMovesOfOtherPlansOverlap: on PostgreSQL the step moves
// of a plan (a claim, a named claim, a patch, a report) and the sweep of
// its lapsed leases are keyed by the plan, as a Put is. While a write of plan a is in flight on one replica,
// every move of plan b goes through on another; a claim of plan a waits
// for it and commits after it. Event seqs stay in commit order without a
// gap. With the global write lock every move of b waits for the write of
// a.
func TestPostgresStepMovesOfOtherPlansOverlap(t *testing.T) {
	dbtest.RequirePostgres(t)
	dsn := dbtest.Fresh(t)
	// The other replica's clock moves on its own, so that a lease of b
	// can run out for the sweeper.
	var now atomic.Int64
	now.Store(time.Now().UnixNano())
	d := migrated.Open(t, dsn)
	other := migrated.OpenWith(t, dsn, db.Options{Clock: func() time.Time { return time.Unix(0, now.Load()) }})
	st, otherSt := NewStore(d, Config{}), NewStore(other, Config{})
	ctx := context.Background()
	var none revision.Precondition
	steps, err := ParseSteps([]byte(`[{"id":"s1","description":"first","owner":"dev"},{"id":"s2","description":"second","owner":"dev"},{"id":"s3","description":"third","owner":"dev"}]`))
	if err != nil {
		t.Fatal(err)
	}
	content := "# work"
	for _, name := range []string{"a", "b"} {
		if _, _, err := st.Put(ctx, name, Change{Content: &content, Steps: steps}, none); err != nil {
			t.Fatal(err)
		}
	}

	// A keyed write of plan a, held open once its locks are taken. Its
	// event is appended with its commit, so the claim of a that waits for
	// it must come after it in the log.
	running, gate := make(chan struct{}), make(chan struct{})
	var release sync.Once
	open := func() { release.Do(func() { close(gate) }) }
	t.Cleanup(open) // before the databases close, which wait for it
	heldA := make(chan error, 1)
	go func() {
		heldA <- d.WriteKeyed(ctx, planKey("a"), func(tx *db.Tx) error {
			var one int
			// A read sends the batch's BEGIN and its locks.
			if err := tx.QueryRow(`SELECT 1`).Scan(&one); err != nil {
				return err
			}
			close(running)
			<-gate
			return events.Record(tx, events.New{Type: events.PlanUpdated, Plan: "a", Revision: 1})
		})
	}()
	<-running

	owner, leaseSeconds := "ops", 1
	moves := []struct {
		what string
		move func() error
	}{
		{"claim", func() error {
			_, err := otherSt.Claim(ctx, "b", ClaimRequest{Worker: "w1"}, none)
			return err
		}},
		{"report", func() error {
			_, err := otherSt.AddReport(ctx, "b", "s1", ReportInput{Outcome: OutcomeSuccess}, none)
			return err
		}},
		{"named claim", func() error {
			_, err := otherSt.ClaimStep(ctx, "b", "s2", StepClaimRequest{Worker: "w2", LeaseSeconds: &leaseSeconds}, none)
			return err
		}},
		{"patch", func() error {
			_, err := otherSt.UpdateStep(ctx, "b", "s3", StepPatch{Owner: &owner}, none)
			return err
		}},
		{"sweep of the lease that ran out", func() error {
			now.Add(int64(time.Minute))
			n, err := otherSt.SweepLeases(ctx)
			if err == nil && n != 1 {
				err = fmt.Errorf("the sweep reported %d leases, want 1", n)
			}
			return err
		}},
	}
	for _, m := range moves {
		done := make(chan error, 1)
		go func() { done <- m.move() }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("%s of plan b: %v", m.what, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("a %s of plan b waited for a write of plan a", m.what)
		}
	}

	claimA := make(chan *StepResult, 1)
	go func() {
		res, err := otherSt.Claim(ctx, "a", ClaimRequest{Worker: "w3"}, none)
		if err != nil {
			t.Error(err)
		}
		claimA <- res
	}()
	dbtest.WaitAdvisoryWaiters(t, d.Reader(ctx), 1)
	select {
	case res := <-claimA:
		t.Fatalf("a claim of plan a ran beside a write of it: %+v", res)
	default:
	}
	open()
	if err := <-heldA; err != nil {
		t.Fatal(err)
	}
	if res := <-claimA; res == nil || res.Step.ID != "s1" {
		t.Fatalf("the claim of plan a after its write took %+v, want s1", res)
	}

	// The creations, b's moves, then a's write and its claim.
	want := []string{"a plan.created", "b plan.created",
		"b step.claimed", "b step.report_added", "b step.claimed", "b step.updated", "b step.claim_expired",
		"a plan.updated", "a step.claimed"}
	got := dbtest.EventLog(t, d.Reader(ctx), `plan || ' ' || type`)
	if !slices.Equal(got, want) {
		t.Fatalf("events in seq order:\n got %q\nwant %q", got, want)
	}
}
