package http_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/apitest"
	"github.com/planserver/planserver/internal/app"
)

// The answers of GET a session and GET a plan are kept between commits
// (response.Cache); these tests read the same resource again after each kind
// of change that must show, with the first read already kept.

// TestKeptPlanAnswerShowsALeaseEnd: a lease running out changes a plan's
// answer with nothing written.
func TestKeptPlanAnswerShowsALeaseEnd(t *testing.T) {
	clk := newClock()
	env := apitest.New(t, func(c *app.Config) { c.Now = clk.Now })
	putSteps(t, env, "kept", []map[string]any{{"id": "a", "description": "work", "owner": "w"}})
	if _, ok := claim(t, env, "kept", map[string]any{"worker": "A", "lease_seconds": 60}); !ok {
		t.Fatal("no claim")
	}
	read := func() api.Plan {
		var p api.Plan
		env.Call("GET", "/v1/plans/kept", nil).JSON(t, &p)
		return p
	}
	if p := read(); p.Steps[0].ClaimExpired || p.Progress.Ready != 0 {
		t.Fatalf("a running lease reads %+v %+v", p.Steps[0], p.Progress)
	}
	clk.Advance(59 * time.Second)
	if p := read(); p.Steps[0].ClaimExpired {
		t.Fatalf("a second before the lease end: %+v", p.Steps[0])
	}
	clk.Advance(time.Second)
	if p := read(); !p.Steps[0].ClaimExpired || p.Progress.Ready != 1 || p.Revision != 2 {
		t.Errorf("at the lease end: %+v %+v, revision %d", p.Steps[0], p.Progress, p.Revision)
	}
}

// TestKeptSessionAnswerShowsAnAncestorsMode: a change to another session
// (a parent entering plan mode) changes a child's answer.
func TestKeptSessionAnswerShowsAnAncestorsMode(t *testing.T) {
	env := apitest.New(t)
	createSession(t, env, map[string]any{"id": "parent"})
	createSession(t, env, map[string]any{"id": "child", "parent_id": "parent"})
	read := func() (session, string) {
		r := env.Call("GET", "/v1/sessions/child", nil)
		var s session
		r.JSON(t, &s)
		return s, r.Header.Get("ETag")
	}
	before, etag := read()
	if before.EffectiveMode != "build" {
		t.Fatalf("child starts in %s", before.EffectiveMode)
	}
	if r := env.Call("GET", "/v1/sessions/child", nil, "If-None-Match", etag); r.Status != 304 {
		t.Errorf("a kept answer's ETag: %d", r.Status)
	}
	setMode(t, env, "parent", "plan", 200)
	after, etag2 := read()
	if after.EffectiveMode != "plan" || after.Revision == before.Revision || etag2 == etag {
		t.Errorf("after the parent entered plan mode: %+v (ETag %s, was %s)", after, etag2, etag)
	}
	if r := env.Call("GET", "/v1/sessions/child", nil, "If-None-Match", etag); r.Status != 200 {
		t.Errorf("the old ETag after the change: %d", r.Status)
	}
}

// TestKeptAnswersNeverPredateAnAcknowledgedWrite: writers flip modes while
// readers read; every read that starts after a write was acknowledged
// shows that write or a later one.
func TestKeptAnswersNeverPredateAnAcknowledgedWrite(t *testing.T) {
	env := apitest.New(t)
	const writers = 4
	for w := range writers {
		createSession(t, env, map[string]any{"id": fmt.Sprintf("s%d", w)})
	}
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("s%d", w)
			for i := range 25 {
				mode := []string{"plan", "build"}[i%2]
				r := env.Call("PATCH", "/v1/sessions/"+id+"/mode", map[string]any{"mode": mode})
				var written session
				r.JSON(t, &written)
				var read session
				env.Call("GET", "/v1/sessions/"+id, nil).JSON(t, &read)
				if read.Revision < written.Revision || (read.Revision == written.Revision && string(read.Mode) != mode) {
					t.Errorf("%s: wrote revision %d (%s), then read revision %d (%s)", id, written.Revision, mode, read.Revision, read.Mode)
					return
				}
			}
		}()
	}
	// Readers of the same sessions keep answers warm meanwhile.
	done := make(chan struct{})
	var readers sync.WaitGroup
	for w := range writers {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for {
				select {
				case <-done:
					return
				default:
					env.Call("GET", fmt.Sprintf("/v1/sessions/s%d", w), nil)
				}
			}
		}()
	}
	wg.Wait()
	close(done)
	readers.Wait()
}
