package main

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/planserver/planserver/api"
)

// TestServeReportsLapsedLeases: planserver serve runs the lease sweeper,
// so a claim whose lease runs out is in the event log as
// step.claim_expired shortly after its end, with nobody writing anything;
// and the sweeper stops with the server on SIGTERM.
func TestServeReportsLapsedLeases(t *testing.T) {
	p := start(t, filepath.Join(t.TempDir(), "p.db"))
	if st, body := p.call(t, "PUT", "/v1/plans/work", `{"content":"# work","steps":[{"id":"s1","description":"d","owner":"o"}]}`); st != 201 {
		t.Fatalf("put: %d %s", st, body)
	}
	st, body := p.call(t, "POST", "/v1/plans/work/steps/claim", `{"worker":"w1","lease_seconds":1}`)
	if st != 200 {
		t.Fatalf("claim: %d %s", st, body)
	}
	var claimed api.StepResult
	if err := json.Unmarshal(body, &claimed); err != nil {
		t.Fatal(err)
	}
	end, err := time.Parse(time.RFC3339Nano, *claimed.Step.ClaimExpiresAt)
	if err != nil {
		t.Fatal(err)
	}
	var page api.EventPage
	deadline := time.Now().Add(30 * time.Second)
	for len(page.Events) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no step.claim_expired 30 s after a 1 s lease:\n%s", p.stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
		st, body := p.call(t, "GET", "/v1/events?types=step.claim_expired", "", "Accept", "application/json")
		if st != 200 {
			t.Fatalf("events: %d %s", st, body)
		}
		if err := json.Unmarshal(body, &page); err != nil {
			t.Fatal(err)
		}
	}
	e := page.Events[0]
	at, err := time.Parse(time.RFC3339Nano, e.Time)
	if err != nil {
		t.Fatal(err)
	}
	// Never before the end; about a second (the sweep interval) after it,
	// with room for a machine whose every core is busy.
	lag := at.Sub(end)
	t.Logf("recorded %v after the lease's end", lag)
	if lag < 0 || lag > 10*time.Second || len(page.Events) != 1 || e.Actor != "planserver" ||
		!strings.Contains(string(e.Data), `"claimed_by":"w1"`) {
		t.Errorf("event %+v, %v after the lease's end", e, lag)
	}
	// planserver events says it in a line.
	if out := ok(t, p, "events", "--types", "step.claim_expired"); !regexp.MustCompile(
		`step\.claim_expired\s+plan work step s1 of w1 at ` + regexp.QuoteMeta(*claimed.Step.ClaimExpiresAt) + ` r2\s+by planserver`).MatchString(out) {
		t.Errorf("planserver events:\n%s", out)
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if _, err := waitExit(t, p, 20*time.Second); err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, p.stderr.String())
	}
	if log := p.stderr.String(); strings.Contains(log, "sweep step leases") || !strings.Contains(log, "step leases ran out") {
		t.Errorf("log:\n%s", log)
	}
}
