package plans

import (
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/planserver/planserver/internal/apierr"
	"github.com/planserver/planserver/internal/validation"
)

func TestValidateName(t *testing.T) {
	good := []string{"a", "0", "release", "release-1_0", "a-", "9_", strings.Repeat("a", 128), "x--y__z"}
	bad := []string{"", "A", "Release", "-a", "_a", "a.b", "..", ".", "a/b", "a%2Fb", "a b", "a\x00", "é",
		strings.Repeat("a", 129), "a\n", " a", "a\\b", "ａ"}
	for _, n := range good {
		if err := ValidateName(n); err != nil {
			t.Errorf("%q refused: %v", n, err)
		}
	}
	for _, n := range bad {
		err := ValidateName(n)
		if e, ok := apierr.As(err); !ok || e.Code != apierr.InvalidArgument || len(e.Fields) != 1 || e.Fields[0].Field != "name" {
			t.Errorf("%q: %v, want invalid_argument on name", n, err)
		}
	}
}

// FuzzValidateName checks the properties the name rule exists for: an
// accepted name is a short lower-case slug that needs no escaping in a URL
// or a file path and cannot climb out of a directory.
func FuzzValidateName(f *testing.F) {
	for _, s := range []string{"release", "a", "..", "a/b", "A", "-x", strings.Repeat("z", 129), "a%2Fb", "ü"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if ValidateName(name) != nil {
			return
		}
		if len(name) == 0 || len(name) > 128 {
			t.Fatalf("accepted %q of length %d", name, len(name))
		}
		if strings.ToLower(name) != name || strings.ContainsAny(name, "/\\.%: ") {
			t.Fatalf("accepted %q", name)
		}
		if url.PathEscape(name) != name {
			t.Fatalf("accepted %q, which needs escaping in a URL", name)
		}
		if name[0] == '-' || name[0] == '_' {
			t.Fatalf("accepted %q, which starts like a flag", name)
		}
	})
}

func TestChangeValidate(t *testing.T) {
	s := func(v string) *string { return &v }
	cases := []struct {
		name     string
		ch       Change
		required bool
		code     apierr.Code
		field    string
	}{
		{name: "content only", ch: Change{Content: s("x")}, required: true},
		{name: "status only", ch: Change{Status: s("")}},
		{name: "missing content", ch: Change{Title: s("t")}, required: true, code: apierr.InvalidArgument, field: "content"},
		{name: "empty content", ch: Change{Content: s("")}, required: true, code: apierr.InvalidArgument, field: "content"},
		{name: "blank content", ch: Change{Content: s(" \r\n\t")}, required: true, code: apierr.InvalidArgument, field: "content"},
		{name: "content at limit", ch: Change{Content: s(strings.Repeat("x", 10))}, required: true},
		{name: "content over limit", ch: Change{Content: s(strings.Repeat("x", 11))}, required: true, code: apierr.PayloadTooLarge},
		{name: "binary content", ch: Change{Content: s("a\xffb")}, required: true, code: apierr.InvalidArgument, field: "content"},
		{name: "title at limit", ch: Change{Content: s("x"), Title: s(strings.Repeat("é", validation.MaxTitle))}, required: true},
		{name: "title over limit", ch: Change{Content: s("x"), Title: s(strings.Repeat("é", validation.MaxTitle+1))}, required: true, code: apierr.InvalidArgument, field: "title"},
		{name: "author over limit", ch: Change{Content: s("x"), Author: s(strings.Repeat("a", validation.MaxAuthor+1))}, required: true, code: apierr.InvalidArgument, field: "author"},
		{name: "status over limit", ch: Change{Status: s(strings.Repeat("a", validation.MaxStatus+1))}, code: apierr.InvalidArgument, field: "status"},
		{name: "binary status", ch: Change{Status: s("\xff")}, code: apierr.InvalidArgument, field: "status"},
	}
	for _, c := range cases {
		err := c.ch.validate(c.required, 10)
		if c.code == "" {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		e, ok := apierr.As(err)
		if !ok || e.Code != c.code || (c.field != "" && e.Fields[0].Field != c.field) {
			t.Errorf("%s: %v, want %s on %q", c.name, err, c.code, c.field)
		}
	}
}

func TestYAMLRoundTrip(t *testing.T) {
	steps, err := ParseSteps([]byte(`[{"id":"1","description":"multi\nline: with colon","owner":"o","deps":[],"criteria":"yes","risk_notes":"no"},` +
		`{"id":"2","description":"d","owner":"0x1F","deps":["1"],"status":"in_progress","parallel":true,"commands":["true","Run: npm test"],"files":["a b.go"],` +
		`"claimed_by":"w1","claim_expires_at":"2026-01-10T17:30:00+02:00"},` +
		`{"id":"3","description":"null","owner":"~","deps":["1","2"],"status":"blocked"}]`))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 10, 0, 0, 0, 0, time.UTC)
	for _, content := range []string{"# Heading\n\n- item: yes\n  indented\n\ttab\ntrailing spaces   \n\n", ""} {
		p := &Plan{Name: "p", Title: "T: with colon", Author: "a", Status: "", Revision: 7, UpdatedAt: "2026-01-10T00:00:00.000Z",
			Content: content, Steps: steps.View(now)}
		doc, err := EncodeYAML(p)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(string(doc), "# Plan \"p\", revision 7") {
			t.Errorf("document starts %q", doc[:30])
		}
		ch, err := DecodeYAML(doc)
		if err != nil {
			t.Fatalf("%v\n%s", err, doc)
		}
		if *ch.Title != p.Title || *ch.Author != p.Author || *ch.Status != p.Status {
			t.Errorf("round trip changed fields:\n%s", doc)
		}
		// A plan without content has no content line: importing the
		// document keeps the content instead of failing on an empty one.
		if (content == "" && (ch.Content != nil || !ch.contentOptional)) || (content != "" && *ch.Content != content) {
			t.Errorf("content %q came back as %v:\n%s", content, ch.Content, doc)
		}
		if ch.Steps.encode() != steps.encode() {
			t.Errorf("steps %s\nwant  %s\n%s", ch.Steps.encode(), steps.encode(), doc)
		}
	}
}

func TestDecodeYAML(t *testing.T) {
	cases := []struct {
		name, in string
		ok       bool
		check    func(Change) bool
		field    string
	}{
		{name: "content only", in: "content: x\n", ok: true, check: func(c Change) bool {
			return *c.Content == "x" && c.Title == nil && c.Steps == nil && !c.contentOptional
		}},
		{name: "null steps keep", in: "content: x\nsteps: null\n", ok: true, check: func(c Change) bool { return c.Steps == nil }},
		{name: "empty steps clear", in: "content: x\nsteps: []\n", ok: true, check: func(c Change) bool { return c.Steps != nil && len(c.Steps) == 0 }},
		{name: "steps alone", in: "steps:\n- {id: a, description: d, owner: o}\n", ok: true, check: func(c Change) bool {
			return c.Content == nil && c.contentOptional && len(c.Steps) == 1 && c.Steps[0].Status == StepPending
		}},
		{name: "aliases", in: "content: x\nsteps:\n- &s {id: '1', owner: o, description: d}\n- *s\n", field: "steps[1].id"},
		{name: "nulls are defaults", in: "steps:\n- id: a\n  description: d\n  owner: o\n  deps:\n  status:\n  risk_notes:\n", ok: true, check: func(c Change) bool {
			return c.Steps.encode() == `[{"id":"a","description":"d","owner":"o","deps":[],"status":"pending","parallel":false,"criteria":"","commands":[],"files":[],"risk_notes":"","claimed_by":null,"claim_expires_at":null}]`
		}},
		{name: "unquoted number id", in: "steps:\n- {id: 1, description: d, owner: o}\n", field: "steps[0].id"},
		{name: "unquoted number dep", in: "steps:\n- {id: '1', description: d, owner: o}\n- {id: '2', description: d, owner: o, deps: [1]}\n", field: "steps[1].deps[0]"},
		{name: "comments only", in: "# nothing\n"},
		{name: "empty", in: ""},
		{name: "scalar", in: "just text\n"},
		{name: "unknown field", in: "content: x\nrevision: 3\n"},
		{name: "unknown step field", in: "steps:\n- {id: a, description: d, owner: o, weight: 2}\n", field: "steps[0].weight"},
		{name: "two documents", in: "content: x\n---\ncontent: y\n"},
		{name: "step not a mapping", in: "content: x\nsteps: [1]\n", field: "steps[0]"},
		{name: "steps not a list", in: "content: x\nsteps: {id: 1}\n", field: "steps"},
		{name: "complex key", in: "content: x\nsteps:\n- {[a]: 1}\n"},
		{name: "infinity", in: "content: x\nsteps:\n- {a: .inf}\n"},
		{name: "tabs", in: "content: x\n\ttitle: y\n"},
		{name: "alias bomb", in: "content: x\nsteps:\n- &a [x,x,x,x,x,x,x,x,x,x]\n- &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\n- &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\n- &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\n- &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]\n- &f [*e,*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"},
	}
	for _, c := range cases {
		ch, err := DecodeYAML([]byte(c.in))
		if !c.ok {
			e, ok := apierr.As(err)
			if !ok || e.Code != apierr.InvalidArgument {
				t.Errorf("%s: %v, want invalid_argument", c.name, err)
			} else if c.field != "" && (len(e.Fields) == 0 || e.Fields[0].Field != c.field) {
				t.Errorf("%s: %v, want the field %s", c.name, err, c.field)
			}
			continue
		}
		if err != nil || !c.check(ch) {
			t.Errorf("%s: %+v, %v", c.name, ch, err)
		}
	}
}

// FuzzDecodeYAML: any body either decodes to a change whose steps are a
// valid step array, or is an invalid_argument error; never a panic or
// another kind of error.
func FuzzDecodeYAML(f *testing.F) {
	for _, s := range []string{"content: x\n", "content: x\nsteps:\n- id: '1'\n  deps: [a]\n", "- a\n", "a: &x [*x]\n",
		"content: |\n  multi\n  line\n", "steps: [{a: !!binary aGk=}]\ncontent: y\n", "{", "content: x\nsteps: [*a]\n",
		"steps:\n- {id: a, description: d, owner: o, deps: [b]}\n- {id: b, description: d, owner: o, deps: [a]}\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		ch, err := DecodeYAML(body)
		if err != nil {
			if apierr.CodeOf(err) != apierr.InvalidArgument {
				t.Fatalf("%q: %v", body, err)
			}
			return
		}
		if ch.Steps != nil {
			again, err := ParseSteps([]byte(ch.Steps.encode()))
			if err != nil {
				t.Fatalf("%q gave steps %s that do not parse back: %v", body, ch.Steps.encode(), err)
			}
			if again.encode() != ch.Steps.encode() {
				t.Fatalf("steps changed when parsed again: %s, then %s", ch.Steps.encode(), again.encode())
			}
		}
	})
}

// TestDecodeYAMLSaysEveryFault: a document with several faults gets all of
// them in one answer, each with its field and line, in words for the
// writer of YAML: no Go type names, no <nil>, no YAML tags.
func TestDecodeYAMLSaysEveryFault(t *testing.T) {
	for _, c := range []struct {
		in     string
		fields []string
		words  []string
	}{
		{"just text\n", nil, []string{"line 1: the document is text", "title, author, status, steps, content"}},
		{"- a\n- b\n", nil, []string{"the document is a list"}},
		{"title: [a, b]\ncontent: x\nauthor: {x: 1}\nrevision: 3\n", []string{"title", "author", "revision"},
			[]string{"line 1: must be text, not a list", "line 3: must be text, not a mapping", "line 4: unknown field"}},
		{"revision: 3\nsteps:\n- {id: a, description: d, owner: o, weight: 2}\n- {id: b, owner: o}\n- {id: c, description: d, owner: o, deps: [zz]}\n",
			[]string{"revision", "steps[0].weight", "steps[1].description", "steps[2].deps[0]"}, []string{"unknown field", "is required"}},
		{"steps:\n- {id: '2', description: d, owner: o, status: weird}\n", []string{"steps[0].status"},
			[]string{"must be one of pending, in_progress, complete, blocked, not weird"}},
	} {
		_, err := DecodeYAML([]byte(c.in))
		e, ok := apierr.As(err)
		if !ok || e.Code != apierr.InvalidArgument {
			t.Errorf("%q: %v", c.in, err)
			continue
		}
		all := e.Detail
		var got []string
		for _, f := range e.Fields {
			got = append(got, f.Field)
			all += "\n" + f.Field + ": " + f.Message
		}
		for _, leak := range []string{"<nil>", "yamlIn", "plans.", "!!", "unmarshal"} {
			if strings.Contains(all, leak) {
				t.Errorf("%q: the error leaks %q:\n%s", c.in, leak, all)
			}
		}
		for _, f := range c.fields {
			if !slices.Contains(got, f) {
				t.Errorf("%q: no error for %s:\n%s", c.in, f, all)
			}
		}
		for _, w := range c.words {
			if !strings.Contains(all, w) {
				t.Errorf("%q: %q not said:\n%s", c.in, w, all)
			}
		}
	}
	// Numbers are still text where the plan wants text, as YAML means.
	ch, err := DecodeYAML([]byte("title: 2024\nstatus: true\ncontent: x\n"))
	if err != nil || *ch.Title != "2024" || *ch.Status != "true" {
		t.Errorf("scalars as text: %v %+v", err, ch)
	}
}
