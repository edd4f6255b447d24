package sessions

import (
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/apierr"
	"github.com/planserver/planserver/internal/scope"
)

// Scoped build: an approval of a plan revision that declares a scope (its
// ```scope block, internal/scope) limits the session's build to that
// scope. The rules here are pure: what an approval grants (grantFor), when
// leaving plan mode without one lifts a scope (leavingLifts), and what a
// session shows of its chain's grants (Chain.BuildScope, in session.go).
// Lifting a scope — full build where a scope was declared or granted — is
// an admin's decision: the transports ask auth whether the caller may
// (auth.LiftScope) and pass the answer in as mayLift.

// DeclaredScope is the scope plan content declares, nil when it declares
// none. A revision stored before scopes were validated may declare one
// that does not validate: problems lists why (PutSessionPlan refuses such
// a revision now).
func DeclaredScope(content string) (*api.Scope, []api.FieldError) {
	s, problems := scope.FromMarkdown(content)
	if s == nil {
		return nil, problems
	}
	out := api.Scope(*s)
	for _, l := range []*[]string{&out.Files, &out.Commands, &out.Connect} {
		if *l == nil {
			*l = []string{}
		}
	}
	return &out, nil
}

// withScope is p with the scope its content declares.
func withScope(p *SessionPlan) *SessionPlan {
	if p != nil {
		p.Scope, _ = DeclaredScope(p.Content)
	}
	return p
}

// grantFor is the rule of what an approval grants, the one place it is
// decided. asked is the approval's scope ("plan", "full" or "" for the
// default: "plan" when the revision declares a scope, else "full"); own is
// the session's own grant before. It returns the kind granted and the
// session's own grant after (nil: none). Errors: invalid_argument ("plan"
// for a revision that declares no scope, or whose scope does not
// validate), permission_denied ("full" that lifts a scope, when the
// caller may not lift one).
func grantFor(s *Session, p *SessionPlan, own *api.ScopeGrant, asked string, mayLift bool, now, actor string, person *api.Person) (string, *api.ScopeGrant, error) {
	declared, problems := DeclaredScope(p.Content)
	if asked == "" {
		asked = api.ApproveScopeFull
		if declared != nil || len(problems) > 0 {
			asked = api.ApproveScopePlan
		}
	}
	switch asked {
	case api.ApproveScopePlan:
		if len(problems) > 0 {
			return "", nil, apierr.InvalidFields(append([]api.FieldError{{Field: "scope",
				Message: fmt.Sprintf("revision %d of the plan declares a scope that cannot be enforced; ask the agent to fix its scope block", p.Revision)}},
				problems...))
		}
		if declared == nil {
			return "", nil, apierr.Invalid("scope", "revision %d of the plan of session %q declares no scope (no ```scope block): "+
				"approve it with scope \"full\", or ask the agent to declare the files, commands and network it needs", p.Revision, s.ID)
		}
		return asked, &api.ScopeGrant{Scope: *declared, SessionID: s.ID, PlanRevision: p.Revision,
			GrantedBy: actor, GrantedByPerson: person, GrantedAt: now}, nil
	}
	if (declared != nil || len(problems) > 0 || own != nil) && !mayLift {
		what := fmt.Sprintf("revision %d of the plan declares a scope", p.Revision)
		if declared == nil && len(problems) == 0 {
			what = fmt.Sprintf("session %q builds within the scope of revision %d", s.ID, own.PlanRevision)
		}
		return "", nil, apierr.New(apierr.PermissionDenied, "%s, and approving with scope \"full\" lifts it: full build is an admin's decision. "+
			"Approve with the plan's scope (scope \"plan\"), or ask an admin", what)
	}
	return asked, nil, nil
}

// leavingLifts reports whether moving session s from plan mode to build
// directly (PATCH …/mode, no approval) would lift a scope: its plan
// declares one and the session has no grant of its own to keep (the
// change keeps the grant it has). Leaving that way is then an admin's
// decision: permission_denied when !mayLift.
func leavingLifts(s *Session, p *SessionPlan, own *api.ScopeGrant, mayLift bool) error {
	if own != nil || p == nil || mayLift {
		return nil
	}
	if declared, problems := DeclaredScope(p.Content); declared == nil && len(problems) == 0 {
		return nil
	}
	return apierr.New(apierr.PermissionDenied, "the plan of session %q declares a scope, and setting its mode to build without approving "+
		"the plan would build without that scope: full build is an admin's decision. Approve the plan (with its scope) instead, or ask an admin", s.ID)
}

// scopeChange is the data of a session.scope_changed event: the session's
// build scope after the change, its own grant before and after, and why.
// ChangedBy names the ancestor whose change this descendant inherited.
type scopeChange struct {
	BuildScope *api.BuildScope  `json:"build_scope"`
	Grant      *api.ScopeGrant  `json:"grant,omitempty"`
	Previous   *api.ScopeGrant  `json:"previous_grant,omitempty"`
	Reason     string           `json:"reason"`
	ChangedBy  string           `json:"changed_by,omitempty"`
	Change     *api.ScopeChange `json:"change,omitempty"`
}

// The reasons of a scope change.
const (
	scopeGranted   = "approved"
	scopeLifted    = "lifted"
	scopeInherited = "inherited"
)

// declaredScopeChange is what the scope plan content b declares adds to and
// removes from the one content a declares (a scope that does not validate
// counts as none): what a diff of two session plan revisions says of
// their scopes.
func declaredScopeChange(a, b string) *api.ScopeChange {
	var ga, gb *api.ScopeGrant
	if s, _ := DeclaredScope(a); s != nil {
		ga = &api.ScopeGrant{Scope: *s}
	}
	if s, _ := DeclaredScope(b); s != nil {
		gb = &api.ScopeGrant{Scope: *s}
	}
	return scopeDiff(ga, gb)
}

// scopeDiff is what grant after adds to and removes from grant before.
func scopeDiff(before, after *api.ScopeGrant) *api.ScopeChange {
	var b, a *scope.Scope
	if before != nil {
		s := scope.Scope(before.Scope)
		b = &s
	}
	if after != nil {
		s := scope.Scope(after.Scope)
		a = &s
	}
	d := scope.Diff(b, a)
	return &api.ScopeChange{Added: nonNilScope(api.Scope(d.Added)), Removed: nonNilScope(api.Scope(d.Removed))}
}

func nonNilScope(s api.Scope) api.Scope {
	for _, l := range []*[]string{&s.Files, &s.Commands, &s.Connect} {
		if *l == nil {
			*l = []string{}
		}
	}
	return s
}

// decodeGrant reads a stored build_scope.
func decodeGrant(sessionID string, raw sql.NullString) (*api.ScopeGrant, error) {
	if !raw.Valid || raw.String == "" {
		return nil, nil
	}
	var g api.ScopeGrant
	if err := json.Unmarshal([]byte(raw.String), &g); err != nil {
		return nil, fmt.Errorf("decode the build scope of session %q: %w", sessionID, err)
	}
	g.SessionID = sessionID
	g.Scope = nonNilScope(g.Scope)
	return &g, nil
}

// encodeGrant is a grant as stored (NULL for none).
func encodeGrant(g *api.ScopeGrant) (sql.NullString, error) {
	if g == nil {
		return sql.NullString{}, nil
	}
	raw, err := json.Marshal(g)
	if err != nil {
		return sql.NullString{}, fmt.Errorf("encode a build scope: %w", err)
	}
	return sql.NullString{String: string(raw), Valid: true}, nil
}

// sameGrant and sameScope compare by value.
func sameGrant(a, b *api.ScopeGrant) bool { return sameJSON(a, b) }

func sameScope(a, b *api.BuildScope) bool { return sameJSON(a, b) }

func sameJSON[T any](a, b *T) bool {
	if a == nil || b == nil {
		return a == b
	}
	ra, _ := json.Marshal(a)
	rb, _ := json.Marshal(b)
	return string(ra) == string(rb)
}
