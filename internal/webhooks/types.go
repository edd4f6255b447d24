// Package webhooks owns webhook subscriptions: which event-log events each
// webhook event type covers (Types, the one place that mapping lives), the
// rules of a subscription, the Standard Webhooks signature, the bodies
// sent (standard and slack), the retry schedule, and the store (the
// subscriptions, their cursors and leases, the delivery log). The event
// log is the outbox: nothing is queued beside it. Sending is the
// deliver package's; this one never imports net/http.
package webhooks

import (
	"encoding/json"
	"slices"

	"github.com/planserver/planserver/api"
)

// Type is a webhook event type: a name for a filter over the event log.
type Type struct {
	Name string
	// Log lists the event-log types it covers.
	Log []string
	// Match, when set, narrows those events by their data.
	Match func(e api.Event) bool
}

// Types is the mapping from webhook event types to the event log, in the
// order a delivery's type is chosen when one event matches several of a
// subscription's types. Every event-log type is also a webhook type of
// its own (api.EventTypes), matching exactly itself.
//
// step.claim_expired is the event-log type of the same name: the plans
// store records it once per lease, about a second after the lease ends
// (plans.SweepInterval), so a takeover (a step.claimed that names
// previous_claimed_by) is not a second notice of the same lapse.
var Types = []Type{
	{Name: api.WebhookReviewRequested, Log: []string{api.EventSessionReviewRequested}},
	{Name: api.WebhookReviewDecided, Log: []string{api.EventSessionReviewApproved, api.EventSessionReviewRejected}},
	{Name: api.WebhookStepClaimExpired, Log: []string{api.EventStepClaimExpired}},
	{Name: api.WebhookStepCompleted, Log: []string{api.EventStepUpdated, api.EventStepReportAdded}, Match: func(e api.Event) bool {
		var d struct {
			Step struct {
				Status string `json:"status"`
			} `json:"step"`
			PreviousStatus string `json:"previous_status"`
			Outcome        string `json:"outcome"`
		}
		if json.Unmarshal(e.Data, &d) != nil {
			return false
		}
		if e.Type == api.EventStepReportAdded {
			return d.Outcome == "success"
		}
		return d.Step.Status == "complete" && d.PreviousStatus != "complete"
	}},
	{Name: api.WebhookPlanChanged, Log: []string{api.EventPlanCreated, api.EventPlanUpdated, api.EventPlanStatusChanged, api.EventPlanDeleted}},
	{Name: api.WebhookToolCallDenied, Log: []string{api.EventToolCallDenied}},
	// tool_call.unjudged: a tool ran that planserver never decided, or
	// had denied (the host's after-tool hook reported it).
	{Name: api.WebhookToolCallUnjudged, Log: []string{api.EventToolCallUnjudged}},
}

// typeNamed returns the webhook type called name: one of Types, or an
// event-log type standing for itself.
func typeNamed(name string) (Type, bool) {
	for _, t := range Types {
		if t.Name == name {
			return t, true
		}
	}
	if slices.Contains(api.EventTypes, name) {
		return Type{Name: name, Log: []string{name}}, true
	}
	return Type{}, false
}

// KnownTypes lists every type a subscription may name: Types, then the
// event-log types (tool_call.denied and tool_call.unjudged are in both;
// each is listed once).
func KnownTypes() []string {
	var out []string
	for _, t := range Types {
		out = append(out, t.Name)
	}
	for _, t := range api.EventTypes {
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

// LogTypes returns the event-log types the webhook types names cover, for
// the log read's type filter.
func LogTypes(names []string) []string {
	var out []string
	for _, n := range names {
		t, _ := typeNamed(n)
		for _, l := range t.Log {
			if !slices.Contains(out, l) {
				out = append(out, l)
			}
		}
	}
	return out
}

// Classify returns the webhook type under which e is delivered to a
// subscription to names, and false when e matches none of them. Types'
// order decides between several.
func Classify(names []string, e api.Event) (string, bool) {
	var match []string
	for _, n := range names {
		t, ok := typeNamed(n)
		if ok && slices.Contains(t.Log, e.Type) && (t.Match == nil || t.Match(e)) {
			match = append(match, t.Name)
		}
	}
	if len(match) == 0 {
		return "", false
	}
	for _, t := range Types {
		if slices.Contains(match, t.Name) {
			return t.Name, true
		}
	}
	return match[0], true
}
