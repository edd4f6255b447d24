package strictjson_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/planserver/planserver/internal/strictjson"
)

// TestCheck: repeats are found at any depth with their path, names equal
// but for case only under FoldCase, nesting only past MaxDepth, and the
// top-level names are reported in order.
func TestCheck(t *testing.T) {
	for _, c := range []struct {
		body string
		opt  strictjson.Options
		want string // the error; "" for none
	}{
		{`{"a":1,"b":[{"c":1},{"c":2,"c":3}]}`, strictjson.Options{}, `b[1].c: "c" "c"`},
		{`{"mo\u0064e":1,"mode":2}`, strictjson.Options{}, `mode: "mode" "mode"`},
		{`{"name":"x","Name":"y"}`, strictjson.Options{}, ""},
		{`{"name":"x","Name":"y"}`, strictjson.Options{FoldCase: true}, `Name: "name" "Name"`},
		{`{"s":"{\"a\":1,\"a\":2}"}`, strictjson.Options{}, ""},
		{`[[[]]]`, strictjson.Options{MaxDepth: 2}, ""},
		{`[[[1]]]`, strictjson.Options{MaxDepth: 2}, "too deep"},
		{`{"a":`, strictjson.Options{}, ""},
		{`{"a`, strictjson.Options{}, ""},
	} {
		err := strictjson.Check([]byte(c.body), c.opt)
		var (
			repeat  *strictjson.Repeat
			tooDeep *strictjson.TooDeep
			got     string
		)
		switch {
		case errors.As(err, &repeat):
			got = repeat.Path + `: "` + repeat.First + `" "` + repeat.Name + `"`
		case errors.As(err, &tooDeep):
			got = "too deep"
		case err != nil:
			got = err.Error()
		}
		if got != c.want {
			t.Errorf("%s %+v: %q, want %q", c.body, c.opt, got, c.want)
		}
	}
	var top []string
	body := `{"b":{"x":1},"a":[{"y":2}],"` + strings.Repeat("c", 3) + `":null}`
	if err := strictjson.Check([]byte(body), strictjson.Options{Top: func(n string) { top = append(top, n) }}); err != nil ||
		!slices.Equal(top, []string{"b", "a", "ccc"}) {
		t.Errorf("top-level names %v (%v)", top, err)
	}
}

// FuzzCheck: whatever the bytes, Check never panics.
func FuzzCheck(f *testing.F) {
	f.Add([]byte(`{"a":[1,{"b":"\u00e9"}],"A":2}`))
	f.Add([]byte(`{"\`))
	f.Fuzz(func(t *testing.T, b []byte) {
		_ = strictjson.Check(b, strictjson.Options{FoldCase: true, MaxDepth: 3, Top: func(string) {}})
	})
}
