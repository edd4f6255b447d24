package http_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/planserver/planserver/internal/apitest"
)

// TestNULIsRefusedOnEveryEngine: a NUL character (U+0000) in any text a
// client sends is a 400 invalid_argument naming the field, on SQLite as
// on PostgreSQL (where it was a 500: text cannot hold it), and nothing is
// written. Run with .ci/postgres for PostgreSQL.
func TestNULIsRefusedOnEveryEngine(t *testing.T) {
	env := apitest.New(t)
	createSession(t, env, map[string]any{"id": "s", "mode": "plan"})
	if r := env.Call("PUT", "/v1/sessions/s/plan", map[string]any{"content": "# plan"}); r.Status != http.StatusCreated {
		t.Fatalf("session plan: %d %s", r.Status, r.Body)
	}
	cases := []struct {
		name, method, path, field string
		body                      any
		header                    []string
	}{
		{"session title", "POST", "/v1/sessions", "title", `{"id":"n","title":"a\u0000b"}`, nil},
		{"session metadata", "POST", "/v1/sessions", "metadata.k", `{"id":"n","metadata":{"k":"\u0000"}}`, nil},
		{"plan content", "PUT", "/v1/plans/p", "content", `{"content":"# P\u0000"}`, nil},
		{"plan title", "PUT", "/v1/plans/p", "title", `{"content":"# P","title":"\u0000"}`, nil},
		{"step description", "PUT", "/v1/plans/p", "steps[0].description",
			`{"content":"# P","steps":[{"id":"a","owner":"o","description":"x\u0000"}]}`, nil},
		{"plan as Markdown", "PUT", "/v1/plans/p", "content", []byte("# P\x00"), []string{"Content-Type", "text/markdown"}},
		{"plan as YAML", "PUT", "/v1/plans/p", "title", []byte("title: \"a\\0b\"\ncontent: \"# P\"\n"), []string{"Content-Type", "application/yaml"}},
		{"plan step as YAML", "PUT", "/v1/plans/p", "steps[0].description",
			[]byte("content: \"# P\"\nsteps:\n  - id: a\n    owner: o\n    description: \"x\\0\"\n"), []string{"Content-Type", "application/yaml"}},
		{"session plan", "PUT", "/v1/sessions/s/plan", "content", `{"content":"# plan\u0000"}`, nil},
		{"review request", "POST", "/v1/sessions/s/plan/review", "rationale", `{"rationale":"ready\u0000"}`, nil},
		{"a member name", "POST", "/v1/sessions", "metadata.k\x00", `{"id":"n","metadata":{"k\u0000":"v"}}`, nil},
	}
	for _, c := range cases {
		r := env.Bad(c.method, c.path, c.body, c.header...)
		var p struct {
			Code   string `json:"code"`
			Errors []struct {
				Field string `json:"field"`
			} `json:"errors"`
			Detail string `json:"detail"`
		}
		r.JSON(t, &p)
		if r.Status != http.StatusBadRequest || p.Code != "invalid_argument" || !strings.Contains(p.Detail, "NUL") ||
			len(p.Errors) != 1 || p.Errors[0].Field != c.field {
			t.Errorf("%s: %d %s, want 400 invalid_argument naming %s", c.name, r.Status, r.Body, c.field)
		}
	}
	// A rejection's feedback, once a review is pending.
	if r := env.Call("POST", "/v1/sessions/s/plan/review", map[string]any{"rationale": "ready"}); r.Status != http.StatusOK {
		t.Fatalf("review: %d %s", r.Status, r.Body)
	}
	if r := env.Bad("POST", "/v1/sessions/s/plan/reject", `{"feedback":"no\u0000"}`); r.Status != http.StatusBadRequest || !strings.Contains(string(r.Body), `"feedback"`) {
		t.Errorf("reject with NUL feedback: %d %s", r.Status, r.Body)
	}
	// Nothing was written: no session n, no plan p.
	for _, path := range []string{"/v1/sessions/n", "/v1/plans/p"} {
		if r := env.Call("GET", path, nil); r.Status != http.StatusNotFound {
			t.Errorf("GET %s after refused writes: %d", path, r.Status)
		}
	}
	// An escaped backslash followed by u0000 is not a NUL.
	if r := env.Call("PUT", "/v1/plans/p", map[string]any{"content": `# P \u0000 is how JSON spells NUL`}); r.Status != http.StatusCreated {
		t.Errorf("content with a literal \\u0000: %d %s", r.Status, r.Body)
	}
}
