// Package sessions owns sessions: the build/plan mode a human controls, the
// rule that a session is in plan mode whenever it or any ancestor is (so a
// sub-session can never escape it), the harness restriction, and their
// storage.
package sessions

import (
	"github.com/planserver/planserver/internal/apierr"
)

// Mode is a session's own build/plan setting.
type Mode string

// The two modes. Build is the default.
const (
	Build Mode = "build"
	Plan  Mode = "plan"
)

// ParseMode validates a mode sent by a client for the named field.
func ParseMode(field, s string) (Mode, error) {
	switch Mode(s) {
	case Build, Plan:
		return Mode(s), nil
	}
	return "", apierr.Invalid(field, "unknown mode %q: want build or plan", s)
}

// Review states.
const (
	ReviewNone     = "none"
	ReviewPending  = "pending"
	ReviewApproved = "approved"
	ReviewRejected = "rejected"
)

// Review is the state of the human review of the session plan.
type Review struct {
	State        string  `json:"state"`
	PlanRevision *int64  `json:"plan_revision"`
	Rationale    *string `json:"rationale"`
	Feedback     *string `json:"feedback"`
	RequestedAt  *string `json:"requested_at"`
	DecidedAt    *string `json:"decided_at"`
	DecidedBy    *string `json:"decided_by"`
}

// Session is one agent conversation as its host sees it.
type Session struct {
	ID       string  `json:"id"`
	Title    string  `json:"title"`
	Agent    string  `json:"agent"`
	ParentID *string `json:"parent_id"`
	// Mode is the session's own setting.
	Mode Mode `json:"mode"`
	// EffectiveMode is plan when the session or any ancestor is in plan
	// mode; tool gating always uses it.
	EffectiveMode Mode `json:"effective_mode"`
	// ModeSource is the nearest session (itself or an ancestor) whose own
	// mode is plan; nil in build.
	ModeSource *string        `json:"mode_source"`
	Harness    bool           `json:"harness"`
	Metadata   map[string]any `json:"metadata"`
	Review     Review         `json:"review"`
	Revision   int64          `json:"revision"`
	CreatedAt  string         `json:"created_at"`
	UpdatedAt  string         `json:"updated_at"`
}

// Link is one session of an ancestry chain: its id and its own mode.
type Link struct {
	ID   string
	Mode Mode
}

// Resolve returns the effective mode of the first session of chain, which
// lists a session, then its parent, and so on up to the root, and the id of
// the nearest session whose own mode is plan (nil in build).
func Resolve(chain []Link) (Mode, *string) {
	for _, l := range chain {
		if l.Mode == Plan {
			id := l.ID
			return Plan, &id
		}
	}
	return Build, nil
}

// Node is one session of a subtree, as needed to decide mode changes.
type Node struct {
	ID       string
	ParentID string // "" for the subtree's root
	Mode     Mode
	Harness  bool
}

// EffectiveModes resolves every node of a subtree (listed parents before
// children, root first) given the mode source the root inherits from above
// it (nil when no ancestor is in plan mode). It returns each node's
// effective mode source; a node is in plan mode when its source is non-nil.
func EffectiveModes(subtree []Node, inherited *string) map[string]*string {
	src := make(map[string]*string, len(subtree))
	for i, n := range subtree {
		var from *string
		if i == 0 {
			from = inherited
		} else {
			from = src[n.ParentID]
		}
		if n.Mode == Plan {
			id := n.ID
			from = &id
		}
		src[n.ID] = from
	}
	return src
}

// FirstHarness returns the id of the first harness session of subtree, or
// "" when there is none. Plan mode cannot be applied above a harness session
// because its host cannot filter its tools.
func FirstHarness(subtree []Node) string {
	for _, n := range subtree {
		if n.Harness {
			return n.ID
		}
	}
	return ""
}

// unsupportedMode is the 409 for plan mode over a harness session.
func unsupportedMode(harnessID, detail string) error {
	e := apierr.New(apierr.UnsupportedMode, "%s", detail)
	e.Extra = map[string]any{"session_id": harnessID}
	return e
}
