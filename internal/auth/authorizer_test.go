package auth

import (
	"context"
	"testing"

	"github.com/planserver/planserver/internal/apierr"
	"github.com/planserver/planserver/internal/events"
)

// lookup is a session tree of two: /1/ (in plan mode) and /2/.
type lookup struct{}

func (lookup) Locate(_ context.Context, id string) (*events.Session, error) {
	switch id {
	case "a":
		return &events.Session{ID: "a", Path: "/1/"}, nil
	case "b":
		return &events.Session{ID: "b", Path: "/2/"}, nil
	}
	return nil, apierr.New(apierr.NotFound, "session %q not found", id)
}

func (lookup) PlanModeOf(_ context.Context, pk int64) (bool, bool, error) {
	return pk == 1, pk == 1 || pk == 2, nil
}

// TestAuthorizerLooksUpFacts checks the facts the authorizer gathers for
// Decide: an agent's scope by path (a session outside it is hidden), its
// own plan mode for executing steps, and a reviewer's subtree (a missing
// session hidden, one outside denied).
func TestAuthorizerLooksUpFacts(t *testing.T) {
	az := NewAuthorizer(lookup{})
	hidden := apierr.New(apierr.NotFound, "hidden")
	agent := func(pk int64, path string) context.Context {
		return WithPrincipal(context.Background(), Principal{Name: "t", Role: Agent, SessionID: "x", SessionPK: pk, SessionPath: path})
	}
	if err := az.Authorize(agent(2, "/2/"), ReadSession, "b", hidden); err != nil {
		t.Errorf("agent reading its own session: %v", err)
	}
	if err := az.Authorize(agent(2, "/2/"), ReadSession, "a", hidden); err != hidden {
		t.Errorf("agent reading outside its scope: got %v, want the hidden error", err)
	}
	if err := az.AuthorizeExecution(agent(1, "/1/")); apierr.CodeOf(err) != apierr.PermissionDenied {
		t.Errorf("agent in plan mode executing steps: got %v, want permission_denied", err)
	}
	if err := az.AuthorizeExecution(agent(2, "/2/")); err != nil {
		t.Errorf("agent in build mode executing steps: %v", err)
	}
	if err := az.AuthorizeExecution(agent(3, "/3/")); apierr.CodeOf(err) != apierr.PermissionDenied {
		t.Errorf("agent of a deleted session executing steps: got %v, want permission_denied", err)
	}
	reviewer := WithPrincipal(context.Background(), Principal{Name: "r", Role: Reviewer, SessionID: "b", SessionPK: 2, SessionPath: "/2/"})
	if err := az.Authorize(reviewer, ReadSession, "missing", hidden); err != hidden {
		t.Errorf("reviewer reading a missing session: got %v, want the hidden error", err)
	}
	if ok, err := az.May(reviewer, DecideReview, "a"); ok || err != nil {
		t.Errorf("reviewer approving outside its subtree: May = %v, %v; want false, nil", ok, err)
	}
}
