package scope

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func TestFromMarkdown(t *testing.T) {
	plan := "# Bump the version\n\n1. Change src/app.go\n\n```scope\nfiles:\n  - src/app.go\n  - docs/\ncommands: [go test ./...]\nconnect:\n  - proxy.golang.org:443\n```\n\nMore text.\n\n~~~scope\nfiles: [CHANGELOG.md, src/app.go]\n~~~\n"
	s, errs := FromMarkdown(plan)
	if len(errs) > 0 || s == nil {
		t.Fatalf("%v %v", s, errs)
	}
	want := Scope{Files: []string{"src/app.go", "docs/", "CHANGELOG.md"}, Commands: []string{"go test ./..."}, Connect: []string{"proxy.golang.org:443"}}
	if !reflect.DeepEqual(*s, want) {
		t.Fatalf("got %+v, want %+v", *s, want)
	}
	for _, none := range []string{"# plan\nno scope here\n", "```go\nfiles: [x]\n```\n", "    ```scope\n    files: [x]\n    ```\n", "```scopes\nfiles: [x]\n```\n"} {
		if s, errs := FromMarkdown(none); s != nil || errs != nil {
			t.Errorf("%q declares no scope, got %v %v", none, s, errs)
		}
	}
	// An unclosed block runs to the end, as CommonMark reads it.
	if s, errs := FromMarkdown("```scope\nfiles: [a.go]\n"); len(errs) > 0 || s == nil || s.Files[0] != "a.go" {
		t.Errorf("unclosed: %v %v", s, errs)
	}
}

func TestBadScopes(t *testing.T) {
	for _, c := range []struct{ block, field, msg string }{
		{"files: [/etc/passwd]", "scope.files[0]", "absolute"},
		{"files: [~/x]", "scope.files[0]", "absolute"},
		{"files: [src/../../x]", "scope.files[0]", "climbs out"},
		{"files: [../x]", "scope.files[0]", "climbs out"},
		{"files: ['**']", "scope.files[0]", "matches everything"},
		{"files: ['**/*']", "scope.files[0]", "matches everything"},
		{"files: ['./**']", "scope.files[0]", "matches everything"},
		{"files: ['{**,x}']", "scope.files[0]", "matches everything"},
		{"files: ['*']", "scope.files[0]", "every file at the top"},
		{"files: [.]", "scope.files[0]", "whole project"},
		{"files: ['src/[']", "scope.files[0]", "not a valid glob"},
		{"files: ['a\\\\b']", "scope.files[0]", "backslash"},
		{"files: ['']", "scope.files[0]", "blank"},
		{"commands: ['   ']", "scope.commands[0]", "blank"},
		{"connect: [example.com]", "scope.connect[0]", "not host:port"},
		{"connect: ['example.com:0']", "scope.connect[0]", "1 to 65535"},
		{"connect: ['example.com:99999']", "scope.connect[0]", "1 to 65535"},
		{"connect: ['bad host:80']", "scope.connect[0]", "neither an IP"},
		{"paths: [x]", "scope.paths", "not a field"},
		{"files: {a: b}", "scope.files", "list of strings"},
		{"files: [[a]]", "scope.files", "item 1 is not a string"},
		{"- a\n- b", "scope", "mapping"},
		{"", "scope", "empty"},
		{"files: [a", "scope", "mapping"},
	} {
		s, errs := FromMarkdown("```scope\n" + c.block + "\n```\n")
		if s != nil || len(errs) == 0 || errs[0].Field != c.field || !strings.Contains(errs[0].Message, c.msg) {
			t.Errorf("%q: %v %+v, want %s: …%s…", c.block, s, errs, c.field, c.msg)
		}
		for _, e := range errs {
			if strings.Contains(e.Message, "!!") || strings.Contains(e.Message, "<nil>") || strings.Contains(e.Message, "unmarshal") {
				t.Errorf("%q: the message leaks YAML's internals: %q", c.block, e.Message)
			}
		}
	}
	// Every problem is reported, not just the first.
	_, errs := FromMarkdown("```scope\nfiles: [/a, '**', ok.go]\nconnect: [x]\nextra: 1\n```\n")
	if len(errs) != 4 {
		t.Errorf("all problems: %+v", errs)
	}
	many := "files:\n"
	for i := 0; i <= MaxEntries; i++ {
		many += fmt.Sprintf("  - f%d.go\n", i)
	}
	if _, errs := FromMarkdown("```scope\n" + many + "```\n"); len(errs) != 1 || !strings.Contains(errs[0].Message, "at most 100") {
		t.Errorf("too many: %+v", errs)
	}
}

func TestAllows(t *testing.T) {
	s := Scope{Files: []string{"src/app.go", "docs/", "internal/*/store.go", "web/**/*.js", "Makefile", "cmd"}}
	for path, want := range map[string]bool{
		"src/app.go": true, "./src/app.go": true, "src//app.go": true, "src/other.go": false, "src": false,
		"docs/a.md": true, "docs/sub/b.md": true, "docsx/a.md": false, "docs": true,
		"internal/db/store.go": true, "internal/db/sub/store.go": false,
		"web/a.js": true, "web/x/y/z.js": true, "web/x.css": false,
		"Makefile": true, "README.md": false, "cmd/planserver/main.go": true,
		"src/../README.md": false, "": false, ".": false,
	} {
		if got := s.Allows(path); got != want {
			t.Errorf("Allows(%q) = %v, want %v", path, got, want)
		}
	}
	chain := Chain{s, {Files: []string{"src/**", "docs/a.md"}}}
	for path, want := range map[string]bool{"src/app.go": true, "docs/a.md": true, "docs/b.md": false, "Makefile": false} {
		if got := chain.Allows(path); got != want {
			t.Errorf("chain Allows(%q) = %v, want %v", path, got, want)
		}
	}
	if !(Chain{}).Allows("anything") {
		t.Errorf("an empty chain limits nothing")
	}
	narrowed := Chain{{Files: []string{"src/**", "docs/"}}, {Files: []string{"src/**/*.go", "src/app.go", "docs/a.md", "README.md"}}}
	if got := narrowed.Files(); !reflect.DeepEqual(got, []string{"src/**/*.go", "src/app.go", "docs/a.md"}) {
		t.Errorf("chain files: %v", got)
	}
	if got := (Chain{{Files: []string{"web/", "Makefile"}}}).Files(); !reflect.DeepEqual(got, []string{"web/**", "Makefile"}) {
		t.Errorf("one scope's files: %v", got)
	}
	c := Chain{{Connect: []string{"a:1", "b:2"}}, {Connect: []string{"b:2", "c:3"}}}
	if got := c.Connect(); !reflect.DeepEqual(got, []string{"b:2"}) {
		t.Errorf("chain connect: %v", got)
	}
}

func TestDiff(t *testing.T) {
	old := &Scope{Files: []string{"src/app.go"}, Commands: []string{"go test ./..."}}
	new := &Scope{Files: []string{"src/app.go", "README.md"}}
	d := Diff(old, new)
	if !reflect.DeepEqual(d.Added.Files, []string{"README.md"}) || !reflect.DeepEqual(d.Removed.Commands, []string{"go test ./..."}) ||
		len(d.Added.Commands) != 0 || len(d.Removed.Files) != 0 {
		t.Errorf("diff: %+v", d)
	}
	if d := Diff(nil, new); !reflect.DeepEqual(d.Added.Files, new.Files) {
		t.Errorf("from none: %+v", d)
	}
}
