// Package hosthookproto holds the facts of the host-hook protocol that both of
// its ends need: the server that decides (internal/hosthook,
// internal/hosthookservice, internal/http) and the clients a host starts
// (internal/hosthookwire, planserver-hook, internal/hosthookcmd). It is a leaf of
// constants, so that the lean planserver-hook can link it and the server
// need not link a client to know them.
package hosthookproto

// AdapterHeader names the adapter that asks POST /v1/hooks/{host}:
// planserver hook and planserver-hook send "command", the opencode plugin
// "plugin"; a host calling the HTTP form directly sends none ("http").
const AdapterHeader = "Planserver-Hook-Adapter"

// MaxInput bounds one hook input. A host sends a Write call's whole file
// content, so it is generous; a larger input is refused (fail closed).
const MaxInput = 8 << 20

// ReportEvents are each host's hook events that report a tool run after it
// ran (hooks reads them as reports): never answered with a denial, since
// the tool ran already.
var ReportEvents = map[string][]string{
	"claude-code": {"PostToolUse", "PostToolUseFailure"},
	"codex":       {"PostToolUse"},
	"gemini-cli":  {"AfterTool"},
	"cursor":      {"afterShellExecution", "afterMCPExecution", "postToolUse"},
	"opencode":    {"tool.execute.after"},
}
