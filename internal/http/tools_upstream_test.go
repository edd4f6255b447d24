package http_test

import (
	"testing"

	"github.com/planserver/planserver/internal/apitest"
)

// TestToolCheckRecordsTheUpstream: a gate names the tool server a checked
// tool belongs to in the tool's _meta, and a denial records it; a _meta
// that does not name one as a string is 400.
func TestToolCheckRecordsTheUpstream(t *testing.T) {
	env := apitest.New(t)
	createSession(t, env, map[string]any{"id": "s", "mode": "plan"})
	if c := check(t, env, "s", map[string]any{"name": "write_file",
		"_meta": map[string]any{"planserver/upstream": "filesystem", "other": 1}}); c.Allowed {
		t.Fatalf("write_file allowed in plan mode: %+v", c)
	}
	var page struct {
		Events []struct {
			Data struct {
				Tool     string `json:"tool"`
				Upstream string `json:"upstream"`
			} `json:"data"`
		} `json:"events"`
	}
	env.Call("GET", "/v1/events?types=tool_call.denied", nil, "Accept", "application/json").JSON(t, &page)
	if len(page.Events) != 1 || page.Events[0].Data.Tool != "write_file" || page.Events[0].Data.Upstream != "filesystem" {
		t.Fatalf("tool_call.denied = %+v, want write_file from upstream filesystem", page.Events)
	}
	for _, meta := range []any{map[string]any{"planserver/upstream": 7}, "x"} {
		r := env.Bad("POST", "/v1/sessions/s/tools/check", map[string]any{"name": "w", "_meta": meta})
		if r.Status != 400 || r.Code() != "invalid_argument" {
			t.Errorf("_meta %v: %d %s", meta, r.Status, r.Body)
		}
	}
}
