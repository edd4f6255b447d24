package sessions

import (
	"testing"
	"time"

	"github.com/planserver/planserver/api"
)

// TestNoteEnforcement: one entry per host and adapter, refreshed once
// EnforcementResolution has passed, so most hook calls write nothing.
func TestNoteEnforcement(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	list, changed := noteEnforcement(nil, "claude-code", "command", t0)
	if !changed || len(list) != 1 || list[0].LastDecisionAt != "2026-11-25T12:00:00.000Z" {
		t.Fatalf("first call: %v %+v", changed, list)
	}
	if _, changed := noteEnforcement(list, "claude-code", "command", t0.Add(EnforcementResolution-time.Millisecond)); changed {
		t.Error("a call within the resolution wrote")
	}
	later, changed := noteEnforcement(list, "claude-code", "command", t0.Add(EnforcementResolution))
	if !changed || len(later) != 1 || later[0].LastDecisionAt != "2026-11-25T12:01:00.000Z" {
		t.Errorf("a call after the resolution: %v %+v", changed, later)
	}
	both, changed := noteEnforcement(list, "claude-code", "http", t0)
	if !changed || len(both) != 2 || both[0] != list[0] {
		t.Errorf("a second adapter: %v %+v", changed, both)
	}
	// A clock that went back, or a damaged stamp, is refreshed.
	for _, stamp := range []string{"2026-11-25T13:00:00.000Z", "garbage"} {
		if _, changed := noteEnforcement([]api.Enforcement{{Host: "cursor", Adapter: "command", LastDecisionAt: stamp}},
			"cursor", "command", t0); !changed {
			t.Errorf("stamp %q not refreshed", stamp)
		}
	}
}
