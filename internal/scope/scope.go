// Package scope owns what a plan says it will touch, and so what a human
// who approves it grants: the files and folders it will change (globs
// relative to the project), the commands it will run, and the network it
// needs (host:port). A session plan declares its scope in a fenced block
// whose info string is `scope`, holding YAML; a shared plan's scope is the
// union of its steps' `files` and `commands`. The package parses and
// validates a scope, says whether a path lies inside one, compares two
// revisions' scopes, and chains an approved scope with its ancestors' so
// that a sub-session's is never wider. It is pure: no I/O.
package scope

import (
	"bytes"
	"fmt"
	"net"
	"path"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/bmatcuk/doublestar/v4"
	"gopkg.in/yaml.v3"

	"github.com/planserver/planserver/api"
)

// Scope is what a plan will touch.
type Scope struct {
	// Files are globs, relative to the project, of the files and folders
	// the plan will change ("src/app.go", "docs/**", "internal/*/store.go").
	Files []string `json:"files" yaml:"files"`
	// Commands are the commands the plan will run, as the plan says them.
	Commands []string `json:"commands" yaml:"commands"`
	// Connect are the host:port pairs the plan needs to reach.
	Connect []string `json:"connect" yaml:"connect"`
}

// Limits keep a scope something a person can read in ten seconds.
const (
	MaxEntries   = 100
	MaxEntryLen  = 512
	MaxBlockSize = 16 << 10
)

// Empty says the scope grants nothing.
func (s Scope) Empty() bool { return len(s.Files) == 0 && len(s.Commands) == 0 && len(s.Connect) == 0 }

// FenceInfo is the info string of a session plan's scope block.
const FenceInfo = "scope"

// FromMarkdown finds the scope a session plan declares: the YAML of its
// fenced blocks whose info string is `scope` (```scope or ~~~scope), merged
// when there are several. It returns nil when the plan declares none, and
// the problems of a declared scope that does not parse or validate, each
// naming its field ("scope.files[2]").
func FromMarkdown(markdown string) (*Scope, []api.FieldError) {
	blocks := fencedBlocks(markdown, FenceInfo)
	if len(blocks) == 0 {
		return nil, nil
	}
	var all Scope
	var problems []api.FieldError
	for i, b := range blocks {
		field := "scope"
		if len(blocks) > 1 {
			field = fmt.Sprintf("scope (block %d)", i+1)
		}
		s, errs := parseBlock(b, field)
		problems = append(problems, errs...)
		all = Union(all, s)
	}
	problems = append(problems, all.Validate("scope")...)
	if len(problems) > 0 {
		return nil, problems
	}
	return &all, nil
}

// parseBlock reads one block's YAML strictly: a mapping of the three
// fields, each a list of strings, nothing else.
func parseBlock(text, field string) (Scope, []api.FieldError) {
	if len(text) > MaxBlockSize {
		return Scope{}, []api.FieldError{{Field: field, Message: fmt.Sprintf("is %d bytes; a scope block may hold at most %d", len(text), MaxBlockSize)}}
	}
	if strings.TrimSpace(text) == "" {
		return Scope{}, []api.FieldError{{Field: field, Message: "is empty: list files, commands or connect"}}
	}
	var raw map[string]yaml.Node
	dec := yaml.NewDecoder(strings.NewReader(text))
	if err := dec.Decode(&raw); err != nil {
		return Scope{}, []api.FieldError{{Field: field, Message: "is not a YAML mapping of files, commands and connect: " + yamlMessage(err)}}
	}
	var s Scope
	var problems []api.FieldError
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		node := raw[k]
		var into *[]string
		switch k {
		case "files":
			into = &s.Files
		case "commands":
			into = &s.Commands
		case "connect":
			into = &s.Connect
		default:
			problems = append(problems, api.FieldError{Field: field + "." + k, Message: "is not a field of a scope: use files, commands and connect"})
			continue
		}
		list, msg := stringList(&node)
		if msg != "" {
			problems = append(problems, api.FieldError{Field: field + "." + k, Message: msg})
			continue
		}
		*into = list
	}
	return s, problems
}

// stringList reads a YAML sequence of strings (a single string is a list
// of one).
func stringList(n *yaml.Node) ([]string, string) {
	switch n.Kind {
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return nil, ""
		}
		return []string{n.Value}, ""
	case yaml.SequenceNode:
		out := make([]string, 0, len(n.Content))
		for i, item := range n.Content {
			if item.Kind != yaml.ScalarNode || item.Tag == "!!null" {
				return nil, fmt.Sprintf("item %d is not a string", i+1)
			}
			out = append(out, item.Value)
		}
		return out, ""
	}
	return nil, "must be a list of strings"
}

// yamlMessage is a YAML error without the library's type names.
func yamlMessage(err error) string {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if i := strings.Index(msg, "cannot unmarshal"); i >= 0 {
		return "the block must be a mapping (files:, commands:, connect:)"
	}
	return msg
}

// Validate reports every problem of s, each naming its field under
// prefix: files that are absolute, climb out with "..", match everything,
// or are not valid globs; commands that are blank or too long; connect
// entries that are not host:port; more than MaxEntries of any.
func (s Scope) Validate(prefix string) []api.FieldError {
	var problems []api.FieldError
	add := func(field, format string, args ...any) {
		problems = append(problems, api.FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
	}
	for name, list := range map[string][]string{"files": s.Files, "commands": s.Commands, "connect": s.Connect} {
		if len(list) > MaxEntries {
			add(prefix+"."+name, "has %d entries; a scope may list at most %d", len(list), MaxEntries)
		}
	}
	for i, f := range s.Files {
		if msg := checkGlob(f); msg != "" {
			add(fmt.Sprintf("%s.files[%d]", prefix, i), "%s", msg)
		}
	}
	for i, c := range s.Commands {
		if msg := checkText(c); msg != "" {
			add(fmt.Sprintf("%s.commands[%d]", prefix, i), "%s", msg)
		}
	}
	for i, c := range s.Connect {
		if _, _, msg := ParseHostPort(c); msg != "" {
			add(fmt.Sprintf("%s.connect[%d]", prefix, i), "%s", msg)
		}
	}
	slices.SortFunc(problems, func(a, b api.FieldError) int { return strings.Compare(a.Field, b.Field) })
	return problems
}

func checkText(s string) string {
	switch {
	case strings.TrimSpace(s) == "":
		return "must not be blank"
	case len(s) > MaxEntryLen:
		return fmt.Sprintf("is %d bytes; at most %d", len(s), MaxEntryLen)
	case !utf8.ValidString(s):
		return "must be UTF-8 text"
	case strings.ContainsAny(s, "\x00\r\n"):
		return "must be one line"
	}
	return ""
}

// probes are paths of every shape a project holds: a glob that matches all
// of them matches everything, and grants the whole project.
var probes = []string{"a", "README.md", ".env", "x.go", "dir/a", "dir/sub/b.md", ".git/config", "z/y/x/w.txt"}

// topProbes are the files at the top of a project: a glob that matches all
// of them grants every one (README.md, go.mod, .env, ...).
var topProbes = []string{"a", "README.md", ".env", "x.go", "Makefile"}

func matchesAll(glob string, paths []string) bool {
	for _, p := range paths {
		if ok, _ := doublestar.Match(glob, p); !ok {
			return false
		}
	}
	return true
}

// checkGlob says what is wrong with a files entry, or "".
func checkGlob(g string) string {
	if msg := checkText(g); msg != "" {
		return msg
	}
	switch {
	case strings.HasPrefix(g, "/") || strings.HasPrefix(g, "~"):
		return fmt.Sprintf("%q is absolute: name files relative to the project", g)
	case strings.Contains(g, "\\"):
		return fmt.Sprintf("%q holds a backslash: use / between folders, and no escapes", g)
	}
	for _, seg := range strings.Split(g, "/") {
		if seg == ".." {
			return fmt.Sprintf("%q climbs out with ..: name files inside the project", g)
		}
	}
	if !doublestar.ValidatePattern(g) {
		return fmt.Sprintf("%q is not a valid glob", g)
	}
	clean := Clean(g)
	if clean == "" || clean == "." {
		return fmt.Sprintf("%q names the whole project: list the files and folders the plan changes", g)
	}
	if matchesAll(clean, probes) {
		return fmt.Sprintf("%q matches everything: list the files and folders the plan changes", g)
	}
	if matchesAll(clean, topProbes) {
		return fmt.Sprintf("%q matches every file at the top of the project: list the files the plan changes", g)
	}
	return ""
}

// Clean is a files entry in its canonical form: "./" and repeated slashes
// gone, and a trailing "/" (a folder) read as the folder and all beneath
// it ("docs/" is "docs/**").
func Clean(g string) string {
	folder := strings.HasSuffix(g, "/")
	c := path.Clean("/" + g)[1:]
	if folder && c != "" {
		c += "/**"
	}
	return c
}

// Allows says whether the path rel (relative to the project, slash
// separated, already cleaned of "..") lies inside s: a file matched by a
// files entry, or beneath a folder one names.
func (s Scope) Allows(rel string) bool {
	rel = path.Clean("/" + rel)[1:]
	if rel == "" {
		return false
	}
	for _, g := range s.Files {
		c := Clean(g)
		if ok, _ := doublestar.Match(c, rel); ok {
			return true
		}
		// "src" names the folder too: everything beneath it.
		if !strings.ContainsAny(c, "*?[{") && strings.HasPrefix(rel, c+"/") {
			return true
		}
	}
	return false
}

// ParseHostPort reads a connect entry: host:port with a port from 1 to
// 65535 and a host that is an IP address or a DNS name.
func ParseHostPort(s string) (host string, port uint16, msg string) {
	h, p, err := net.SplitHostPort(strings.TrimSpace(s))
	if err != nil || h == "" {
		return "", 0, fmt.Sprintf("%q is not host:port", s)
	}
	n, err := strconv.ParseUint(p, 10, 16)
	if err != nil || n == 0 {
		return "", 0, fmt.Sprintf("%q: the port must be a number from 1 to 65535", s)
	}
	if net.ParseIP(h) == nil && !hostname(h) {
		return "", 0, fmt.Sprintf("%q: %q is neither an IP address nor a host name", s, h)
	}
	return h, uint16(n), ""
}

// hostname reports whether h is a DNS name: dot-separated labels of
// letters, digits and hyphens. internal/sandbox's hostName is the same
// rule, kept there because the sandbox binary may link nothing of this
// package's (TestSandboxBinaryStaysLean).
func hostname(h string) bool {
	if len(h) > 253 {
		return false
	}
	for _, label := range strings.Split(strings.TrimSuffix(h, "."), ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
				return false
			}
		}
	}
	return true
}

// Union is every entry of a and b, each once, in first-seen order.
func Union(a, b Scope) Scope {
	return Scope{Files: merge(a.Files, b.Files), Commands: merge(a.Commands, b.Commands), Connect: merge(a.Connect, b.Connect)}
}

func merge(a, b []string) []string {
	var out []string
	for _, s := range append(append([]string(nil), a...), b...) {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// Change is what one scope adds to and removes from another, field by
// field: what a reviewer reads to see what a revision asks for anew.
type Change struct {
	Added   Scope `json:"added"`
	Removed Scope `json:"removed"`
}

// Diff is the change from old to new (either may be nil: no scope).
func Diff(old, new *Scope) Change {
	var o, n Scope
	if old != nil {
		o = *old
	}
	if new != nil {
		n = *new
	}
	return Change{
		Added:   Scope{Files: minus(n.Files, o.Files), Commands: minus(n.Commands, o.Commands), Connect: minus(n.Connect, o.Connect)},
		Removed: Scope{Files: minus(o.Files, n.Files), Commands: minus(o.Commands, n.Commands), Connect: minus(o.Connect, n.Connect)},
	}
}

func minus(a, b []string) []string {
	out := []string{}
	for _, s := range a {
		if !slices.Contains(b, s) {
			out = append(out, s)
		}
	}
	return out
}

// Chain is the scopes in force for a session, its own approved one and
// its ancestors': a path is allowed only where every one of them allows
// it, so a sub-session's scope is never wider than its parent's. An empty
// chain limits nothing (full build).
type Chain []Scope

// Allows says whether every scope of the chain allows rel.
func (c Chain) Allows(rel string) bool {
	for _, s := range c {
		if !s.Allows(rel) {
			return false
		}
	}
	return true
}

// Connect is the host:port pairs every scope of the chain lists (nil when
// the chain is empty: no limit).
func (c Chain) Connect() []string {
	if len(c) == 0 {
		return nil
	}
	out := append([]string{}, c[0].Connect...)
	for _, s := range c[1:] {
		out = slices.DeleteFunc(out, func(e string) bool { return !slices.Contains(s.Connect, e) })
	}
	return out
}

// Files is the files entries of the chain's scopes that every scope
// allows, each in its canonical form (Clean), once: what a sandbox may
// open for the chain. A glob entry is kept only where every scope's globs
// match its text as a path ("src/**" keeps "src/**/*.go", "src/app.go"
// does not), so the result is never wider than any one scope; nil when
// the chain is empty.
func (c Chain) Files() []string {
	var out []string
	for _, s := range c {
		for _, f := range s.Files {
			g := Clean(f)
			if !slices.Contains(out, g) && c.Allows(g) {
				out = append(out, g)
			}
		}
	}
	return out
}

// Summary says a scope in one line a person reads in seconds: "files
// src/app.go, docs/**; commands go test ./...; network none".
func (s Scope) Summary() string {
	list := func(l []string) string {
		if len(l) == 0 {
			return "none"
		}
		if len(l) > 8 {
			return strings.Join(l[:8], ", ") + fmt.Sprintf(" and %d more", len(l)-8)
		}
		return strings.Join(l, ", ")
	}
	return "files " + list(s.Files) + "; commands " + list(s.Commands) + "; network " + list(s.Connect)
}

// fencedBlocks returns the contents of markdown's fenced code blocks whose
// info string's first word is info (CommonMark: ``` or ~~~, three or more,
// up to three spaces of indent; the block ends at a fence of the same
// character at least as long, or at the end).
func fencedBlocks(markdown, info string) []string {
	var out []string
	lines := strings.SplitAfter(markdown, "\n")
	for i := 0; i < len(lines); i++ {
		fence, word, ok := openFence(lines[i])
		if !ok {
			continue
		}
		var body bytes.Buffer
		j := i + 1
		for ; j < len(lines); j++ {
			if closesFence(lines[j], fence) {
				break
			}
			body.WriteString(lines[j])
		}
		if word == info {
			out = append(out, body.String())
		}
		i = j
	}
	return out
}

func openFence(line string) (fence, word string, ok bool) {
	t := strings.TrimRight(line, "\r\n")
	indent := len(t) - len(strings.TrimLeft(t, " "))
	if indent > 3 {
		return "", "", false
	}
	t = t[indent:]
	for _, ch := range []byte{'`', '~'} {
		n := 0
		for n < len(t) && t[n] == ch {
			n++
		}
		if n < 3 {
			continue
		}
		rest := strings.TrimSpace(t[n:])
		if ch == '`' && strings.Contains(rest, "`") {
			return "", "", false
		}
		word, _, _ = strings.Cut(rest, " ")
		return t[:n], word, true
	}
	return "", "", false
}

func closesFence(line, fence string) bool {
	t := strings.TrimRight(line, "\r\n")
	indent := len(t) - len(strings.TrimLeft(t, " "))
	if indent > 3 {
		return false
	}
	t = strings.TrimRight(t[indent:], " \t")
	n := 0
	for n < len(t) && t[n] == fence[0] {
		n++
	}
	return n >= len(fence) && n == len(t)
}
