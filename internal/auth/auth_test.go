package auth

import (
	"strings"
	"testing"
)

// TestDecideEveryRoleActionAndScope spells out, independently of the
// tables in auth.go, what each role may do, and checks Decide for every
// (role, action, in scope?, in plan mode?) combination.
func TestDecideEveryRoleActionAndScope(t *testing.T) {
	agentMay := map[Action]bool{
		ReadSession: true, ListSessions: true, CreateSession: true, EnterPlanMode: true,
		WriteSessionPlan: true, ReadSessionPlan: true, RequestReview: true, FilterTools: true,
		CheckTool: true, WriteTodos: true, ReadTodos: true, ReadPlans: true, WritePlans: true,
		ExecuteSteps: true, ReadEvents: true, ConnectMCP: true, ReadSelf: true,
	}
	// The ways out of plan mode and the administrative actions: never an
	// agent's, wherever the session is. Naming a session would tell an
	// agent which ids are taken outside its tree. Lifting a scope is an
	// admin's alone: not a reviewer's either.
	agentMayNot := []Action{LeavePlanMode, DecideReview, CreateHarnessSession, CreateRootSession,
		NameSession, UpdateSession, DeleteSession, ManageTokens, ManageGates, ManageWebhooks, ManageSignIns, LiftScope}
	// What an agent whose own session is in plan mode may not do:
	// execute, as opposed to plan.
	notInPlanMode := map[Action]bool{ExecuteSteps: true}
	viewerMay := map[Action]bool{ReadSession: true, ListSessions: true, ReadSessionPlan: true,
		ReadTodos: true, ReadPlans: true, ReadEvents: true, ConnectMCP: true, ReadSelf: true}
	// A reviewer reads what a viewer reads, and decides reviews and moves
	// sessions between modes inside its subtree only; never tokens,
	// gates, or writes to sessions and plans.
	reviewerMayInSubtree := map[Action]bool{DecideReview: true, EnterPlanMode: true, LeavePlanMode: true}
	targetsSession := map[Action]bool{
		ReadSession: true, CreateSession: true, CreateHarnessSession: true, NameSession: true, UpdateSession: true,
		DeleteSession: true, EnterPlanMode: true, LeavePlanMode: true, WriteSessionPlan: true,
		ReadSessionPlan: true, RequestReview: true, DecideReview: true, FilterTools: true,
		CheckTool: true, WriteTodos: true, ReadTodos: true, LiftScope: true,
	}
	if len(agentMay)+len(agentMayNot) != len(Actions) {
		t.Fatalf("the test's expectations cover %d actions, Actions has %d: classify the new one",
			len(agentMay)+len(agentMayNot), len(Actions))
	}
	for _, a := range Actions {
		for _, f := range []Facts{{InScope: true}, {}, {InScope: true, PlanMode: true}, {PlanMode: true}} {
			inScope := f.InScope
			check := func(p Principal, want Decision) {
				t.Helper()
				if got := Decide(p, a, f); got != want {
					t.Errorf("%s %s (%+v) = %s, want %s", p.Role, a, f, got, want)
				}
			}
			check(Principal{Name: "root", Role: Admin}, Allow)
			check(Anonymous, Allow)
			if viewerMay[a] {
				check(Principal{Name: "v", Role: Viewer}, Allow)
			} else {
				check(Principal{Name: "v", Role: Viewer}, Deny)
			}
			agent := Principal{Name: "a", Role: Agent, SessionID: "s"}
			switch {
			case targetsSession[a] && !inScope:
				check(agent, Hide)
			case notInPlanMode[a] && f.PlanMode:
				check(agent, Deny)
			case agentMay[a]:
				check(agent, Allow)
			default:
				check(agent, Deny)
			}
			reviewer := Principal{Name: "r@example.com", Role: Reviewer, Person: &Person{Subject: "r"}}
			switch {
			case viewerMay[a]:
				check(reviewer, Allow)
			case reviewerMayInSubtree[a] && inScope:
				check(reviewer, Allow)
			default:
				check(reviewer, Deny)
			}
			check(Principal{Name: "x", Role: "root"}, Deny)
		}
	}
	for _, a := range agentMayNot {
		if Decide(Principal{Role: Agent, SessionID: "s"}, a, Facts{InScope: true}) == Allow {
			t.Errorf("an agent may %s", a)
		}
	}
}

// TestRoleNames: tokens are never reviewers (a decision must be a
// person's), and a sign-in never maps to an agent.
func TestRoleNames(t *testing.T) {
	for _, tc := range []struct {
		parse func(string) (Role, error)
		ok    []string
		bad   []string
	}{
		{ParseRole, []string{"admin", "agent", "viewer"}, []string{"reviewer", "Admin", ""}},
		{ParsePersonRole, []string{"admin", "reviewer", "viewer"}, []string{"agent", "root", ""}},
	} {
		for _, s := range tc.ok {
			if r, err := tc.parse(s); err != nil || string(r) != s {
				t.Errorf("parse %q = %q, %v", s, r, err)
			}
		}
		for _, s := range tc.bad {
			if _, err := tc.parse(s); err == nil {
				t.Errorf("parse %q: no error", s)
			}
		}
	}
}

func TestTokens(t *testing.T) {
	a, b := NewToken(), NewToken()
	if a == b || !strings.HasPrefix(a, "ps_") || !LooksLikeToken(a) {
		t.Fatalf("tokens %q %q", a, b)
	}
	if len(a) != 3+43 {
		t.Errorf("token length %d: want 256 bits in base64url", len(a))
	}
	if Hash(a) == Hash(b) || len(Hash(a)) != 64 || strings.Contains(Hash(a), a) {
		t.Errorf("hash %q", Hash(a))
	}
	if !HashesEqual(Hash(a), Hash(a)) || HashesEqual(Hash(a), Hash(b)) {
		t.Error("HashesEqual")
	}
	for _, s := range []string{"", "ps_", "Bearer " + a, a + "x", "pk_" + a[3:]} {
		if LooksLikeToken(s) {
			t.Errorf("%q looks like a token", s)
		}
	}
}
