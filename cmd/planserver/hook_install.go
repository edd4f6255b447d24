package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/planserver/planserver/integrations/opencode"
	"github.com/planserver/planserver/internal/cliflag"
	"github.com/planserver/planserver/internal/diff"
	"github.com/planserver/planserver/internal/hookcmd"
	"github.com/planserver/planserver/internal/hooks"
)

// hookInstall is planserver hook install|uninstall HOST: it merges the
// hook into the host's settings (or copies the opencode plugin), touching
// nothing of the user's own; uninstall removes only what install added.
func hookInstall(verb string, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	name := "planserver hook " + verb
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return usageError(stderr, name, "name the host: claude-code, gemini-cli, cursor or opencode")
	}
	host, err := hooks.ParseHost(args[0])
	if err != nil {
		return usageError(stderr, name, err.Error())
	}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var scope, session, parent string
	var dryRun bool
	fs.StringVar(&scope, "scope", "project", "`scope`: project (the settings in the current directory) or user (your home directory's)")
	fs.StringVar(&session, "session", "", "the `session` the hook acts for (else PLANSERVER_SESSION when the host runs it)")
	fs.StringVar(&parent, "parent", "", "bind each host conversation to a child of this `session`")
	fs.BoolVar(&dryRun, "dry-run", false, "print the change as a diff and write nothing")
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, hookcmd.Usage)
			printHelp(stdout, fs)
			return errHelp
		}
		return usageError(stderr, name, cliflag.ErrorText(err))
	}
	if fs.NArg() > 0 {
		return usageError(stderr, name, fmt.Sprintf("unexpected argument %q", fs.Arg(0)))
	}
	if session != "" && parent != "" {
		return usageError(stderr, name, "give --session or --parent, not both")
	}
	if scope != "project" && scope != "user" {
		return usageError(stderr, name, fmt.Sprintf("--scope is %q: want project or user", scope))
	}
	base, err := os.Getwd()
	if scope == "user" {
		base = getenv("HOME")
		if base == "" {
			base, err = os.UserHomeDir()
		}
	}
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find planserver's own path for the hook command: %w", err)
	}
	spec := installSpec{host: host, scope: scope, base: base, exe: self, hookExe: leanHookBeside(self), session: session, parent: parent}
	path, before, after, err := spec.change(verb == "install")
	if err != nil {
		return err
	}
	if before == after {
		fmt.Fprintf(stdout, "%s: nothing to change\n", path)
		return nil
	}
	if dryRun {
		fmt.Fprint(stdout, diff.Unified(path+" (now)", path+" (after "+verb+")", diff.Hunks(diff.Lines(before), diff.Lines(after))))
		return nil
	}
	if verb == "uninstall" && after == "" {
		if err := os.Remove(path); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "removed %s\n", path)
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := writeFileAtomic(path, []byte(after)); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%sed the planserver hook for %s in %s\n", verb, host, path)
	if session == "" && parent == "" && verb == "install" {
		fmt.Fprintln(stdout, "The hook takes its session from PLANSERVER_SESSION (or PLANSERVER_PARENT) in the host's environment.")
	}
	return nil
}

// installSpec is one install or uninstall.
type installSpec struct {
	host             hooks.Host
	scope, base, exe string
	// hookExe is the lean planserver-hook beside exe, "" when there is none.
	hookExe         string
	session, parent string
}

// leanHookName is the lean hook binary's name (cmd/planserver-hook).
const leanHookName = "planserver-hook"

// leanHookBeside returns the lean hook binary in planserver's own
// directory, as make build and the release put it, or "" when there is no
// executable one there.
func leanHookBeside(self string) string {
	path := filepath.Join(filepath.Dir(self), leanHookName)
	if fi, err := os.Stat(path); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return ""
	}
	return path
}

// command is the hook's command line for the host's settings: the lean
// planserver-hook where it sits beside planserver (a host starts the hook
// before every tool call, and it starts in a fraction of planserver's
// time), else planserver hook. It carries no token: the hook reads
// PLANSERVER_TOKEN or --token-file.
func (s installSpec) command() string {
	parts := []string{shellQuote(s.exe), "hook", string(s.host)}
	if s.hookExe != "" {
		parts = []string{shellQuote(s.hookExe), string(s.host)}
	}
	if s.session != "" {
		parts = append(parts, "--session", shellQuote(s.session))
	}
	if s.parent != "" {
		parts = append(parts, "--parent", shellQuote(s.parent))
	}
	return strings.Join(parts, " ")
}

// shellQuote quotes s for a POSIX shell when it needs quoting.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+=:,@", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// ours reports whether a hook command is one planserver hook install
// wrote for host: planserver's binary running "hook HOST", or the lean
// planserver-hook running "HOST".
func ours(command string, host hooks.Host) bool {
	f := strings.Fields(command)
	if len(f) < 2 {
		return false
	}
	name := filepath.Base(strings.Trim(f[0], `'"`))
	if name == leanHookName {
		return f[1] == string(host)
	}
	return len(f) >= 3 && strings.Contains(name, "planserver") && f[1] == "hook" && f[2] == string(host)
}

// change returns the settings file and its text before and after.
func (s installSpec) change(install bool) (path, before, after string, err error) {
	switch s.host {
	case hooks.OpenCode:
		dir := filepath.Join(s.base, ".opencode", "plugin")
		if s.scope == "user" {
			dir = filepath.Join(s.base, ".config", "opencode", "plugin")
		}
		path = filepath.Join(dir, "planserver.js")
		before, err = readIfExists(path)
		if err != nil {
			return
		}
		if before != "" && !strings.Contains(before, opencode.Marker) {
			return path, before, before, fmt.Errorf("%s exists and is not planserver's plugin; move it away first", path)
		}
		if install {
			after = opencode.Configured(s.session, s.parent)
		}
		return path, before, after, nil
	case hooks.ClaudeCode:
		path = filepath.Join(s.base, ".claude", "settings.json")
	case hooks.GeminiCLI:
		path = filepath.Join(s.base, ".gemini", "settings.json")
	case hooks.Cursor:
		path = filepath.Join(s.base, ".cursor", "hooks.json")
	}
	if before, err = readIfExists(path); err != nil {
		return
	}
	root := &object{}
	if strings.TrimSpace(before) != "" {
		if err = json.Unmarshal([]byte(before), root); err != nil {
			return path, before, before, fmt.Errorf("%s is not a JSON object (%v): fix it first, nothing was changed", path, err)
		}
	}
	if err = s.edit(root, install); err != nil {
		return path, before, before, fmt.Errorf("%s: %w", path, err)
	}
	if strings.TrimSpace(before) == "" && !install {
		return path, before, before, nil
	}
	raw, err := json.Marshal(root)
	if err != nil {
		return
	}
	var out bytes.Buffer
	if err = json.Indent(&out, raw, "", "  "); err != nil {
		return
	}
	after = out.String() + "\n"
	if !install && s.host == hooks.Cursor && len(root.keys) == 2 && root.has("version") && root.isEmpty("hooks") ||
		!install && len(root.keys) == 0 {
		after = "" // only what install wrote was left: remove the file
	}
	if strings.TrimSpace(before) != "" {
		// Unchanged content keeps its formatting.
		var a, b bytes.Buffer
		if json.Compact(&a, []byte(before)) == nil && json.Compact(&b, []byte(after)) == nil && a.String() == b.String() {
			after = before
		}
	}
	return path, before, after, nil
}

// edit adds or removes the hook in the settings root.
func (s installSpec) edit(root *object, install bool) error {
	hooksObj, err := root.child("hooks")
	if err != nil {
		return err
	}
	cmd := s.command()
	switch s.host {
	case hooks.ClaudeCode:
		entry := map[string]any{"matcher": "*", "hooks": []map[string]any{{"type": "command", "command": cmd, "timeout": 10}}}
		err = editGroups(hooksObj, "PreToolUse", s.host, install, entry)
	case hooks.GeminiCLI:
		entry := map[string]any{"matcher": ".*", "hooks": []map[string]any{{"type": "command", "name": "planserver",
			"command": cmd, "timeout": 10000}}}
		err = editGroups(hooksObj, "BeforeTool", s.host, install, entry)
	case hooks.Cursor:
		if install && !root.has("version") {
			root.set("version", json.RawMessage("1"))
		}
		for _, ev := range hooks.CursorEvents {
			if err = editFlat(hooksObj, ev, s.host, install, map[string]any{"command": cmd}); err != nil {
				return err
			}
		}
	}
	if err != nil {
		return err
	}
	if len(hooksObj.keys) == 0 && !install {
		root.remove("hooks")
		return nil
	}
	return root.setObject("hooks", hooksObj)
}

// editGroups edits the matcher groups of event (Claude Code, Gemini CLI:
// [{matcher, hooks: [{type, command}]}]): every hook of ours is removed
// (a group left empty goes with it), and install appends entry.
func editGroups(h *object, event string, host hooks.Host, install bool, entry map[string]any) error {
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
			var c string
			_ = json.Unmarshal(hk["command"], &c)
			if !ours(c, host) {
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
func editFlat(h *object, event string, host hooks.Host, install bool, entry map[string]any) error {
	var list []map[string]json.RawMessage
	if raw, ok := h.vals[event]; ok {
		if err := json.Unmarshal(raw, &list); err != nil {
			return fmt.Errorf("hooks.%s is not a list: %v", event, err)
		}
	}
	var kept []any
	for _, hk := range list {
		var c string
		_ = json.Unmarshal(hk["command"], &c)
		if !ours(c, host) {
			kept = append(kept, hk)
		}
	}
	if install {
		kept = append(kept, entry)
	}
	return h.setList(event, kept)
}

func readIfExists(path string) (string, error) {
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	return string(raw), err
}

// writeFileAtomic replaces path with data so that a crash never leaves a
// half-written settings file.
func writeFileAtomic(path string, data []byte) error {
	mode := os.FileMode(0o644)
	if st, err := os.Stat(path); err == nil {
		mode = st.Mode().Perm()
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".planserver-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// object is a JSON object that keeps its members' order, so that an
// install changes only what it must in a user's settings file.
type object struct {
	keys []string
	vals map[string]json.RawMessage
}

func (o *object) UnmarshalJSON(raw []byte) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return errors.New("not a JSON object")
	}
	o.keys, o.vals = nil, map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		k, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return err
		}
		o.set(k, v)
	}
	_, err = dec.Token()
	return err
}

func (o *object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kr, _ := json.Marshal(k)
		b.Write(kr)
		b.WriteByte(':')
		b.Write(o.vals[k])
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func (o *object) set(k string, v json.RawMessage) {
	if o.vals == nil {
		o.vals = map[string]json.RawMessage{}
	}
	if _, ok := o.vals[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.vals[k] = v
}

func (o *object) has(k string) bool { _, ok := o.vals[k]; return ok }

func (o *object) remove(k string) {
	if !o.has(k) {
		return
	}
	delete(o.vals, k)
	for i, key := range o.keys {
		if key == k {
			o.keys = append(o.keys[:i], o.keys[i+1:]...)
			break
		}
	}
}

// isEmpty reports whether member k is an empty object.
func (o *object) isEmpty(k string) bool {
	var c object
	return json.Unmarshal(o.vals[k], &c) == nil && len(c.keys) == 0
}

// child returns member k as an object (empty when absent).
func (o *object) child(k string) (*object, error) {
	c := &object{}
	if raw, ok := o.vals[k]; ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, c); err != nil {
			return nil, fmt.Errorf("%q is not a JSON object", k)
		}
	}
	return c, nil
}

func (o *object) setObject(k string, c *object) error {
	raw, err := c.MarshalJSON()
	if err != nil {
		return err
	}
	o.set(k, raw)
	return nil
}

// setList sets member k to list, or removes it when list is empty.
func (o *object) setList(k string, list []any) error {
	if len(list) == 0 {
		o.remove(k)
		return nil
	}
	raw, err := json.Marshal(list)
	if err != nil {
		return err
	}
	o.set(k, raw)
	return nil
}
