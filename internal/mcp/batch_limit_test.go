package mcp_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/planserver/planserver/internal/apitest"
	"github.com/planserver/planserver/internal/app"
	"github.com/planserver/planserver/internal/auth"
	planhttp "github.com/planserver/planserver/internal/http"
)

// batchOf is a JSON-RPC batch of n write_plan calls, ids from first.
func batchOf(n, first int) []map[string]any {
	out := make([]map[string]any, n)
	for i := range out {
		out[i] = map[string]any{"jsonrpc": "2.0", "id": first + i, "method": "tools/call", "params": map[string]any{
			"name": "write_plan", "arguments": map[string]any{"name": "p", "content": fmt.Sprintf("# rev %d", first+i)}}}
	}
	return out
}

// TestBatchesCountAgainstTheRateLimit: with --rate-limit 2 --rate-burst 5,
// a JSON-RPC batch of N calls is limited like N single requests: a batch
// of 5 empties the bucket (the next request waits), a batch of 6 is
// refused whole, and a batch above the cap is a 400 that says so. No
// refused batch writes anything.
func TestBatchesCountAgainstTheRateLimit(t *testing.T) {
	env := apitest.New(t, func(c *app.Config) {
		c.Auth = planhttp.AuthToken
		c.RateLimit, c.RateBurst = 2, 5
	})
	admin := env.As(env.Token(auth.Admin, "root", ""))
	caller := env.As(env.Token(auth.Admin, "batcher", ""))
	post := func(body any) *apitest.Response {
		return caller.Do(apitest.Request{Method: "POST", Path: "/mcp", Body: body, Invalid: true,
			Header: map[string]string{"Accept": streamableAccept, "Mcp-Protocol-Version": "2025-03-26"}})
	}
	revision := func() string {
		r := admin.Call("GET", "/v1/plans/p/status", nil)
		if r.Status == http.StatusNotFound {
			return "none"
		}
		return fmt.Sprint(r.Map(t)["revision"])
	}

	r := post(batchOf(200, 1))
	if r.Status != http.StatusBadRequest || !strings.Contains(string(r.Body), "at most 32") {
		t.Fatalf("batch of 200: %d %s", r.Status, r.Body)
	}
	r = post(batchOf(6, 1))
	if r.Status != http.StatusTooManyRequests || !strings.Contains(string(r.Body), "6 calls") {
		t.Fatalf("batch of 6 with a burst of 5: %d %s", r.Status, r.Body)
	}
	if got := revision(); got != "none" {
		t.Fatalf("refused batches wrote revision %s", got)
	}
	r = post(batchOf(5, 1))
	if r.Status != http.StatusOK || strings.Count(string(r.Body), `"structuredContent"`) != 5 {
		t.Fatalf("batch of 5: %d %s", r.Status, r.Body)
	}
	if got := revision(); got != "5" {
		t.Fatalf("after a batch of 5: revision %s", got)
	}
	// The bucket is empty now, as after 5 single requests.
	if r := post(batchOf(1, 6)); r.Status != http.StatusTooManyRequests || r.Header.Get("Retry-After") == "" {
		t.Fatalf("a call right after a batch of 5: %d %s", r.Status, r.Body)
	}
	if got := revision(); got != "5" {
		t.Fatalf("a refused call wrote: revision %s", got)
	}
}
