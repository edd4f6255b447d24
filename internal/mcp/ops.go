package mcp

import "github.com/planserver/planserver/internal/auth"

// Operation is one MCP tool and the HTTP operation it is. Routes name the
// routes of auth.Routes that do the same thing; the tool is authorized
// with their Action through the server's access check, so a tool can never
// be allowed where its route is not. TestOperationsMatchRoutes holds the
// table to auth.Routes.
type Operation struct {
	Name        string
	Title       string
	Description string
	// Routes are the keys of auth.Routes ("METHOD /pattern") this tool
	// performs.
	Routes []string
	Action auth.Action
	// Session marks the tools that act on the bound session; without one
	// they are not offered.
	Session bool
	// The MCP annotations, honest: ReadOnly tools change nothing;
	// Destructive ones replace or delete what was there (a plan's earlier
	// revisions stay readable in its history, but the current text is
	// gone); Idempotent ones change nothing more when called again with the
	// same arguments. No tool reaches beyond planserver (openWorldHint
	// false).
	ReadOnly, Destructive, Idempotent bool
}

// Operations is the table of every tool. The names and parameters are
// those of the session-plan and shared-plan tools planserver grew from
// (pinned by TestToolsAsListed), so prompts written for those
// tools work unchanged; edit_plan and the step tools are planserver's own.
var Operations = []Operation{
	// Shared plans (the plan toolset).
	{Name: "write_plan", Title: "Write shared plan", Routes: []string{"PUT /v1/plans/{name}"}, Action: auth.WritePlans,
		Destructive: true,
		Description: "Create or update a shared plan by name. Replaces the entire plan content, so read it first to preserve anything you want to keep; " +
			"title, status and steps left out keep their value; author left out is you (your token's name). Each write bumps the revision. Pass the revision you last read as " +
			"last_known_revision: if the plan changed since, the write is refused with the current revision, and you re-read and retry."},
	{Name: "read_plan", Title: "Read shared plan", Routes: []string{"GET /v1/plans/{name}"}, Action: auth.ReadPlans,
		ReadOnly: true, Idempotent: true,
		Description: "Read a shared plan by name: title, content, author, status, steps, revision and timestamps. " +
			"offset (first line, from 1) and limit (number of lines) return part of the content, so a large plan need not be read whole; " +
			"lines says which part you got."},
	{Name: "list_plans", Title: "List shared plans", Routes: []string{"GET /v1/plans"}, Action: auth.ReadPlans,
		ReadOnly: true, Idempotent: true,
		Description: "List shared plans by name, without their content: title, author, status, step progress, revision. " +
			"Filter by status or author; next_page_token continues a long list; warnings name plans that could not be read."},
	{Name: "delete_plan", Title: "Delete shared plan", Routes: []string{"DELETE /v1/plans/{name}"}, Action: auth.WritePlans,
		Destructive: true, Idempotent: true,
		Description: "Delete a shared plan and its history. Pass last_known_revision to delete only the revision you read."},
	{Name: "set_plan_status", Title: "Set shared plan status", Routes: []string{"PUT /v1/plans/{name}/status"}, Action: auth.WritePlans,
		Destructive: true,
		Description: "Set a shared plan's free-form status (e.g. in-progress, blocked, done) without rewriting its body. " +
			"The plan must exist. Bumps the revision; last_known_revision guards it like write_plan."},
	{Name: "get_plan_status", Title: "Get shared plan status", Routes: []string{"GET /v1/plans/{name}/status"}, Action: auth.ReadPlans,
		ReadOnly: true, Idempotent: true,
		Description: "Read a shared plan's status and current revision without its body."},
	{Name: "edit_plan", Title: "Edit shared plan", Routes: []string{"PUT /v1/plans/{name}"}, Action: auth.WritePlans,
		Destructive: true,
		Description: "Change a shared plan's content by exact string replacement, like an editor, without sending the whole plan: " +
			"old_string must match the current content exactly once (include surrounding lines to make it unique) and is replaced by new_string, " +
			"or every occurrence with replace_all. Several replacements go in edits, applied in order, all or none. " +
			"Title, status and steps stay. With last_known_revision the edit applies only to that revision."},

	// The session plan (the session_plan toolset).
	{Name: "write_session_plan", Title: "Write session plan", Routes: []string{"PUT /v1/sessions/{id}/plan"}, Action: auth.WriteSessionPlan,
		Session: true, Destructive: true, Idempotent: true,
		Description: "Create or replace the plan for this session as Markdown. There is exactly one plan per session; content is the full plan " +
			"and replaces the previous version. Rewriting a plan under review withdraws the review: ask again with exit_plan_mode."},
	{Name: "read_session_plan", Title: "Read session plan", Routes: []string{"GET /v1/sessions/{id}/plan"}, Action: auth.ReadSessionPlan,
		Session: true, ReadOnly: true, Idempotent: true,
		Description: "Read the plan written for this session, with its review: state (none, pending, approved, rejected), " +
			"the revision reviewed, and the human's feedback and line comments. Errors if no plan has been written yet."},
	{Name: "exit_plan_mode", Title: "Ask for plan review", Routes: []string{"POST /v1/sessions/{id}/plan/review"}, Action: auth.RequestReview,
		Session: true, Idempotent: true,
		Description: "Signal that this session's plan is ready for a human's review. Call it once the plan is complete. " +
			"It does not approve the plan or leave plan mode: a human does, on the review page whose URL it returns. " +
			"Then stop and wait; read_session_plan shows the decision and any feedback."},

	// The plan-mode harness.
	{Name: "plan_enter", Title: "Enter plan mode", Routes: []string{"PATCH /v1/sessions/{id}/mode"}, Action: auth.EnterPlanMode,
		Session: true, Idempotent: true,
		Description: "Enter plan mode: from now on only read-only tools and the plan tools are available to this session and its sub-sessions, " +
			"until a human approves a plan. There is no tool to leave it."},
	{Name: "plan_write", Title: "Write plan", Routes: []string{"PUT /v1/sessions/{id}/plan"}, Action: auth.WriteSessionPlan,
		Session: true, Destructive: true, Idempotent: true,
		Description: "Write the current plan (Markdown, the whole plan; it replaces the previous one). The same plan as write_session_plan."},
	{Name: "plan_exit", Title: "Ask to exit plan mode", Routes: []string{"POST /v1/sessions/{id}/plan/review"}, Action: auth.RequestReview,
		Session: true, Idempotent: true,
		Description: "Ask a human to approve the plan and so end plan mode. It does not leave plan mode itself: it returns the review page's URL; " +
			"plan mode ends when the human approves. rationale tells the reviewer why the plan is ready."},
	{Name: "todo_write", Title: "Write todo list", Routes: []string{"PUT /v1/sessions/{id}/todos"}, Action: auth.WriteTodos,
		Session: true, Destructive: true,
		Description: "Replace this session's whole todo list. Each todo has content and status (pending, in_progress, completed); " +
			"at most one is in_progress. Items without an id get one."},

	// Structured steps.
	{Name: "list_steps", Title: "List plan steps", Routes: []string{"GET /v1/plans/{name}/steps"}, Action: auth.ReadPlans,
		ReadOnly: true, Idempotent: true,
		Description: "List a shared plan's steps, filtered by status or owner; ready: true keeps the steps that can start now " +
			"(pending, every dependency complete)."},
	{Name: "claim_step", Title: "Claim a step", Routes: []string{"POST /v1/plans/{name}/steps/claim", "POST /v1/plans/{name}/steps/{step_id}/claim"},
		Action: auth.ExecuteSteps,
		Description: "Take a step of a shared plan to work on: the first ready one (of owner, if given), or step_id. It becomes in_progress, " +
			"held by worker for lease_seconds (claim again to renew). claimed is false when no step is ready."},
	{Name: "report_step", Title: "Report on a step", Routes: []string{"POST /v1/plans/{name}/steps/{step_id}/reports"}, Action: auth.ExecuteSteps,
		Description: "Report a step's execution: outcome success marks it complete, failure or blocked marks it blocked; " +
			"details and artifacts (files, tests and their results) are kept with the plan."},
}
