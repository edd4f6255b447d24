package plans

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/planserver/planserver/internal/db"
	"github.com/planserver/planserver/internal/dbtest"
	"github.com/planserver/planserver/internal/dbtest/migrated"
	"github.com/planserver/planserver/internal/revision"
)

func TestLeaseChanges(t *testing.T) {
	at := func(s string) *string { return &s }
	held := func(id, worker, until string) Step {
		return Step{ID: id, Status: StepInProgress, ClaimedBy: at(worker), ClaimExpiresAt: at(until)}
	}
	with := func(s Step, f func(*Step)) Step { f(&s); return s }
	a := held("a", "w1", "2026-01-10T09:01:00.000Z")
	for _, c := range []struct {
		name           string
		old, next      Steps
		ended, started []int
	}{
		{"new plan", nil, Steps{a, {ID: "b", Status: StepPending}}, nil, []int{0}},
		{"unchanged", Steps{a}, Steps{with(a, func(s *Step) { s.Owner = "other" })}, nil, nil},
		{"renewed", Steps{a}, Steps{held("a", "w1", "2026-01-10T09:02:00.000Z")}, []int{0}, []int{0}},
		{"taken over", Steps{a}, Steps{held("a", "w2", "2026-01-10T09:01:00.000Z")}, []int{0}, []int{0}},
		{"completed", Steps{a}, Steps{{ID: "a", Status: StepComplete}}, []int{0}, nil},
		{"in_progress by hand keeps no lease", Steps{{ID: "a", Status: StepInProgress}}, Steps{a}, nil, []int{0}},
		{"removed", Steps{{ID: "x"}, a}, Steps{{ID: "x"}}, []int{1}, nil},
		{"moved in plan order", Steps{{ID: "x"}, a}, Steps{a, {ID: "x"}}, nil, nil},
		{"renamed", Steps{a}, Steps{held("a2", "w1", "2026-01-10T09:01:00.000Z")}, []int{0}, []int{0}},
	} {
		ended, started := leaseChanges(c.old, c.next)
		if !slices.Equal(ended, c.ended) || !slices.Equal(started, c.started) {
			t.Errorf("%s: ended %v started %v, want %v %v", c.name, ended, started, c.ended, c.started)
		}
	}
}

// TestDueLeasesIsOneIndexRange checks with the engines' planners that the
// sweeper's look for lapsed leases is one range of step_leases_ends, so a
// sweep costs an index lookup however many leases run, and nothing when
// none is due.
func TestDueLeasesIsOneIndexRange(t *testing.T) {
	d := migrated.Fresh(t)
	args := []any{"2026-01-10T09:00:00.000Z", sweepBatch}
	if dbtest.Postgres() {
		err := d.Read(context.Background(), func(tx *db.Tx) error {
			text := dbtest.Explain(t, tx, dueLeasesSQL, args...)
			t.Logf("plan: %s", text)
			if !strings.Contains(text, "using step_leases_ends") || strings.Contains(text, "Seq Scan") || strings.Contains(text, "Sort") {
				t.Errorf("want one range of step_leases_ends: %s", text)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return
	}
	text := dbtest.ExplainQueryPlan(t, d.Reader(context.Background()), dueLeasesSQL, args...)
	t.Logf("plan: %s", text)
	if !strings.Contains(text, "USING INDEX step_leases_ends (claim_expires_at<?)") || strings.Contains(text, "TEMP B-TREE") {
		t.Errorf("want one range of step_leases_ends: %s", text)
	}
}

// claimedSteps returns n steps, each in progress under worker w<i>'s lease
// ending at until.
func claimedSteps(n int, until time.Time) Steps {
	end := db.FormatTime(until)
	var out Steps
	for i := range n {
		w := fmt.Sprintf("w%d", i)
		out = append(out, Step{ID: fmt.Sprintf("s%d", i), Description: "d", Owner: "o", Status: StepInProgress,
			ClaimedBy: &w, ClaimExpiresAt: &end, Deps: []string{}, Commands: []string{}, Files: []string{}})
	}
	return out
}

func countIn(t *testing.T, d *db.DB, query string, args ...any) int {
	t.Helper()
	var n int
	if err := d.Reader(context.Background()).QueryRow(query, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestSweepWorksOffABacklogInBatches: leases of two plans that lapsed
// while nothing swept (downtime) are all reported by one SweepLeases,
// although each of its writes takes sweepBatch of one plan's at most.
func TestSweepWorksOffABacklogInBatches(t *testing.T) {
	defer func(n int) { sweepBatch = n }(sweepBatch)
	sweepBatch = 7
	d := migrated.Fresh(t)
	now := time.Date(2026, 1, 10, 9, 0, 0, 0, time.UTC)
	d.SetClock(func() time.Time { return now })
	st := NewStore(d, Config{})
	ctx := context.Background()
	content := "# p"
	for name, n := range map[string]int{"p": 20, "q": 5} {
		if _, _, err := st.Put(ctx, name, Change{Content: &content, Steps: claimedSteps(n, now.Add(time.Minute))}, revision.Precondition{}); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := st.SweepLeases(ctx); n != 0 || err != nil {
		t.Fatalf("before the end: %d, %v", n, err)
	}
	now = now.Add(time.Minute)
	before := countIn(t, d, `SELECT count(*) FROM events`)
	if n, err := st.SweepLeases(ctx); n != 25 || err != nil {
		t.Fatalf("the backlog: %d, %v", n, err)
	}
	for name, want := range map[string]int{"p": 20, "q": 5} {
		if got := countIn(t, d, `SELECT count(*) FROM events WHERE type = 'step.claim_expired' AND plan = ?`, name); got != want {
			t.Errorf("plan %s: %d step.claim_expired events, want %d", name, got, want)
		}
	}
	if got := countIn(t, d, `SELECT count(*) FROM events`); got != before+25 {
		t.Errorf("%d events recorded by the sweep, want 25", got-before)
	}
	if n := countIn(t, d, `SELECT count(*) FROM step_leases`); n != 0 {
		t.Errorf("%d leases left", n)
	}
}

// TestMigrationKeepsRunningLeases: migration 00016 fills step_leases with
// the leases running at the upgrade, and skips those already over, steps
// without a claim, and plans whose steps cannot be read.
func TestMigrationKeepsRunningLeases(t *testing.T) {
	d := migrated.Fresh(t)
	st := NewStore(d, Config{})
	ctx := context.Background()
	content := "# p"
	now := time.Now()
	put := func(name string, steps Steps) {
		t.Helper()
		if _, _, err := st.Put(ctx, name, Change{Content: &content, Steps: steps}, revision.Precondition{}); err != nil {
			t.Fatal(err)
		}
	}
	running := claimedSteps(2, now.Add(time.Hour))
	running[1].Status, running[1].ClaimedBy, running[1].ClaimExpiresAt = StepPending, nil, nil
	put("running", running)
	put("over", claimedSteps(1, now.Add(-time.Hour)))
	put("broken", claimedSteps(1, now.Add(time.Hour)))
	put("object", claimedSteps(1, now.Add(time.Hour)))
	err := d.Write(ctx, func(tx *db.Tx) error {
		if _, err := tx.Exec(`UPDATE plans SET steps = '[{"id": "s0", "status": "in_progress", "claimed_by"' WHERE name = 'broken'`); err != nil {
			return err
		}
		_, err := tx.Exec(`UPDATE plans SET steps = '{"id": "s0"}' WHERE name = 'object'`)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	// Roll back 00016 (and the migrations after it), then migrate up again.
	for {
		v, err := d.MigrateDown(ctx, nil)
		if err != nil || v < 16 {
			t.Fatalf("down: %d, %v", v, err)
		}
		if v == 16 {
			break
		}
	}
	if _, _, err := d.MigrateUp(ctx, nil); err != nil {
		t.Fatal(err)
	}
	rows, err := d.Reader(ctx).Query(`SELECT plan, step_id, claimed_by, claim_expires_at FROM step_leases ORDER BY plan, step_id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var p, s, w, e string
		if err := rows.Scan(&p, &s, &w, &e); err != nil {
			t.Fatal(err)
		}
		got = append(got, p+"/"+s+"/"+w+"/"+e)
	}
	if want := []string{"running/s0/w0/" + *running[0].ClaimExpiresAt}; !slices.Equal(got, want) {
		t.Errorf("step_leases after the upgrade: %v, want %v", got, want)
	}
}
