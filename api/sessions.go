package api

// Mode is a session's build/plan setting.
type Mode string

// The two modes. Build is the default.
const (
	ModeBuild Mode = "build"
	ModePlan  Mode = "plan"
)

// Review states.
const (
	ReviewNone     = "none"
	ReviewPending  = "pending"
	ReviewApproved = "approved"
	ReviewRejected = "rejected"
)

// Review is the state of the human review of a session's plan.
type Review struct {
	State        string  `json:"state"`
	PlanRevision *int64  `json:"plan_revision"`
	Rationale    *string `json:"rationale"`
	Feedback     *string `json:"feedback"`
	RequestedAt  *string `json:"requested_at"`
	DecidedAt    *string `json:"decided_at"`
	DecidedBy    *string `json:"decided_by"`
	// DecidedByPerson is the signed-in human who decided; null when a
	// token decided (DecidedBy then names it).
	DecidedByPerson *Person `json:"decided_by_person"`
	// Comments are the decision's comments on lines of the reviewed plan
	// revision.
	Comments []ReviewComment `json:"comments"`
	// Scope is what an approval granted: "plan" (build limited to the
	// approved revision's scope) or "full"; null until approved.
	Scope *string `json:"scope"`
}

// ReviewComment is a reviewer's comment on one line of the plan revision
// under review (1 is the first line).
type ReviewComment struct {
	Line int    `json:"line" validate:"min=1"`
	Body string `json:"body" validate:"required,max=4096"`
	// Author is who wrote the comment, the decision's actor; set by the
	// server, never taken from a request.
	Author string `json:"author,omitempty"`
}

// Review record states: how a review ended.
const (
	ReviewWithdrawn = "withdrawn"
	ReviewCancelled = "cancelled"
)

// ReviewRecord is one review that ended: decided (approved, rejected) or
// closed without a decision (withdrawn by a plan rewrite, cancelled by
// leaving plan mode).
type ReviewRecord struct {
	PlanRevision *int64  `json:"plan_revision"`
	State        string  `json:"state"`
	Rationale    *string `json:"rationale"`
	RequestedAt  *string `json:"requested_at"`
	EndedAt      string  `json:"ended_at"`
	EndedBy      string  `json:"ended_by"`
	// EndedByPerson is the signed-in human who ended it; null for a token.
	EndedByPerson *Person         `json:"ended_by_person"`
	Feedback      *string         `json:"feedback"`
	Comments      []ReviewComment `json:"comments"`
	// Scope is what an approval granted ("plan" or "full"); null for a
	// review that was not approved.
	Scope *string `json:"scope"`
}

// ReviewHistory is GET /v1/sessions/{id}/reviews: the current review and
// every review that ended, newest first.
type ReviewHistory struct {
	SessionID string         `json:"session_id"`
	Current   Review         `json:"current"`
	Reviews   []ReviewRecord `json:"reviews"`
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
	// ExternalID is the host's own id of this conversation (set at
	// creation, unique among its parent's children), nil when none.
	ExternalID *string `json:"external_id"`
	// Enforcement lists the host hook adapters that decided tool calls of
	// this session lately. It is an observation, not the session's state:
	// it changes no revision.
	Enforcement []Enforcement `json:"enforcement"`
	// BuildScope is what limits the session in build mode: the scope a
	// human approved for it or for an ancestor. Nil in full build and in
	// plan mode.
	BuildScope *BuildScope `json:"build_scope"`
}

// Scope is what a plan declares it will touch: files and folders (globs
// relative to the project), the commands it will run, and the network it
// needs (host:port).
type Scope struct {
	Files    []string `json:"files"`
	Commands []string `json:"commands"`
	Connect  []string `json:"connect"`
}

// ScopeChange is what one scope adds to and removes from another.
type ScopeChange struct {
	Added   Scope `json:"added"`
	Removed Scope `json:"removed"`
}

// ScopeGrant is a scope a human granted a session by approving a
// revision of its plan.
type ScopeGrant struct {
	Scope
	// SessionID is the session whose plan was approved with this scope.
	SessionID string `json:"session_id"`
	// PlanRevision is the plan revision that declared it.
	PlanRevision int64  `json:"plan_revision"`
	GrantedBy    string `json:"granted_by"`
	// GrantedByPerson is the signed-in human who granted it; null for a
	// token.
	GrantedByPerson *Person `json:"granted_by_person"`
	GrantedAt       string  `json:"granted_at"`
}

// BuildScope is a session's scoped build: the nearest grant (its own, or
// the nearest ancestor's; SessionID says which, as mode_source does for
// plan mode), and every other grant further up that limits it too. A
// path or a connection is allowed only where every grant allows it, so a
// sub-session's scope is never wider than its parent's.
type BuildScope struct {
	ScopeGrant
	// AlsoLimitedBy are the grants of ancestors above the nearest one,
	// nearest first; empty when one grant limits the session.
	AlsoLimitedBy []ScopeGrant `json:"also_limited_by"`
}

// Enforcement is one host hook adapter that asked about a session, or
// reported its tool runs.
type Enforcement struct {
	// Host is the agent host (claude-code, codex, gemini-cli, cursor, opencode).
	Host string `json:"host"`
	// Adapter is how it asked: "command" (planserver hook), "plugin" (the
	// opencode plugin) or "http" (POST /v1/hooks/{host}).
	Adapter string `json:"adapter"`
	// LastDecisionAt is when it last asked before a tool ran, to within
	// EnforcementResolution; nil when it never did (only its after-tool
	// hook reported runs).
	LastDecisionAt *string `json:"last_decision_at"`
	// LastReportAt is when its after-tool hook last reported a run, to
	// within EnforcementResolution; nil when none did.
	LastReportAt *string `json:"last_report_at"`
	// UnjudgedRuns counts the runs it reported that planserver never
	// decided, or had denied (each a tool_call.unjudged event).
	UnjudgedRuns int64 `json:"unjudged_runs"`
	// LastUnjudged is the latest of them; nil when there is none.
	LastUnjudged *UnjudgedRun `json:"last_unjudged"`
}

// Why a tool run is unjudged.
const (
	// UnjudgedNoDecision: planserver never decided the call (no before-
	// tool hook asked, or its decision is older than the record's
	// lifetime).
	UnjudgedNoDecision = "no_decision"
	// UnjudgedDenied: planserver denied the call, and the host ran it.
	UnjudgedDenied = "denied"
)

// UnjudgedRun is a tool run a host reported that planserver never judged,
// or had denied: the data of a tool_call.unjudged event.
type UnjudgedRun struct {
	Host    string `json:"host"`
	Adapter string `json:"adapter"`
	Tool    string `json:"tool"`
	// Agent is the host's id of the sub-agent that ran it; "" for the
	// conversation's own agent. AgentType is the sub-agent's kind.
	Agent     string `json:"agent"`
	AgentType string `json:"agent_type,omitempty"`
	Session   string `json:"session"`
	// ToolUseID is the host's id of the call; nil where the host sends
	// none (Gemini CLI).
	ToolUseID *string `json:"tool_use_id"`
	// Reason is no_decision or denied.
	Reason        string `json:"reason"`
	EffectiveMode Mode   `json:"effective_mode"`
	// At is when planserver received the report.
	At string `json:"at"`
}

// SessionCreate is the body of POST /v1/sessions. ID is optional: left out,
// one is generated; given, it must be a valid id (an empty string is not).
type SessionCreate struct {
	ID       *string        `json:"id,omitempty" validate:"omitnil,session_id"`
	Title    string         `json:"title" validate:"title"`
	Agent    string         `json:"agent" validate:"max=256"`
	ParentID string         `json:"parent_id" validate:"omitempty,session_id"`
	Mode     string         `json:"mode,omitempty" validate:"omitempty,oneof=build plan"`
	Harness  bool           `json:"harness"`
	Metadata map[string]any `json:"metadata,omitempty"`
	// ExternalID is the host's id of the conversation, unique among the
	// parent's children.
	ExternalID *string `json:"external_id,omitempty" validate:"omitnil,external_id"`
}

// SessionList is one page of GET /v1/sessions.
type SessionList struct {
	Sessions      []*Session `json:"sessions"`
	NextPageToken string     `json:"next_page_token"`
}

// ModeChange is the body of PATCH /v1/sessions/{id}/mode.
type ModeChange struct {
	Mode string `json:"mode" validate:"required"`
}

// Approval is the answer to an approval: the session and, when an
// ancestor keeps it in plan mode, a note saying so.
type Approval struct {
	*Session
	Note *string `json:"note"`
	// Scope is what the approval granted: "plan" or "full".
	Scope string `json:"scope"`
}

// SessionPlan is a session's one Markdown plan (write_session_plan). Its
// revision is its own, independent of the session's: a human approves the
// plan revision they read.
type SessionPlan struct {
	SessionID string `json:"session_id"`
	Content   string `json:"content"`
	Author    string `json:"author"`
	Revision  int64  `json:"revision"`
	CreatedAt string `json:"created_at"`
	UpdatedAt string `json:"updated_at"`
	// Review is the session's review, with the human's feedback and
	// comments, so the agent reading its plan reads them too. Absent from
	// earlier revisions.
	Review *Review `json:"review,omitempty"`
	// Scope is the scope this revision declares (its ```scope block);
	// null when it declares none.
	Scope *Scope `json:"scope"`
}

// SessionPlanRevision is one entry of a session plan's history.
type SessionPlanRevision struct {
	Revision  int64  `json:"revision"`
	Author    string `json:"author"`
	UpdatedAt string `json:"updated_at"`
}

// SessionPlanRevisions is GET /v1/sessions/{id}/plan/revisions, newest
// first, the current revision included.
type SessionPlanRevisions struct {
	SessionID string                `json:"session_id"`
	Revisions []SessionPlanRevision `json:"revisions"`
}

// SessionPlanWrite is the JSON body of PUT /v1/sessions/{id}/plan.
type SessionPlanWrite struct {
	Content string `json:"content"`
	// Author left out keeps the current author; on the first write it
	// defaults to the acting caller.
	Author *string `json:"author,omitempty" validate:"omitnil,author"`
}

// ReviewRequest is the body of POST …/plan/review (exit_plan_mode).
type ReviewRequest struct {
	Rationale *string `json:"rationale,omitempty" validate:"omitnil,max=65536"`
}

// ReviewRejection is the body of POST …/plan/reject.
type ReviewRejection struct {
	Feedback *string         `json:"feedback,omitempty" validate:"omitnil,max=65536"`
	Comments []ReviewComment `json:"comments,omitempty" validate:"max=200,dive"`
}

// ReviewApproval is the optional body of POST …/plan/approve.
type ReviewApproval struct {
	Feedback *string         `json:"feedback,omitempty" validate:"omitnil,max=65536"`
	Comments []ReviewComment `json:"comments,omitempty" validate:"max=200,dive"`
	// Scope is what the approval grants: "plan" (build limited to the
	// approved revision's scope; the default when it declares one) or
	// "full" (no limit; the default when it declares none, and an
	// admin's decision when it does).
	Scope string `json:"scope,omitempty" validate:"omitempty,oneof=plan full"`
}

// Approval scopes: what an approval grants.
const (
	ApproveScopePlan = "plan"
	ApproveScopeFull = "full"
)

// ToolAnnotations is MCP's tool annotations; gating reads readOnlyHint.
type ToolAnnotations struct {
	Title           string `json:"title,omitempty"`
	ReadOnlyHint    *bool  `json:"readOnlyHint,omitempty"`
	DestructiveHint *bool  `json:"destructiveHint,omitempty"`
	IdempotentHint  *bool  `json:"idempotentHint,omitempty"`
	OpenWorldHint   *bool  `json:"openWorldHint,omitempty"`
}

// Tool is the MCP tool shape a host sends to be filtered or checked.
type Tool struct {
	Name        string           `json:"name"`
	Annotations *ToolAnnotations `json:"annotations,omitempty"`
	// Meta is the tool's _meta: only UpstreamMeta is read.
	Meta map[string]string `json:"_meta,omitempty"`
}

// UpstreamMeta is the _meta key of a checked tool that names the tool
// server it belongs to (a gate, such as planserver gate, says which
// upstream it guards); it is recorded with a denial.
const UpstreamMeta = "planserver/upstream"

// ToolFilter is the body of POST …/tools/filter.
type ToolFilter struct {
	Tools []Tool `json:"tools"`
}

// FilterResult is the answer of POST …/tools/filter.
type FilterResult struct {
	EffectiveMode Mode     `json:"effective_mode"`
	Allowed       []string `json:"allowed"`
	Removed       []string `json:"removed"`
	// Reminder is the per-turn <system-reminder> a host splices into the
	// model's context in plan mode; nil in build mode.
	Reminder *string `json:"reminder"`
}

// CheckResult is the answer of POST …/tools/check.
type CheckResult struct {
	Allowed       bool   `json:"allowed"`
	EffectiveMode Mode   `json:"effective_mode"`
	Reason        string `json:"reason"`
}

// Todo statuses. At most one todo is in progress at a time.
const (
	TodoPending    = "pending"
	TodoInProgress = "in_progress"
	TodoCompleted  = "completed"
)

// Todo is one item of a session's todo list.
type Todo struct {
	ID      string `json:"id"`
	Content string `json:"content"`
	Status  string `json:"status"`
}

// TodoList is a session's todo list (todo_write). Revision 0 means no list
// was ever written.
type TodoList struct {
	SessionID string  `json:"session_id"`
	Todos     []Todo  `json:"todos"`
	Revision  int64   `json:"revision"`
	UpdatedAt *string `json:"updated_at"`
}

// TodoWrite is one item of a todo list write; an item without an id gets
// a generated "todo_…" id.
type TodoWrite struct {
	ID      string `json:"id" validate:"max=128"`
	Content string `json:"content" validate:"required,max=4096"`
	Status  string `json:"status" validate:"required,oneof=pending in_progress completed"`
}

// TodosWrite is the body of PUT …/todos: the whole list.
type TodosWrite struct {
	Todos []TodoWrite `json:"todos" validate:"required,max=1000,dive"`
}
