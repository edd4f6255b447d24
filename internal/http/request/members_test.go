package request

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/planserver/planserver/internal/apierr"
)

// membersTarget is a request shape with an embedded struct and a renamed
// field, like the routes' bodies.
type membersTarget struct {
	membersEmbedded
	Mode  string          `json:"mode"`
	Steps json.RawMessage `json:"steps"`
	Plain int
}

type membersEmbedded struct {
	Title string `json:"title"`
}

func TestCheckMembers(t *testing.T) {
	many := func(extra string) string {
		var b strings.Builder
		b.WriteString(`{"steps":{`)
		for i := range 40 {
			fmt.Fprintf(&b, `"k%d":%d,`, i, i)
		}
		b.WriteString(extra + `"end":true}}`)
		return b.String()
	}
	for _, c := range []struct {
		body, field string // field "": accepted
	}{
		{`{"mode":"plan","title":"t","Plain":1}`, ""},
		{`{"mode":"plan","mode":"build"}`, "mode"},
		{`{"mo\u0064e":"plan","mode":"build"}`, "mode"},
		{`{"MODE":"plan"}`, "MODE"},
		{`{"zeta":1,"Mode":"plan","alpha":2}`, "Mode"},
		{`{"Title":"x","mode":"plan","mode":"build"}`, "mode"},
		{`{"steps":[{"id":"a"},{"id":"b","deps":[],"id":"c"}]}`, "steps[1].id"},
		{`{"steps":[[1,[{"x":1,"x":2}]]]}`, "steps[0][1][0].x"},
		{`{"steps":{"":1,"":2}}`, "steps."},
		{`{"steps":{"a":"}\"{","a":1}}`, "steps.a"},
		{`{"steps":{"MODE":1,"mode":1}}`, ""},
		{many(""), ""},
		{many(`"k7":1,`), "steps.k7"},
		{`["a",{"b":1,"b":2}]`, "[1].b"},
		{`"mode"`, ""},
		{` {"mode" : "plan" , "title" : "t" } `, ""},
	} {
		err := checkMembers([]byte(c.body), &membersTarget{})
		var field string
		if err != nil {
			field = apiFields(t, err)
		}
		if (err == nil) != (c.field == "") || field != c.field {
			t.Errorf("%s: %v, want field %q", c.body, err, c.field)
		}
	}
}

// apiFields returns the one field an apierr names.
func apiFields(t *testing.T, err error) string {
	t.Helper()
	var e *apierr.Error
	if !errors.As(err, &e) || len(e.Fields) != 1 {
		t.Fatalf("not one field error: %#v", err)
	}
	return e.Fields[0].Field
}

// FuzzCheckMembers: on every body the decoder accepts, the one-pass scan
// answers what the token walk and the second decode it replaced answered.
func FuzzCheckMembers(f *testing.F) {
	for _, seed := range []string{
		`{"mode":"plan","mode":"build"}`, `{"MODE":"plan"}`, `{"steps":[{"a":1},{"a":1,"a":2}]}`,
		`{"mo\u0064e":1,"mode":2}`, `[{"x":[1,2,{"y":null,"y":true}]}]`, `{"":1,"title":"\"}"}`,
		`{"zeta":1,"Mode":"plan","alpha":2}`, `12.5e3`, `{"steps":{"a":{"b":{"c":[]}},"a":0}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		dec := json.NewDecoder(bytes.NewReader(body))
		var v any
		if dec.Decode(&v) != nil || len(bytes.TrimSpace(body[dec.InputOffset():])) > 0 {
			return // decodeJSONBytes refuses it before the member checks
		}
		want := referenceRepeatedMembers(body)
		if want == nil {
			want = referenceExactMembers(body, &membersTarget{})
		}
		got := checkMembers(body, &membersTarget{})
		if fmt.Sprint(got) != fmt.Sprint(want) || !reflect.DeepEqual(fieldsOf(got), fieldsOf(want)) {
			t.Fatalf("%q: checkMembers says %v %v, the reference %v %v", body, got, fieldsOf(got), want, fieldsOf(want))
		}
	})
}

func fieldsOf(err error) []apierr.FieldError {
	var e *apierr.Error
	if errors.As(err, &e) {
		return slices.Clone(e.Fields)
	}
	return nil
}

// referenceRepeatedMembers, the token walk checkMembers replaced, rejects a JSON object, at any depth, that names a member
// twice: {"mode":"plan","mode":"build"}. encoding/json keeps the last one,
// other parsers the first; a request whose meaning depends on the parser
// must be refused, not guessed. The error names the member's path.
func referenceRepeatedMembers(body []byte) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	type level struct {
		object bool
		path   string
		index  int
		key    string // the member whose value comes next (objects)
		onKey  bool   // the next string is a member name (objects)
		seen   map[string]bool
	}
	var stack []*level
	member := func() string {
		if len(stack) == 0 {
			return ""
		}
		top := stack[len(stack)-1]
		if top.object {
			return joinPath(top.path, top.key)
		}
		return fmt.Sprintf("%s[%d]", top.path, top.index)
	}
	valueDone := func() {
		if len(stack) == 0 {
			return
		}
		if top := stack[len(stack)-1]; top.object {
			top.key, top.onKey = "", true
		} else {
			top.index++
		}
	}
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil // io.EOF, or malformed JSON, which Decode has judged
		}
		top := (*level)(nil)
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				stack = append(stack, &level{object: t == '{', onKey: t == '{', path: member(), seen: map[string]bool{}})
			default:
				stack = stack[:len(stack)-1]
				valueDone()
			}
		case string:
			if top != nil && top.onKey {
				if top.seen[t] {
					return apierr.Invalid(joinPath(top.path, t), "member appears more than once in one object; send it once")
				}
				top.seen[t] = true
				top.key, top.onKey = t, false
				continue
			}
			valueDone()
		default:
			valueDone()
		}
	}
}

// referenceExactMembers, the second decode checkMembers replaced, rejects object members whose names match a field of the
// struct dst only case-insensitively. encoding/json accepts
// {"readonlyHint": true} for readOnlyHint and {"MODE": "plan"} for mode;
// a typo must be a 400, not silently decide a gating question.
func referenceExactMembers(body []byte, dst any) error {
	t := reflect.TypeOf(dst)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	var members map[string]json.RawMessage
	if json.Unmarshal(body, &members) != nil {
		return nil // not an object; Decode has judged it already
	}
	names := map[string]bool{}
	jsonNames(t, names)
	var unknown []string
	for name := range members {
		if !names[name] {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	slices.Sort(unknown)
	return apierr.Invalid(unknown[0], "unknown field (member names are case-sensitive)")
}

// joinPath joins a field path as the references above name members.
func joinPath(path, field string) string {
	if path == "" {
		return field
	}
	return path + "." + field
}
