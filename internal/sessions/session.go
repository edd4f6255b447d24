// Package sessions owns sessions: the build/plan mode a human controls, the
// rule that a session is in plan mode whenever it or any ancestor is (so a
// sub-session can never escape it), the harness restriction, the session
// plan and its review, tool gating, todos, and their storage. The rules
// are pure functions over loaded state; the stores load, apply them, save
// and append their events.
package sessions

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/apierr"
	"github.com/planserver/planserver/internal/events"
	"github.com/planserver/planserver/internal/scope"
)

// Session is one agent conversation as its host sees it.
type Session = api.Session

// Review is the state of the human review of the session plan.
type Review = api.Review

// Mode is a session's own build/plan setting.
type Mode = api.Mode

// The two modes. Build is the default.
const (
	Build = api.ModeBuild
	Plan  = api.ModePlan
)

// Review states.
const (
	ReviewNone     = api.ReviewNone
	ReviewPending  = api.ReviewPending
	ReviewApproved = api.ReviewApproved
	ReviewRejected = api.ReviewRejected
)

// ParseMode validates a mode sent by a client for the named field.
func ParseMode(field, s string) (Mode, error) {
	switch Mode(s) {
	case Build, Plan:
		return Mode(s), nil
	}
	return "", apierr.Invalid(field, "unknown mode %q: want build or plan", s)
}

// Link is what the mode rules need of one session: its identity, its
// ancestry (the pks of its ancestors, root first, as "/1/5/"), its own
// mode and whether it is harness-backed.
type Link struct {
	PK       int64
	ID       string
	Ancestry string
	Mode     Mode
	Harness  bool
	// Revision is the session's revision, where the loader read it.
	Revision int64
	// Grant is the scope a human granted the session itself by approving
	// its plan (build_scope); nil when none limits it.
	Grant *api.ScopeGrant
}

// Path is the session's chain of identities, "/<ancestor pks>/<pk>/": its
// subtree is every session whose path starts with it.
func (l Link) Path() string { return l.Ancestry + strconv.FormatInt(l.PK, 10) + "/" }

// Ref names the session in events, by identity.
func (l Link) Ref() *events.Session { return &events.Session{ID: l.ID, PK: l.PK, Path: l.Path()} }

// Chain is a session's ancestry as loaded: the root first, the session
// itself last. Sessions are never re-parented, so a chain only changes
// when one of its sessions changes its own mode.
type Chain []Link

// ModeSource is the rule of effective mode, the one place it is decided:
// a session is in plan mode when it or any ancestor is, and its mode
// source is the nearest such session (itself first). It returns that
// session's id, or nil when the chain's last session is in build mode.
func (c Chain) ModeSource() *string {
	for i := len(c) - 1; i >= 0; i-- {
		if c[i].Mode == Plan {
			id := c[i].ID
			return &id
		}
	}
	return nil
}

// Effective returns the effective mode of the chain's last session and its
// mode source (nil in build).
func (c Chain) Effective() (Mode, *string) {
	if src := c.ModeSource(); src != nil {
		return Plan, src
	}
	return Build, nil
}

// BuildScope is the rule of effective scope, the one place it is decided:
// a session in effective build mode is limited by its own grant and every
// ancestor's (each must allow a path, so a sub-session's scope is never
// wider than its parent's); the nearest grant is shown first, the others
// in AlsoLimitedBy. Nil in plan mode and where no session of the chain
// has a grant (full build).
func (c Chain) BuildScope() *api.BuildScope {
	if c.ModeSource() != nil {
		return nil
	}
	var out *api.BuildScope
	for i := len(c) - 1; i >= 0; i-- {
		g := c[i].Grant
		if g == nil {
			continue
		}
		if out == nil {
			out = &api.BuildScope{ScopeGrant: *g, AlsoLimitedBy: []api.ScopeGrant{}}
			continue
		}
		out.AlsoLimitedBy = append(out.AlsoLimitedBy, *g)
	}
	return out
}

// resolved sets what s shows of its chain c: its effective mode, its mode
// source and its build scope.
func (c Chain) resolved(s *Session) {
	s.EffectiveMode, s.ModeSource = c.Effective()
	s.BuildScope = c.BuildScope()
}

// ScopeChain is the chain of scopes a build scope holds, nearest first:
// what the enforcement asks (scope.Chain.Allows). Empty for nil: full
// build limits nothing.
func ScopeChain(b *api.BuildScope) scope.Chain {
	if b == nil {
		return nil
	}
	out := scope.Chain{scope.Scope(b.Scope)}
	for _, g := range b.AlsoLimitedBy {
		out = append(out, scope.Scope(g.Scope))
	}
	return out
}

// ancestryPKs returns the pks an ancestry names, root first.
func ancestryPKs(ancestry string) ([]int64, error) {
	var pks []int64
	for _, part := range strings.Split(strings.Trim(ancestry, "/"), "/") {
		if part == "" {
			continue
		}
		pk, err := strconv.ParseInt(part, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("session ancestry %q is damaged", ancestry)
		}
		pks = append(pks, pk)
	}
	return pks, nil
}

// harnessInPlan is the harness rule, the one place it is decided: a
// harness-backed session owns its tools, so no host can gate them and plan
// mode must never reach it. planned are the sessions that would be in
// effective plan mode after a change; the first harness among them is
// refused with unsupported_mode naming it. changed is the session whose
// change it is, for the message.
func harnessInPlan(changed string, planned []Link, source func(Link) *string) error {
	for _, l := range planned {
		if !l.Harness {
			continue
		}
		var detail string
		switch src := source(l); {
		case l.ID != changed:
			detail = fmt.Sprintf("session %q has harness-backed descendant %q, whose tools cannot be gated; plan mode would not hold there", changed, l.ID)
		case src != nil && *src != l.ID:
			detail = fmt.Sprintf("session %q would inherit plan mode from %q, but a harness session owns its tools and cannot be gated", l.ID, *src)
		default:
			detail = fmt.Sprintf("session %q is harness-backed: its agent owns its tools, so plan mode cannot be enforced", l.ID)
		}
		e := apierr.New(apierr.UnsupportedMode, "%s", detail)
		e.Extra = map[string]any{"session_id": l.ID}
		return e
	}
	return nil
}

// NotFound is the error for a session that does not exist. Access control
// answers it for a session outside an agent's scope too, so that the two
// cannot be told apart.
func NotFound(id string) error { return apierr.New(apierr.NotFound, "session %q not found", id) }

// UnknownParent is the error for a parent_id naming no session; access
// control answers it for a parent outside an agent's scope too.
func UnknownParent(id string) error { return apierr.Invalid("parent_id", "no session %q", id) }

// MergePatch applies an RFC 7396 merge patch to target and returns the
// result; target is not modified.
func MergePatch(target any, patch any) any {
	p, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	t, ok := target.(map[string]any)
	out := make(map[string]any, len(t)+len(p))
	if ok {
		for k, v := range t {
			out[k] = v
		}
	}
	for k, v := range p {
		if v == nil {
			delete(out, k)
			continue
		}
		out[k] = MergePatch(out[k], v)
	}
	return out
}
