package webhooks

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/planserver/planserver/api"
)

// The example of the Standard Webhooks specification.
func TestSignMatchesTheSpecificationExample(t *testing.T) {
	got, err := Sign([]string{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, []byte(`{"test": 2432232314}`))
	if err != nil || got != "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=" {
		t.Fatalf("Sign: %q, %v", got, err)
	}
}

func TestClassify(t *testing.T) {
	ev := func(typ string, data any) api.Event {
		raw, _ := json.Marshal(data)
		return api.Event{Type: typ, Data: raw}
	}
	prev := "w1"
	for _, c := range []struct {
		names []string
		e     api.Event
		want  string
	}{
		{[]string{"review.requested"}, ev(api.EventSessionReviewRequested, nil), "review.requested"},
		{[]string{"review.decided"}, ev(api.EventSessionReviewRejected, nil), "review.decided"},
		{[]string{"review.decided"}, ev(api.EventSessionReviewRequested, nil), ""},
		{[]string{"step.completed"}, ev(api.EventStepUpdated, map[string]any{"step": map[string]any{"status": "complete"}, "previous_status": "in_progress"}), "step.completed"},
		{[]string{"step.completed"}, ev(api.EventStepUpdated, map[string]any{"step": map[string]any{"status": "blocked"}}), ""},
		{[]string{"step.completed"}, ev(api.EventStepReportAdded, map[string]any{"outcome": "success"}), "step.completed"},
		{[]string{"step.completed"}, ev(api.EventStepReportAdded, map[string]any{"outcome": "failure"}), ""},
		{[]string{"step.claim_expired"}, ev(api.EventStepClaimExpired, map[string]any{"claimed_by": prev}), "step.claim_expired"},
		// A takeover is not a second notice of the lapse its
		// step.claim_expired already reported.
		{[]string{"step.claim_expired"}, ev(api.EventStepClaimed, map[string]any{"previous_claimed_by": prev}), ""},
		{[]string{"step.claim_expired"}, ev(api.EventStepClaimed, map[string]any{}), ""},
		{[]string{"plan.changed"}, ev(api.EventPlanDeleted, nil), "plan.changed"},
		{[]string{"step.claimed", "step.claim_expired"}, ev(api.EventStepClaimed, map[string]any{"previous_claimed_by": prev}), "step.claimed"},
		{[]string{"step.claimed", "step.claim_expired"}, ev(api.EventStepClaimExpired, map[string]any{"claimed_by": prev}), "step.claim_expired"},
		{[]string{"step.claimed"}, ev(api.EventStepClaimed, map[string]any{}), "step.claimed"},
		{[]string{"step.claimed"}, ev(api.EventStepClaimExpired, map[string]any{}), ""},
		{[]string{"tool_call.unjudged"}, ev(api.EventToolCallUnjudged, map[string]any{"tool": "Write"}), "tool_call.unjudged"},
		{[]string{"tool_call.denied"}, ev(api.EventToolCallUnjudged, map[string]any{"tool": "Write"}), ""},
	} {
		got, ok := Classify(c.names, c.e)
		if got != c.want || ok != (c.want != "") {
			t.Errorf("Classify(%v, %s %s) = %q, %v; want %q", c.names, c.e.Type, c.e.Data, got, ok, c.want)
		}
	}
}

// TestSentenceUnjudged: a slack-format tool_call.unjudged says which tool
// ran where, and whether planserver had denied it.
func TestSentenceUnjudged(t *testing.T) {
	raw, _ := json.Marshal(map[string]any{"tool": "Write", "host": "claude-code", "reason": "denied"})
	got := Sentence(api.WebhookToolCallUnjudged, "https://ps.example", api.Event{Type: api.EventToolCallUnjudged, SessionID: "s1", Data: raw})
	for _, want := range []string{"*Write*", "*s1*", "claude-code", "had denied", "<https://ps.example/ui/sessions/s1>"} {
		if !strings.Contains(got, want) {
			t.Errorf("%q lacks %q", got, want)
		}
	}
	if !slices.Contains(KnownTypes(), "tool_call.unjudged") {
		t.Error("tool_call.unjudged is not a webhook type")
	}
}

// The documented schedule: about a day in all, each delay within the jitter.
func TestScheduleLastsAboutADay(t *testing.T) {
	var total time.Duration
	for _, d := range Schedule {
		total += d
	}
	if total < 23*time.Hour || total > 25*time.Hour {
		t.Fatalf("schedule totals %v", total)
	}
	for n := 1; n <= len(Schedule); n++ {
		d, ok := Backoff(Schedule, n)
		lo, hi := time.Duration(float64(Schedule[n-1])*(1-Jitter)), time.Duration(float64(Schedule[n-1])*(1+Jitter))
		if !ok || d < lo || d > hi {
			t.Errorf("Backoff(%d) = %v, %v", n, d, ok)
		}
	}
	if _, ok := Backoff(Schedule, len(Schedule)+1); ok {
		t.Error("the schedule never ends")
	}
}
