package api

import "encoding/json"

// Event types. Every change appends exactly one event of its type; so does
// a lease running out, the one change the clock makes.
const (
	EventSessionCreated         = "session.created"
	EventSessionUpdated         = "session.updated"
	EventSessionModeChanged     = "session.mode_changed"
	EventSessionDeleted         = "session.deleted"
	EventSessionPlanUpdated     = "session_plan.updated"
	EventSessionReviewRequested = "session.review_requested"
	EventSessionReviewApproved  = "session.review_approved"
	EventSessionReviewRejected  = "session.review_rejected"
	EventTodosUpdated           = "todos.updated"
	EventToolCallDenied         = "tool_call.denied"
	// EventToolCallUnjudged records a tool run a host's after-tool hook
	// reported that planserver never decided, or had denied.
	EventToolCallUnjudged  = "tool_call.unjudged"
	EventPlanCreated       = "plan.created"
	EventPlanUpdated       = "plan.updated"
	EventPlanStatusChanged = "plan.status_changed"
	EventPlanDeleted       = "plan.deleted"
	EventStepUpdated       = "step.updated"
	EventStepClaimed       = "step.claimed"
	EventStepReportAdded   = "step.report_added"
	// EventStepClaimExpired records that a claim's lease ran out: once per
	// lease, within about a second of its end (plans.SweepInterval), or
	// by the first write that ends the lease after its end, whichever
	// comes first. Nothing else changes: the step stays in_progress under
	// the same claimed_by until someone renews, reports or takes it over.
	EventStepClaimExpired = "step.claim_expired"
	// EventSessionScopeChanged records a change of a session's build
	// scope: a scope granted by an approval, lifted by an admin, or
	// inherited from an ancestor's change.
	EventSessionScopeChanged = "session.scope_changed"
	// EventToolCallOutOfScope records a tool call denied in scoped build
	// because it reaches outside the approved scope.
	EventToolCallOutOfScope = "tool_call.out_of_scope"
)

// EventTypes lists every event type, in the order of the contract's
// EventType enum (api/openapi.yaml).
var EventTypes = []string{
	EventSessionCreated, EventSessionUpdated, EventSessionModeChanged, EventSessionDeleted,
	EventSessionPlanUpdated, EventSessionReviewRequested, EventSessionReviewApproved,
	EventSessionReviewRejected, EventTodosUpdated, EventToolCallDenied, EventPlanCreated,
	EventPlanUpdated, EventPlanStatusChanged, EventPlanDeleted, EventStepUpdated,
	EventStepClaimed, EventStepReportAdded, EventStepClaimExpired, EventToolCallUnjudged,
	EventSessionScopeChanged, EventToolCallOutOfScope,
}

// Event is one entry of the change log.
type Event struct {
	Seq   int64  `json:"seq"`
	Type  string `json:"type"`
	Time  string `json:"time"`
	Actor string `json:"actor"`
	// Person is the signed-in human who made the change (Actor is then
	// their email); absent when a token made it.
	Person    *Person         `json:"person,omitempty"`
	SessionID string          `json:"session_id,omitempty"`
	Plan      string          `json:"plan,omitempty"`
	Revision  int64           `json:"revision,omitempty"`
	Data      json.RawMessage `json:"data"`
}

// EventPage is the JSON form of GET /v1/events.
type EventPage struct {
	Events    []Event `json:"events"`
	NextAfter int64   `json:"next_after"`
}
