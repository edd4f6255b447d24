package api

import "encoding/json"

// Plan is a shared plan document at one revision.
type Plan struct {
	Name     string     `json:"name"`
	Title    string     `json:"title"`
	Content  string     `json:"content"`
	Author   string     `json:"author"`
	Status   string     `json:"status"`
	Steps    []StepView `json:"steps"`
	Progress Progress   `json:"progress"`
	// Scope is the union of the steps' files and commands: what the plan
	// says it will touch. Informational: approvals are of session plans.
	Scope     Scope  `json:"scope"`
	Revision  int64  `json:"revision"`
	CreatedAt string `json:"created_at"`
	UpdatedAt string `json:"updated_at"`
}

// PlanSummary is a plan without its content or steps, but with their
// progress: what lists and events carry.
type PlanSummary struct {
	Name      string   `json:"name"`
	Title     string   `json:"title"`
	Author    string   `json:"author"`
	Status    string   `json:"status"`
	Progress  Progress `json:"progress"`
	Revision  int64    `json:"revision"`
	CreatedAt string   `json:"created_at"`
	UpdatedAt string   `json:"updated_at"`
}

// Summary returns p without its content and steps.
func (p *Plan) Summary() PlanSummary {
	return PlanSummary{Name: p.Name, Title: p.Title, Author: p.Author, Status: p.Status, Progress: p.Progress,
		Revision: p.Revision, CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt}
}

// PlanWrite is the JSON body of PUT /v1/plans/{name} (write_plan). Fields
// left out, or null, keep their current value; content is required.
type PlanWrite struct {
	Title             *string         `json:"title"`
	Content           *string         `json:"content"`
	Author            *string         `json:"author"`
	Status            *string         `json:"status"`
	Steps             json.RawMessage `json:"steps,omitempty"`
	LastKnownRevision *int64          `json:"last_known_revision,omitempty"`
}

// PlanStatus is a plan's status and revision without anything else
// (get_plan_status, set_plan_status).
type PlanStatus struct {
	Name     string `json:"name"`
	Status   string `json:"status"`
	Revision int64  `json:"revision"`
}

// PlanStatusWrite is the body of PUT /v1/plans/{name}/status.
type PlanStatusWrite struct {
	Status            *string `json:"status" validate:"required"`
	LastKnownRevision *int64  `json:"last_known_revision,omitempty"`
}

// PlanPage is one page of GET /v1/plans.
type PlanPage struct {
	Plans []PlanSummary `json:"plans"`
	// NextPageToken continues the list; "" at the end.
	NextPageToken string `json:"next_page_token"`
	// Warnings name the plans of this page's range that were skipped
	// because they could not be read.
	Warnings []PlanWarning `json:"warnings"`
}

// PlanWarning names a stored plan a list skipped because it could not be
// read, so a client can notice and repair it.
type PlanWarning struct {
	Name    string `json:"name"`
	Message string `json:"message"`
}

// RevisionSummary is one entry of a plan's history.
type RevisionSummary struct {
	Revision  int64  `json:"revision"`
	Author    string `json:"author"`
	Status    string `json:"status"`
	UpdatedAt string `json:"updated_at"`
}

// PlanRevisions is GET /v1/plans/{name}/revisions, newest first.
type PlanRevisions struct {
	Name      string            `json:"name"`
	Revisions []RevisionSummary `json:"revisions"`
}

// Step statuses. A step is pending until it is started (claimed or set
// in_progress), then complete or blocked.
const (
	StepPending    = "pending"
	StepInProgress = "in_progress"
	StepComplete   = "complete"
	StepBlocked    = "blocked"
)

// Step is one action item of a plan, in the plan & action item format,
// plus the claim a worker holds on it.
type Step struct {
	ID          string   `json:"id" yaml:"id"`
	Description string   `json:"description" yaml:"description"`
	Owner       string   `json:"owner" yaml:"owner"`
	Deps        []string `json:"deps" yaml:"deps,flow"`
	Status      string   `json:"status" yaml:"status"`
	Parallel    bool     `json:"parallel" yaml:"parallel,omitempty"`
	Criteria    string   `json:"criteria" yaml:"criteria,omitempty"`
	Commands    []string `json:"commands" yaml:"commands,omitempty"`
	Files       []string `json:"files" yaml:"files,omitempty"`
	RiskNotes   string   `json:"risk_notes" yaml:"risk_notes,omitempty"`
	// ClaimedBy and ClaimExpiresAt are set together, on in_progress steps
	// only: the worker holding the step and when its lease runs out.
	ClaimedBy      *string `json:"claimed_by" yaml:"claimed_by,omitempty"`
	ClaimExpiresAt *string `json:"claim_expires_at" yaml:"claim_expires_at,omitempty"`
}

// StepView is a step as reads show it: the stored step plus what is
// evaluated against the clock at read time.
type StepView struct {
	Step
	// ClaimExpired is true for an in_progress step whose lease has run out:
	// any worker may claim it again.
	ClaimExpired bool `json:"claim_expired"`
}

// Progress counts a plan's steps per status, and those ready now.
type Progress struct {
	Total      int `json:"total"`
	Pending    int `json:"pending"`
	InProgress int `json:"in_progress"`
	Complete   int `json:"complete"`
	Blocked    int `json:"blocked"`
	Ready      int `json:"ready"`
}

// StepList is the answer of GET …/steps.
type StepList struct {
	Steps    []StepView `json:"steps"`
	Revision int64      `json:"revision"`
}

// StepResult is one step and the plan revision it belongs to.
type StepResult struct {
	Step     StepView `json:"step"`
	Revision int64    `json:"revision"`
}

// StepPatch is the body of PATCH …/steps/{step_id}; nil keeps the value.
type StepPatch struct {
	Status *string `json:"status,omitempty" validate:"omitnil,oneof=pending in_progress complete blocked"`
	Owner  *string `json:"owner,omitempty" validate:"omitnil,min=1,max=256"`
}

// ClaimRequest is the body of POST …/steps/claim.
type ClaimRequest struct {
	Worker       string `json:"worker" validate:"required,max=256"`
	Owner        string `json:"owner,omitempty" validate:"max=256"`
	LeaseSeconds *int   `json:"lease_seconds,omitempty" validate:"omitnil,min=1,max=86400"`
}

// StepClaimRequest is the body of POST …/steps/{step_id}/claim.
type StepClaimRequest struct {
	Worker       string `json:"worker" validate:"required,max=256"`
	LeaseSeconds *int   `json:"lease_seconds,omitempty" validate:"omitnil,min=1,max=86400"`
}

// Report outcomes.
const (
	OutcomeSuccess = "success"
	OutcomeFailure = "failure"
	OutcomeBlocked = "blocked"
)

// Artifact is one thing a report points at.
type Artifact struct {
	File   string `json:"file,omitempty" validate:"max=4096"`
	Status string `json:"status,omitempty" validate:"max=256"`
	Test   string `json:"test,omitempty" validate:"max=4096"`
	Result string `json:"result,omitempty" validate:"max=4096"`
}

// ReportWrite is the body of POST …/steps/{step_id}/reports: the
// execution report of the seeds.
type ReportWrite struct {
	StepID    *string    `json:"step_id,omitempty" validate:"omitnil,max=128"`
	Outcome   string     `json:"outcome" validate:"required,oneof=success failure blocked"`
	Details   string     `json:"details" validate:"max=65536"`
	Artifacts []Artifact `json:"artifacts,omitempty" validate:"max=1000,dive"`
	Worker    *string    `json:"worker,omitempty" validate:"omitnil,min=1,max=256"`
	Timestamp *string    `json:"timestamp,omitempty" validate:"omitnil,max=64"`
}

// Report is a stored execution report.
type Report struct {
	ID        int64      `json:"id"`
	Plan      string     `json:"plan"`
	StepID    string     `json:"step_id"`
	Outcome   string     `json:"outcome"`
	Details   string     `json:"details"`
	Artifacts []Artifact `json:"artifacts"`
	// Actor is who sent the report; Worker the claim holder it names.
	Actor  string  `json:"actor"`
	Worker *string `json:"worker"`
	// Timestamp is the worker's clock, as sent; Time the server's.
	Timestamp *string `json:"timestamp"`
	// PlanRevision is the plan revision the report made.
	PlanRevision int64  `json:"plan_revision"`
	Time         string `json:"time"`
}

// ReportList is the answer of GET …/reports.
type ReportList struct {
	Plan    string   `json:"plan"`
	Reports []Report `json:"reports"`
}

// DiffLine is one line of a diff hunk: Op is " " (in both), "-" (only in
// the older text) or "+" (only in the newer one).
type DiffLine struct {
	Op   string `json:"op"`
	Text string `json:"text"`
}

// DiffHunk is one changed region with its context, numbered as in a
// unified diff (1-based; 0 for an empty side).
type DiffHunk struct {
	OldStart int        `json:"old_start"`
	OldLines int        `json:"old_lines"`
	NewStart int        `json:"new_start"`
	NewLines int        `json:"new_lines"`
	Lines    []DiffLine `json:"lines"`
}

// Diff is the JSON form of GET …/diff?from=&to=: how revision To differs
// from revision From. No hunks: the contents are equal.
type Diff struct {
	From  int64      `json:"from"`
	To    int64      `json:"to"`
	Hunks []DiffHunk `json:"hunks"`
	// Scope is what revision To's scope adds to and removes from revision
	// From's: on session plans only, whose revisions declare scopes.
	Scope *ScopeChange `json:"scope,omitempty"`
}
