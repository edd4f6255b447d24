package sessions

import (
	"fmt"

	"github.com/planserver/planserver/api"
)

// SessionPlan is a session's one Markdown plan (write_session_plan).
type SessionPlan = api.SessionPlan

// sessionPlanUpdate is the data of a session_plan.updated event: the whole
// plan, so embedders need not re-read it, and the pending review its
// rewrite withdrew, if any.
type sessionPlanUpdate struct {
	SessionPlan
	Created         bool          `json:"created"`
	ReviewWithdrawn *closedReview `json:"review_withdrawn,omitempty"`
}

func planWhat(sessionID string) string { return fmt.Sprintf("plan of session %q", sessionID) }
