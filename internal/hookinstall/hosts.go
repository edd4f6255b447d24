package hookinstall

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/planserver/planserver/integrations/opencode"
	"github.com/planserver/planserver/internal/hosthook"
)

// MCPName is the name the installer gives planserver's MCP server in a
// host's configuration: the model sees its tools as mcp__planserver__…
// (Claude Code), mcp_planserver_… (Gemini CLI), planserver_… (opencode).
const MCPName = "planserver"

// The hook events of each host, before a tool runs and after. Cursor's are
// hosthook.CursorEvents and hosthook.CursorAfterEvents.
var (
	claudeBefore = []string{"PreToolUse"}
	claudeAfter  = []string{"PostToolUse", "PostToolUseFailure"}
	geminiBefore = []string{"BeforeTool"}
	geminiAfter  = []string{"AfterTool"}
)

// fileChange is one file an install or uninstall writes: its text before
// and after ("" after: the file is removed).
type fileChange struct {
	path, before, after string
	// secret files are written with mode 0600 and never shown in a diff.
	secret bool
}

// paths are where a host keeps what the installer edits, for a scope.
type paths struct {
	// settings holds the hooks (opencode: the plugin file).
	settings string
	// mcp holds the MCP server; mcpAt is the member path to the table of
	// servers in it.
	mcp   string
	mcpAt []string
}

// pathsFor says where host h keeps its hooks and MCP servers for scope
// ("project": in base; "user": in home; configHome is
// $XDG_CONFIG_HOME, opencode's home; claudeDir is $CLAUDE_CONFIG_DIR).
func pathsFor(h hosthook.Host, scope, base, home, configHome, claudeDir string) paths {
	user := scope == "user"
	switch h {
	case hosthook.ClaudeCode:
		// The MCP server goes where claude mcp add puts it, private to the
		// user: ~/.claude.json, for the project (its "local" scope) or for
		// every project (its "user" scope). A project's .mcp.json would
		// need each user's approval first.
		state := filepath.Join(home, ".claude.json")
		settings := filepath.Join(home, ".claude", "settings.json")
		if claudeDir != "" {
			state, settings = filepath.Join(claudeDir, ".claude.json"), filepath.Join(claudeDir, "settings.json")
		}
		if user {
			return paths{settings: settings, mcp: state, mcpAt: []string{"mcpServers"}}
		}
		return paths{settings: filepath.Join(base, ".claude", "settings.json"), mcp: state, mcpAt: []string{"projects", base, "mcpServers"}}
	case hosthook.GeminiCLI:
		dir := filepath.Join(base, ".gemini")
		if user {
			dir = filepath.Join(home, ".gemini")
		}
		return paths{settings: filepath.Join(dir, "settings.json"), mcp: filepath.Join(dir, "settings.json"), mcpAt: []string{"mcpServers"}}
	case hosthook.Cursor:
		dir := filepath.Join(base, ".cursor")
		if user {
			dir = filepath.Join(home, ".cursor")
		}
		return paths{settings: filepath.Join(dir, "hooks.json"), mcp: filepath.Join(dir, "mcp.json"), mcpAt: []string{"mcpServers"}}
	}
	dir := filepath.Join(base, ".opencode")
	if user {
		dir = filepath.Join(configHome, "opencode")
	}
	return paths{settings: filepath.Join(dir, "plugin", "planserver.js"), mcp: filepath.Join(dir, "opencode.json"), mcpAt: []string{"mcp"}}
}

// editHooks takes every hook of ours out of settings root and, on install,
// adds before and after: Claude Code's and Gemini CLI's matcher groups,
// Cursor's flat lists. Whatever else is there is kept, in its order.
func editHooks(root *object, h hosthook.Host, install bool, before, after string) error {
	hooksObj, err := root.child("hooks")
	if err != nil {
		return err
	}
	switch h {
	case hosthook.ClaudeCode:
		for _, ev := range claudeBefore {
			entry := map[string]any{"matcher": "*", "hooks": []map[string]any{{"type": "command", "command": before, "timeout": 10}}}
			if err := editGroups(hooksObj, ev, h, install, entry); err != nil {
				return err
			}
		}
		for _, ev := range claudeAfter {
			entry := map[string]any{"matcher": "*", "hooks": []map[string]any{{"type": "command", "command": after, "timeout": 10}}}
			if err := editGroups(hooksObj, ev, h, install, entry); err != nil {
				return err
			}
		}
	case hosthook.GeminiCLI:
		// Gemini CLI's timeout is in milliseconds; a hook's name is how
		// its /hooks command and hooksConfig.disabled name it.
		for _, ev := range geminiBefore {
			entry := map[string]any{"matcher": ".*", "hooks": []map[string]any{{"type": "command", "name": "planserver",
				"command": before, "timeout": 10000}}}
			if err := editGroups(hooksObj, ev, h, install, entry); err != nil {
				return err
			}
		}
		for _, ev := range geminiAfter {
			entry := map[string]any{"matcher": ".*", "hooks": []map[string]any{{"type": "command", "name": "planserver-report",
				"command": after, "timeout": 10000}}}
			if err := editGroups(hooksObj, ev, h, install, entry); err != nil {
				return err
			}
		}
	case hosthook.Cursor:
		if install && !root.has("version") {
			root.set("version", json.RawMessage("1"))
		}
		for _, ev := range hosthook.CursorEvents {
			if err := editFlat(hooksObj, ev, h, install, map[string]any{"command": before}); err != nil {
				return err
			}
		}
		for _, ev := range hosthook.CursorAfterEvents {
			if err := editFlat(hooksObj, ev, h, install, map[string]any{"command": after}); err != nil {
				return err
			}
		}
	}
	root.setChild("hooks", hooksObj, true)
	if h == hosthook.Cursor && !install && len(root.keys) == 1 && root.has("version") {
		root.remove("version") // only what install wrote was left
	}
	return nil
}

// editGroups edits the matcher groups of event (Claude Code, Gemini CLI:
// [{matcher, hooks: [{type, command}]}]): every hook of ours is removed
// (a group left empty goes with it), and install appends entry.
func editGroups(h *object, event string, host hosthook.Host, install bool, entry map[string]any) error {
	var groups []map[string]json.RawMessage
	if raw, ok := h.vals[event]; ok {
		if err := json.Unmarshal(raw, &groups); err != nil {
			return fmt.Errorf("hooks.%s is not a list of matcher groups: %v", event, err)
		}
	}
	var kept []any
	for _, g := range groups {
		var list []map[string]json.RawMessage
		if raw, ok := g["hooks"]; ok {
			if err := json.Unmarshal(raw, &list); err != nil {
				return fmt.Errorf("hooks.%s[].hooks is not a list: %v", event, err)
			}
		}
		var rest []map[string]json.RawMessage
		for _, hk := range list {
			if !oursRaw(hk["command"], host) {
				rest = append(rest, hk)
			}
		}
		if len(rest) == len(list) {
			kept = append(kept, orderedGroup(g))
			continue
		}
		if len(rest) == 0 {
			continue
		}
		raw, _ := json.Marshal(rest)
		g["hooks"] = raw
		kept = append(kept, orderedGroup(g))
	}
	if install {
		kept = append(kept, entry)
	}
	return h.setList(event, kept)
}

// orderedGroup keeps a matcher group's members in a stable, readable
// order: matcher first.
func orderedGroup(g map[string]json.RawMessage) *object {
	o := &object{}
	for _, k := range []string{"matcher", "hooks"} {
		if v, ok := g[k]; ok {
			o.set(k, v)
		}
	}
	for k, v := range g {
		if k != "matcher" && k != "hooks" {
			o.set(k, v)
		}
	}
	return o
}

// editFlat edits a flat hook list (Cursor: {event: [{command}]}).
func editFlat(h *object, event string, host hosthook.Host, install bool, entry map[string]any) error {
	var list []map[string]json.RawMessage
	if raw, ok := h.vals[event]; ok {
		if err := json.Unmarshal(raw, &list); err != nil {
			return fmt.Errorf("hooks.%s is not a list: %v", event, err)
		}
	}
	var kept []any
	for _, hk := range list {
		if !oursRaw(hk["command"], host) {
			kept = append(kept, hk)
		}
	}
	if install {
		kept = append(kept, entry)
	}
	return h.setList(event, kept)
}

func oursRaw(raw json.RawMessage, host hosthook.Host) bool {
	var c string
	_ = json.Unmarshal(raw, &c)
	_, ok := parseCommand(c, host)
	return ok
}

// hookCommands returns the commands of ours in settings root: by event,
// for doctor.
func hookCommands(root *object, h hosthook.Host) map[string]string {
	out := map[string]string{}
	hooksObj, err := root.child("hooks")
	if err != nil {
		return out
	}
	for _, ev := range hooksObj.keys {
		var raw []map[string]json.RawMessage
		if json.Unmarshal(hooksObj.vals[ev], &raw) != nil {
			continue
		}
		for _, item := range raw {
			list := []map[string]json.RawMessage{item}
			if g, ok := item["hooks"]; ok {
				list = nil
				_ = json.Unmarshal(g, &list)
			}
			for _, hk := range list {
				var c string
				_ = json.Unmarshal(hk["command"], &c)
				if _, ok := parseCommand(c, h); ok {
					out[ev] = c
				}
			}
		}
	}
	return out
}

// beforeEvents and afterEvents are the events whose hooks install writes.
func beforeEvents(h hosthook.Host) []string {
	switch h {
	case hosthook.ClaudeCode:
		return claudeBefore
	case hosthook.GeminiCLI:
		return geminiBefore
	case hosthook.Cursor:
		return hosthook.CursorEvents
	}
	return nil
}

func afterEvents(h hosthook.Host) []string {
	switch h {
	case hosthook.ClaudeCode:
		return claudeAfter
	case hosthook.GeminiCLI:
		return geminiAfter
	case hosthook.Cursor:
		return hosthook.CursorAfterEvents
	}
	return nil
}

// mcpEntry is planserver's MCP server as host h configures one: the URL of
// /mcp and the headers that bind it to the session (and carry the token,
// where the host can read it from a file).
func mcpEntry(h hosthook.Host, url string, headers map[string]string, headersHelper string) map[string]any {
	e := map[string]any{}
	switch h {
	case hosthook.ClaudeCode:
		e["type"], e["url"] = "http", url
		if headersHelper != "" {
			e["headersHelper"] = headersHelper
		}
	case hosthook.GeminiCLI:
		// httpUrl is streamable HTTP (url would be SSE).
		e["httpUrl"] = url
	case hosthook.Cursor:
		e["url"] = url
	case hosthook.OpenCode:
		e["type"], e["url"], e["enabled"] = "remote", url, true
	}
	if len(headers) > 0 {
		e["headers"] = headers
	}
	return e
}

// editMCP sets (install) or removes the MCP server named name at the member
// path at in root. prev is the entry a past install added (nil when none
// did): install replaces only that, or adds one where there is none, and
// keeps a server of the same name the user configured; uninstall removes
// it only while it is still what install wrote. It returns the entry it
// wrote (nil when it kept the user's) and what it did, for the user.
func editMCP(root *object, at []string, name string, install bool, entry any, prev json.RawMessage) (json.RawMessage, string, error) {
	chain := []*object{root}
	for _, k := range at {
		c, err := chain[len(chain)-1].child(k)
		if err != nil {
			return nil, "", err
		}
		chain = append(chain, c)
	}
	servers := chain[len(chain)-1]
	cur, exists := servers.vals[name]
	ours := exists && prev != nil && sameJSON(cur, prev)
	var wrote json.RawMessage
	note := ""
	switch {
	case install && exists && !ours:
		note = fmt.Sprintf("kept the MCP server %q already configured (not written by planserver hook install)", name)
	case install:
		raw, err := json.Marshal(entry)
		if err != nil {
			return nil, "", err
		}
		servers.set(name, raw)
		wrote = raw
	case exists && ours:
		servers.remove(name)
	case exists:
		note = fmt.Sprintf("left the MCP server %q: install did not write it, or it was changed since", name)
	}
	for i := len(at) - 1; i >= 0; i-- {
		chain[i].setChild(at[i], chain[i+1], !install)
	}
	return wrote, note, nil
}

// editJSONFile reads path as a JSON object, applies edit, and returns the
// change (nil when the file would not change). An absent or empty file is
// an empty object; remove says an object left empty is removed (a file
// only install wrote).
func editJSONFile(path string, remove bool, edit func(*object) error) (*fileChange, error) {
	before, err := readIfExists(path)
	if err != nil {
		return nil, err
	}
	root := &object{}
	if strings.TrimSpace(before) != "" {
		if err := json.Unmarshal([]byte(before), root); err != nil {
			return nil, fmt.Errorf("%s is not a JSON object (%v): fix it first; nothing was changed", path, err)
		}
	}
	if err := edit(root); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var after string
	if !(remove && len(root.keys) == 0) {
		if after, err = indent(root, before); err != nil {
			return nil, err
		}
	}
	if strings.TrimSpace(before) == "" && after == "" || after == before {
		return nil, nil
	}
	return &fileChange{path: path, before: before, after: after}, nil
}

// pluginChange installs or removes opencode's plugin file, refusing to
// touch a file of the same name that is not planserver's.
func pluginChange(path string, install bool, cfg opencode.Config) (*fileChange, error) {
	before, err := readIfExists(path)
	if err != nil {
		return nil, err
	}
	if before != "" && !strings.Contains(before, opencode.Marker) {
		return nil, fmt.Errorf("%s exists and is not planserver's plugin; move it away first", path)
	}
	after := ""
	if install {
		after = opencode.Configured(cfg)
	}
	if after == before {
		return nil, nil
	}
	return &fileChange{path: path, before: before, after: after}, nil
}

func readIfExists(path string) (string, error) {
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	return string(raw), err
}
