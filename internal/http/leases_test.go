package http_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/apitest"
	"github.com/planserver/planserver/internal/app"
	"github.com/planserver/planserver/internal/dbtest"
	"github.com/planserver/planserver/internal/webhooks/deliver"
)

// claimExpiry is the data of a step.claim_expired event.
type claimExpiry struct {
	Plan           string   `json:"plan"`
	Revision       int64    `json:"revision"`
	StepID         string   `json:"step_id"`
	Owner          string   `json:"owner"`
	ClaimedBy      string   `json:"claimed_by"`
	ClaimExpiresAt string   `json:"claim_expires_at"`
	Step           api.Step `json:"step"`
}

// expiries returns the step.claim_expired events of plan name, oldest
// first, read through GET /v1/events (so checked against the contract).
func expiries(t *testing.T, env *apitest.Env, name string) ([]api.Event, []claimExpiry) {
	t.Helper()
	var page api.EventPage
	env.Call("GET", "/v1/events?plan="+name+"&types=step.claim_expired&limit=1000", nil, "Accept", "application/json").JSON(t, &page)
	out := make([]claimExpiry, len(page.Events))
	for i, e := range page.Events {
		if err := json.Unmarshal(e.Data, &out[i]); err != nil {
			t.Fatalf("event %d: %v", e.Seq, err)
		}
	}
	return page.Events, out
}

func sweep(t *testing.T, env *apitest.Env) int {
	t.Helper()
	n, err := env.App.SweepLeases(context.Background())
	if err != nil {
		t.Fatalf("sweep: %v", err)
	}
	return n
}

func planRevision(t *testing.T, env *apitest.Env, name string) int64 {
	t.Helper()
	var p api.Plan
	env.Call("GET", "/v1/plans/"+name, nil).JSON(t, &p)
	return p.Revision
}

// TestClaimExpiredWhenTheLeaseEnds: a lease that runs out is recorded
// once, by the sweep after its end, as step.claim_expired naming the plan,
// the step, its owner, the worker and the lease's end, with no new
// revision; a lease renewed or a step completed before the end records
// nothing; a takeover after the sweep is no second notice; a renewed
// lease is a new lease, reported again when it runs out.
func TestClaimExpiredWhenTheLeaseEnds(t *testing.T) {
	clk := newClock()
	env := apitest.New(t, func(c *app.Config) { c.Now = clk.Now })
	putSteps(t, env, "p", []map[string]any{
		{"id": "a", "description": "lapses", "owner": "backend"},
		{"id": "b", "description": "renewed in time", "owner": "backend"},
		{"id": "c", "description": "completed in time", "owner": "backend"},
		{"id": "d", "description": "released in time", "owner": "backend"},
	})
	for _, w := range []string{"A", "B", "C", "D"} {
		if _, ok := claim(t, env, "p", map[string]any{"worker": w, "lease_seconds": 60}); !ok {
			t.Fatalf("claim for %s", w)
		}
	}
	if n := sweep(t, env); n != 0 {
		t.Fatalf("a sweep with every lease running recorded %d", n)
	}
	clk.Advance(30 * time.Second)
	if r := env.Call("POST", "/v1/plans/p/steps/b/claim", map[string]any{"worker": "B", "lease_seconds": 60}); r.Status != http.StatusOK {
		t.Fatalf("renew: %d %s", r.Status, r.Body)
	}
	postReport(t, env, "p", "c", map[string]any{"outcome": "success", "worker": "C"}, http.StatusCreated)
	if r := env.Call("PATCH", "/v1/plans/p/steps/d", map[string]any{"status": "pending"}); r.Status != http.StatusOK {
		t.Fatalf("release: %d %s", r.Status, r.Body)
	}
	clk.Advance(29*time.Second + 999*time.Millisecond)
	if n := sweep(t, env); n != 0 {
		t.Fatalf("a millisecond before the end: %d recorded", n)
	}
	rev := planRevision(t, env, "p")
	clk.Advance(time.Millisecond) // A's lease ends now
	if n := sweep(t, env); n != 1 {
		t.Fatalf("the sweep at A's lease end recorded %d, want 1", n)
	}
	if n := sweep(t, env); n != 0 {
		t.Fatalf("a second sweep recorded %d more", n)
	}
	evs, data := expiries(t, env, "p")
	if len(evs) != 1 {
		t.Fatalf("%d step.claim_expired events, want 1: %+v", len(evs), data)
	}
	e, d := evs[0], data[0]
	if e.Actor != "planserver" || e.Plan != "p" || e.Revision != rev || e.Time != "2026-01-10T09:01:00.000Z" {
		t.Errorf("event envelope %+v (plan at revision %d)", e, rev)
	}
	if d.Plan != "p" || d.Revision != rev || d.StepID != "a" || d.Owner != "backend" || d.ClaimedBy != "A" ||
		d.ClaimExpiresAt != "2026-01-10T09:01:00.000Z" || d.Step.Status != "in_progress" || d.Step.Description != "lapses" {
		t.Errorf("event data %+v", d)
	}
	// Nothing else changed: no revision, the step still A's (and ready).
	if got := planRevision(t, env, "p"); got != rev {
		t.Errorf("the lapse made revision %d from %d", got, rev)
	}
	if l := readSteps(t, env, "p", "?ready=true"); ids(l.Steps) != "a,d" || *l.Steps[0].ClaimedBy != "A" || !l.Steps[0].ClaimExpired {
		t.Errorf("after the lapse: %+v", l.Steps)
	}

	// E takes a over: its step.claimed names A, and no second lapse is
	// recorded for A's lease, now or by a later sweep.
	took, _ := claim(t, env, "p", map[string]any{"worker": "E", "lease_seconds": 60})
	if took.Step.ID != "a" {
		t.Fatalf("takeover took %+v", took.Step)
	}
	sweep(t, env)
	if evs, _ := expiries(t, env, "p"); len(evs) != 1 {
		t.Fatalf("after the takeover: %d step.claim_expired events", len(evs))
	}

	// B's renewed lease ends 60 s after the renewal: one more.
	clk.Advance(30 * time.Second)
	if n := sweep(t, env); n != 1 {
		t.Fatalf("B's renewed lease: %d recorded", n)
	}
	// B renews after its lease ran out (nobody took the step): a new lease,
	// and no new notice of the old one.
	if r := env.Call("POST", "/v1/plans/p/steps/b/claim", map[string]any{"worker": "B", "lease_seconds": 10}); r.Status != http.StatusOK {
		t.Fatalf("late renewal: %d %s", r.Status, r.Body)
	}
	if n := sweep(t, env); n != 0 {
		t.Fatalf("after the late renewal: %d recorded", n)
	}
	clk.Advance(10 * time.Second)
	if n := sweep(t, env); n != 1 {
		t.Fatalf("the late renewal's own lease: %d recorded", n)
	}
	_, data = expiries(t, env, "p")
	var got []string
	for _, d := range data {
		got = append(got, d.StepID+":"+d.ClaimedBy+"@"+d.ClaimExpiresAt)
	}
	want := []string{"a:A@2026-01-10T09:01:00.000Z", "b:B@2026-01-10T09:01:30.000Z", "b:B@2026-01-10T09:01:40.000Z"}
	if !slices.Equal(got, want) {
		t.Errorf("lapses %v, want %v", got, want)
	}
	if n := countRows(t, env, "step_leases", "plan = ?", "p"); n != 1 {
		t.Errorf("%d leases left to report, want E's", n)
	}
}

// TestClaimExpiredBeforeTheSweep: a write that ends a lease after its end
// before any sweep did (a takeover, a late report by the holder, a
// whole-plan write) records the lapse itself, just before its own event,
// and the sweep then records nothing more. A plan deleted with a lapsed
// lease takes it along unreported.
func TestClaimExpiredBeforeTheSweep(t *testing.T) {
	clk := newClock()
	env := apitest.New(t, func(c *app.Config) { c.Now = clk.Now })
	putSteps(t, env, "q", []map[string]any{
		{"id": "x", "description": "taken over", "owner": "o"},
		{"id": "y", "description": "reported late", "owner": "o"},
		{"id": "z", "description": "rewritten", "owner": "o"},
	})
	for _, w := range []string{"X", "Y", "Z"} {
		claim(t, env, "q", map[string]any{"worker": w, "lease_seconds": 5})
	}
	clk.Advance(time.Minute)
	claim(t, env, "q", map[string]any{"worker": "X2"})
	postReport(t, env, "q", "y", map[string]any{"outcome": "success", "worker": "Y"}, http.StatusCreated)
	// A whole-plan write that drops z's claim (sets it back to pending).
	var cur api.Plan
	env.Call("GET", "/v1/plans/q", nil).JSON(t, &cur)
	steps := []map[string]any{}
	for _, s := range cur.Steps {
		m := map[string]any{"id": s.ID, "description": s.Description, "owner": s.Owner, "status": s.Status}
		if s.ClaimedBy != nil && s.ID != "z" {
			m["claimed_by"], m["claim_expires_at"] = *s.ClaimedBy, *s.ClaimExpiresAt
		}
		if s.ID == "z" {
			m["status"] = "pending"
		}
		steps = append(steps, m)
	}
	putSteps(t, env, "q", steps)
	if got := planEvents(t, env, "q"); got != "plan.created@1,step.claimed@2,step.claimed@3,step.claimed@4,"+
		"step.claim_expired@4,step.claimed@5,step.claim_expired@5,step.report_added@6,step.claim_expired@6,plan.updated@7" {
		t.Errorf("events = %s", got)
	}
	if n := sweep(t, env); n != 0 {
		t.Errorf("the sweep recorded %d lapses the writes had recorded", n)
	}
	if _, data := expiries(t, env, "q"); len(data) != 3 || data[0].ClaimedBy != "X" || data[1].ClaimedBy != "Y" || data[2].ClaimedBy != "Z" {
		t.Errorf("lapses %+v", data)
	}

	// A deleted plan's lapsed lease is not reported.
	putSteps(t, env, "gone", []map[string]any{{"id": "g", "description": "d", "owner": "o"}})
	claim(t, env, "gone", map[string]any{"worker": "G", "lease_seconds": 1})
	clk.Advance(time.Minute)
	if r := env.Call("DELETE", "/v1/plans/gone", nil); r.Status != http.StatusNoContent {
		t.Fatalf("delete: %d %s", r.Status, r.Body)
	}
	if n := sweep(t, env); n != 0 {
		t.Errorf("a deleted plan's lease was reported: %d", n)
	}
	if n := countRows(t, env, "step_leases", ""); n != 1 {
		t.Errorf("%d leases left, want X2's", n)
	}
}

// TestClaimExpiredAcrossSweepers: several sweepers at once (on PostgreSQL,
// three replicas of one database; on SQLite, whose file one server owns,
// three sweepers of that server) record each of many lapsed leases
// exactly once.
func TestClaimExpiredAcrossSweepers(t *testing.T) {
	clk := newClock()
	path := dbtest.Fresh(t)
	cfg := func(c *app.Config) { c.Now = clk.Now }
	replicas := []*apitest.Env{apitest.Open(t, path, cfg)}
	if dbtest.Postgres() {
		replicas = append(replicas, apitest.Open(t, path, cfg), apitest.Open(t, path, cfg))
	}
	const steps = 60
	var list []map[string]any
	for i := range steps {
		list = append(list, map[string]any{"id": fmt.Sprintf("s%02d", i), "description": "d", "owner": "o"})
	}
	for _, name := range []string{"r1", "r2"} {
		putSteps(t, replicas[0], name, list[:steps/2])
		for i := 0; i < steps/2; i++ {
			// Leases end a few milliseconds apart, so the lapses come due
			// while the sweepers run.
			if _, ok := claim(t, replicas[i%len(replicas)], name, map[string]any{"worker": fmt.Sprintf("w%d", i), "lease_seconds": 1 + i%3}); !ok {
				t.Fatalf("claim %d of %s", i, name)
			}
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	recorded := make([]int, 3)
	for i := range recorded {
		wg.Add(1)
		go func() {
			defer wg.Done()
			env := replicas[i%len(replicas)]
			for ctx.Err() == nil {
				n, err := env.App.SweepLeases(ctx)
				if err != nil && ctx.Err() == nil {
					t.Errorf("sweeper %d: %v", i, err)
					return
				}
				recorded[i] += n
				time.Sleep(time.Millisecond)
			}
		}()
	}
	for range 4 {
		clk.Advance(time.Second)
		time.Sleep(20 * time.Millisecond) // let the sweepers race over what came due
	}
	waitFor(t, 10*time.Second, "every lease reported", func() bool { return countRows(t, replicas[0], "step_leases", "") == 0 })
	cancel()
	wg.Wait()
	total := 0
	for _, n := range recorded {
		total += n
	}
	var seen []string
	for _, name := range []string{"r1", "r2"} {
		_, data := expiries(t, replicas[0], name)
		for _, d := range data {
			seen = append(seen, d.Plan+"/"+d.StepID+"/"+d.ClaimedBy)
		}
	}
	sort.Strings(seen)
	if len(seen) != steps || len(slices.Compact(slices.Clone(seen))) != steps || total != steps {
		t.Fatalf("%d events (%d distinct), sweepers counted %v; want each of %d leases once", len(seen), len(slices.Compact(slices.Clone(seen))), recorded, steps)
	}
}

// TestClaimExpiredWebhook: with the sweeper and the deliverer running as
// serve runs them, a lapsed lease reaches a subscriber of
// step.claim_expired (verified by the npm standardwebhooks library) once,
// and a slack subscriber as a sentence; the takeover that follows is not
// delivered as another lapse.
func TestClaimExpiredWebhook(t *testing.T) {
	rcv := startReceiver(t)
	clk := newClock()
	env, _ := webhookEnv(t, dbtest.Fresh(t), deliver.Options{AllowHosts: []string{"127.0.0.1"}, PublicURL: "https://planserver.example.com"},
		func(c *app.Config) { c.Now, c.LeaseSweepInterval = clk.Now, 10*time.Millisecond })
	ctx, cancel := context.WithCancel(context.Background())
	swept := make(chan struct{})
	go func() {
		defer close(swept)
		env.App.RunLeaseSweeper(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-swept // stops when told
	})
	std := subscribe(t, env, rcv, "/expired", map[string]any{"events": []string{"step.claim_expired"}})
	subscribe(t, env, rcv, "/slack", map[string]any{"events": []string{"step.claim_expired"}, "format": "slack"})
	putSteps(t, env, "billing", []map[string]any{{"id": "s1", "description": "migrate invoices", "owner": "db"}})
	claim(t, env, "billing", map[string]any{"worker": "worker-1", "lease_seconds": 30})
	clk.Advance(30 * time.Second)
	waitFor(t, 10*time.Second, "the lapse delivered", func() bool {
		return len(rcv.accepted("/expired")) == 1 && len(rcv.accepted("/slack")) == 1
	})
	evs, _ := expiries(t, env, "billing")
	if len(evs) != 1 {
		t.Fatalf("%d step.claim_expired events", len(evs))
	}
	got := rcv.accepted("/expired")[0]
	if got.Type != "step.claim_expired" || got.Seq != evs[0].Seq || !got.Verified {
		t.Errorf("delivery %+v, want event %d", got, evs[0].Seq)
	}
	if text := rcv.accepted("/slack")[0].Text; text != "The claim of worker-1 on step *s1* of plan *billing* ran out at 2026-01-10T09:00:30.000Z; "+
		"another worker may claim it now: <https://planserver.example.com/ui/plans/billing>" {
		t.Errorf("slack text %q", text)
	}
	// worker-2 takes the step over (not a lapse), and its own lease runs
	// out: the second delivery is that lapse, nothing between.
	claim(t, env, "billing", map[string]any{"worker": "worker-2", "lease_seconds": 30})
	clk.Advance(30 * time.Second)
	waitFor(t, 10*time.Second, "the second lapse delivered", func() bool { return len(rcv.accepted("/expired")) == 2 })
	evs, data := expiries(t, env, "billing")
	if len(evs) != 2 || data[1].ClaimedBy != "worker-2" {
		t.Fatalf("lapses %+v", data)
	}
	var types []string
	var seqs []int64
	for _, r := range rcv.accepted("/expired") {
		types, seqs = append(types, r.Type), append(seqs, r.Seq)
	}
	if !slices.Equal(types, []string{"step.claim_expired", "step.claim_expired"}) || !slices.Equal(seqs, []int64{evs[0].Seq, evs[1].Seq}) {
		t.Errorf("delivered %v %v, want the two lapses %d, %d", types, seqs, evs[0].Seq, evs[1].Seq)
	}
	// The deliverer records a delivery once the receiver has answered, so
	// the log can lag the receiver by a moment.
	waitFor(t, 10*time.Second, "the second delivery logged", func() bool { return len(deliveries(t, env, std.ID)) >= 2 })
	if log := deliveries(t, env, std.ID); len(log) != 2 || log[0].Type != "step.claim_expired" {
		t.Errorf("delivery log %+v", log)
	}
}
