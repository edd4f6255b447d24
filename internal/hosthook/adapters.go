package hosthook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/planserver/planserver/internal/hosthookproto"
)

// Host is an agent host whose hooks planserver answers.
type Host string

// The hosts, by the names of planserver hook <host> and POST
// /v1/hooks/{host}.
const (
	ClaudeCode Host = "claude-code"
	Codex      Host = "codex"
	GeminiCLI  Host = "gemini-cli"
	Cursor     Host = "cursor"
	OpenCode   Host = "opencode"
)

// Hosts lists every host, for messages and help.
var Hosts = []Host{ClaudeCode, Codex, GeminiCLI, Cursor, OpenCode}

// ParseHost returns the host named name, or an error listing the hosts.
func ParseHost(name string) (Host, error) {
	for _, h := range Hosts {
		if string(h) == name {
			return h, nil
		}
	}
	names := make([]string, len(Hosts))
	for i, h := range Hosts {
		names[i] = string(h)
	}
	return "", fmt.Errorf("unknown host %q: want one of %s", name, strings.Join(names, ", "))
}

// InputError is an input the adapter cannot read; the hook refuses the
// call with it.
type InputError struct{ msg string }

func (e *InputError) Error() string { return e.msg }

func inputErr(format string, args ...any) error {
	return &InputError{msg: fmt.Sprintf(format, args...)}
}

// Parse reads host h's hook input. On an error it still returns what it
// could read (the event, so that the refusal has the right shape).
func Parse(h Host, raw []byte) (Call, error) {
	c := Call{Host: h}
	if len(raw) > hosthookproto.MaxInput {
		return c, inputErr("the hook input is %d bytes, above the limit of %d.", len(raw), hosthookproto.MaxInput)
	}
	var m map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&m); err != nil || m == nil {
		return c, inputErr("the hook input is not a JSON object (%s).", jsonErr(err))
	}
	if dec.More() {
		return c, inputErr("the hook input holds more than one JSON value.")
	}
	c.Phase = phaseOf(h, m)
	var err error
	switch h {
	case ClaudeCode:
		err = parseClaude(&c, m)
	case Codex:
		err = parseCodex(&c, m)
	case GeminiCLI:
		err = parseGemini(&c, m)
	case Cursor:
		err = parseCursor(&c, m)
	case OpenCode:
		err = parseOpenCode(&c, m)
	default:
		err = inputErr("unknown host %q.", h)
	}
	return c, err
}

// phaseOf reads whether an input reports a run, first of all: a report
// the adapter cannot read otherwise must still never be answered with a
// denial.
func phaseOf(h Host, m map[string]json.RawMessage) Phase {
	member := "hook_event_name"
	if h == OpenCode {
		member = "event"
	}
	if ev, err := str(m, member); err == nil && slices.Contains(hosthookproto.ReportEvents[string(h)], ev) {
		return After
	}
	return Before
}

func jsonErr(err error) string {
	if err == nil {
		return "null"
	}
	return err.Error()
}

// str reads member name of m as a string: "" when absent or null, an
// error when it is another type.
func str(m map[string]json.RawMessage, name string) (string, error) {
	raw, ok := m[name]
	if !ok || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", inputErr("%s must be a string.", name)
	}
	return s, nil
}

// strs reads several string members, stopping at the first error.
func strs(m map[string]json.RawMessage, into map[string]*string) error {
	names := make([]string, 0, len(into))
	for n := range into {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		v, err := str(m, n)
		if err != nil {
			return err
		}
		*into[n] = v
	}
	return nil
}

// object reads member name of m as a JSON object (nil when absent). A
// string holding a JSON object is read too: Cursor has sent tool_input
// that way.
func object(m map[string]json.RawMessage, name string) (map[string]json.RawMessage, error) {
	raw, ok := m[name]
	if !ok || string(raw) == "null" {
		return nil, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err == nil {
		return obj, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		if err := json.Unmarshal([]byte(s), &obj); err == nil && obj != nil {
			return obj, nil
		}
	}
	return nil, inputErr("%s must be a JSON object.", name)
}

// require says which member a call lacks.
func require(what, value string) error {
	if strings.TrimSpace(value) == "" {
		return inputErr("the hook input has no %s.", what)
	}
	return nil
}

// splitMCP splits Claude Code's and Gemini CLI's mcp__server__tool.
func splitMCP(name string) (server, tool string, ok bool) {
	rest, found := strings.CutPrefix(name, "mcp__")
	if !found {
		return "", "", false
	}
	server, tool, found = strings.Cut(rest, "__")
	return server, tool, found && server != "" && tool != ""
}

// The tools of each host, by kind. A tool on no list is Unknown.
var claudeTools = map[string]Kind{
	"Read": Read, "Glob": Read, "Grep": Read, "LS": Read, "WebSearch": Read, "WebFetch": Read,
	"NotebookRead": Read, "BashOutput": Read, "ListMcpResourcesTool": Read, "ReadMcpResourceTool": Read,
	"TodoWrite": Planning, "AskUserQuestion": Planning, "EnterPlanMode": Planning,
	"Agent": Agent, "Task": Agent,
	"Edit": Write, "Write": Write, "MultiEdit": Write, "NotebookEdit": Write,
	"Bash":         Shell,
	"ExitPlanMode": ExitPlan,
}

// codexTools are Codex's (0.169): its shell reaches hooks as Bash with a
// command string, as Claude Code's does; apply_patch writes; its agents'
// tools start sub-agents. write_stdin types into a command that may have
// started before plan mode, so it is not on the list (denied).
var codexTools = map[string]Kind{
	"Bash": Shell, "apply_patch": Write, "view_image": Read, "web_search": Read,
	"request_user_input": Planning, "update_plan": Planning, "get_goal": Planning, "create_goal": Planning,
	"update_goal":                 Planning,
	"multi_agent_v1__spawn_agent": Agent, "multi_agent_v1__send_input": Agent, "multi_agent_v1__wait_agent": Agent,
	"multi_agent_v1__resume_agent": Agent, "multi_agent_v1__close_agent": Agent,
}

var geminiTools = map[string]Kind{
	"read_file": Read, "read_many_files": Read, "list_directory": Read, "glob": Read,
	"search_file_content": Read, "grep_search": Read, "google_web_search": Read, "web_fetch": Read,
	"write_todos": Planning,
	"write_file":  Write, "replace": Write, "edit": Write, "save_memory": Write,
	"run_shell_command": Shell,
}

var cursorTools = map[string]Kind{
	"Read": Read, "Grep": Read, "Glob": Read, "LS": Read, "SemanticSearch": Read, "CodebaseSearch": Read,
	"WebSearch": Read, "WebFetch": Read, "FetchRules": Read, "ReadLints": Read,
	"TodoWrite": Planning,
	"Task":      Agent,
	"Write":     Write, "Edit": Write, "StrReplace": Write, "MultiEdit": Write, "Delete": Write, "EditNotebook": Write,
	"Shell": Shell,
}

var openCodeTools = map[string]Kind{
	"read": Read, "glob": Read, "grep": Read, "list": Read, "webfetch": Read, "websearch": Read,
	"codesearch": Read, "todoread": Read, "lsp": Read,
	"todowrite": Planning,
	"task":      Agent,
	"edit":      Write, "write": Write, "patch": Write, "multiedit": Write, "apply_patch": Write,
	"bash": Shell,
}

// classify fills in c's kind from its tool name and input.
func classify(c *Call, tools map[string]Kind, commandField string) error {
	if server, tool, ok := splitMCP(c.Tool); ok && c.Host != Cursor && c.Host != OpenCode {
		c.Kind, c.MCPServer, c.MCPTool = MCP, server, tool
		return nil
	}
	c.Kind = tools[c.Tool]
	switch c.Kind {
	case Shell:
		cmd, err := str(c.Input, commandField)
		if err != nil {
			return err
		}
		c.Command, c.CommandField = cmd, commandField
	case Read, Write:
		for _, f := range []string{"file_path", "path", "filePath", "notebook_path", "absolute_path", "dir_path"} {
			if p, err := str(c.Input, f); err == nil && p != "" {
				c.Path = p
				break
			}
		}
	case ExitPlan:
		plan, err := str(c.Input, "plan")
		if err != nil {
			return err
		}
		c.Plan = plan
	}
	return nil
}

// parseClaude reads Claude Code's PreToolUse input: {session_id,
// transcript_path, cwd, permission_mode, hook_event_name, tool_name,
// tool_input, tool_use_id, agent_id?, agent_type?}, and the reports of
// PostToolUse (the same, and tool_response) and PostToolUseFailure (the
// same, and error).
func parseClaude(c *Call, m map[string]json.RawMessage) error {
	var transcript string
	if err := strs(m, map[string]*string{"hook_event_name": &c.Event, "session_id": &c.Conversation,
		"tool_name": &c.Tool, "agent_id": &c.AgentID, "agent_type": &c.AgentType, "transcript_path": &transcript,
		"tool_use_id": &c.RunID, "permission_mode": &c.PermissionMode, "cwd": &c.Project}); err != nil {
		return err
	}
	if err := toolCall(c, m, "Claude Code", "PreToolUse", claudeTools, "PostToolUse", "PostToolUseFailure"); err != nil {
		return err
	}
	if c.Kind == Write && (c.Tool == "Write" || c.Tool == "Edit") && claudePlanFile(c.Path, transcript) {
		// Claude Code's plan mode has the model write its plan to this
		// one file before ExitPlanMode, which then carries the file's
		// text: it is the model's own notes, not a change to the work.
		c.Kind = Planning
	}
	return nil
}

// parseCodex reads Codex's PreToolUse input, Claude Code's shape with a
// turn_id and the model: {session_id, turn_id, transcript_path, cwd,
// hook_event_name, model, permission_mode, tool_name, tool_input,
// tool_use_id}, and PostToolUse's report (the same, and tool_response).
func parseCodex(c *Call, m map[string]json.RawMessage) error {
	if err := strs(m, map[string]*string{"hook_event_name": &c.Event, "session_id": &c.Conversation,
		"tool_name": &c.Tool, "agent_id": &c.AgentID, "agent_type": &c.AgentType,
		"tool_use_id": &c.RunID, "permission_mode": &c.PermissionMode, "cwd": &c.Project}); err != nil {
		return err
	}
	return toolCall(c, m, "Codex", "PreToolUse", codexTools, "PostToolUse")
}

// claudePlanFile reports whether file is a plan file of Claude Code's own:
// a .md file directly in the plans directory of the configuration
// directory the transcript lives in (<config>/projects/.../x.jsonl, so
// <config>/plans/NAME.md, where <config> is ~/.claude or
// $CLAUDE_CONFIG_DIR). A file of the same name anywhere else, a path that
// climbs out with .., or a transcript outside a projects directory is not.
func claudePlanFile(file, transcript string) bool {
	if !path.IsAbs(file) || !path.IsAbs(transcript) || strings.Contains(file, "\x00") {
		return false
	}
	i := strings.LastIndex(transcript, "/projects/")
	if i <= 0 {
		return false
	}
	config := path.Clean(transcript[:i])
	clean := path.Clean(file)
	return path.Dir(clean) == config+"/plans" && path.Ext(clean) == ".md" && clean == file
}

// parseGemini reads Gemini CLI's BeforeTool input: {session_id,
// transcript_path, cwd, hook_event_name, timestamp, tool_name,
// tool_input, mcp_context?}, and AfterTool's report (the same, and
// tool_response). Gemini CLI sends no id of the call.
//
// Gemini CLI names an MCP tool mcp_SERVER_TOOL (0.61: generateValidName,
// one underscore each side, the server's name without one), and says
// which server and tool in mcp_context: that is read first.
func parseGemini(c *Call, m map[string]json.RawMessage) error {
	if err := strs(m, map[string]*string{"hook_event_name": &c.Event, "session_id": &c.Conversation,
		"tool_name": &c.Tool, "cwd": &c.Project}); err != nil {
		return err
	}
	if err := toolCall(c, m, "Gemini CLI", "BeforeTool", geminiTools, "AfterTool"); err != nil {
		return err
	}
	if c.Kind == MCP {
		return nil
	}
	ctx, err := object(m, "mcp_context")
	if err != nil {
		return err
	}
	var server, tool string
	if ctx != nil {
		if err := strs(ctx, map[string]*string{"server_name": &server, "tool_name": &tool}); err != nil {
			return err
		}
	}
	if server == "" || tool == "" {
		if rest, ok := strings.CutPrefix(c.Tool, "mcp_"); ok {
			server, tool, _ = strings.Cut(rest, "_")
		}
	}
	if server != "" && tool != "" {
		c.Kind, c.MCPServer, c.MCPTool = MCP, server, tool
	}
	return nil
}

// toolCall reads the part Claude Code's PreToolUse and Gemini CLI's
// BeforeTool inputs share, once their common members are in c: the event
// must be the one planserver answers (or one of the reports, after),
// tool_name is required, tool_input is an object (which both hosts run as
// rewritten), and the tool is classified by the host's table.
func toolCall(c *Call, m map[string]json.RawMessage, host, event string, tools map[string]Kind, after ...string) error {
	if !slices.Contains(after, c.Event) && c.Event != event {
		return inputErr("hook_event_name is %q: planserver hook answers %s's %s and reads its %s only.", c.Event, host, event,
			strings.Join(after, " and "))
	}
	return rewritableCall(c, m, "tool_name", "tool_input", tools)
}

// rewritableCall reads a generic tool call whose name (already in c.Tool)
// came from member nameField: the name is required, member inputField is
// the input as an object, which the host runs as rewritten, and the tool
// is classified by the host's table. Every host with a generic pre-tool
// hook shares it (Claude Code, Gemini CLI, Cursor's preToolUse, opencode).
func rewritableCall(c *Call, m map[string]json.RawMessage, nameField, inputField string, tools map[string]Kind) error {
	if err := require(nameField, c.Tool); err != nil {
		return err
	}
	in, err := object(m, inputField)
	if err != nil {
		return err
	}
	c.Input, c.CanRewrite = in, true
	return classify(c, tools, "command")
}

// The Cursor events planserver answers: each fires before the agent acts
// and takes a permission.
const (
	cursorShell   = "beforeShellExecution"
	cursorMCP     = "beforeMCPExecution"
	cursorRead    = "beforeReadFile"
	cursorPreTool = "preToolUse"
)

// The Cursor events that report a run: each fires after the agent acted,
// and is matched to its before-event's decision.
const (
	cursorAfterShell = "afterShellExecution"
	cursorAfterMCP   = "afterMCPExecution"
	cursorPostTool   = "postToolUse"
)

// CursorEvents are the Cursor hook events planserver hook install wires
// before the agent acts; CursorAfterEvents those after. afterFileEdit is
// not wired: it names a file, not a tool call, so no decision can be
// matched to it (an edit made through preToolUse reports in postToolUse).
var (
	CursorEvents      = []string{cursorShell, cursorMCP, cursorRead, cursorPreTool}
	CursorAfterEvents = []string{cursorAfterShell, cursorAfterMCP, cursorPostTool}
)

// parseCursor reads Cursor's hook inputs: common {hook_event_name,
// conversation_id, generation_id, workspace_roots} and per event
// beforeShellExecution {command, cwd}, beforeMCPExecution {tool_name,
// tool_input, url | command}, beforeReadFile {file_path, content},
// preToolUse {tool_name, tool_input}.
func parseCursor(c *Call, m map[string]json.RawMessage) error {
	if err := strs(m, map[string]*string{"hook_event_name": &c.Event, "conversation_id": &c.Conversation,
		"tool_use_id": &c.RunID}); err != nil {
		return err
	}
	// The workspace's first root is the project a scope's paths are
	// relative to.
	var roots []string
	if raw, ok := m["workspace_roots"]; ok && json.Unmarshal(raw, &roots) == nil && len(roots) > 0 {
		c.Project = roots[0]
	}
	switch c.Event {
	case cursorShell, cursorAfterShell:
		c.Tool, c.Kind = "Shell", Shell
		cmd, err := str(m, "command")
		if err != nil {
			return err
		}
		c.Command = cmd
		return require("command", cmd)
	case cursorMCP, cursorAfterMCP:
		c.Kind = MCP
		if err := strs(m, map[string]*string{"tool_name": &c.MCPTool, "url": &c.MCPURL}); err != nil {
			return err
		}
		c.Tool = c.MCPTool
		if _, err := object(m, "tool_input"); err != nil {
			return err
		}
		c.MCPServer = gateName(c.MCPURL)
		return require("tool_name", c.MCPTool)
	case cursorRead:
		c.Tool, c.Kind = "Read", Read
		p, err := str(m, "file_path")
		if err != nil {
			return err
		}
		c.Path = p
		return nil
	case cursorPreTool, cursorPostTool:
		if err := strs(m, map[string]*string{"tool_name": &c.Tool}); err != nil {
			return err
		}
		return rewritableCall(c, m, "tool_name", "tool_input", cursorTools)
	}
	return inputErr("hook_event_name is %q: planserver hook answers Cursor's %s and reads its %s.", c.Event,
		strings.Join(CursorEvents, ", "), strings.Join(CursorAfterEvents, ", "))
}

// gateName returns the gate a Cursor MCP server's URL reaches through
// planserver (…/mcp/gate/NAME), or "planserver" for planserver's own
// /mcp, or "" when the URL is neither.
func gateName(url string) string {
	path := url
	if i := strings.Index(path, "://"); i >= 0 {
		path = path[i+3:]
		if j := strings.IndexByte(path, '/'); j >= 0 {
			path = path[j:]
		} else {
			path = "/"
		}
	}
	path, _, _ = strings.Cut(path, "?")
	if name, ok := strings.CutPrefix(path, "/mcp/gate/"); ok && name != "" && !strings.Contains(name, "/") {
		return "gate:" + name
	}
	if strings.TrimSuffix(path, "/") == "/mcp" {
		return "planserver"
	}
	return ""
}

// parseOpenCode reads what integrations/opencode/planserver.js sends from
// tool.execute.before: {tool, sessionID, callID, args, agent?, directory?},
// and from tool.execute.after the same with event "tool.execute.after" (an
// input without event is a before: the plugin's older versions sent none).
func parseOpenCode(c *Call, m map[string]json.RawMessage) error {
	if err := strs(m, map[string]*string{"event": &c.Event, "tool": &c.Tool, "sessionID": &c.Conversation,
		"agent": &c.AgentType, "callID": &c.RunID, "directory": &c.Project}); err != nil {
		return err
	}
	switch c.Event {
	case "", "tool.execute.before":
		c.Event = "tool.execute.before"
	case "tool.execute.after":
	default:
		return inputErr("event is %q: the opencode plugin sends tool.execute.before or tool.execute.after.", c.Event)
	}
	if err := rewritableCall(c, m, "tool", "args", openCodeTools); err != nil {
		return err
	}
	// opencode names an MCP server's tool SERVER_TOOL: planserver's own
	// (planserver_exit_plan_mode, the model's way to ask for review) is
	// judged as on /mcp, another server's by the gate registry.
	if server, tool, ok := strings.Cut(c.Tool, "_"); ok && c.Kind == Unknown && server != "" && tool != "" {
		c.Kind, c.MCPServer, c.MCPTool = MCP, server, tool
	}
	return nil
}

// Render answers decision d in host h's output format for call c (as far
// as it was read). It never fails: every answer is valid JSON.
func Render(h Host, c Call, d Decision) []byte {
	if d.Outcome == Review {
		// The transport turns a review into ReviewDenial; one that did
		// not is still a denial.
		d.Outcome = Deny
	}
	var out any
	switch h {
	case ClaudeCode:
		out = renderClaude(c, d)
	case Codex:
		out = renderCodex(c, d)
	case GeminiCLI:
		out = renderGemini(d)
	case Cursor:
		out = renderCursor(c, d)
	default:
		out = renderOpenCode(d)
	}
	raw, err := json.Marshal(out)
	if err != nil {
		// Every value above is plain strings and maps of raw JSON that
		// was valid when read; still, never answer anything but JSON.
		raw, _ = json.Marshal(map[string]string{"decision": "deny", "reason": "planserver hook: internal error"})
	}
	return raw
}

func renderClaude(c Call, d Decision) any {
	if d.Outcome == None {
		return map[string]any{}
	}
	if c.Event != "" && c.Event != "PreToolUse" {
		// Not a PreToolUse (a hook wired to the wrong event): the generic
		// block every event understands.
		return map[string]any{"decision": "block", "reason": d.Reason}
	}
	o := map[string]any{"hookEventName": "PreToolUse", "permissionDecisionReason": d.Reason}
	switch d.Outcome {
	case Allow:
		o["permissionDecision"] = "allow"
	case Rewrite:
		o["permissionDecision"] = "allow"
		o["updatedInput"] = d.Input
	default:
		o["permissionDecision"] = "deny"
	}
	return map[string]any{"hookSpecificOutput": o}
}

// renderCodex answers in Claude Code's shape, which Codex reads, but for
// one difference: Codex refuses a plain allow (it takes permissionDecision
// allow only with updatedInput), so a call plan mode lets through as it
// is gets no decision, and Codex's own permissions apply to it.
func renderCodex(c Call, d Decision) any {
	if d.Outcome == Allow {
		return map[string]any{}
	}
	return renderClaude(c, d)
}

func renderGemini(d Decision) any {
	switch d.Outcome {
	case None:
		return map[string]any{}
	case Allow:
		return map[string]any{"decision": "allow"}
	case Rewrite:
		return map[string]any{"decision": "allow", "hookSpecificOutput": map[string]any{"tool_input": d.Input}}
	}
	return map[string]any{"decision": "deny", "reason": d.Reason}
}

func renderCursor(c Call, d Decision) any {
	switch d.Outcome {
	case None:
		return map[string]any{}
	case Allow:
		return map[string]any{"permission": "allow"}
	case Rewrite:
		if c.Event == cursorPreTool {
			return map[string]any{"permission": "allow", "updated_input": d.Input}
		}
	}
	return map[string]any{"permission": "deny", "user_message": "planserver: " + firstSentence(d.Reason), "agent_message": d.Reason}
}

func renderOpenCode(d Decision) any {
	o := map[string]any{"decision": d.Outcome.String()}
	if d.Reason != "" {
		o["reason"] = d.Reason
	}
	if d.Outcome == Rewrite {
		o["decision"] = "allow"
		o["args"] = d.Input
	}
	return o
}

func firstSentence(s string) string {
	if i := strings.Index(s, ". "); i > 0 && i < 300 {
		return s[:i+1]
	}
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}

// IsInputError reports whether err is an input the adapter could not
// read.
func IsInputError(err error) bool {
	var ie *InputError
	return errors.As(err, &ie)
}
