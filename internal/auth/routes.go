package auth

import (
	"context"
	"fmt"
)

// Rule is what one route asks of its caller.
type Rule struct {
	// Action is what the route does. For a Refined route it is the least of
	// the actions its body can ask for, checked before the body is read;
	// the handler then checks the action the body actually names.
	Action Action
	// SessionParam names the URL parameter that holds the target session,
	// or "" when the route targets no one session (lists, the event feed,
	// shared plans, tokens).
	SessionParam string
	// SessionQuery names a query parameter that, when given, names a
	// session the caller must be able to read (ReadSession): the event
	// feed's session_id filter. Outside an agent's scope it is 404.
	SessionQuery string
	// Refined marks routes whose handler refines Action from the body: a
	// mode change to build is LeavePlanMode; a new session is a root, a
	// harness or a child of a parent that must be in scope; a step moved to
	// in_progress or complete is ExecuteSteps.
	Refined bool
}

// EventStream is the one route that accepts the token in an access_token
// query parameter, because a browser EventSource cannot set headers.
const EventStream = "GET /v1/events"

// Routes is the access policy of the whole /v1 API: every route, keyed
// "METHOD /pattern" as chi reports the pattern, and what it asks for.
// Decide turns (principal, rule, scope) into a decision. A route missing
// here is refused for everyone (500), and the route table test fails.
var Routes = map[string]Rule{
	"POST /v1/sessions":                               {Action: CreateSession, Refined: true},
	"GET /v1/sessions":                                {Action: ListSessions},
	"GET /v1/sessions/{id}":                           {Action: ReadSession, SessionParam: "id"},
	"PATCH /v1/sessions/{id}":                         {Action: UpdateSession, SessionParam: "id"},
	"DELETE /v1/sessions/{id}":                        {Action: DeleteSession, SessionParam: "id"},
	"PATCH /v1/sessions/{id}/mode":                    {Action: EnterPlanMode, SessionParam: "id", Refined: true},
	"PUT /v1/sessions/{id}/plan":                      {Action: WriteSessionPlan, SessionParam: "id"},
	"GET /v1/sessions/{id}/plan":                      {Action: ReadSessionPlan, SessionParam: "id"},
	"GET /v1/sessions/{id}/plan/revisions":            {Action: ReadSessionPlan, SessionParam: "id"},
	"GET /v1/sessions/{id}/plan/revisions/{revision}": {Action: ReadSessionPlan, SessionParam: "id"},
	"GET /v1/sessions/{id}/plan/diff":                 {Action: ReadSessionPlan, SessionParam: "id"},
	"GET /v1/sessions/{id}/reviews":                   {Action: ReadSession, SessionParam: "id"},
	"POST /v1/sessions/{id}/plan/review":              {Action: RequestReview, SessionParam: "id"},
	"POST /v1/sessions/{id}/plan/approve":             {Action: DecideReview, SessionParam: "id"},
	"POST /v1/sessions/{id}/plan/reject":              {Action: DecideReview, SessionParam: "id"},
	// Lifting a session's scope is an admin's decision alone.
	"DELETE /v1/sessions/{id}/scope":      {Action: LiftScope, SessionParam: "id"},
	"POST /v1/sessions/{id}/tools/filter": {Action: FilterTools, SessionParam: "id"},
	"POST /v1/sessions/{id}/tools/check":  {Action: CheckTool, SessionParam: "id"},
	// A host hook names its session in the query (?session= or ?parent=);
	// the handler checks CheckTool (and CreateSession for a parent's new
	// child, WriteSessionPlan and RequestReview for an exit-plan call).
	"POST /v1/hooks/{host}":       {Action: CheckTool, Refined: true},
	"PUT /v1/sessions/{id}/todos": {Action: WriteTodos, SessionParam: "id"},
	"GET /v1/sessions/{id}/todos": {Action: ReadTodos, SessionParam: "id"},
	// Shared plans, their steps and reports belong to no session: any
	// agent may read and write them, a viewer only read them.
	"GET /v1/plans":                                 {Action: ReadPlans},
	"PUT /v1/plans/{name}":                          {Action: WritePlans},
	"GET /v1/plans/{name}":                          {Action: ReadPlans},
	"DELETE /v1/plans/{name}":                       {Action: WritePlans},
	"GET /v1/plans/{name}/content":                  {Action: ReadPlans},
	"PUT /v1/plans/{name}/content":                  {Action: WritePlans},
	"GET /v1/plans/{name}/status":                   {Action: ReadPlans},
	"PUT /v1/plans/{name}/status":                   {Action: WritePlans},
	"GET /v1/plans/{name}/revisions":                {Action: ReadPlans},
	"GET /v1/plans/{name}/revisions/{revision}":     {Action: ReadPlans},
	"GET /v1/plans/{name}/diff":                     {Action: ReadPlans},
	"GET /v1/plans/{name}/steps":                    {Action: ReadPlans},
	"POST /v1/plans/{name}/steps/claim":             {Action: ExecuteSteps},
	"GET /v1/plans/{name}/steps/{step_id}":          {Action: ReadPlans},
	"PATCH /v1/plans/{name}/steps/{step_id}":        {Action: WritePlans, Refined: true},
	"POST /v1/plans/{name}/steps/{step_id}/claim":   {Action: ExecuteSteps},
	"POST /v1/plans/{name}/steps/{step_id}/reports": {Action: ExecuteSteps},
	"GET /v1/plans/{name}/reports":                  {Action: ReadPlans},
	// An agent's feed holds only its subtree's events and those of no
	// session (shared plans); the handler applies that filter.
	"GET /v1/events":           {Action: ReadEvents, SessionQuery: "session_id"},
	"POST /v1/tokens":          {Action: ManageTokens},
	"GET /v1/tokens":           {Action: ManageTokens},
	"GET /v1/tokens/{name}":    {Action: ManageTokens},
	"DELETE /v1/tokens/{name}": {Action: ManageTokens},
	// The MCP endpoint (internal/mcp): connecting is open to every role;
	// each tool call is decided with the action of the route it stands for
	// (mcp.Operations), and the session it binds to with ReadSession.
	"POST /mcp": {Action: ConnectMCP},
	// The plan-mode gate of a registered tool server: connecting is open
	// like /mcp; what the caller sees and may call is the gate's (a
	// session is required, a viewer calls read-only tools only).
	"POST /mcp/gate/{name}":   {Action: ConnectMCP},
	"PUT /v1/gates/{name}":    {Action: ManageGates},
	"GET /v1/gates":           {Action: ManageGates},
	"GET /v1/gates/{name}":    {Action: ManageGates},
	"DELETE /v1/gates/{name}": {Action: ManageGates},
	// Webhook subscriptions carry secrets and send data anywhere: admin only.
	"POST /v1/webhooks":                                      {Action: ManageWebhooks},
	"GET /v1/webhooks":                                       {Action: ManageWebhooks},
	"GET /v1/webhooks/{id}":                                  {Action: ManageWebhooks},
	"PATCH /v1/webhooks/{id}":                                {Action: ManageWebhooks},
	"DELETE /v1/webhooks/{id}":                               {Action: ManageWebhooks},
	"POST /v1/webhooks/{id}/rotate-secret":                   {Action: ManageWebhooks},
	"GET /v1/webhooks/{id}/deliveries":                       {Action: ManageWebhooks},
	"POST /v1/webhooks/{id}/deliveries/{delivery}/redeliver": {Action: ManageWebhooks},
	// Who the caller is, for cookies and tokens alike (the console asks
	// it first, and takes the CSRF token from it).
	"GET /v1/me": {Action: ReadSelf},
	// People's sign-ins: listing and ending them ends other people's
	// access, so admin only.
	"GET /v1/signins":         {Action: ManageSignIns},
	"DELETE /v1/signins":      {Action: ManageSignIns},
	"GET /v1/signins/{id}":    {Action: ManageSignIns},
	"DELETE /v1/signins/{id}": {Action: ManageSignIns},
}

// DenyReason explains a Deny to the caller. For an agent trying to leave
// plan mode it says what to do instead, since the caller is often a model.
func DenyReason(p Principal, a Action, f Facts) string {
	switch {
	case p.Role == Agent && a == ExecuteSteps && f.PlanMode:
		return fmt.Sprintf("[plan mode is active] agent token %q may not %s: its session %q is in plan mode, "+
			"which allows planning, not executing. Read and write the plan instead (write_plan, steps in the plan), "+
			"then ask a human for review (exit_plan_mode); once the plan is approved, claim and report steps", p.Name, a, p.SessionID)
	case p.Role == Agent && (a == LeavePlanMode || a == DecideReview):
		return fmt.Sprintf("agent token %q may not %s: only a human (an admin token) ends plan mode, by approving the plan; "+
			"write the plan and ask for review (POST /v1/sessions/{id}/plan/review)", p.Name, a)
	case p.Role == Agent && a == NameSession:
		return fmt.Sprintf("agent token %q may not choose a session's id: leave id out, and the new session gets a generated one "+
			"(the answer's id and Location name it)", p.Name)
	case p.Role == Agent && (a == CreateHarnessSession || a == CreateRootSession):
		return fmt.Sprintf("agent token %q may not %s: an agent creates only ordinary sub-sessions of its own session (set parent_id, no harness)", p.Name, a)
	case a == LiftScope && p.Role != Admin:
		return fmt.Sprintf("%s may not lift a scope: the approved plan limits what the session builds, and building beyond it "+
			"(full build) is an admin's decision", p.Name)
	case p.Role == Viewer && p.Person != nil:
		return fmt.Sprintf("%s signed in as a viewer, who may only read and watch events, not %s", p.Name, a)
	case p.Role == Viewer:
		return fmt.Sprintf("viewer token %q may only read and watch events, not %s", p.Name, a)
	case p.Role == Reviewer && reviewerSubtreeActions[a]:
		return fmt.Sprintf("%s is a reviewer of session %q and its descendants only; this session is outside it, so %s is not theirs",
			p.Name, p.SessionID, a)
	case p.Role == Reviewer:
		return fmt.Sprintf("%s signed in as a reviewer, who may read, approve, reject and comment, and change modes, not %s",
			p.Name, a)
	}
	return fmt.Sprintf("%s token %q may not %s", p.Role, p.Name, a)
}

type principalKey struct{}

// WithPrincipal returns a context carrying the caller.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFrom returns the caller carried by ctx. A context without one
// carries no rights at all: the zero Principal has no role, and Decide
// denies it everything.
func PrincipalFrom(ctx context.Context) Principal {
	p, _ := ctx.Value(principalKey{}).(Principal)
	return p
}
