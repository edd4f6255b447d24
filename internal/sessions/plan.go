package sessions

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/planserver/planserver/internal/apierr"
)

// SessionPlan is a session's one Markdown plan (write_session_plan). Its revision
// is its own, independent of the session's: a human approves the plan
// revision they read.
type SessionPlan struct {
	SessionID string `json:"session_id"`
	Content   string `json:"content"`
	Author    string `json:"author"`
	Revision  int64  `json:"revision"`
	CreatedAt string `json:"created_at"`
	UpdatedAt string `json:"updated_at"`
}

// PlanInput is one write of the session plan.
type PlanInput struct {
	Content string `json:"content"`
	// Author left out keeps the current author; on the first write it
	// defaults to the acting caller.
	Author *string `json:"author" validate:"omitempty,max=256"`
}

// CheckPlanContent applies the content rules: valid UTF-8, not blank (a
// plan of whitespace is no plan), at most maxBytes bytes (413 above).
func CheckPlanContent(content string, maxBytes int64) error {
	switch {
	case int64(len(content)) > maxBytes:
		return apierr.New(apierr.PayloadTooLarge, "plan content is %d bytes; the limit is %d (--max-plan-bytes)", len(content), maxBytes)
	case strings.TrimSpace(content) == "":
		return apierr.Invalid("content", "must not be empty")
	case !utf8.ValidString(content):
		return apierr.Invalid("content", "must be UTF-8 text")
	}
	return nil
}

// closedReview records a pending review that ended without a decision, in
// the data of the event that ended it.
type closedReview struct {
	PlanRevision    *int64  `json:"plan_revision"`
	Rationale       *string `json:"rationale"`
	RequestedAt     *string `json:"requested_at"`
	SessionRevision int64   `json:"session_revision"`
	Reason          string  `json:"reason"`
}

// planUpdate is the data of a session_plan.updated event: the whole plan,
// so embedders need not re-read it, and the pending review its rewrite
// withdrew, if any.
type planUpdate struct {
	SessionPlan
	Created         bool          `json:"created"`
	ReviewWithdrawn *closedReview `json:"review_withdrawn,omitempty"`
}

func planWhat(sessionID string) string { return fmt.Sprintf("plan of session %q", sessionID) }
