package api

// Webhook formats: what a delivery's body looks like.
const (
	// WebhookStandard is the Standard Webhooks body {type, timestamp, data}.
	WebhookStandard = "standard"
	// WebhookSlack is a Slack-compatible incoming-webhook body {text}
	// (Mattermost and Rocket.Chat take it too).
	WebhookSlack = "slack"
)

// Webhook states.
const (
	WebhookActive  = "active"
	WebhookPaused  = "paused"
	WebhookFailing = "failing"
)

// Webhook delivery states.
const (
	DeliveryPending   = "pending"
	DeliverySucceeded = "succeeded"
	DeliveryFailed    = "failed"
)

// Webhook event types: names for filters over the event log's types
// (internal/webhooks.Types says which log events each one covers).
const (
	WebhookReviewRequested  = "review.requested"
	WebhookReviewDecided    = "review.decided"
	WebhookStepClaimExpired = "step.claim_expired"
	WebhookStepCompleted    = "step.completed"
	WebhookPlanChanged      = "plan.changed"
	WebhookToolCallDenied   = "tool_call.denied"
	WebhookToolCallUnjudged = "tool_call.unjudged"
)

// Webhook is a subscription as the API shows it: never its secret.
type Webhook struct {
	ID      string   `json:"id"`
	URL     string   `json:"url"`
	Events  []string `json:"events"`
	Format  string   `json:"format"`
	Session string   `json:"session,omitempty"`
	Plan    string   `json:"plan,omitempty"`
	// State is active, paused, or failing (retries ran out, or its cursor
	// fell behind the event log's retention); StateReason says why.
	State       string `json:"state"`
	StateReason string `json:"state_reason,omitempty"`
	// Cursor is the seq of the last event the subscription is done with.
	Cursor int64 `json:"cursor"`
	// Attempts is how many attempts the event after Cursor has failed;
	// NextAttemptAt is when the next one is due.
	Attempts      int     `json:"attempts"`
	NextAttemptAt *string `json:"next_attempt_at,omitempty"`
	// PreviousSecretExpiresAt is the end of a rotation's overlap window,
	// while deliveries are signed with both secrets.
	PreviousSecretExpiresAt *string `json:"previous_secret_expires_at,omitempty"`
	CreatedAt               string  `json:"created_at"`
	UpdatedAt               string  `json:"updated_at"`
}

// WebhookCreated is the answer to POST /v1/webhooks and to rotate-secret:
// the subscription and its secret, shown only here.
type WebhookCreated struct {
	Webhook
	Secret string `json:"secret"`
}

// WebhookCreate is the body of POST /v1/webhooks.
type WebhookCreate struct {
	URL     string   `json:"url"`
	Events  []string `json:"events"`
	Format  string   `json:"format,omitempty"`
	Session string   `json:"session,omitempty"`
	Plan    string   `json:"plan,omitempty"`
}

// WebhookPatch is the body of PATCH /v1/webhooks/{id}: the fields given
// change. State active resumes a paused or failing subscription; paused
// stops its deliveries.
type WebhookPatch struct {
	URL     *string   `json:"url,omitempty"`
	Events  *[]string `json:"events,omitempty"`
	Format  *string   `json:"format,omitempty"`
	Session *string   `json:"session,omitempty"`
	Plan    *string   `json:"plan,omitempty"`
	State   *string   `json:"state,omitempty"`
}

// WebhookRotate is the body of POST /v1/webhooks/{id}/rotate-secret.
type WebhookRotate struct {
	// OverlapSeconds is how long the old secret keeps signing beside the
	// new one; 86400 (a day) when left out, 0 to drop it at once.
	OverlapSeconds *int64 `json:"overlap_seconds,omitempty"`
}

// WebhookList is GET /v1/webhooks.
type WebhookList struct {
	Webhooks      []Webhook `json:"webhooks"`
	NextPageToken string    `json:"next_page_token"`
}

// Delivery is one entry of a subscription's delivery log: an attempt, or
// a redelivery waiting its turn (state pending).
type Delivery struct {
	ID         int64  `json:"id"`
	WebhookID  string `json:"webhook_id"`
	EventSeq   int64  `json:"event_seq"`
	MessageID  string `json:"message_id"`
	Type       string `json:"type"`
	Attempt    int    `json:"attempt"`
	Manual     bool   `json:"manual"`
	State      string `json:"state"`
	StatusCode *int   `json:"status_code,omitempty"`
	LatencyMS  *int64 `json:"latency_ms,omitempty"`
	// Response is the first bytes of the target's answer.
	Response    string  `json:"response"`
	Error       string  `json:"error,omitempty"`
	NextRetryAt *string `json:"next_retry_at,omitempty"`
	CreatedAt   string  `json:"created_at"`
}

// DeliveryList is GET /v1/webhooks/{id}/deliveries, newest first.
type DeliveryList struct {
	Deliveries    []Delivery `json:"deliveries"`
	NextPageToken string     `json:"next_page_token"`
}
