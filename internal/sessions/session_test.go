package sessions

import (
	"encoding/json"
	"testing"
)

func TestResolve(t *testing.T) {
	cases := []struct {
		name  string
		chain []Link
		mode  Mode
		src   string
	}{
		{"lone build", []Link{{"a", Build}}, Build, ""},
		{"lone plan", []Link{{"a", Plan}}, Plan, "a"},
		{"inherits from root", []Link{{"c", Build}, {"b", Build}, {"a", Plan}}, Plan, "a"},
		{"nearest wins", []Link{{"c", Build}, {"b", Plan}, {"a", Plan}}, Plan, "b"},
		{"self wins", []Link{{"c", Plan}, {"b", Plan}}, Plan, "c"},
		{"all build", []Link{{"c", Build}, {"b", Build}, {"a", Build}}, Build, ""},
		{"empty", nil, Build, ""},
	}
	for _, c := range cases {
		mode, src := Resolve(c.chain)
		got := ""
		if src != nil {
			got = *src
		}
		if mode != c.mode || got != c.src {
			t.Errorf("%s: %s from %q, want %s from %q", c.name, mode, got, c.mode, c.src)
		}
	}
}

func TestEffectiveModes(t *testing.T) {
	tree := []Node{
		{ID: "r", Mode: Build},
		{ID: "a", ParentID: "r", Mode: Build},
		{ID: "b", ParentID: "r", Mode: Plan},
		{ID: "a1", ParentID: "a", Mode: Build},
		{ID: "b1", ParentID: "b", Mode: Build},
		{ID: "b1x", ParentID: "b1", Mode: Plan},
	}
	check := func(name string, inherited *string, want map[string]string) {
		t.Helper()
		got := EffectiveModes(tree, inherited)
		for id, w := range want {
			g := ""
			if got[id] != nil {
				g = *got[id]
			}
			if g != w {
				t.Errorf("%s: %s source %q, want %q", name, id, g, w)
			}
		}
	}
	check("no inheritance", nil, map[string]string{"r": "", "a": "", "a1": "", "b": "b", "b1": "b", "b1x": "b1x"})
	up := "up"
	check("inherited from above", &up, map[string]string{"r": "up", "a": "up", "a1": "up", "b": "b", "b1": "b", "b1x": "b1x"})
	tree[0].Mode = Plan
	check("root in plan", nil, map[string]string{"r": "r", "a": "r", "a1": "r", "b": "b"})
}

func TestFirstHarness(t *testing.T) {
	if h := FirstHarness([]Node{{ID: "a"}, {ID: "b", Harness: true}, {ID: "c", Harness: true}}); h != "b" {
		t.Errorf("FirstHarness = %q", h)
	}
	if h := FirstHarness([]Node{{ID: "a"}}); h != "" {
		t.Errorf("FirstHarness without harness = %q", h)
	}
}

func TestMergePatch(t *testing.T) {
	// The examples of RFC 7396, appendix A.
	cases := [][3]string{
		{`{"a":"b"}`, `{"a":"c"}`, `{"a":"c"}`},
		{`{"a":"b"}`, `{"b":"c"}`, `{"a":"b","b":"c"}`},
		{`{"a":"b"}`, `{"a":null}`, `{}`},
		{`{"a":"b","b":"c"}`, `{"a":null}`, `{"b":"c"}`},
		{`{"a":["b"]}`, `{"a":"c"}`, `{"a":"c"}`},
		{`{"a":"c"}`, `{"a":["b"]}`, `{"a":["b"]}`},
		{`{"a":{"b":"c"}}`, `{"a":{"b":"d","c":null}}`, `{"a":{"b":"d"}}`},
		{`{"a":[{"b":"c"}]}`, `{"a":[1]}`, `{"a":[1]}`},
		{`{"e":null}`, `{"a":1}`, `{"a":1,"e":null}`},
		{`{}`, `{"a":{"bb":{"ccc":null}}}`, `{"a":{"bb":{}}}`},
	}
	for _, c := range cases {
		var target, patch any
		_ = json.Unmarshal([]byte(c[0]), &target)
		_ = json.Unmarshal([]byte(c[1]), &patch)
		out, _ := json.Marshal(MergePatch(target, patch))
		if string(out) != c[2] {
			t.Errorf("merge %s with %s = %s, want %s", c[0], c[1], out, c[2])
		}
		again, _ := json.Marshal(target)
		if string(again) != compact(c[0]) {
			t.Errorf("merge modified its target: %s", again)
		}
	}
}

func compact(s string) string {
	var v any
	_ = json.Unmarshal([]byte(s), &v)
	b, _ := json.Marshal(v)
	return string(b)
}
