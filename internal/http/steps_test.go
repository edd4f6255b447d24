package http_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/apitest"
	"github.com/planserver/planserver/internal/app"
)

// The step representations, as the API answers them.
type (
	stepView   = api.StepView
	stepResult = api.StepResult
	stepList   = api.StepList
	progress   = api.Progress
	report     = api.Report
)

// testClock is the server's clock in tests: lease expiry is tested by
// moving it forward, never by sleeping.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *testClock {
	return &testClock{t: time.Date(2026, 1, 10, 9, 0, 0, 0, time.UTC)}
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// seedPlan is the example plan of the plan & action item seed, as shipped
// for the README.
func seedPlan(t *testing.T) []byte {
	t.Helper()
	doc, err := os.ReadFile("../../docs/examples/csv-upload-plan.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func readSteps(t *testing.T, env *apitest.Env, name, query string) stepList {
	t.Helper()
	r := env.Call("GET", "/v1/plans/"+name+"/steps"+query, nil)
	if r.Status != http.StatusOK || r.Header.Get("ETag") == "" {
		t.Fatalf("GET steps%s: %d %s", query, r.Status, r.Body)
	}
	var l stepList
	r.JSON(t, &l)
	return l
}

func ids(steps []stepView) string {
	var out []string
	for _, s := range steps {
		out = append(out, s.ID)
	}
	return strings.Join(out, ",")
}

func claim(t *testing.T, env *apitest.Env, name string, body map[string]any) (stepResult, bool) {
	t.Helper()
	r := env.Call("POST", "/v1/plans/"+name+"/steps/claim", body)
	switch r.Status {
	case http.StatusNoContent:
		if len(r.Body) != 0 {
			t.Errorf("204 with a body: %s", r.Body)
		}
		return stepResult{}, false
	case http.StatusOK:
		var res stepResult
		r.JSON(t, &res)
		if r.Header.Get("ETag") != fmt.Sprintf(`"%d"`, res.Revision) {
			t.Errorf("claim ETag %s, revision %d", r.Header.Get("ETag"), res.Revision)
		}
		return res, true
	}
	t.Errorf("claim: %d %s", r.Status, r.Body)
	return stepResult{}, false
}

func postReport(t *testing.T, env *apitest.Env, name, stepID string, body map[string]any, wantStatus int) *apitest.Response {
	t.Helper()
	r := env.Call("POST", "/v1/plans/"+name+"/steps/"+stepID+"/reports", body)
	if r.Status != wantStatus {
		t.Fatalf("report on %s: %d %s, want %d", stepID, r.Status, r.Body, wantStatus)
	}
	return r
}

func planProgress(t *testing.T, env *apitest.Env, name string) progress {
	t.Helper()
	var p api.Plan
	env.Call("GET", "/v1/plans/"+name, nil).JSON(t, &p)
	return p.Progress
}

// putSteps creates or replaces a plan with these steps.
func putSteps(t *testing.T, env *apitest.Env, name string, steps []map[string]any) plan {
	t.Helper()
	r := env.Call("PUT", "/v1/plans/"+name, map[string]any{"content": "# " + name + "\n", "steps": steps})
	if r.Status != http.StatusCreated && r.Status != http.StatusOK {
		t.Fatalf("PUT %s: %d %s", name, r.Status, r.Body)
	}
	var p plan
	r.JSON(t, &p)
	return p
}

func TestSeedPlanImportsAndRoundTripsAsYAML(t *testing.T) {
	env := apitest.New(t)
	// The seed's example, comments and all, has no content: a YAML plan
	// may be steps alone.
	r := env.Call("PUT", "/v1/plans/csv-upload", seedPlan(t), "Content-Type", "application/yaml")
	if r.Status != http.StatusCreated {
		t.Fatalf("import: %d %s", r.Status, r.Body)
	}
	var p api.Plan
	r.JSON(t, &p)
	if p.Content != "" || len(p.Steps) != 4 || p.Revision != 1 {
		t.Fatalf("imported %+v", p)
	}
	s2 := p.Steps[1]
	if s2.ID != "2" || s2.Owner != "Backend-Agent" || !slices.Equal(s2.Deps, []string{"1"}) || s2.Status != "pending" ||
		s2.Criteria != "POST /upload returns summary (count, mean, median) for uploaded CSV" ||
		!slices.Equal(s2.Commands, []string{"Run: pytest tests/test_upload.py"}) ||
		!slices.Equal(s2.Files, []string{"backend/routes/upload.py", "backend/services/csv_stats.py"}) || s2.ClaimedBy != nil {
		t.Errorf("step 2 = %+v", s2)
	}
	if !slices.Equal(p.Steps[3].Deps, []string{"2", "3"}) || p.Steps[3].RiskNotes != "Test on large CSV to ensure performance is acceptable" {
		t.Errorf("step 4 = %+v", p.Steps[3])
	}
	if p.Progress != (progress{Total: 4, Pending: 4, Ready: 1}) {
		t.Errorf("progress = %+v", p.Progress)
	}
	if r := env.Call("GET", "/v1/plans/csv-upload", nil, "Accept", "text/markdown"); r.Status != 200 || len(r.Body) != 0 {
		t.Errorf("content of a steps-only plan: %d %q", r.Status, r.Body)
	}

	// Work on it a little, so the document carries every kind of field.
	claimed, _ := claim(t, env, "csv-upload", map[string]any{"worker": "w1"})
	if claimed.Step.ID != "1" {
		t.Fatalf("claimed %+v", claimed)
	}
	env.Call("PUT", "/v1/plans/csv-upload/status", map[string]any{"status": "in-progress"})
	before := env.Call("GET", "/v1/plans/csv-upload", nil)

	// GET as YAML and PUT it back: the same plan, one revision later.
	y := env.Call("GET", "/v1/plans/csv-upload", nil, "Accept", "application/yaml")
	if y.Status != 200 || y.Header.Get("ETag") != `"3"` {
		t.Fatalf("GET YAML: %d %s", y.Status, y.Body)
	}
	for _, want := range []string{"steps:\n  - id: \"1\"\n", `deps: ["2", "3"]`, "claimed_by: w1\n", "status: in_progress\n", "status: in-progress\n"} {
		if !strings.Contains(string(y.Body), want) {
			t.Errorf("YAML lacks %q:\n%s", want, y.Body)
		}
	}
	for _, unwanted := range []string{"content:", "claim_expired", "parallel: false", "criteria: \"\""} {
		if strings.Contains(string(y.Body), unwanted) {
			t.Errorf("YAML has %q:\n%s", unwanted, y.Body)
		}
	}
	again := env.Call("PUT", "/v1/plans/csv-upload", y.Body, "Content-Type", "application/yaml", "If-Match", y.Header.Get("ETag"))
	if again.Status != 200 {
		t.Fatalf("re-import: %d %s", again.Status, again.Body)
	}
	b, a := before.Map(t), again.Map(t)
	if a["revision"] != b["revision"].(float64)+1 {
		t.Errorf("revision %v after %v", a["revision"], b["revision"])
	}
	for _, k := range []string{"revision", "updated_at"} {
		delete(a, k)
		delete(b, k)
	}
	if mustJSON(a) != mustJSON(b) {
		t.Errorf("the YAML round trip changed the plan:\n%s\n%s", mustJSON(b), mustJSON(a))
	}
	// The JSON form round-trips too: steps read (claim_expired included)
	// can be written back as they are.
	var read map[string]any
	env.Call("GET", "/v1/plans/csv-upload", nil).JSON(t, &read)
	r = env.Call("PUT", "/v1/plans/csv-upload", map[string]any{"content": "# CSV upload\n", "steps": read["steps"]})
	if r.Status != 200 || mustJSON(r.Map(t)["steps"]) != mustJSON(read["steps"]) {
		t.Errorf("JSON round trip: %d %s", r.Status, r.Body)
	}
	// A document with content carries it, and the content is kept by a
	// later steps-only import.
	withContent := "content: |\n  # CSV upload\n" + string(seedPlan(t))
	if r := env.Call("PUT", "/v1/plans/csv-upload", withContent, "Content-Type", "application/yaml"); r.Status != 200 || r.Map(t)["content"] != "# CSV upload\n" {
		t.Errorf("import with content: %d %s", r.Status, r.Body)
	}
	if r := env.Call("PUT", "/v1/plans/csv-upload", seedPlan(t), "Content-Type", "application/yaml"); r.Status != 200 || r.Map(t)["content"] != "# CSV upload\n" {
		t.Errorf("steps-only import over content: %d %s", r.Status, r.Body)
	}
}

// TestCoordinatorLoop walks the seed plan through the API the way a
// coordinator and its workers do: claim what is ready, report, repeat.
func TestCoordinatorLoop(t *testing.T) {
	clk := newClock()
	env := apitest.New(t, func(c *app.Config) { c.Now = clk.Now })
	if r := env.Call("PUT", "/v1/plans/csv", seedPlan(t), "Content-Type", "application/yaml"); r.Status != 201 {
		t.Fatalf("import: %d %s", r.Status, r.Body)
	}
	var order []string
	for round := 0; ; round++ {
		ready := readSteps(t, env, "csv", "?ready=true")
		if len(ready.Steps) == 0 {
			break
		}
		if round > 4 {
			t.Fatal("the loop does not end")
		}
		var got []stepResult
		for i := range ready.Steps {
			res, ok := claim(t, env, "csv", map[string]any{"worker": fmt.Sprintf("worker-%d", i), "lease_seconds": 600})
			if !ok {
				t.Fatalf("round %d: %d ready but claim %d found none", round, len(ready.Steps), i)
			}
			got = append(got, res)
		}
		if _, ok := claim(t, env, "csv", map[string]any{"worker": "extra"}); ok {
			t.Fatalf("round %d: a claim beyond the ready set succeeded", round)
		}
		for i, res := range got {
			s := res.Step
			if s.Status != "in_progress" || s.ClaimedBy == nil || *s.ClaimedBy != fmt.Sprintf("worker-%d", i) ||
				s.ClaimExpiresAt == nil || *s.ClaimExpiresAt != clk.Now().Add(10*time.Minute).Format("2006-01-02T15:04:05.000Z") || s.ClaimExpired {
				t.Errorf("claimed %+v", s)
			}
			order = append(order, s.ID)
			rep := postReport(t, env, "csv", s.ID, map[string]any{"outcome": "success", "details": "done " + s.ID, "worker": *s.ClaimedBy,
				"artifacts": []map[string]any{{"file": "f" + s.ID, "status": "created"}, {"test": "t" + s.ID, "result": "PASSED"}}}, 201)
			var stored report
			rep.JSON(t, &stored)
			if stored.StepID != s.ID || stored.Outcome != "success" || stored.Actor != "anonymous" || *stored.Worker != *s.ClaimedBy ||
				stored.PlanRevision != res.Revision+int64(len(got)-i) || stored.Time != "2026-01-10T09:00:00.000Z" || len(stored.Artifacts) != 2 {
				t.Errorf("report %+v (claim at revision %d)", stored, res.Revision)
			}
		}
	}
	if strings.Join(order, ",") != "1,2,3,4" {
		t.Errorf("steps ran in the order %v", order)
	}
	if p := planProgress(t, env, "csv"); p != (progress{Total: 4, Complete: 4}) {
		t.Errorf("progress at the end: %+v", p)
	}
	all := readSteps(t, env, "csv", "")
	for _, s := range all.Steps {
		if s.Status != "complete" || s.ClaimedBy != nil || s.ClaimExpiresAt != nil {
			t.Errorf("finished step %+v", s)
		}
	}
	// One revision per claim and per report, each with its event.
	if all.Revision != 9 {
		t.Errorf("revision %d after 4 claims and 4 reports", all.Revision)
	}
	if got := planEvents(t, env, "csv"); got != "plan.created@1,step.claimed@2,step.report_added@3,step.claimed@4,step.report_added@5,"+
		"step.claimed@6,step.report_added@7,step.claimed@8,step.report_added@9" {
		t.Errorf("events = %s", got)
	}
	var data string
	if err := env.DB.Reader(context.Background()).QueryRow(`SELECT data FROM events WHERE plan = 'csv' AND revision = 2`).Scan(&data); err != nil ||
		!strings.Contains(data, `"plan":"csv","revision":2,"step_id":"1"`) || !strings.Contains(data, `"previous_status":"pending"`) {
		t.Errorf("step.claimed data %s, %v", data, err)
	}
	if err := env.DB.Reader(context.Background()).QueryRow(`SELECT data FROM events WHERE plan = 'csv' AND revision = 3`).Scan(&data); err != nil ||
		!strings.Contains(data, `"revision":3,"step_id":"1"`) || !strings.Contains(data, `"outcome":"success"`) || !strings.Contains(data, `"report_id":`) {
		t.Errorf("step.report_added data %s, %v", data, err)
	}
	// The history holds every step change.
	var old stepList
	env.Call("GET", "/v1/plans/csv/revisions/2", nil).JSON(t, &old)
	if old.Steps[0].Status != "in_progress" || *old.Steps[0].ClaimedBy != "worker-0" {
		t.Errorf("revision 2, step 1 = %+v", old.Steps[0])
	}
	// Reports, oldest first, for the plan or one step.
	var reps api.ReportList
	env.Call("GET", "/v1/plans/csv/reports", nil).JSON(t, &reps)
	var stepsReported []string
	for i, r := range reps.Reports {
		stepsReported = append(stepsReported, r.StepID)
		if i > 0 && r.ID <= reps.Reports[i-1].ID {
			t.Errorf("reports out of order: %v", reps.Reports)
		}
	}
	if reps.Plan != "csv" || strings.Join(stepsReported, ",") != "1,2,3,4" {
		t.Errorf("reports = %+v", reps)
	}
	env.Call("GET", "/v1/plans/csv/reports?step_id=3", nil).JSON(t, &reps)
	if len(reps.Reports) != 1 || reps.Reports[0].StepID != "3" || reps.Reports[0].Details != "done 3" ||
		reps.Reports[0].Artifacts[1].Result != "PASSED" || reps.Reports[0].Artifacts[0].Test != "" {
		t.Errorf("reports of step 3 = %+v", reps.Reports)
	}
	env.Call("GET", "/v1/plans/csv/reports?step_id=9", nil).JSON(t, &reps)
	if len(reps.Reports) != 0 {
		t.Errorf("reports of an unknown step = %+v", reps.Reports)
	}
	// A plan's reports go with it.
	env.Call("DELETE", "/v1/plans/csv", nil)
	if n := countRows(t, env, "step_reports", "plan = 'csv'"); n != 0 {
		t.Errorf("%d reports outlived their plan", n)
	}
	if r := env.Call("GET", "/v1/plans/csv/reports", nil); r.Status != 404 {
		t.Errorf("reports of a deleted plan: %d", r.Status)
	}
}

// independentSteps builds n steps without deps.
func independentSteps(n int) []map[string]any {
	var steps []map[string]any
	for i := 0; i < n; i++ {
		steps = append(steps, map[string]any{"id": fmt.Sprint("s", i), "description": "independent", "owner": "worker"})
	}
	return steps
}

// TestConcurrentClaimersNeverShareAStep: 16 workers claim from a plan of
// 50 independent steps until nothing is ready; every step is claimed
// exactly once, each claim is a revision of its own.
func TestConcurrentClaimersNeverShareAStep(t *testing.T) {
	env := apitest.New(t, func(c *app.Config) { c.PlanHistory = 1000 })
	putSteps(t, env, "wide", independentSteps(50))
	const workers = 16
	var (
		wg        sync.WaitGroup
		mu        sync.Mutex
		claimedBy = map[string][]string{}
		revisions = map[int64]bool{}
	)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			worker := fmt.Sprint("worker-", w)
			for {
				res, ok := claim(t, env, "wide", map[string]any{"worker": worker})
				if !ok {
					return
				}
				mu.Lock()
				claimedBy[res.Step.ID] = append(claimedBy[res.Step.ID], worker)
				if revisions[res.Revision] {
					t.Errorf("two claims made revision %d", res.Revision)
				}
				revisions[res.Revision] = true
				mu.Unlock()
				if *res.Step.ClaimedBy != worker {
					t.Errorf("%s got a step claimed by %s", worker, *res.Step.ClaimedBy)
				}
			}
		}()
	}
	wg.Wait()
	if len(claimedBy) != 50 {
		t.Errorf("%d distinct steps claimed, want 50", len(claimedBy))
	}
	perWorker := map[string]int{}
	for id, ws := range claimedBy {
		if len(ws) != 1 {
			t.Errorf("step %s claimed by %v", id, ws)
		}
		perWorker[ws[0]]++
	}
	final := readSteps(t, env, "wide", "")
	for _, s := range final.Steps {
		if s.Status != "in_progress" || s.ClaimedBy == nil || claimedBy[s.ID][0] != *s.ClaimedBy {
			t.Errorf("stored step %+v, claimed by %v", s, claimedBy[s.ID])
		}
	}
	if final.Revision != 51 {
		t.Errorf("revision %d after 50 claims", final.Revision)
	}
	if n := countRows(t, env, "events", "plan = 'wide' AND type = 'step.claimed'"); n != 50 {
		t.Errorf("%d step.claimed events", n)
	}
	t.Logf("claims per worker: %v", perWorker)
}

// TestChainIsClaimedOneStepAtATime: on a chain of 5, 16 concurrent
// claimers get exactly one step per round, in dependency order, and the
// next step becomes ready only when the previous one is reported done.
func TestChainIsClaimedOneStepAtATime(t *testing.T) {
	env := apitest.New(t)
	var steps []map[string]any
	for i := 1; i <= 5; i++ {
		s := map[string]any{"id": fmt.Sprint("c", i), "description": "link", "owner": "worker"}
		if i > 1 {
			s["deps"] = []string{fmt.Sprint("c", i-1)}
		}
		steps = append(steps, s)
	}
	// Plan order is not dependency order: claims follow deps.
	slices.Reverse(steps)
	putSteps(t, env, "chain", steps)
	var order []string
	for round := 1; round <= 6; round++ {
		var (
			wg  sync.WaitGroup
			mu  sync.Mutex
			won []stepResult
		)
		for w := 0; w < 16; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if res, ok := claim(t, env, "chain", map[string]any{"worker": fmt.Sprint("w", w)}); ok {
					mu.Lock()
					won = append(won, res)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if round == 6 {
			if len(won) != 0 {
				t.Errorf("claims after the chain was done: %+v", won)
			}
			break
		}
		if len(won) != 1 {
			t.Fatalf("round %d: %d claims succeeded, want 1: %+v", round, len(won), won)
		}
		order = append(order, won[0].Step.ID)
		postReport(t, env, "chain", won[0].Step.ID, map[string]any{"outcome": "success", "worker": *won[0].Step.ClaimedBy}, 201)
	}
	if strings.Join(order, ",") != "c1,c2,c3,c4,c5" {
		t.Errorf("chain claimed in the order %v", order)
	}
}

// TestLeaseExpiry: a lease that ran out makes the step claimable again;
// the worker that lost it can neither report nor renew, and its late
// report is refused without being recorded. Until someone else claims the
// step, the holder may still renew or report.
func TestLeaseExpiry(t *testing.T) {
	clk := newClock()
	env := apitest.New(t, func(c *app.Config) { c.Now = clk.Now })
	putSteps(t, env, "lease", []map[string]any{
		{"id": "a", "description": "slow work", "owner": "worker"},
		{"id": "b", "description": "after a", "owner": "worker", "deps": []string{"a"}},
		{"id": "c", "description": "renewed", "owner": "solo"},
	})
	first, _ := claim(t, env, "lease", map[string]any{"worker": "A", "lease_seconds": 60})
	if first.Step.ID != "a" || *first.Step.ClaimExpiresAt != "2026-01-10T09:01:00.000Z" {
		t.Fatalf("first claim %+v", first)
	}
	if _, ok := claim(t, env, "lease", map[string]any{"worker": "B", "owner": "worker"}); ok {
		t.Fatal("B claimed while A's lease holds")
	}
	clk.Advance(59 * time.Second)
	if l := readSteps(t, env, "lease", "?ready=true&owner=worker"); len(l.Steps) != 0 {
		t.Errorf("ready with a second of lease left: %s", ids(l.Steps))
	}
	clk.Advance(time.Second)
	// Expired: shown as in_progress, still claimed by A, claim_expired,
	// and ready; nothing was written.
	l := readSteps(t, env, "lease", "?ready=true")
	if ids(l.Steps) != "a,c" || l.Revision != 2 {
		t.Fatalf("ready after expiry: %s at revision %d", ids(l.Steps), l.Revision)
	}
	if s := l.Steps[0]; s.Status != "in_progress" || *s.ClaimedBy != "A" || !s.ClaimExpired {
		t.Errorf("expired step reads %+v", s)
	}
	if p := planProgress(t, env, "lease"); p != (progress{Total: 3, Pending: 2, InProgress: 1, Ready: 2}) {
		t.Errorf("progress after expiry: %+v", p)
	}
	if l := readSteps(t, env, "lease", "?status=in_progress&ready=false"); len(l.Steps) != 0 {
		t.Errorf("an expired step is not ready: %s", ids(l.Steps))
	}
	// B takes it over; the event names the worker that lost it.
	second, _ := claim(t, env, "lease", map[string]any{"worker": "B", "owner": "worker", "lease_seconds": 60})
	if second.Step.ID != "a" || *second.Step.ClaimedBy != "B" || second.Step.ClaimExpired || second.Revision != 3 {
		t.Fatalf("takeover %+v", second)
	}
	var data string
	if err := env.DB.Reader(context.Background()).QueryRow(`SELECT data FROM events WHERE plan = 'lease' AND revision = 3`).Scan(&data); err != nil ||
		!strings.Contains(data, `"previous_claimed_by":"A"`) {
		t.Errorf("takeover event %s, %v", data, err)
	}
	// A's late report is refused, not recorded, and changes nothing.
	late := postReport(t, env, "lease", "a", map[string]any{"outcome": "success", "worker": "A", "details": "finished late"}, 409)
	if m := late.Map(t); m["code"] != "version_conflict" || m["claimed_by"] != "B" || m["current_revision"] != float64(3) || m["step_id"] != "a" {
		t.Errorf("late report: %s", late.Body)
	}
	if r := env.Call("POST", "/v1/plans/lease/steps/a/claim", map[string]any{"worker": "A"}); r.Status != 409 || r.Code() != "version_conflict" {
		t.Errorf("A renews B's claim: %d %s", r.Status, r.Body)
	}
	if n := countRows(t, env, "step_reports", ""); n != 0 {
		t.Errorf("%d reports stored", n)
	}
	if l := readSteps(t, env, "lease", "?status=in_progress"); l.Revision != 3 || *l.Steps[0].ClaimedBy != "B" {
		t.Errorf("after the late report: %+v", l)
	}
	// B renews (the event says so), then its lease expires, nobody takes
	// the step, and B's report still counts.
	clk.Advance(30 * time.Second)
	r := env.Call("POST", "/v1/plans/lease/steps/a/claim", map[string]any{"worker": "B", "lease_seconds": 120})
	var renewed stepResult
	r.JSON(t, &renewed)
	if r.Status != 200 || *renewed.Step.ClaimExpiresAt != "2026-01-10T09:03:30.000Z" || renewed.Revision != 4 {
		t.Fatalf("renewal: %d %s", r.Status, r.Body)
	}
	if err := env.DB.Reader(context.Background()).QueryRow(`SELECT data FROM events WHERE plan = 'lease' AND revision = 4`).Scan(&data); err != nil ||
		!strings.Contains(data, `"renewed":true`) || strings.Contains(data, "previous_claimed_by") {
		t.Errorf("renewal event %s, %v", data, err)
	}
	clk.Advance(10 * time.Minute)
	rep := postReport(t, env, "lease", "a", map[string]any{"outcome": "success", "worker": "B"}, 201)
	if rep.Map(t)["plan_revision"] != float64(5) {
		t.Errorf("report after an unclaimed expiry: %s", rep.Body)
	}
	// The holder may also renew an expired lease nobody took.
	c, _ := claim(t, env, "lease", map[string]any{"worker": "S", "owner": "solo", "lease_seconds": 1})
	clk.Advance(time.Hour)
	if r := env.Call("POST", "/v1/plans/lease/steps/c/claim", map[string]any{"worker": "S"}); r.Status != 200 ||
		r.Map(t)["step"].(map[string]any)["claim_expires_at"] != "2026-01-10T10:16:30.000Z" {
		t.Errorf("renewing an expired lease (claimed at %s): %d %s", *c.Step.ClaimExpiresAt, r.Status, r.Body)
	}
	// A report without a worker is the coordinator's: it settles a step
	// whoever holds it.
	if _, ok := claim(t, env, "lease", map[string]any{"worker": "B"}); !ok {
		t.Fatal("b not claimable after a")
	}
	rep = postReport(t, env, "lease", "b", map[string]any{"outcome": "blocked", "details": "needs a human"}, 201)
	if m := rep.Map(t); m["worker"] != nil || m["outcome"] != "blocked" {
		t.Errorf("coordinator report: %s", rep.Body)
	}
	if l := readSteps(t, env, "lease", "?status=blocked"); ids(l.Steps) != "b" || l.Steps[0].ClaimedBy != nil {
		t.Errorf("blocked: %+v", l.Steps)
	}
	// A failure or blocked report from the holder blocks too, and drops
	// the claim.
	postReport(t, env, "lease", "c", map[string]any{"outcome": "failure", "worker": "S"}, 201)
	if l := readSteps(t, env, "lease", "?status=blocked"); ids(l.Steps) != "b,c" {
		t.Errorf("after a failure: %s", ids(l.Steps))
	}
	// No sweeper runs here, so each lapse (A's, B's, S's) is recorded by
	// the write that ended its lease after the end, just before that
	// write's own event, at the revision the lease ran out in.
	if got := planEvents(t, env, "lease"); got != "plan.created@1,step.claimed@2,step.claim_expired@2,step.claimed@3,step.claimed@4,"+
		"step.claim_expired@4,step.report_added@5,step.claimed@6,step.claim_expired@6,step.claimed@7,step.claimed@8,step.report_added@9,step.report_added@10" {
		t.Errorf("events = %s", got)
	}
}

func TestClaimStepRules(t *testing.T) {
	env := apitest.New(t)
	putSteps(t, env, "p", []map[string]any{
		{"id": "1", "description": "d", "owner": "db"},
		{"id": "2", "description": "d", "owner": "api", "deps": []string{"1"}},
		{"id": "3", "description": "d", "owner": "api"},
		{"id": "done", "description": "d", "owner": "api", "status": "complete"},
		{"id": "manual", "description": "d", "owner": "api", "status": "in_progress"},
	})
	// The owner filter takes the first ready step of that owner.
	if res, _ := claim(t, env, "p", map[string]any{"worker": "w", "owner": "api"}); res.Step.ID != "3" {
		t.Errorf("claim as api: %+v", res)
	}
	if _, ok := claim(t, env, "p", map[string]any{"worker": "w", "owner": "api"}); ok {
		t.Errorf("a second api step was ready")
	}
	if _, ok := claim(t, env, "p", map[string]any{"worker": "w", "owner": "nobody"}); ok {
		t.Errorf("claimed for an unknown owner")
	}
	for _, c := range []struct {
		id, code string
		status   int
	}{
		{"2", "deps_incomplete", 409},
		{"done", "version_conflict", 409},
		{"manual", "version_conflict", 409},
		{"3", "version_conflict", 409}, // held by w, not by x
		{"nope", "not_found", 404},
	} {
		r := env.Call("POST", "/v1/plans/p/steps/"+c.id+"/claim", map[string]any{"worker": "x"})
		if r.Status != c.status || r.Code() != c.code {
			t.Errorf("claim %s: %d %s", c.id, r.Status, r.Body)
		}
	}
	if r := env.Call("POST", "/v1/plans/p/steps/2/claim", map[string]any{"worker": "x"}); r.Map(t)["incomplete_deps"].([]any)[0] != "1" {
		t.Errorf("deps_incomplete names no deps: %s", r.Body)
	}
	// A named, ready step can be claimed directly.
	r := env.Call("POST", "/v1/plans/p/steps/1/claim", map[string]any{"worker": "x", "lease_seconds": 86400})
	if r.Status != 200 || r.Header.Get("ETag") != `"3"` {
		t.Errorf("claim step 1: %d %s", r.Status, r.Body)
	}
	if r := env.Call("POST", "/v1/plans/ghost/steps/claim", map[string]any{"worker": "x"}); r.Status != 404 {
		t.Errorf("claim on a missing plan: %d", r.Status)
	}
	// If-Match is honoured when sent.
	if r := env.Call("POST", "/v1/plans/p/steps/claim", map[string]any{"worker": "x"}, "If-Match", `"1"`); r.Status != 412 {
		t.Errorf("stale If-Match on claim: %d %s", r.Status, r.Body)
	}
	if r := env.Call("POST", "/v1/plans/p/steps/done/reports", map[string]any{"outcome": "success"}, "If-Match", `"1"`); r.Status != 412 {
		t.Errorf("stale If-Match on a report: %d %s", r.Status, r.Body)
	}
	// A step id that is also a route word is still a step id.
	putSteps(t, env, "words", []map[string]any{{"id": "claim", "description": "d", "owner": "o"}, {"id": "reports", "description": "d", "owner": "o"}})
	if r := env.Call("PATCH", "/v1/plans/words/steps/claim", map[string]any{"owner": "x"}); r.Status != 200 {
		t.Errorf("PATCH step claim: %d %s", r.Status, r.Body)
	}
	if r := env.Call("POST", "/v1/plans/words/steps/claim/claim", map[string]any{"worker": "w"}); r.Status != 200 {
		t.Errorf("claim step claim: %d %s", r.Status, r.Body)
	}
	if r := env.Call("GET", "/v1/plans/words/steps/reports", nil); r.Status != 200 || r.Map(t)["step"].(map[string]any)["id"] != "reports" {
		t.Errorf("GET step reports: %d %s", r.Status, r.Body)
	}
}

func TestPatchStep(t *testing.T) {
	env := apitest.New(t)
	putSteps(t, env, "p", []map[string]any{
		{"id": "1", "description": "d", "owner": "db"},
		{"id": "2", "description": "d", "owner": "api", "deps": []string{"1"}},
	})
	patch := func(id string, body any, header ...string) *apitest.Response {
		return env.Call("PATCH", "/v1/plans/p/steps/"+id, body, header...)
	}
	for _, st := range []string{"in_progress", "complete"} {
		r := patch("2", map[string]any{"status": st})
		if r.Status != 409 || r.Code() != "deps_incomplete" || r.Map(t)["step_id"] != "2" {
			t.Errorf("%s before its dep: %d %s", st, r.Status, r.Body)
		}
	}
	// Blocking or re-opening needs no deps.
	if r := patch("2", map[string]any{"status": "blocked"}); r.Status != 200 {
		t.Errorf("block: %d %s", r.Status, r.Body)
	}
	r := patch("1", map[string]any{"status": "complete"}, "If-Match", `"2"`)
	var res stepResult
	r.JSON(t, &res)
	if r.Status != 200 || res.Step.Status != "complete" || res.Revision != 3 || r.Header.Get("ETag") != `"3"` {
		t.Fatalf("complete 1: %d %s", r.Status, r.Body)
	}
	if r := patch("2", map[string]any{"status": "pending"}, "If-Match", `"2"`); r.Status != 412 || r.Map(t)["current_revision"] != float64(3) {
		t.Errorf("stale If-Match: %d %s", r.Status, r.Body)
	}
	// Merge patch; owner only; null keeps.
	r = patch("2", `{"owner":"backend","status":null}`, "Content-Type", "application/merge-patch+json")
	r.JSON(t, &res)
	if r.Status != 200 || res.Step.Owner != "backend" || res.Step.Status != "blocked" || res.Revision != 4 {
		t.Errorf("merge patch: %d %s", r.Status, r.Body)
	}
	// A patch that changes nothing writes nothing.
	for _, body := range []any{map[string]any{}, map[string]any{"owner": "backend", "status": "blocked"}} {
		r = patch("2", body)
		r.JSON(t, &res)
		if r.Status != 200 || res.Revision != 4 || r.Header.Get("ETag") != `"4"` {
			t.Errorf("no-op patch %v: %d %s", body, r.Status, r.Body)
		}
	}
	// A claimed step set back to pending loses its claim: the coordinator
	// takes a step back from a worker.
	patch("2", map[string]any{"status": "pending"})
	claimed, _ := claim(t, env, "p", map[string]any{"worker": "w"})
	if claimed.Step.ID != "2" {
		t.Fatalf("claimed %+v", claimed)
	}
	r = patch("2", map[string]any{"status": "pending"})
	r.JSON(t, &res)
	if res.Step.ClaimedBy != nil || res.Step.ClaimExpiresAt != nil || res.Step.Status != "pending" {
		t.Errorf("revoked claim: %s", r.Body)
	}
	postReport(t, env, "p", "2", map[string]any{"outcome": "success", "worker": "w"}, 409)
	// Owner changes keep the claim.
	claim(t, env, "p", map[string]any{"worker": "w"})
	r = patch("2", map[string]any{"owner": "qa"})
	r.JSON(t, &res)
	if res.Step.ClaimedBy == nil || *res.Step.ClaimedBy != "w" || res.Step.Owner != "qa" {
		t.Errorf("owner change dropped the claim: %s", r.Body)
	}
	if r := patch("nope", map[string]any{"status": "complete"}); r.Status != 404 || r.Code() != "not_found" {
		t.Errorf("unknown step: %d %s", r.Status, r.Body)
	}
	if r := env.Call("PATCH", "/v1/plans/ghost/steps/1", map[string]any{"status": "complete"}); r.Status != 404 {
		t.Errorf("unknown plan: %d %s", r.Status, r.Body)
	}
	if got := planEvents(t, env, "p"); got != "plan.created@1,step.updated@2,step.updated@3,step.updated@4,step.updated@5,step.claimed@6,step.updated@7,step.claimed@8,step.updated@9" {
		t.Errorf("events = %s", got)
	}
	// Every step change is in the history.
	var old api.Plan
	env.Call("GET", "/v1/plans/p/revisions/2", nil).JSON(t, &old)
	if old.Steps[1].Status != "blocked" || old.Steps[0].Status != "pending" {
		t.Errorf("revision 2: %+v", old.Steps)
	}
	var one stepResult
	r = env.Call("GET", "/v1/plans/p/steps/1", nil)
	r.JSON(t, &one)
	if r.Status != 200 || one.Step.Status != "complete" || one.Revision != 9 || r.Header.Get("ETag") != `"9"` {
		t.Errorf("GET step: %d %s", r.Status, r.Body)
	}
}

// TestStepWritesUnderRequiredPreconditions: PATCH is an update and needs
// If-Match; claims and reports are their own atomic checks and do not.
func TestStepWritesUnderRequiredPreconditions(t *testing.T) {
	env := apitest.New(t, func(c *app.Config) { c.RequirePreconditions = true })
	putSteps(t, env, "p", []map[string]any{{"id": "1", "description": "d", "owner": "o"}})
	if r := env.Call("PATCH", "/v1/plans/p/steps/1", map[string]any{"owner": "x"}); r.Status != 428 {
		t.Errorf("PATCH without If-Match: %d %s", r.Status, r.Body)
	}
	if r := env.Call("PATCH", "/v1/plans/p/steps/1", map[string]any{"owner": "x"}, "If-Match", `"1"`); r.Status != 200 {
		t.Errorf("PATCH with If-Match: %d %s", r.Status, r.Body)
	}
	if _, ok := claim(t, env, "p", map[string]any{"worker": "w"}); !ok {
		t.Error("claim without If-Match refused")
	}
	postReport(t, env, "p", "1", map[string]any{"outcome": "success", "worker": "w"}, 201)
}

func TestStepsInPlanListAndFilters(t *testing.T) {
	env := apitest.New(t)
	if r := env.Call("PUT", "/v1/plans/csv", seedPlan(t), "Content-Type", "application/yaml"); r.Status != 201 {
		t.Fatal(r.Status)
	}
	putPlan(t, env, "empty", map[string]any{"content": "x"}, 201)
	env.Call("PATCH", "/v1/plans/csv/steps/1", map[string]any{"status": "complete"})
	var page api.PlanPage
	env.Call("GET", "/v1/plans", nil).JSON(t, &page)
	if len(page.Plans) != 2 || page.Plans[0].Progress != (progress{Total: 4, Pending: 3, Complete: 1, Ready: 1}) || page.Plans[1].Progress != (progress{}) {
		t.Errorf("list = %+v", page.Plans)
	}
	for q, want := range map[string]string{
		"":                        "1,2,3,4",
		"?status=pending":         "2,3,4",
		"?owner=QA-Agent":         "4",
		"?ready=true":             "2",
		"?ready=false":            "1,3,4",
		"?status=complete&ready=": "1",
		"?owner=nobody":           "",
		"?status=pending&ready=true&owner=Backend-Agent": "2",
	} {
		if got := ids(readSteps(t, env, "csv", q).Steps); got != want {
			t.Errorf("steps%s = %s, want %s", q, got, want)
		}
	}
	// Steps of a plan without steps: an empty list, not null.
	if r := env.Call("GET", "/v1/plans/empty/steps", nil); !strings.Contains(string(r.Body), `"steps":[]`) {
		t.Errorf("no steps: %s", r.Body)
	}
	if r := env.Call("GET", "/v1/plans/ghost/steps", nil); r.Status != 404 {
		t.Errorf("steps of a missing plan: %d", r.Status)
	}
	// The seed's report file posts as it is (step_id and timestamp are
	// the format's own fields).
	r := env.Call("POST", "/v1/plans/csv/steps/2/reports", `{
  "step_id": "2",
  "outcome": "success",
  "details": "Backend endpoint /upload implemented and returns correct summary stats.",
  "artifacts": [
    {"file": "backend/routes/upload.py", "status": "created"},
    {"file": "backend/services/csv_stats.py", "status": "created"},
    {"test": "tests/test_upload.py", "result": "PASSED in 0.42s"}
  ],
  "timestamp": "2026-01-10T17:30:00Z"
}`)
	if m := r.Map(t); r.Status != 201 || m["timestamp"] != "2026-01-10T17:30:00.000Z" || m["step_id"] != "2" || len(m["artifacts"].([]any)) != 3 {
		t.Errorf("seed report: %d %s", r.Status, r.Body)
	}
}

func TestStepBadInputIsRefusedAndWritesNothing(t *testing.T) {
	env := apitest.New(t, func(c *app.Config) { c.MaxBodyBytes = 4096 })
	putSteps(t, env, "p", []map[string]any{
		{"id": "1", "description": "d", "owner": "o"},
		{"id": "2", "description": "d", "owner": "o", "deps": []string{"1"}},
	})
	step := func(id string, deps ...string) string {
		d := `[]`
		if len(deps) > 0 {
			d = `["` + strings.Join(deps, `","`) + `"]`
		}
		return `{"id":"` + id + `","description":"d","owner":"o","deps":` + d + `}`
	}
	steps := func(s ...string) string { return `{"content":"x","steps":[` + strings.Join(s, ",") + `]}` }
	cases := []struct {
		name, method, path, body, contentType string
		status                                int
		code, field, message                  string
	}{
		{"duplicate ids", "PUT", "/v1/plans/p", steps(step("1"), step("2"), step("1")), "", 400, "invalid_argument", "steps[2].id", "duplicate id"},
		{"unknown dep", "PUT", "/v1/plans/p", steps(step("1"), step("2", "7")), "", 400, "invalid_argument", "steps[1].deps[0]", `unknown step \"7\"`},
		{"self dep", "PUT", "/v1/plans/p", steps(step("1", "1")), "", 400, "invalid_argument", "steps[0].deps[0]", "depends on itself"},
		{"cycle", "PUT", "/v1/plans/p", steps(step("1"), step("2", "4"), step("3"), step("4", "2")), "", 400, "invalid_argument", "steps[3].deps[0]", "cycle 2 → 4 → 2"},
		{"bad status", "PUT", "/v1/plans/p", steps(`{"id":"1","description":"d","owner":"o","status":"done"}`), "", 400, "invalid_argument", "steps[0].status", ""},
		{"unknown step field", "PUT", "/v1/plans/p", steps(`{"id":"1","description":"d","owner":"o","weight":1}`), "", 400, "invalid_argument", "steps[0].weight", "unknown field"},
		{"missing owner", "PUT", "/v1/plans/p", steps(`{"id":"1","description":"d"}`), "", 400, "invalid_argument", "steps[0].owner", "is required"},
		{"number id", "PUT", "/v1/plans/p", steps(`{"id":1,"description":"d","owner":"o"}`), "", 400, "invalid_argument", "steps[0].id", ""},
		{"claim on pending", "PUT", "/v1/plans/p", steps(`{"id":"1","description":"d","owner":"o","claimed_by":"w","claim_expires_at":"2026-01-10T00:00:00Z"}`), "", 400, "invalid_argument", "steps[0].claimed_by", ""},
		{"yaml cycle", "PUT", "/v1/plans/p", "steps:\n- {id: a, description: d, owner: o, deps: [b]}\n- {id: b, description: d, owner: o, deps: [a]}\n", "application/yaml", 400, "invalid_argument", "steps[1].deps[0]", "cycle a → b → a"},
		{"yaml unquoted id", "PUT", "/v1/plans/p", "steps:\n- {id: 1, description: d, owner: o}\n", "application/yaml", 400, "invalid_argument", "steps[0].id", "quote it"},
		{"yaml repeated key", "PUT", "/v1/plans/p", "steps:\n- {id: a, id: b, description: d, owner: o}\n", "application/yaml", 400, "invalid_argument", "steps", "twice"},
		{"yaml nothing to import", "PUT", "/v1/plans/p", "title: t\n", "application/yaml", 400, "invalid_argument", "content", ""},
		{"missing worker", "POST", "/v1/plans/p/steps/claim", `{}`, "", 400, "invalid_argument", "worker", "is required"},
		{"empty worker", "POST", "/v1/plans/p/steps/claim", `{"worker":""}`, "", 400, "invalid_argument", "worker", ""},
		{"lease zero", "POST", "/v1/plans/p/steps/claim", `{"worker":"w","lease_seconds":0}`, "", 400, "invalid_argument", "lease_seconds", ""},
		{"lease too long", "POST", "/v1/plans/p/steps/claim", `{"worker":"w","lease_seconds":86401}`, "", 400, "invalid_argument", "lease_seconds", ""},
		{"lease not a number", "POST", "/v1/plans/p/steps/claim", `{"worker":"w","lease_seconds":"5"}`, "", 400, "invalid_argument", "lease_seconds", ""},
		{"claim unknown field", "POST", "/v1/plans/p/steps/claim", `{"worker":"w","step":"1"}`, "", 400, "invalid_argument", "step", ""},
		{"claim malformed", "POST", "/v1/plans/p/steps/claim", `{"worker":`, "", 400, "invalid_argument", "", ""},
		{"claim empty body", "POST", "/v1/plans/p/steps/claim", ``, "application/json", 400, "invalid_argument", "", ""},
		{"claim as text", "POST", "/v1/plans/p/steps/claim", `worker=w`, "application/x-www-form-urlencoded", 415, "unsupported_media_type", "", ""},
		{"claim too large", "POST", "/v1/plans/p/steps/claim", `{"worker":"` + strings.Repeat("w", 5000) + `"}`, "", 413, "payload_too_large", "", ""},
		{"renew without worker", "POST", "/v1/plans/p/steps/1/claim", `{"lease_seconds":5}`, "", 400, "invalid_argument", "worker", ""},
		{"renew with owner", "POST", "/v1/plans/p/steps/1/claim", `{"worker":"w","owner":"o"}`, "", 400, "invalid_argument", "owner", ""},
		{"patch bad status", "PATCH", "/v1/plans/p/steps/1", `{"status":"done"}`, "", 400, "invalid_argument", "status", ""},
		{"patch empty owner", "PATCH", "/v1/plans/p/steps/1", `{"owner":""}`, "", 400, "invalid_argument", "owner", ""},
		{"patch unknown field", "PATCH", "/v1/plans/p/steps/1", `{"deps":[]}`, "", 400, "invalid_argument", "deps", ""},
		{"patch as markdown", "PATCH", "/v1/plans/p/steps/1", `done`, "text/markdown", 415, "unsupported_media_type", "", ""},
		{"bad step id", "PATCH", "/v1/plans/p/steps/a%20b", `{"status":"complete"}`, "", 400, "invalid_argument", "step_id", ""},
		{"bad plan name", "PATCH", "/v1/plans/P/steps/1", `{"status":"complete"}`, "", 400, "invalid_argument", "name", ""},
		{"report bad outcome", "POST", "/v1/plans/p/steps/1/reports", `{"outcome":"done"}`, "", 400, "invalid_argument", "outcome", ""},
		{"report no outcome", "POST", "/v1/plans/p/steps/1/reports", `{"details":"x"}`, "", 400, "invalid_argument", "outcome", ""},
		{"report unknown field", "POST", "/v1/plans/p/steps/1/reports", `{"outcome":"success","status":"complete"}`, "", 400, "invalid_argument", "status", ""},
		{"report unknown artifact field", "POST", "/v1/plans/p/steps/1/reports", `{"outcome":"success","artifacts":[{"file":"a","size":3}]}`, "", 400, "invalid_argument", "size", ""},
		{"report other step", "POST", "/v1/plans/p/steps/1/reports", `{"outcome":"success","step_id":"2"}`, "", 400, "invalid_argument", "step_id", ""},
		{"report bad timestamp", "POST", "/v1/plans/p/steps/1/reports", `{"outcome":"success","timestamp":"yesterday"}`, "", 400, "invalid_argument", "timestamp", ""},
		{"report empty worker", "POST", "/v1/plans/p/steps/1/reports", `{"outcome":"success","worker":""}`, "", 400, "invalid_argument", "worker", ""},
		{"report unknown step", "POST", "/v1/plans/p/steps/9/reports", `{"outcome":"success"}`, "", 404, "not_found", "", ""},
		{"report deps incomplete", "POST", "/v1/plans/p/steps/2/reports", `{"outcome":"success"}`, "", 409, "deps_incomplete", "", ""},
		{"report not claimed", "POST", "/v1/plans/p/steps/1/reports", `{"outcome":"success","worker":"w"}`, "", 409, "version_conflict", "", ""},
		{"steps bad status filter", "GET", "/v1/plans/p/steps?status=done", ``, "", 400, "invalid_argument", "status", ""},
		{"steps bad ready", "GET", "/v1/plans/p/steps?ready=yes", ``, "", 400, "invalid_argument", "ready", ""},
		{"reports bad step id", "GET", "/v1/plans/p/reports?step_id=a%2Fb", ``, "", 400, "invalid_argument", "step_id", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := refused(t, env, c.method, c.path, c.body, c.contentType, c.status, c.code)
			if c.field != "" && !strings.Contains(string(r.Body), `"field":"`+c.field+`"`) {
				t.Errorf("error does not name field %s: %s", c.field, r.Body)
			}
			if !strings.Contains(string(r.Body), c.message) {
				t.Errorf("error does not say %q: %s", c.message, r.Body)
			}
		})
	}
	if p := getPlan(t, env, "p"); p.Revision != 1 {
		t.Errorf("bad input changed the plan: revision %d", p.Revision)
	}
	if n := countRows(t, env, "events", "plan IS NOT NULL"); n != 1 {
		t.Errorf("bad input appended %d events", n)
	}
	if n := countRows(t, env, "step_reports", ""); n != 0 {
		t.Errorf("bad input stored %d reports", n)
	}
	if n := countRows(t, env, "plans", ""); n != 1 {
		t.Errorf("bad input stored plans: %d", n)
	}
	// Methods the step routes do not have: 405 with Allow.
	if r := env.Bad("DELETE", "/v1/plans/p/steps/1", nil); r.Status != 405 || r.Header.Get("Allow") != "GET, HEAD, PATCH" {
		t.Errorf("DELETE a step: %d Allow %q", r.Status, r.Header.Get("Allow"))
	}
	if r := env.Bad("GET", "/v1/plans/p/steps/claim", nil); r.Status != 404 {
		t.Errorf("GET steps/claim (a step named claim): %d %s", r.Status, r.Body)
	}
}
