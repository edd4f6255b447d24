package http_test

import (
	"strings"
	"testing"

	"github.com/planserver/planserver/internal/apitest"
	"github.com/planserver/planserver/internal/app"
)

// TestPlanModeBadInputIsRefusedAndWritesNothing sends every kind of bad
// input to the plan-mode routes: each is a problem naming the field, and
// nothing is written (no row, no revision, no event).
func TestPlanModeBadInputIsRefusedAndWritesNothing(t *testing.T) {
	env := apitest.New(t, func(c *app.Config) { c.MaxBodyBytes = 8192 })
	createSession(t, env, map[string]any{"id": "s", "mode": "plan"})
	const (
		plan   = "/v1/sessions/s/plan"
		filter = "/v1/sessions/s/tools/filter"
		check  = "/v1/sessions/s/tools/check"
		todos  = "/v1/sessions/s/todos"
	)
	cases := []struct {
		name, method, path, body, contentType string
		status                                int
		code                                  string
		fields                                []string
	}{
		{"empty plan", "PUT", plan, `{"content":""}`, "", 400, "invalid_argument", []string{"content"}},
		{"blank plan", "PUT", plan, `{"content":"  \n"}`, "", 400, "invalid_argument", []string{"content"}},
		{"missing content", "PUT", plan, `{"author":"a"}`, "", 400, "invalid_argument", []string{"content"}},
		{"empty raw plan", "PUT", plan, ``, "text/markdown", 400, "invalid_argument", []string{"content"}},
		{"raw plan not UTF-8", "PUT", plan, "\xff\xfe", "text/markdown", 400, "invalid_argument", []string{"content"}},
		{"plan unknown field", "PUT", plan, `{"content":"x","title":"t"}`, "", 400, "invalid_argument", []string{"title"}},
		{"plan author too long", "PUT", plan, `{"content":"x","author":"` + strings.Repeat("a", 257) + `"}`, "", 400, "invalid_argument", []string{"author"}},
		{"plan malformed", "PUT", plan, `{"content":`, "", 400, "invalid_argument", nil},
		{"plan form body", "PUT", plan, `content=x`, "application/x-www-form-urlencoded", 415, "unsupported_media_type", nil},
		{"plan bad path id", "PUT", "/v1/sessions/-x/plan", `{"content":"x"}`, "", 400, "invalid_argument", []string{"id"}},
		{"member name in the wrong case", "PUT", plan, `{"Content":"x"}`, "", 400, "invalid_argument", []string{"Content"}},
		{"review unknown field", "POST", plan + "/review", `{"why":"x"}`, "", 400, "invalid_argument", []string{"why"}},
		{"reject feedback not a string", "POST", plan + "/reject", `{"feedback":5}`, "", 400, "invalid_argument", []string{"feedback"}},
		{"approve with a body", "POST", plan + "/approve", `{"ok":true}`, "", 400, "invalid_argument", []string{"ok"}},
		{"filter without tools", "POST", filter, `{}`, "", 400, "invalid_argument", []string{"tools"}},
		{"filter tools null", "POST", filter, `{"tools":null}`, "", 400, "invalid_argument", []string{"tools"}},
		{"missing tool names", "POST", filter, `{"tools":[{"name":"a"},{},{"name":""},{"name":"  "}]}`, "", 400, "invalid_argument",
			[]string{"tools[1].name", "tools[2].name", "tools[3].name"}},
		{"non-boolean readOnlyHint", "POST", filter, `{"tools":[{"name":"a"},{"name":"b","annotations":{"readOnlyHint":"yes"}}]}`, "", 400, "invalid_argument",
			[]string{"tools[1].annotations.readOnlyHint"}},
		{"non-boolean other hint", "POST", filter, `{"tools":[{"name":"b","annotations":{"destructiveHint":1}}]}`, "", 400, "invalid_argument",
			[]string{"tools[0].annotations.destructiveHint"}},
		{"annotations not an object", "POST", filter, `{"tools":[{"name":"b","annotations":true}]}`, "", 400, "invalid_argument",
			[]string{"tools[0].annotations"}},
		{"tool not an object", "POST", filter, `{"tools":["read_file"]}`, "", 400, "invalid_argument", []string{"tools[0]"}},
		{"unknown annotation", "POST", filter, `{"tools":[{"name":"b","annotations":{"readonlyHint":true}}]}`, "", 400, "invalid_argument",
			[]string{"tools[0].annotations.readonlyHint"}},
		{"unknown tool field", "POST", filter, `{"tools":[{"name":"b","kind":"x"}]}`, "", 400, "invalid_argument", []string{"tools[0].kind"}},
		{"name not a string", "POST", filter, `{"tools":[{"name":7}]}`, "", 400, "invalid_argument", []string{"tools[0].name"}},
		{"duplicate tool names", "POST", filter, `{"tools":[{"name":"a"},{"name":"a"}]}`, "", 400, "invalid_argument", []string{"tools[1].name"}},
		{"filter text body", "POST", filter, `read_file`, "text/plain", 415, "unsupported_media_type", nil},
		{"filter too large", "POST", filter, `{"tools":[{"name":"` + strings.Repeat("x", 9000) + `"}]}`, "", 413, "payload_too_large", nil},
		{"check without name", "POST", check, `{"annotations":{"readOnlyHint":true}}`, "", 400, "invalid_argument", []string{"name"}},
		{"check non-boolean hint", "POST", check, `{"name":"a","annotations":{"readOnlyHint":"true"}}`, "", 400, "invalid_argument",
			[]string{"annotations.readOnlyHint"}},
		{"check empty body", "POST", check, ``, "", 400, "invalid_argument", nil},
		{"check unknown field", "POST", check, `{"name":"a","arguments":{}}`, "", 400, "invalid_argument", []string{"arguments"}},
		{"unknown todo status", "PUT", todos, `{"todos":[{"content":"x","status":"done"}]}`, "", 400, "invalid_argument", []string{"todos[0].status"}},
		{"two in_progress todos", "PUT", todos, `{"todos":[{"content":"x","status":"in_progress"},{"content":"y","status":"pending"},{"content":"z","status":"in_progress"}]}`, "", 400, "invalid_argument",
			[]string{"todos[2].status"}},
		{"todo without content", "PUT", todos, `{"todos":[{"status":"pending"}]}`, "", 400, "invalid_argument", []string{"todos[0].content"}},
		{"todos missing", "PUT", todos, `{}`, "", 400, "invalid_argument", []string{"todos"}},
		{"todo duplicate ids", "PUT", todos, `{"todos":[{"id":"a","content":"x","status":"pending"},{"id":"a","content":"y","status":"pending"}]}`, "", 400, "invalid_argument",
			[]string{"todos[1].id"}},
		{"todo unknown field", "PUT", todos, `{"todos":[{"content":"x","status":"pending","priority":"high"}]}`, "", 400, "invalid_argument", []string{"priority"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := refused(t, env, c.method, c.path, c.body, c.contentType, c.status, c.code)
			var p struct {
				Errors []struct{ Field string } `json:"errors"`
			}
			r.JSON(t, &p)
			var got []string
			for _, e := range p.Errors {
				got = append(got, e.Field)
			}
			if strings.Join(got, ",") != strings.Join(c.fields, ",") {
				t.Errorf("fields %v, want %v: %s", got, c.fields, r.Body)
			}
		})
	}
	for _, table := range []string{"session_plans", "session_todos"} {
		if n := countRows(t, env, table, ""); n != 0 {
			t.Errorf("bad input wrote %d %s rows", n, table)
		}
	}
	if n := countRows(t, env, "events", ""); n != 1 {
		t.Errorf("bad input appended events: %d, want only session.created", n)
	}
	if s := getSession(t, env, "s"); s.Revision != 1 || s.Review.State != "none" {
		t.Errorf("bad input changed the session: %+v", s)
	}
}

func TestPlanModeRoutesOfMissingSessions(t *testing.T) {
	env := apitest.New(t)
	for _, c := range []struct{ method, path, ifMatch string }{
		{"PUT", "/v1/sessions/ghost/plan", ""},
		{"POST", "/v1/sessions/ghost/plan/review", ""},
		{"POST", "/v1/sessions/ghost/plan/approve", "1"},
		{"POST", "/v1/sessions/ghost/plan/reject", ""},
		{"PUT", "/v1/sessions/ghost/todos", ""},
	} {
		var body any
		switch {
		case strings.HasSuffix(c.path, "/plan"):
			body = map[string]any{"content": "x"}
		case strings.HasSuffix(c.path, "/todos"):
			body = map[string]any{"todos": []any{}}
		}
		h := []string{}
		if c.ifMatch != "" {
			h = append(h, "If-Match", c.ifMatch)
		}
		if r := env.Call(c.method, c.path, body, h...); r.Status != 404 || r.Code() != "not_found" {
			t.Errorf("%s %s: %d %s", c.method, c.path, r.Status, r.Body)
		}
	}
	if n := countRows(t, env, "events", ""); n != 0 {
		t.Errorf("events for missing sessions: %d", n)
	}
}
