package plans

import (
	"net/url"
	"strings"
	"testing"

	"github.com/planserver/planserver/internal/apierr"
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

func TestParseSteps(t *testing.T) {
	cases := []struct {
		in, want, field string
	}{
		{in: `[]`, want: `[]`},
		{in: ` [ {"b": 1, "a": [1.50, "x"]} , {} ] `, want: `[{"b":1,"a":[1.50,"x"]},{}]`},
		{in: `null`, field: "steps"},
		{in: `{}`, field: "steps"},
		{in: `"x"`, field: "steps"},
		{in: `[1]`, field: "steps[0]"},
		{in: `[{}, [], null]`, field: "steps[1]"},
		{in: `[{]`, field: "steps"},
	}
	for _, c := range cases {
		got, err := ParseSteps("steps", []byte(c.in))
		if c.field != "" {
			e, ok := apierr.As(err)
			if !ok || e.Code != apierr.InvalidArgument || e.Fields[0].Field != c.field {
				t.Errorf("%s: %v, want invalid_argument on %s", c.in, err, c.field)
			}
			continue
		}
		if err != nil || got.encode() != c.want {
			t.Errorf("%s: %s, %v; want %s", c.in, got.encode(), err, c.want)
		}
	}
	if Steps(nil).encode() != "[]" {
		t.Errorf("nil steps encode as %s", Steps(nil).encode())
	}
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
		{name: "title at limit", ch: Change{Content: s("x"), Title: s(strings.Repeat("é", MaxTitle))}, required: true},
		{name: "title over limit", ch: Change{Content: s("x"), Title: s(strings.Repeat("é", MaxTitle+1))}, required: true, code: apierr.InvalidArgument, field: "title"},
		{name: "author over limit", ch: Change{Content: s("x"), Author: s(strings.Repeat("a", MaxAuthor+1))}, required: true, code: apierr.InvalidArgument, field: "author"},
		{name: "status over limit", ch: Change{Status: s(strings.Repeat("a", MaxStatus+1))}, code: apierr.InvalidArgument, field: "status"},
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
	steps, err := ParseSteps("steps", []byte(`[{"id":"1","description":"multi\nline","owner":"o","deps":[],"n":1.50,"big":12345678901234567890,"ok":true,"none":null,"when":"2026-01-10"},{"z":{"y":[1,{"x":"true"}]},"a":"1"}]`))
	if err != nil {
		t.Fatal(err)
	}
	p := &Plan{Name: "p", Title: "T: with colon", Author: "a", Status: "", Revision: 7, UpdatedAt: "2026-01-10T00:00:00.000Z",
		Content: "# Heading\n\n- item: yes\n  indented\n\ttab\ntrailing spaces   \n\n", Steps: steps}
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
	if *ch.Title != p.Title || *ch.Author != p.Author || *ch.Status != p.Status || *ch.Content != p.Content {
		t.Errorf("round trip changed fields:\n%s", doc)
	}
	if ch.Steps.encode() != steps.encode() {
		t.Errorf("steps %s\nwant  %s\n%s", ch.Steps.encode(), steps.encode(), doc)
	}
}

func TestDecodeYAML(t *testing.T) {
	cases := []struct {
		name, in string
		ok       bool
		check    func(Change) bool
	}{
		{name: "content only", in: "content: x\n", ok: true, check: func(c Change) bool {
			return *c.Content == "x" && c.Title == nil && c.Steps == nil
		}},
		{name: "null steps keep", in: "content: x\nsteps: null\n", ok: true, check: func(c Change) bool { return c.Steps == nil }},
		{name: "empty steps clear", in: "content: x\nsteps: []\n", ok: true, check: func(c Change) bool { return c.Steps != nil && len(c.Steps) == 0 }},
		{name: "anchors", in: "content: x\nsteps:\n- &s {id: '1', owner: o}\n- *s\n", ok: true, check: func(c Change) bool {
			return c.Steps.encode() == `[{"id":"1","owner":"o"},{"id":"1","owner":"o"}]`
		}},
		{name: "yaml numbers", in: "content: x\nsteps:\n- {a: 0x1F, b: +5, c: 1e3}\n", ok: true, check: func(c Change) bool {
			return c.Steps.encode() == `[{"a":31,"b":5,"c":1e3}]`
		}},
		{name: "comments only", in: "# nothing\n"},
		{name: "empty", in: ""},
		{name: "scalar", in: "just text\n"},
		{name: "unknown field", in: "content: x\nrevision: 3\n"},
		{name: "two documents", in: "content: x\n---\ncontent: y\n"},
		{name: "step not a mapping", in: "content: x\nsteps: [1]\n"},
		{name: "steps not a list", in: "content: x\nsteps: {id: 1}\n"},
		{name: "complex key", in: "content: x\nsteps:\n- {[a]: 1}\n"},
		{name: "infinity", in: "content: x\nsteps:\n- {a: .inf}\n"},
		{name: "tabs", in: "content: x\n\ttitle: y\n"},
		{name: "alias bomb", in: "content: x\nsteps:\n- &a [x,x,x,x,x,x,x,x,x,x]\n- &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\n- &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\n- &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\n- &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]\n- &f [*e,*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"},
	}
	for _, c := range cases {
		ch, err := DecodeYAML([]byte(c.in))
		if !c.ok {
			if apierr.CodeOf(err) != apierr.InvalidArgument {
				t.Errorf("%s: %v, want invalid_argument", c.name, err)
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
		"content: |\n  multi\n  line\n", "steps: [{a: !!binary aGk=}]\ncontent: y\n", "{", "content: x\nsteps: [*a]\n"} {
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
			if _, err := ParseSteps("steps", []byte(ch.Steps.encode())); err != nil {
				t.Fatalf("%q gave steps %s that do not parse back: %v", body, ch.Steps.encode(), err)
			}
		}
	})
}
