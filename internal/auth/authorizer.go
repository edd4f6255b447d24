package auth

import (
	"context"

	"github.com/planserver/planserver/internal/apierr"
	"github.com/planserver/planserver/internal/events"
)

// SessionLookup is what the Authorizer needs of the session store
// (sessions.Store): where a session sits in the tree, and whether an
// agent's own session is in plan mode.
type SessionLookup interface {
	// Locate returns the identity of session id, whose path an agent's or
	// reviewer's scope is compared with. Errors: not_found.
	Locate(ctx context.Context, id string) (*events.Session, error)
	// PlanModeOf reports whether the session with identity pk is in plan
	// mode (its effective mode), and whether that session still exists.
	PlanModeOf(ctx context.Context, pk int64) (plan, found bool, err error)
}

// Authorizer is the one access check every transport makes: the route
// rules of the HTTP guard, handlers refining an action from the body, the
// MCP tools, the host hooks, and the plans store when a whole-plan write
// executes a step. It looks up the facts Decide needs and turns the
// decision into the error a caller answers.
type Authorizer struct {
	sessions SessionLookup
}

// NewAuthorizer returns the authorizer that looks sessions up in s.
func NewAuthorizer(s SessionLookup) *Authorizer { return &Authorizer{sessions: s} }

// Authorize decides whether ctx's caller may perform a on session target
// ("" for none): nil, hidden (the error a missing target gets, answered
// when the target is outside an agent's scope, so ids do not leak), or 403
// permission_denied. The facts Decide needs about an agent are looked up
// here: whether the target is in its scope (by identity), and, for
// executing steps, whether its own session is in plan mode.
func (az *Authorizer) Authorize(ctx context.Context, a Action, target string, hidden error) error {
	p := PrincipalFrom(ctx)
	f := Facts{InScope: true} // an action on no session is in every scope
	if p.Role == Reviewer && p.SessionPath != "" && target != "" {
		// A reviewer's subtree bounds what it decides, not what it reads:
		// a session outside it is denied, never hidden.
		loc, err := az.sessions.Locate(ctx, target)
		switch {
		case err == nil:
			f.InScope = InScope(p.SessionPath, loc.Path)
		case apierr.CodeOf(err) == apierr.NotFound:
			return hidden
		default:
			return err
		}
	}
	if p.Role == Agent {
		if target != "" {
			f.InScope = false
			loc, err := az.sessions.Locate(ctx, target)
			switch {
			case err == nil:
				f.InScope = InScope(p.SessionPath, loc.Path)
			case apierr.CodeOf(err) != apierr.NotFound:
				return err
			}
		}
		if a == ExecuteSteps {
			plan, found, err := az.sessions.PlanModeOf(ctx, p.SessionPK)
			if err != nil {
				return err
			}
			f.PlanMode = !found || plan
		}
	}
	switch Decide(p, a, f) {
	case Allow:
		return nil
	case Hide:
		return hidden
	}
	return apierr.New(apierr.PermissionDenied, "%s", DenyReason(p, a, f))
}

// May reports whether the caller may perform a on session target, for a
// handler whose request asks for a only in some cases (a scope lifted by
// an approval): false where Authorize refuses, an error only when it
// cannot decide.
func (az *Authorizer) May(ctx context.Context, a Action, target string) (bool, error) {
	err := az.Authorize(ctx, a, target, apierr.New(apierr.NotFound, "session %q not found", target))
	if err == nil {
		return true, nil
	}
	switch apierr.CodeOf(err) {
	case apierr.PermissionDenied, apierr.NotFound:
		return false, nil
	}
	return false, err
}

// AuthorizeExecution is Authorize for executing steps on no session: what
// a plans store asks when a whole-plan write would execute a step
// (plans.Config.Access).
func (az *Authorizer) AuthorizeExecution(ctx context.Context) error {
	return az.Authorize(ctx, ExecuteSteps, "", nil)
}
