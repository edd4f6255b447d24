// Package auth owns access control: bearer tokens (random, prefixed, stored
// only as SHA-256), the three roles, and Decide, the one pure function that
// says what a principal may do to a target. Plan mode is only a guarantee if
// the agent's own credential cannot undo it, so every way out of plan mode
// is an action an agent is denied here. Authorizer (authorizer.go) is the
// one access check every transport and the plans store make; the HTTP
// middleware that authenticates callers lives in internal/http.
package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/planserver/planserver/api"
)

// Role is what a token is for.
type Role string

// The roles the contract names (api/openapi.yaml, "Access").
const (
	// Admin may do everything: humans and admin consoles.
	Admin Role = "admin"
	// Agent is bound to one session and its descendants.
	Agent Role = "agent"
	// Viewer may read and watch events.
	Viewer Role = "viewer"
	// Reviewer is a person signed in through OIDC who decides reviews:
	// reads everything, approves, rejects and comments, and changes modes,
	// optionally only inside one session subtree (Principal.SessionPath).
	// It never mints tokens or manages gates. No token has this role:
	// it exists for people, whose decisions must be theirs.
	Reviewer Role = "reviewer"
)

// Roles lists every role.
var Roles = []Role{Admin, Agent, Viewer, Reviewer}

// TokenRoles are the roles a bearer token may have.
var TokenRoles = []Role{Admin, Agent, Viewer}

// PersonRoles are the roles a sign-in may map a person to (--oidc-roles).
var PersonRoles = []Role{Admin, Reviewer, Viewer}

// ParseRole validates a token's role name.
func ParseRole(s string) (Role, error) {
	for _, r := range TokenRoles {
		if string(r) == s {
			return r, nil
		}
	}
	return "", fmt.Errorf("unknown role %q: want admin, agent or viewer", s)
}

// ParsePersonRole validates the role of a sign-in mapping.
func ParsePersonRole(s string) (Role, error) {
	for _, r := range PersonRoles {
		if string(r) == s {
			return r, nil
		}
	}
	return "", fmt.Errorf("unknown role %q: want admin, reviewer or viewer", s)
}

// Person is who a signed-in human is, as the identity provider says: the
// subject (unique at its issuer), and the email and name to show. Every
// change a person makes records it.
type Person = api.Person

// Principal is who is calling: a token, or a person signed in through
// OIDC (Person set).
type Principal struct {
	// Name is the token's name, or a person's verified email (their
	// subject when the provider gave no verified one; Person.DisplayName),
	// recorded as every event's actor.
	Name string
	Role Role
	// Person is the signed-in human behind a browser session; nil for a
	// token.
	Person *Person
	// SessionID is an agent token's scope, or a reviewer's subtree: this
	// session and its descendants. Empty for other roles and for a
	// reviewer of every session.
	SessionID string
	// SessionPK and SessionPath are that session's identity and chain of
	// identities (see sessions.Link): the scope is compared by identity,
	// never by the id, which a later session may reuse.
	SessionPK   int64
	SessionPath string
	// hash is the token's or sign-in's hash, to check it again later
	// (Store.Recheck); empty for Anonymous.
	hash string
	// signIn marks a principal authenticated by a sign-in cookie, whose
	// hash is a sign-in's, not a token's.
	signIn bool
	// CSRF is the anti-forgery token a state-changing request made with
	// this sign-in's cookie must carry (X-CSRF-Token); empty for tokens.
	CSRF string
	// ExpiresAt is when a sign-in ends at the latest; empty for tokens.
	ExpiresAt string
	// SignInID is a sign-in's public id (what an admin ends it by);
	// empty for tokens.
	SignInID string
}

// RecheckKey names what Store.Recheck checks of p: two principals with the
// same key always get the same answer from it in one snapshot, so a
// reader that re-checks many principals at once (events.Tail) checks each
// key once.
func (p Principal) RecheckKey() string {
	if p.signIn {
		// A sign-in's check compares its role and subtree now with
		// the principal's (Store.Recheck), so they are part of the key.
		return "sign-in:" + p.hash + ":" + string(p.Role) + ":" + p.SessionPath
	}
	return "token:" + p.hash
}

// Kind is "person" for a signed-in human, "token" otherwise (the
// anonymous caller of --auth none included), as GET /v1/me says.
func (p Principal) Kind() string {
	if p.Person != nil {
		return "person"
	}
	return "token"
}

// Anonymous is the caller when the server runs with --auth none: an admin
// whose changes are recorded as "anonymous".
var Anonymous = Principal{Name: "anonymous", Role: Admin}

// Action is one thing a caller can ask for. Routes map to actions; a few
// routes map to different actions depending on their body (a mode change
// to plan or to build, a harness session).
type Action string

// Every action the API offers.
const (
	ReadSession          Action = "session.read"
	ListSessions         Action = "session.list"
	CreateSession        Action = "session.create"
	CreateRootSession    Action = "session.create_root"
	CreateHarnessSession Action = "session.create_harness"
	NameSession          Action = "session.create_named"
	UpdateSession        Action = "session.update"
	DeleteSession        Action = "session.delete"
	EnterPlanMode        Action = "session.mode.plan"
	LeavePlanMode        Action = "session.mode.build"
	WriteSessionPlan     Action = "session_plan.write"
	ReadSessionPlan      Action = "session_plan.read"
	RequestReview        Action = "review.request"
	DecideReview         Action = "review.decide"
	FilterTools          Action = "tools.filter"
	CheckTool            Action = "tools.check"
	WriteTodos           Action = "todos.write"
	ReadTodos            Action = "todos.read"
	ReadPlans            Action = "plan.read"
	WritePlans           Action = "plan.write"
	ExecuteSteps         Action = "step.execute"
	ReadEvents           Action = "events.read"
	ManageTokens         Action = "tokens.manage"
	// ConnectMCP is opening the MCP endpoint: every role may, because it
	// grants nothing by itself. Each tool call is then decided on its own
	// with the action of the HTTP route it stands for.
	ConnectMCP Action = "mcp.connect"
	// ManageGates is registering the tool servers reached through
	// /mcp/gate/{name}: an admin's, since planserver calls them.
	ManageGates Action = "gates.manage"
	// ManageWebhooks is subscribing webhooks: an admin's, since planserver
	// sends events to their targets and their answers hold secrets.
	ManageWebhooks Action = "webhooks.manage"
	// ReadSelf is GET /v1/me: every authenticated caller may ask who it is.
	ReadSelf Action = "self.read"
	// ManageSignIns is listing people's sign-ins and ending them: an
	// admin's, since it ends other people's access.
	ManageSignIns Action = "signins.manage"
	// LiftScope is full build where a scope was declared or granted:
	// approving such a plan with scope "full", leaving plan mode without
	// approving it, or ending a session's scoped build (DELETE
	// /v1/sessions/{id}/scope). The human approved a scope; only an admin
	// lets the agent past it.
	LiftScope Action = "scope.lift"
)

// Actions lists every action, for exhaustive tests.
var Actions = []Action{
	ReadSession, ListSessions, CreateSession, CreateRootSession, CreateHarnessSession,
	NameSession, UpdateSession, DeleteSession, EnterPlanMode, LeavePlanMode, WriteSessionPlan,
	ReadSessionPlan, RequestReview, DecideReview, FilterTools, CheckTool, WriteTodos,
	ReadTodos, ReadPlans, WritePlans, ExecuteSteps, ReadEvents, ManageTokens, ConnectMCP, ManageGates,
	ManageWebhooks,
	ReadSelf, ManageSignIns, LiftScope,
}

// Decision is the outcome of Decide.
type Decision int

// Decisions, in the order HTTP answers them.
const (
	// Allow lets the request through.
	Allow Decision = iota
	// Hide answers 404, exactly as for a session that does not exist, so an
	// agent cannot learn which sessions exist outside its scope.
	Hide
	// Deny answers 403 permission_denied.
	Deny
)

func (d Decision) String() string {
	return [...]string{"allow", "hide", "deny"}[d]
}

// viewerActions are the reads.
var viewerActions = map[Action]bool{
	ReadSession: true, ListSessions: true, ReadSessionPlan: true, ReadTodos: true,
	ReadPlans: true, ReadEvents: true, ConnectMCP: true, ReadSelf: true,
}

// reviewerSubtreeActions are what a reviewer may do beyond reading, each
// on a session inside its subtree (every session when it has none):
// decide reviews (approve, reject, with comments) and move sessions in or
// out of plan mode. Tokens, gates, and writing plans or sessions stay an
// admin's or an agent's.
var reviewerSubtreeActions = map[Action]bool{
	DecideReview: true, EnterPlanMode: true, LeavePlanMode: true,
}

// agentActions are what the contract (api/openapi.yaml) lets an agent do inside its scope: read its
// sessions, create sub-sessions, write their plan and todos, request review,
// filter and check tools, move a session into plan mode, and use shared
// plans and steps. Everything else — leaving plan mode, deciding a review,
// creating a harness session (whose tools cannot be gated, and whose
// presence would block plan mode above it), naming a new session (ids are
// global, so whether one is taken would tell an agent about sessions
// outside its tree; an agent's sessions get generated ids), editing or
// deleting sessions, tokens — is denied.
var agentActions = map[Action]bool{
	ReadSession: true, ListSessions: true, CreateSession: true, EnterPlanMode: true,
	WriteSessionPlan: true, ReadSessionPlan: true, RequestReview: true,
	FilterTools: true, CheckTool: true, WriteTodos: true, ReadTodos: true,
	ReadPlans: true, WritePlans: true, ExecuteSteps: true, ReadEvents: true, ConnectMCP: true,
	ReadSelf: true,
}

// sessionActions target one session, so an agent's scope applies to them.
var sessionActions = map[Action]bool{
	ReadSession: true, CreateSession: true, CreateHarnessSession: true, NameSession: true, UpdateSession: true,
	DeleteSession: true, EnterPlanMode: true, LeavePlanMode: true, WriteSessionPlan: true,
	ReadSessionPlan: true, RequestReview: true, DecideReview: true, FilterTools: true,
	CheckTool: true, WriteTodos: true, ReadTodos: true, LiftScope: true,
}

// Facts are what a decision needs to know beyond the principal and the
// action, found out by the caller.
type Facts struct {
	// InScope reports whether the target session (for actions on a
	// session; the parent for CreateSession) is the agent's or reviewer's
	// session or one of its descendants (always true for a reviewer
	// without a subtree).
	InScope bool
	// PlanMode reports whether the agent's own session is in effective
	// plan mode.
	PlanMode bool
}

// Decide says whether p may perform a, given f (only an agent's decisions
// depend on it).
//
// An agent asking anything of a session outside its scope is answered as if
// the session did not exist (Hide), before any permission question, so ids
// do not leak. An agent whose session is in plan mode may plan — read and
// write plans — but not execute: claiming steps, starting or completing
// them, and reporting on them wait for a human's approval, exactly like
// the agent's state-changing tools.
func Decide(p Principal, a Action, f Facts) Decision {
	switch p.Role {
	case Admin:
		return Allow
	case Viewer:
		if viewerActions[a] {
			return Allow
		}
		return Deny
	case Reviewer:
		// A reviewer reads every session, so one outside its subtree is
		// not hidden: it is only not its to decide.
		if viewerActions[a] || reviewerSubtreeActions[a] && f.InScope {
			return Allow
		}
		return Deny
	case Agent:
		if sessionActions[a] && !f.InScope {
			return Hide
		}
		if a == ExecuteSteps && f.PlanMode {
			return Deny
		}
		if agentActions[a] {
			return Allow
		}
		return Deny
	}
	return Deny
}

// TokenPrefix marks planserver tokens, so secret scanners and humans can
// recognise one.
const TokenPrefix = "ps_"

// NewToken returns a new secret token: the prefix and 256 random bits.
func NewToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return TokenPrefix + base64.RawURLEncoding.EncodeToString(b)
}

// Hash returns the hex SHA-256 of a token, the only form ever stored.
func Hash(token string) string {
	h := sha256.Sum256([]byte(token))
	return hex.EncodeToString(h[:])
}

// HashesEqual compares two hex hashes in constant time.
func HashesEqual(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// LooksLikeToken reports whether s has a token's shape, so obvious junk is
// refused without a database lookup.
func LooksLikeToken(s string) bool {
	rest, ok := strings.CutPrefix(s, TokenPrefix)
	return ok && len(rest) == 43
}
