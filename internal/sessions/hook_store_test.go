package sessions

import (
	"testing"
	"time"

	"github.com/planserver/planserver/api"
)

// TestNoteEnforcement: one entry per host and adapter, its decision and
// report stamps each refreshed once EnforcementResolution has passed (so
// most hook calls write nothing), and every unjudged run counted.
func TestNoteEnforcement(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	decided := observation{decided: true}
	stamp := func(p *string) string {
		if p == nil {
			return "<nil>"
		}
		return *p
	}
	list, changed := noteEnforcement(nil, "claude-code", "command", t0, decided)
	if !changed || len(list) != 1 || stamp(list[0].LastDecisionAt) != "2026-11-25T12:00:00.000Z" || list[0].LastReportAt != nil {
		t.Fatalf("first call: %v %+v", changed, list)
	}
	if _, changed := noteEnforcement(list, "claude-code", "command", t0.Add(EnforcementResolution-time.Millisecond), decided); changed {
		t.Error("a call within the resolution wrote")
	}
	later, changed := noteEnforcement(list, "claude-code", "command", t0.Add(EnforcementResolution), decided)
	if !changed || len(later) != 1 || stamp(later[0].LastDecisionAt) != "2026-11-25T12:01:00.000Z" {
		t.Errorf("a call after the resolution: %v %+v", changed, later)
	}
	both, changed := noteEnforcement(list, "claude-code", "http", t0, decided)
	if !changed || len(both) != 2 || stamp(both[0].LastDecisionAt) != stamp(list[0].LastDecisionAt) {
		t.Errorf("a second adapter: %v %+v", changed, both)
	}
	// A report is stamped apart from the decisions, once per resolution.
	reported, changed := noteEnforcement(list, "claude-code", "command", t0.Add(time.Second), observation{reported: true})
	if !changed || stamp(reported[0].LastReportAt) != "2026-11-25T12:00:01.000Z" || stamp(reported[0].LastDecisionAt) != "2026-11-25T12:00:00.000Z" {
		t.Errorf("a report: %v %+v", changed, reported)
	}
	if _, changed := noteEnforcement(reported, "claude-code", "command", t0.Add(2*time.Second), observation{reported: true}); changed {
		t.Error("a report within the resolution wrote")
	}
	// A report alone (no before-hook) makes an entry with no decision.
	only, _ := noteEnforcement(nil, "gemini-cli", "command", t0, observation{reported: true})
	if only[0].LastDecisionAt != nil || only[0].LastReportAt == nil {
		t.Errorf("a report with no decision: %+v", only)
	}
	// Every unjudged run is written and counted, within the resolution too.
	run := &api.UnjudgedRun{Tool: "Write", Reason: api.UnjudgedNoDecision}
	once, changed := noteEnforcement(reported, "claude-code", "command", t0.Add(2*time.Second), observation{reported: true, unjudged: run})
	twice, changed2 := noteEnforcement(once, "claude-code", "command", t0.Add(3*time.Second), observation{reported: true, unjudged: run})
	if !changed || !changed2 || twice[0].UnjudgedRuns != 2 || twice[0].LastUnjudged != run {
		t.Errorf("unjudged runs: %v %v %+v", changed, changed2, twice)
	}
	// A clock that went back, or a damaged stamp, is refreshed.
	for _, s := range []string{"2026-11-25T13:00:00.000Z", "garbage"} {
		s := s
		if _, changed := noteEnforcement([]api.Enforcement{{Host: "cursor", Adapter: "command", LastDecisionAt: &s}},
			"cursor", "command", t0, decided); !changed {
			t.Errorf("stamp %q not refreshed", s)
		}
	}
}
