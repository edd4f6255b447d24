package sessions

import (
	"fmt"
	"strings"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/apierr"
)

// DefaultPlanModeAllow is the default plan-mode allowlist (the contract's
// --plan-mode-allow, api/openapi.yaml): the plan, review and todo tools of
// the session-plan toolset, the plan-mode harness and the shared-plan
// toolset. They write only the plan itself (or the todo list), never the
// world, so a model in plan mode keeps them.
var DefaultPlanModeAllow = []string{
	"write_session_plan", "read_session_plan", "exit_plan_mode",
	"plan_enter", "plan_write", "plan_exit", "todo_write",
	"write_plan", "read_plan", "list_plans", "get_plan_status", "set_plan_status",
}

// MaxTools bounds the tools of one filter request: a turn's toolset, not a
// registry dump.
const MaxTools = 1000

// MaxToolName bounds a tool name.
const MaxToolName = 256

// Tool is what gating needs of an MCP tool: its name and its
// annotations.readOnlyHint (nil when the tool has no annotations or no
// hint, which gating treats as not read-only: MCP's default for the hint is
// false).
type Tool struct {
	Name         string
	ReadOnlyHint *bool
	// Upstream names the tool server the tool belongs to, when a gate
	// asks; recorded with a denial. A tool with an upstream is that
	// server's, and the plan-mode allowlist does not cover it.
	Upstream string
	// Own marks planserver's own tools (its /mcp endpoint's), which the
	// allowlist covers although they name planserver as their upstream.
	// Only planserver sets it; no request can.
	Own bool
}

// readOnly reports whether the tool declares itself read-only.
func (t Tool) readOnly() bool { return t.ReadOnlyHint != nil && *t.ReadOnlyHint }

// ValidateTools checks a filter request's tools: at most MaxTools, each with
// a non-empty name of at most MaxToolName bytes, no name twice (the answer
// lists names, so a duplicate would be ambiguous). Fields are reported as
// tools[i].name.
func ValidateTools(tools []Tool) error {
	if len(tools) > MaxTools {
		return apierr.Invalid("tools", "must be at most %d items, got %d", MaxTools, len(tools))
	}
	var fields []apierr.FieldError
	seen := make(map[string]int, len(tools))
	for i, t := range tools {
		field := fmt.Sprintf("tools[%d].name", i)
		if err := checkToolName(t.Name); err != "" {
			fields = append(fields, apierr.FieldError{Field: field, Message: err})
			continue
		}
		if first, dup := seen[t.Name]; dup {
			fields = append(fields, apierr.FieldError{Field: field,
				Message: fmt.Sprintf("duplicates tools[%d].name %q; list each tool once", first, t.Name)})
			continue
		}
		seen[t.Name] = i
	}
	if len(fields) > 0 {
		return apierr.InvalidFields(fields)
	}
	return nil
}

// ValidateTool checks the one tool of a check request (field "name").
func ValidateTool(t Tool) error {
	if err := checkToolName(t.Name); err != "" {
		return apierr.Invalid("name", "%s", err)
	}
	return nil
}

func checkToolName(name string) string {
	switch {
	case strings.TrimSpace(name) == "":
		return "is required"
	case len(name) > MaxToolName:
		return fmt.Sprintf("must be at most %d bytes", MaxToolName)
	}
	return ""
}

// Gate is the plan-mode tool policy: in plan mode only tools annotated
// readOnlyHint: true and the tools on the allowlist are offered to the
// model; in build mode every tool is. It is pure: the session's effective
// mode is resolved by the caller.
type Gate struct {
	allow []string // in configured order, for messages
	set   map[string]bool
}

// NewGate returns the policy with the given plan-mode allowlist (nil for
// DefaultPlanModeAllow; empty for none). Blank names are ignored.
func NewGate(allow []string) Gate {
	if allow == nil {
		allow = DefaultPlanModeAllow
	}
	g := Gate{set: map[string]bool{}}
	for _, name := range allow {
		name = strings.TrimSpace(name)
		if name == "" || g.set[name] {
			continue
		}
		g.set[name] = true
		g.allow = append(g.allow, name)
	}
	return g
}

// Allowlist returns the plan-mode allowlist in configured order.
func (g Gate) Allowlist() []string { return append([]string(nil), g.allow...) }

// FilterResult is the answer of POST …/tools/filter.
type FilterResult = api.FilterResult

// Filter splits a turn's tools into those the model may see and those
// removed, keeping the input order, for session s with its effective mode
// resolved.
func (g Gate) Filter(s *Session, tools []Tool) FilterResult {
	res := FilterResult{EffectiveMode: s.EffectiveMode, Allowed: []string{}, Removed: []string{}}
	for _, t := range tools {
		if g.permits(s.EffectiveMode, t) {
			res.Allowed = append(res.Allowed, t.Name)
		} else {
			res.Removed = append(res.Removed, t.Name)
		}
	}
	if s.EffectiveMode == Plan {
		r := g.reminder(s, res.Allowed)
		res.Reminder = &r
	}
	return res
}

// CheckResult is the answer of POST …/tools/check.
type CheckResult = api.CheckResult

// Check decides one tool call for session s. A denial's reason is written
// for the model: it says plan mode is active, why this tool is not
// available, which tools are, and what to do instead.
func (g Gate) Check(s *Session, t Tool) CheckResult {
	res := CheckResult{Allowed: g.permits(s.EffectiveMode, t), EffectiveMode: s.EffectiveMode}
	switch {
	case s.EffectiveMode != Plan:
		res.Reason = fmt.Sprintf("session %q is in build mode: every tool is allowed", s.ID)
	case g.allowlisted(t):
		res.Reason = fmt.Sprintf("%q is on the plan-mode allowlist", t.Name)
	case t.readOnly():
		res.Reason = fmt.Sprintf("%q is read-only (annotations.readOnlyHint: true), so plan mode allows it", t.Name)
	default:
		why := "is not marked read-only (annotations.readOnlyHint is false)"
		if t.ReadOnlyHint == nil {
			why = "has no annotations.readOnlyHint, so it is treated as state-changing"
		}
		if t.Upstream != "" && !t.Own && g.set[t.Name] {
			why += fmt.Sprintf(" (it is tool server %q's, not planserver's own %s, which the plan-mode allowlist names)", t.Upstream, t.Name)
		}
		allowed := "none"
		if len(g.allow) > 0 {
			allowed = strings.Join(g.allow, ", ")
		}
		writeTool, reviewTool := planTools(g.allow)
		res.Reason = fmt.Sprintf("[Tool denied — plan mode is active] %q %s. %s "+
			"Only read-only tools (annotations.readOnlyHint: true) and the plan-mode tools are allowed: %s. "+
			"Investigate with read-only tools, write your plan with %s, then call %s to ask a human for review.",
			t.Name, why, modeSentence(s), allowed, writeTool, reviewTool)
	}
	return res
}

// permits is the whole policy.
func (g Gate) permits(effective Mode, t Tool) bool {
	return effective != Plan || t.readOnly() || g.allowlisted(t)
}

// allowlisted reports whether t is on the plan-mode allowlist. The list
// names planserver's own plan tools, which write only the plan; a tool of
// another server (a gate's upstream) that has one of those names is that
// server's, and may do anything, so the list never covers it.
func (g Gate) allowlisted(t Tool) bool {
	return (t.Upstream == "" || t.Own) && g.set[t.Name]
}

// reminder is the per-turn <system-reminder> for plan mode. It names the
// plan tools the model actually has when it has them.
func (g Gate) reminder(s *Session, allowed []string) string {
	writeTool, reviewTool := planTools(allowed)
	return "<system-reminder>\n" +
		"Plan mode is active. " + modeSentence(s) + " " +
		"State-changing tools are unavailable until a human approves your plan: do not try to edit files, " +
		"run commands or change anything else. Investigate with the read-only tools you have, " +
		"write your plan with " + writeTool + " (it replaces the whole plan), " +
		"then call " + reviewTool + " to ask for review. Keep planning, not acting, until the plan is approved.\n" +
		"</system-reminder>"
}

// planTools returns the names of the tool that writes the session plan and
// the tool that asks for review: the first of each kind among names, or
// the session-plan toolset's names when names has neither.
func planTools(names []string) (write, review string) {
	write, review = "write_session_plan", "exit_plan_mode"
	has := map[string]bool{}
	for _, n := range names {
		has[n] = true
	}
	for _, n := range []string{"write_session_plan", "plan_write"} {
		if has[n] {
			write = n
			break
		}
	}
	for _, n := range []string{"exit_plan_mode", "plan_exit"} {
		if has[n] {
			review = n
			break
		}
	}
	return write, review
}

// modeSentence says which session put s in plan mode.
func modeSentence(s *Session) string {
	if s.ModeSource == nil || *s.ModeSource == s.ID {
		return fmt.Sprintf("Session %q is in plan mode.", s.ID)
	}
	return fmt.Sprintf("Session %q is in plan mode because its ancestor session %q is; "+
		"delegating to a sub-session does not leave plan mode.", s.ID, *s.ModeSource)
}
