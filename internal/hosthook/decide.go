// Package hosthook owns what planserver answers an agent host's hook before
// a tool call: the host's input normalized into a Call (adapters.go, one
// adapter per host, each from its own documentation), the decision for a
// session's effective mode (Decide, the one home of the rule), and the
// answer in the host's own output format. It is pure: the transports (the
// HTTP form POST /v1/hooks/{host}, the command planserver hook) load the
// session and the facts, call Decide, and record what it says.
//
// It imports no other planserver package and nothing beyond the standard
// library: the command form (cmd/planserver-hook) links it, and a host
// starts that process before every tool call, so what this package pulls in
// is start-up time on every call (TestHookBinaryStaysLean).
package hosthook

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Kind is what a tool call does, as far as plan mode is concerned.
type Kind int

// The kinds of tool call.
const (
	// Unknown is a tool the adapter does not know: denied in plan mode.
	Unknown Kind = iota
	// Read reads files or the web: allowed in plan mode.
	Read
	// Write edits, writes or deletes files: denied in plan mode.
	Write
	// Shell runs a command: in the read-only sandbox where the host can
	// rewrite its input; else only a plain read on the allowlist.
	Shell
	// MCP calls a tool of an MCP server (mcp__server__tool).
	MCP
	// Agent launches a sub-agent: allowed, its own calls come back to the
	// hook with the same session.
	Agent
	// Planning is a tool that only keeps the model's own notes (todo
	// lists), asks the user, or enters plan mode: allowed.
	Planning
	// ExitPlan is the host's own exit-plan-mode tool (Claude Code's
	// ExitPlanMode): it becomes planserver's review.
	ExitPlan
)

var kindNames = map[Kind]string{Unknown: "unknown", Read: "read", Write: "write", Shell: "shell",
	MCP: "mcp", Agent: "agent", Planning: "planning", ExitPlan: "exit_plan"}

func (k Kind) String() string { return kindNames[k] }

// Call is one tool call as the host described it, normalized.
type Call struct {
	Host Host
	// Event is the host's hook event (PreToolUse, BeforeTool,
	// beforeShellExecution, ...).
	Event string
	// Tool is the tool's name as the host sent it.
	Tool string
	Kind Kind
	// Command is a shell call's command line.
	Command string
	// Path is the file a read or write names, for messages.
	Path string
	// MCPServer and MCPTool name an MCP call's server and tool; MCPURL is
	// the server's URL where the host says it (Cursor).
	MCPServer, MCPTool, MCPURL string
	// Conversation is the host's own id of the conversation: Claude Code's
	// and Gemini CLI's session_id, Cursor's conversation_id, opencode's
	// sessionID. With --parent it picks the child session.
	Conversation string
	// AgentID and AgentType name the sub-agent that makes the call, when
	// one does (Claude Code).
	AgentID, AgentType string
	// Project is the directory the host works in, which a scope's paths
	// are relative to: Claude Code's and Gemini CLI's cwd, Cursor's first
	// workspace root, the opencode plugin's directory; empty when the host
	// names none.
	Project string
	// Plan is the plan an ExitPlan call carries.
	Plan string
	// Input is the tool's input as the host sent it, member by member, so
	// that a rewrite changes only the command and keeps the rest.
	Input map[string]json.RawMessage
	// CommandField names the member of Input that holds the command.
	CommandField string
	// CanRewrite says the host runs a changed input this hook answers
	// with (Claude Code's updatedInput, Gemini CLI's tool_input, Cursor's
	// preToolUse updated_input, the opencode plugin's args).
	CanRewrite bool
	// Phase says whether the host asks before the tool runs (Before) or
	// reports a run that happened (After: Claude Code's PostToolUse and
	// PostToolUseFailure, Gemini CLI's AfterTool, Cursor's postToolUse,
	// afterShellExecution and afterMCPExecution, opencode's
	// tool.execute.after). A report is never answered with a decision.
	Phase Phase
	// RunID is the host's own id of this tool call, the same before and
	// after it runs: Claude Code's tool_use_id, opencode's callID,
	// Cursor's tool_use_id where it sends one; "" where the host sends
	// none (Gemini CLI), and RunKeys falls back on the call's content.
	RunID string
	// PermissionMode is Claude Code's permission_mode: "plan" while Claude
	// Code is in its own plan mode, the only mode in which the model has
	// its ExitPlanMode tool.
	PermissionMode string
	// MCPName is what the installation says about planserver's MCP server
	// in this host (the hook's --mcp, ?mcp=): the name it is set up under,
	// so that a denial names the tools the model has; NoMCP when none is
	// set up; "" when the hook was not told.
	MCPName string
}

// NoMCP is MCPName for a host where planserver's MCP server is not set up.
const NoMCP = "none"

// Phase is when a hook call comes: before a tool runs, or after.
type Phase int

// The phases.
const (
	// Before asks whether a tool call may run.
	Before Phase = iota
	// After reports a tool call that ran.
	After
)

// Outcome is the kind of a decision.
type Outcome int

// The outcomes.
const (
	// None gives no decision: the host's own permissions apply. Build
	// mode answers it, since an explicit allow would skip the host's own
	// permission prompts.
	None Outcome = iota
	// Allow lets the call run as it is.
	Allow
	// Deny refuses the call; Reason reaches the model.
	Deny
	// Rewrite lets the call run with Input instead (a shell command
	// inside the read-only sandbox).
	Rewrite
	// Review stores the call's Plan as the session plan, requests a
	// review and denies the call with the review's link (ReviewDenial):
	// the transport does the first two.
	Review
)

var outcomeNames = map[Outcome]string{None: "none", Allow: "allow", Deny: "deny", Rewrite: "rewrite", Review: "review"}

func (o Outcome) String() string { return outcomeNames[o] }

// Decision is the answer for one call.
type Decision struct {
	Outcome Outcome
	// Reason is written for the model: on a denial, what to do instead.
	Reason string
	// Input is the whole rewritten tool input (Rewrite), with only the
	// command changed.
	Input map[string]json.RawMessage
	// Command is the rewritten command (Rewrite).
	Command string
	// OutOfScope marks a denial in scoped build because the call reaches
	// outside the approved scope (tool_call.out_of_scope); Path is the
	// path it would write, relative to the project where it lies inside.
	OutOfScope bool
	Path       string
}

// Judge answers one question about a shell command line, with a reason
// written for the model: shellclass.Writes ("does it certainly write?") and
// shellclass.Strict ("is it a plain read on the allowlist?").
type Judge func(command string) (yes bool, reason string)

// Sandbox is what the decision needs of the read-only sandbox.
type Sandbox struct {
	// Available says the sandbox, with its network rule, runs on this
	// machine's kernel; Why says why not when it does not.
	Available bool
	Why       string
	// Wrap returns command run inside planserver's sandbox as w says
	// (read-only, or limited to a scope), or an error when it cannot be
	// wrapped (a NUL byte).
	Wrap func(command string, w Wrap) (string, error)
	// Unwrap returns the command and explanation inside a line of Wrap's
	// shape (sandbox.Unwrap); nil lets no wrapped line through where the
	// host cannot rewrite.
	Unwrap func(line string) (command, explain string, ok bool)
}

// Rewritten says whether line is exactly what Wrap gives, under the mode
// w describes, for the command inside it: the line a host's second hook
// sees after its first hook rewrote the command (Cursor's
// beforeShellExecution after preToolUse). Wrapping again and comparing
// byte for byte lets no other line through, whatever the parse found: not
// another binary, not another flag, nothing after the command.
func (sb Sandbox) Rewritten(line string, w Wrap) bool {
	if !sb.Available || sb.Wrap == nil || sb.Unwrap == nil {
		return false
	}
	command, explain, ok := sb.Unwrap(line)
	if !ok {
		return false
	}
	w.Explain = explain
	again, err := sb.Wrap(command, w)
	return err == nil && again == line
}

// Wrap is how one command runs in the sandbox.
type Wrap struct {
	// Explain is the line the sandbox prints when the command fails.
	Explain string
	// Scope, when set, is the scoped build the command runs in: it may
	// write what the scope's files open and connect to its network.
	Scope *ScopeWrap
}

// ScopeWrap is what the sandbox needs of a scoped build.
type ScopeWrap struct {
	// Project is the directory the files are relative to ("" for the
	// command's working directory).
	Project string
	// Files are the scope's globs every grant allows; Connect the
	// host:port pairs every grant lists.
	Files, Connect []string
}

// Policy is how plan mode judges a host's shell commands. Every command
// that the host lets the hook rewrite runs in the sandbox; Writes denies a
// certain writer early, with its reason; Strict alone decides where no
// sandbox can run.
type Policy struct {
	// Writes names commands that certainly write; nil names none.
	Writes Judge
	// Strict allows plain reads where no sandbox runs; nil allows none.
	Strict  Judge
	Sandbox Sandbox
}

// Mode is what the decision needs of the session a call acts for.
type Mode struct {
	// Session is the session's id.
	Session string
	// Plan says the session's effective mode is plan.
	Plan bool
	// Source is the ancestor the session inherits plan mode from; empty
	// when the mode is its own.
	Source string
	// Scope, when the session is in build mode, is the approved scope
	// that limits it (scoped build); nil in full build.
	Scope *Scope
}

// Same says whether m and o are the same mode for a decision: the same
// session, mode and ancestor, and the same scope granted by the same
// revision (a Scope is rebuilt on every read, so pointers never match).
func (m Mode) Same(o Mode) bool {
	if m.Session != o.Session || m.Plan != o.Plan || m.Source != o.Source || (m.Scope == nil) != (o.Scope == nil) {
		return false
	}
	return m.Scope == nil || m.Scope.Session == o.Scope.Session && m.Scope.Revision == o.Scope.Revision &&
		m.Scope.Summary == o.Scope.Summary && slices.Equal(m.Scope.Files, o.Scope.Files) && slices.Equal(m.Scope.Connect, o.Scope.Connect)
}

// Scope is what the decision needs of a scoped build: whether a path is
// inside it, and what to tell the model.
type Scope struct {
	// Session is the session whose approved plan granted the nearest
	// scope, and Revision that plan's revision.
	Session  string
	Revision int64
	// Allows says whether a path, relative to the project (slash
	// separated, cleaned), lies inside every grant.
	Allows func(rel string) bool
	// Files and Connect are what the sandbox opens (every grant's
	// intersection, as far as globs can be intersected).
	Files, Connect []string
	// Summary says the scope in a line: files, commands, network.
	Summary string
}

// Verdict is a judgement made elsewhere that the decision adopts.
type Verdict struct {
	Allowed bool
	Reason  string
}

// Facts are what the transport looked up for one call.
type Facts struct {
	// Own is the verdict of /mcp's plan-mode tool policy (the one that
	// judges planserver's own MCP tools there) when the call is to one of
	// planserver's own MCP tools (mcp__<its server name>__tool); nil
	// otherwise.
	Own *Verdict
	// MCPReadOnly says the operator declared the call's MCP tool read-only
	// (the gate registry's read_only_tools for a gate named like the
	// server), the same declaration the MCP gate's policy honours.
	MCPReadOnly bool
	// Gated says the call reaches its server through planserver's
	// /mcp/gate/NAME, which judges it there by the same mode.
	Gated bool
}

// Decide is the rule, the one place it is decided: what a host's tool
// call c of a session in mode s (its effective mode resolved) gets.
func Decide(c Call, s Mode, p Policy, f Facts) Decision {
	if c.Phase == After {
		// A report of a run: nothing to decide (RunKeys matches it to the
		// decision made before it ran).
		return Decision{Outcome: None}
	}
	if !s.Plan {
		if s.Scope != nil {
			return decideScoped(c, s, p, f)
		}
		return Decision{Outcome: None}
	}
	switch c.Kind {
	case Read, Agent, Planning:
		return Decision{Outcome: Allow, Reason: fmt.Sprintf("plan mode allows %s (%s)", c.Tool, c.Kind)}
	case ExitPlan:
		if strings.TrimSpace(c.Plan) == "" {
			return Decision{Outcome: Deny, Reason: fmt.Sprintf("[planserver: plan mode] %s carried no plan. %s "+
				"Call %s again with the whole plan in its plan field; planserver stores it and asks a human to review it.",
				c.Tool, modeSentence(s), c.Tool)}
		}
		return Decision{Outcome: Review}
	case Shell:
		return decideShell(c, s, p)
	case MCP:
		return decideMCP(c, s, f)
	case Write:
		return Decision{Outcome: Deny, Reason: fmt.Sprintf("[planserver: plan mode] %s changes files%s and is not available. %s "+
			"You may read, search and run read-only commands while you plan. %s",
			c.Tool, about(c.Path), modeSentence(s), NextStep(c))}
	}
	return Decision{Outcome: Deny, Reason: fmt.Sprintf("[planserver: plan mode] %q is a tool planserver does not know, "+
		"so plan mode refuses it (it might change something). %s You may read, search and run read-only commands while you plan. %s",
		c.Tool, modeSentence(s), NextStep(c))}
}

func decideShell(c Call, s Mode, p Policy) Decision {
	if strings.TrimSpace(c.Command) == "" {
		return Decision{Outcome: Deny, Reason: fmt.Sprintf("[planserver: plan mode] %s carried no command.", c.Tool)}
	}
	if !c.CanRewrite {
		if r, ok := terminalControl(c.Command); ok {
			return Decision{Outcome: Deny, Reason: fmt.Sprintf("[planserver: plan mode] This command carries the control character %U, "+
				"which a terminal acts on as the command is typed into it (it can erase or move the line before it runs), and this host's "+
				"hook cannot run the command in the sandbox, so it is refused. %s %s", r, modeSentence(s), NextStep(c))}
		}
	}
	if !c.CanRewrite && p.Sandbox.Rewritten(c.Command, Wrap{}) {
		return Decision{Outcome: Allow, Reason: "plan mode: the command already runs inside planserver's read-only sandbox " +
			"(this host's earlier hook rewrote it), where every write and network connection fails"}
	}
	if p.Writes != nil {
		if writes, why := p.Writes(c.Command); writes {
			return Decision{Outcome: Deny, Reason: fmt.Sprintf("[planserver: plan mode] This command changes things: %s. "+
				"%s You may read, search and run commands that only read while you plan. %s", why, modeSentence(s), NextStep(c))}
		}
	}
	if rewrite, ok := sandboxed(c, s, p); ok {
		return rewrite
	}
	// No sandbox here: the strict allowlist alone decides, and what it
	// allows runs as it is.
	noSandbox := "this host's hook cannot change the command to run it in the read-only sandbox"
	if c.CanRewrite {
		noSandbox = "the read-only sandbox is not available here"
		if p.Sandbox.Why != "" {
			noSandbox += " (" + p.Sandbox.Why + ")"
		}
	}
	why := "no allowlist is configured"
	if p.Strict != nil {
		ok, reason := p.Strict(c.Command)
		if ok {
			return Decision{Outcome: Allow, Reason: "plan mode: " + noSandbox + ", and the command is a plain read on the allowlist (" + reason + ")"}
		}
		why = reason
	}
	return Decision{Outcome: Deny, Reason: fmt.Sprintf("[planserver: plan mode] %s, so only plain reads on the allowlist run "+
		"(ls, cat, grep, find without -exec, ...: words only, no redirection but to /dev/null), and this one is not: %s. %s %s",
		capitalize(noSandbox), why, modeSentence(s), NextStep(c))}
}

// terminalControl finds a character that a terminal acts on when a line is
// typed into an interactive shell rather than handed to bash -c: a C0
// control but the newline (Ctrl-U erases the line so far, Ctrl-A moves to
// its start, a tab completes a name and can close a quote), DEL, or a C1
// control (CSI). A host whose hook cannot rewrite the command may type it
// into its terminal (Cursor's agent terminal is an interactive bash), so
// what the hook judged must be what runs. Bytes that are not UTF-8 never
// get this far: the hook's JSON input reads each as U+FFFD.
func terminalControl(command string) (rune, bool) {
	for _, r := range command {
		if r < 0x20 && r != '\n' || r == 0x7f || r >= 0x80 && r <= 0x9f {
			return r, true
		}
	}
	return 0, false
}

// sandboxed is the command rewritten to run in the read-only sandbox,
// when the host takes a rewritten input and the sandbox runs here.
func sandboxed(c Call, s Mode, p Policy) (Decision, bool) {
	if !c.CanRewrite || !p.Sandbox.Available || p.Sandbox.Wrap == nil || c.CommandField == "" {
		return Decision{}, false
	}
	explain := fmt.Sprintf("[planserver] %s This command ran in planserver's read-only sandbox, where every write and "+
		"every network connection is refused. %s", modeSentence(s), NextStep(c))
	wrapped, err := p.Sandbox.Wrap(c.Command, Wrap{Explain: explain})
	if err != nil {
		return Decision{Outcome: Deny, Reason: fmt.Sprintf("[planserver: plan mode] This command cannot run in the read-only "+
			"sandbox (%v), so it is refused. %s %s", err, modeSentence(s), NextStep(c))}, true
	}
	d := rewrite(c, wrapped)
	d.Reason = "plan mode: the command runs inside planserver's read-only sandbox: it can read everything, " +
		"and every write and network connection fails with a permission error"
	return d, true
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func decideMCP(c Call, s Mode, f Facts) Decision {
	if f.Own != nil {
		if f.Own.Allowed {
			return Decision{Outcome: Allow, Reason: f.Own.Reason}
		}
		return Decision{Outcome: Deny, Reason: f.Own.Reason}
	}
	if f.Gated {
		return Decision{Outcome: Allow, Reason: "the call goes through planserver's gate, which judges it by the session's mode"}
	}
	if f.MCPReadOnly {
		return Decision{Outcome: Allow, Reason: fmt.Sprintf("the operator declared %q of %q read-only", c.MCPTool, c.MCPServer)}
	}
	server := c.MCPServer
	if server == "" {
		server = "an MCP server the hook cannot name"
		if c.MCPURL != "" {
			server = c.MCPURL
		}
	}
	return Decision{Outcome: Deny, Reason: fmt.Sprintf("[planserver: plan mode] MCP tool %q of %s is not known to be read-only, "+
		"so plan mode refuses it. %s An operator can declare it read-only (planserver gate add NAME URL --read-only TOOL, "+
		"with NAME the server's name) or put the server behind planserver gate. %s", c.MCPTool, quoteServer(server), modeSentence(s), NextStep(c))}
}

func quoteServer(name string) string {
	if strings.HasPrefix(name, "an MCP") {
		return name
	}
	return fmt.Sprintf("server %q", name)
}

// ReviewDenial is the answer to an ExitPlan call once its plan is stored
// as revision rev of the session plan of session target and a review is
// requested: a denial that tells the model to wait for the human.
func ReviewDenial(target string, rev int64, url string) Decision {
	return Decision{Outcome: Deny, Reason: fmt.Sprintf("[planserver: review requested] Your plan is saved as revision %d of "+
		"session %q's plan and a human has been asked to review it: %s . Plan mode stays on until they approve it. "+
		"Stop here and wait for the human: do not try to make changes, and do not call this tool again unless they ask you "+
		"to change the plan. Once approved, your tools work again.", rev, target, url)}
}

// Refusal is the answer when the hook cannot decide (input it does not
// understand, an unknown host, planserver unreachable while the call is
// not a read): a denial that fails closed and says why.
func Refusal(why string) Decision {
	return Decision{Outcome: Deny, Reason: "[planserver hook] " + why + " The call is refused so that plan mode cannot be bypassed; " +
		"reads keep working. Ask the user to check the hook's setup: planserver hook doctor HOST names what is wrong."}
}

// Fallback is the answer when planserver cannot be asked (err says why):
// the session's mode is unknown, so reads (sub-agent launches and
// note-taking too) are allowed, a shell command runs as plan mode would
// run it (in the sandbox where the host rewrites, else only a plain read on
// the allowlist), and everything else is refused.
func Fallback(c Call, p Policy, err error) Decision {
	if c.Phase == After {
		// A report never blocks: the tool ran already.
		return Decision{Outcome: None}
	}
	switch c.Kind {
	case Read, Agent, Planning:
		return Decision{Outcome: Allow, Reason: "planserver unreachable; reads are allowed"}
	case Shell:
		if strings.TrimSpace(c.Command) == "" {
			break
		}
		if p.Writes != nil {
			if writes, _ := p.Writes(c.Command); writes {
				break
			}
		}
		s := Mode{Session: "(unknown: planserver could not be asked)", Plan: true}
		if d, ok := sandboxed(c, s, p); ok && d.Outcome == Rewrite {
			d.Reason = "planserver unreachable; the command runs in the read-only sandbox"
			return d
		}
		if p.Strict != nil {
			if ok, _ := p.Strict(c.Command); ok {
				return Decision{Outcome: Allow, Reason: "planserver unreachable; a plain read on the allowlist is allowed"}
			}
		}
	}
	return Refusal(fmt.Sprintf("planserver could not be asked whether this session is in plan mode (%v), and %s %q may change something.",
		err, kindWord(c.Kind), c.Tool))
}

func kindWord(k Kind) string {
	switch k {
	case Shell:
		return "the command of"
	case MCP:
		return "MCP tool"
	}
	return "tool"
}

func about(path string) string {
	if path == "" {
		return ""
	}
	return fmt.Sprintf(" (%s)", path)
}

// NextStep tells the model how to ask for the review that ends plan mode,
// naming only tools it has: Claude Code's ExitPlanMode only while Claude
// Code is in its own plan mode (outside it the tool is disabled), and
// planserver's MCP tools by the name the installation gave their server
// (c.MCPName), as this host spells them.
func NextStep(c Call) string {
	const after = "a human reviews it, and once they approve, these tools work again."
	if c.Host == ClaudeCode && c.PermissionMode == "plan" {
		return "Write your plan and call ExitPlanMode with it: " + after
	}
	switch c.MCPName {
	case "":
		return "If you have planserver's write_session_plan and exit_plan_mode tools, write your plan with the first and ask for " +
			"review with the second: " + after + " If you do not have them, stop and show the user your plan: they review it in planserver's console."
	case NoMCP:
		return "You have no tool to ask for review here: stop and show the user your plan, and ask them to review it in planserver's console " +
			"(or to set up planserver's MCP server with planserver hook install, which gives you the tools to ask)."
	}
	write, exit := MCPToolName(c.Host, c.MCPName, "write_session_plan"), MCPToolName(c.Host, c.MCPName, "exit_plan_mode")
	return fmt.Sprintf("Write your plan with the %s tool and ask for review with %s: %s", write, exit, after)
}

// MCPToolName is tool of the MCP server set up as server, as host names it
// to the model: Claude Code mcp__server__tool, Gemini CLI mcp_server_tool,
// opencode server_tool; Cursor shows the tool's own name.
func MCPToolName(h Host, server, tool string) string {
	switch h {
	case ClaudeCode:
		return "mcp__" + server + "__" + tool
	case GeminiCLI:
		return "mcp_" + server + "_" + tool
	case OpenCode:
		return server + "_" + tool
	}
	return tool
}

// modeSentence says which session holds plan mode.
func modeSentence(s Mode) string {
	if s.Source == "" || s.Source == s.Session {
		return fmt.Sprintf("Session %q is in plan mode.", s.Session)
	}
	return fmt.Sprintf("Session %q is in plan mode because session %q is.", s.Session, s.Source)
}
