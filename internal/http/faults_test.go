package http_test

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/planserver/planserver/internal/apitest"
	"github.com/planserver/planserver/internal/app"
	"github.com/planserver/planserver/internal/dbtest"
	"github.com/planserver/planserver/internal/disktest"
)

// TestDiskFullThroughTheAPI fills the disk under a running server: writes
// answer 507 insufficient_storage with Retry-After, /readyz turns 503-ish
// (507) while writes cannot commit, reads keep working, nothing
// acknowledged is lost, and all comes back once space is freed. On
// PostgreSQL the database's tables are on the small disk (a tablespace),
// and /readyz cannot tell that the server's disk is full (its probe write
// fits in a page it has), so that one check is SQLite's alone.
func TestDiskFullThroughTheAPI(t *testing.T) {
	dsn, dir := dbtest.OnSmallDisk(t, "4m")
	env := apitest.Open(t, dsn)
	putPlan(t, env, "kept", map[string]any{"content": "# acknowledged"}, http.StatusCreated)
	if r := env.Call("GET", "/readyz", nil); r.Status != 200 {
		t.Fatalf("ready before: %d %s", r.Status, r.Body)
	}
	free := disktest.Fill(t, dir)
	// Incompressible, so that it needs pages on either engine.
	raw := make([]byte, 384<<10)
	_, _ = rand.Read(raw)
	big := base64.StdEncoding.EncodeToString(raw)
	r := env.Call("PUT", "/v1/plans/big", map[string]any{"content": big})
	if r.Status != 507 || r.Code() != "insufficient_storage" || r.Header.Get("Retry-After") == "" {
		t.Fatalf("write on a full disk: %d %s (Retry-After %q)", r.Status, r.Body, r.Header.Get("Retry-After"))
	}
	if r := env.Call("GET", "/readyz", nil); r.Status < 500 && !dbtest.Postgres() {
		t.Errorf("ready on a full disk: %d %s", r.Status, r.Body)
	}
	if p := getPlan(t, env, "kept"); p.Content != "# acknowledged" {
		t.Errorf("read on a full disk: %+v", p)
	}
	free()
	if r := env.Call("GET", "/readyz", nil); r.Status != 200 {
		t.Errorf("ready after space was freed: %d %s", r.Status, r.Body)
	}
	putPlan(t, env, "big", map[string]any{"content": big}, http.StatusCreated)
	if p := getPlan(t, env, "kept"); p.Content != "# acknowledged" {
		t.Errorf("after the fault: %+v", p)
	}
}

// TestRejectedGraphAnswerIsBounded sends a plan whose step graph is one
// long cycle with a back edge from every step: the 400 names cycles at
// most a bounded number of times, each shortened, so a hostile graph
// cannot make a huge answer (it made an 11.9 MiB one).
func TestRejectedGraphAnswerIsBounded(t *testing.T) {
	env := apitest.New(t, func(c *app.Config) { c.MaxBodyBytes = 8 << 20; c.MaxPlanBytes = 4 << 20 })
	const n = 1000
	steps := make([]map[string]any, n)
	for i := 0; i < n; i++ {
		deps := []string{fmt.Sprintf("s%d", (i+1)%n)} // the chain closes into one long cycle
		if i > 0 && i < n-1 {
			deps = append(deps, "s0") // and every step also waits for the first
		}
		steps[i] = map[string]any{"id": fmt.Sprintf("s%d", i), "description": "d", "owner": "o", "deps": deps}
	}
	r := env.Bad("PUT", "/v1/plans/hostile", map[string]any{"content": "# x", "steps": steps})
	if r.Status != 400 || r.Code() != "invalid_argument" {
		t.Fatalf("hostile graph: %d %.200s", r.Status, r.Body)
	}
	if len(r.Body) > 64<<10 {
		t.Errorf("the answer is %d bytes; a rejected graph's answer must stay small", len(r.Body))
	}
	var p struct {
		Errors []struct{ Field, Message string }
	}
	r.JSON(t, &p)
	if len(p.Errors) == 0 || len(p.Errors) > 100 {
		t.Fatalf("%d field errors", len(p.Errors))
	}
	for _, e := range p.Errors {
		if len(e.Message) > 1024 || !strings.Contains(e.Message, "cycle") {
			t.Errorf("field error %s: %d bytes: %.120s", e.Field, len(e.Message), e.Message)
		}
	}
}
