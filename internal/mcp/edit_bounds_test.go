package mcp_test

import (
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/planserver/planserver/internal/apitest"
	"github.com/planserver/planserver/internal/app"
)

// TestEditPlanIsBoundedByTheLimit: edit_plan calls whose result would be
// far larger than --max-plan-bytes (a replace_all of a one-byte string in
// a full plan by a long one; edits that each double the plan) are refused
// with a tool error naming the limit, and the server's heap, sampled
// while they run, never grows by more than a small multiple of the limit.
func TestEditPlanIsBoundedByTheLimit(t *testing.T) {
	const limit = 256 << 10
	env := apitest.New(t, func(c *app.Config) { c.MaxPlanBytes = limit })
	c := connect(t, env, clientOpts{})
	full := strings.Repeat("a", limit-1) + "\n"
	c.ok("write_plan", map[string]any{"name": "p", "content": full}, nil)
	doubling := make([]map[string]any, 100)
	for i := range doubling {
		doubling[i] = map[string]any{"old_string": "a", "new_string": "aa", "replace_all": true}
	}
	attacks := []map[string]any{
		// 256 Ki occurrences × 1 KiB: 256 MiB if built.
		{"name": "p", "old_string": "a", "new_string": strings.Repeat("b", 1<<10), "replace_all": true},
		// Each edit doubles the plan: 2^100 times the limit if built.
		{"name": "p", "edits": doubling},
	}

	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	var (
		peak atomic.Uint64
		stop = make(chan struct{})
		wg   sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			if m.HeapAlloc > peak.Load() {
				peak.Store(m.HeapAlloc)
			}
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	for _, args := range attacks {
		c.fails("edit_plan", args, "payload_too_large", "--max-plan-bytes", "262144")
	}
	close(stop)
	wg.Wait()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	grew := int64(peak.Load()) - int64(base.HeapAlloc)
	allocated := after.TotalAlloc - base.TotalAlloc
	t.Logf("heap grew by at most %d bytes (limit %d); %d bytes allocated in all", grew, limit, allocated)
	if grew > 16*limit {
		t.Fatalf("the heap grew by %d bytes during the edits, more than 16 × --max-plan-bytes (%d)", grew, 16*limit)
	}
	if allocated > 32*limit {
		t.Fatalf("the edits allocated %d bytes, more than 32 × --max-plan-bytes (%d)", allocated, 32*limit)
	}
	// The plan is as it was.
	var p struct {
		Content  string `json:"content"`
		Revision int64  `json:"revision"`
	}
	env.Call("GET", "/v1/plans/p", nil).JSON(t, &p)
	if p.Content != full || p.Revision != 1 {
		t.Fatalf("a refused edit changed the plan: revision %d, %d bytes", p.Revision, len(p.Content))
	}
}

// TestToolArgumentsRefuseNUL: NUL is refused in a tool's arguments as in
// an HTTP body, naming the argument, and nothing is written.
func TestToolArgumentsRefuseNUL(t *testing.T) {
	env := apitest.New(t)
	c := connect(t, env, clientOpts{})
	before := head(t, env)
	c.fails("write_plan", map[string]any{"name": "p", "content": "# P\x00"}, "invalid_argument", "content", "NUL")
	c.fails("write_plan", map[string]any{"name": "p", "content": "# P", "steps": []map[string]any{
		{"id": "a", "owner": "o", "description": "\x00"}}}, "steps[0].description", "NUL")
	if head(t, env) != before {
		t.Fatal("a refused write_plan was recorded")
	}
}
