package sessions

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/planserver/planserver/internal/apierr"
)

// chainOfModes builds a chain root first from "id:mode" pairs.
func chainOfModes(spec ...string) Chain {
	var c Chain
	anc := "/"
	for i, sp := range spec {
		id, mode, _ := strings.Cut(sp, ":")
		l := Link{PK: int64(i + 1), ID: id, Ancestry: anc, Mode: Mode(mode)}
		c = append(c, l)
		anc = l.Path()
	}
	return c
}

func TestChainEffectiveMode(t *testing.T) {
	cases := []struct {
		name  string
		chain Chain
		mode  Mode
		src   string
	}{
		{"lone build", chainOfModes("a:build"), Build, ""},
		{"lone plan", chainOfModes("a:plan"), Plan, "a"},
		{"inherits from root", chainOfModes("a:plan", "b:build", "c:build"), Plan, "a"},
		{"nearest wins", chainOfModes("a:plan", "b:plan", "c:build"), Plan, "b"},
		{"self wins", chainOfModes("b:plan", "c:plan"), Plan, "c"},
		{"all build", chainOfModes("a:build", "b:build", "c:build"), Build, ""},
		{"empty", nil, Build, ""},
	}
	for _, c := range cases {
		mode, src := c.chain.Effective()
		got := ""
		if src != nil {
			got = *src
		}
		if mode != c.mode || got != c.src {
			t.Errorf("%s: %s from %q, want %s from %q", c.name, mode, got, c.mode, c.src)
		}
	}
}

func TestLinkPath(t *testing.T) {
	c := chainOfModes("r:build", "a:build", "b:build")
	if got := c[2].Path(); got != "/1/2/3/" {
		t.Errorf("path %q", got)
	}
	pks, err := ancestryPKs(c[2].Ancestry)
	if err != nil || fmt.Sprint(pks) != "[1 2]" {
		t.Errorf("ancestry pks %v, %v", pks, err)
	}
	if _, err := ancestryPKs("/1/x/"); err == nil {
		t.Error("a damaged ancestry parsed")
	}
}

// tree is r with children a and b; a1 under a; b1 under b; b1x under b1.
func tree() (Chain, []Link) {
	root := Chain{{PK: 1, ID: "r", Ancestry: "/", Mode: Build}}
	desc := []Link{
		{PK: 2, ID: "a", Ancestry: "/1/", Mode: Build},
		{PK: 3, ID: "b", Ancestry: "/1/", Mode: Plan},
		{PK: 4, ID: "a1", Ancestry: "/1/2/", Mode: Build},
		{PK: 5, ID: "b1", Ancestry: "/1/3/", Mode: Build},
		{PK: 6, ID: "b1x", Ancestry: "/1/3/5/", Mode: Plan},
	}
	return root, desc
}

func TestChangeModeMovesOnlyTheDescendantsWhoseSourceChanges(t *testing.T) {
	describe := func(moved []inherited) string {
		var out []string
		for _, m := range moved {
			src := "-"
			if m.source != nil {
				src = *m.source
			}
			out = append(out, m.ID+"<"+src)
		}
		return strings.Join(out, " ")
	}
	root, desc := tree()
	moved, err := changeMode(root, desc, Plan)
	if err != nil {
		t.Fatal(err)
	}
	// a and a1 now inherit plan from r; b and its subtree keep their own
	// sources (b, b, b1x).
	if got := describe(moved); got != "a<r a1<r" {
		t.Errorf("root to plan moved %q", got)
	}
	root[0].Mode = Plan
	moved, err = changeMode(root, desc, Build)
	if err != nil {
		t.Fatal(err)
	}
	if got := describe(moved); got != "a<- a1<-" {
		t.Errorf("root back to build moved %q", got)
	}
	// b (in the middle) to build: b1 loses its source; b1x keeps its own.
	root, desc = tree()
	b := append(root, desc[1])
	moved, err = changeMode(b, []Link{desc[3], desc[4]}, Build)
	if err != nil {
		t.Fatal(err)
	}
	if got := describe(moved); got != "b1<-" {
		t.Errorf("b to build moved %q", got)
	}
}

func TestHarnessRule(t *testing.T) {
	root, desc := tree()
	desc[2].Harness = true // a1
	_, err := changeMode(root, desc, Plan)
	if e, ok := apierr.As(err); !ok || e.Code != apierr.UnsupportedMode || e.Extra["session_id"] != "a1" ||
		!strings.Contains(e.Detail, "descendant") {
		t.Errorf("plan above a harness descendant: %v", err)
	}
	// Plan mode over b's subtree reaches no harness: allowed.
	if _, err := changeMode(append(root, desc[1]), []Link{desc[3], desc[4]}, Plan); err != nil {
		t.Errorf("plan without a harness below: %v", err)
	}
	self := Chain{{PK: 1, ID: "h", Ancestry: "/", Mode: Build, Harness: true}}
	if _, err := changeMode(self, nil, Plan); apierr.CodeOf(err) != apierr.UnsupportedMode {
		t.Errorf("plan on a harness session: %v", err)
	}
	// A harness session created under a plan-mode parent is refused,
	// naming where plan mode comes from.
	parent := chainOfModes("p:plan")
	kid := Link{ID: "k", Ancestry: parent[0].Path(), Mode: Build, Harness: true}
	c := append(parent, kid)
	err = harnessInPlan("k", []Link{kid}, func(Link) *string { return c.ModeSource() })
	if e, ok := apierr.As(err); !ok || !strings.Contains(e.Detail, `inherit plan mode from "p"`) {
		t.Errorf("harness under plan: %v", err)
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
