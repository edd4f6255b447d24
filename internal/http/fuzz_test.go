package http_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/planserver/planserver/internal/apitest"
)

// checkAnswer judges one fuzzed exchange: never a 5xx, and whatever the
// input, the answer follows api/openapi.yaml (its status is listed, its
// body fits the schema, an error is a problem document).
func checkAnswer(t *testing.T, req *http.Request, body []byte, rec *httptest.ResponseRecorder) {
	t.Helper()
	if rec.Code >= 500 {
		t.Fatalf("%s %s with %q: %d %s", req.Method, req.URL, body, rec.Code, rec.Body)
	}
	resp := &apitest.Response{Status: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()}
	if err := apitest.Validate(t, req, body, resp, false); err != nil {
		t.Fatalf("%s %s with %q: %v", req.Method, req.URL, body, err)
	}
}

// fuzzBody feeds arbitrary bytes as the body of one route through the real
// router on a real database: whatever the bytes, the answer is a success or
// a problem document with a 4xx status as the contract lists them, never a
// 5xx, and the server keeps answering. setup prepares what the route needs
// (a session to patch).
func fuzzBody(f *testing.F, method, path, contentType string, seeds []string, setup func(env *apitest.Env)) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	env := apitest.New(f)
	if setup != nil {
		setup(env)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req := httptest.NewRequest(method, "http://127.0.0.1"+path, bytes.NewReader(body))
		req.Header.Set("Content-Type", contentType)
		rec := httptest.NewRecorder()
		env.API.ServeHTTP(rec, req)
		checkAnswer(t, req, body, rec)
	})
}

func FuzzCreateSessionBody(f *testing.F) {
	fuzzBody(f, "POST", "/v1/sessions", "application/json", []string{
		``, `{}`, `{"id":"a"}`, `{"id":"a","mode":"plan","harness":true}`, `{"parent_id":"missing"}`,
		`{"metadata":{"k":[1,2,{"x":null}]}}`, `{"id":7}`, `[`, `{"id":"a"}{}`, `{"mode":"\u0000"}`,
		`{"title":"` + string(bytes.Repeat([]byte("x"), 2000)) + `"}`,
	}, nil)
}

func FuzzPatchSessionBody(f *testing.F) {
	fuzzBody(f, "PATCH", "/v1/sessions/s", "application/merge-patch+json", []string{
		`{}`, `{"title":"t"}`, `{"title":null}`, `{"metadata":{"a":{"b":null}}}`, `{"metadata":null}`,
		`{"mode":"plan"}`, `{"parent_id":"x"}`, `null`, `[]`, `"x"`, `{"metadata":{"a":1e400}}`,
	}, func(env *apitest.Env) {
		env.Call(http.MethodPost, "/v1/sessions", map[string]any{"id": "s"})
	})
}

func FuzzSetModeBody(f *testing.F) {
	fuzzBody(f, "PATCH", "/v1/sessions/s/mode", "application/json", []string{
		`{"mode":"plan"}`, `{"mode":"build"}`, `{"mode":"x"}`, `{}`, `{"mode":null}`, `{"mode":["plan"]}`,
	}, func(env *apitest.Env) {
		env.Call(http.MethodPost, "/v1/sessions", map[string]any{"id": "s"})
	})
}

// withSessionAndPlan prepares a session "s" in plan mode with a session
// plan, and a shared plan "p", for the routes that need them.
func withSessionAndPlan(env *apitest.Env) {
	env.Call(http.MethodPost, "/v1/sessions", map[string]any{"id": "s", "mode": "plan"})
	env.Call(http.MethodPut, "/v1/sessions/s/plan", map[string]any{"content": "# plan"})
	env.Call(http.MethodPut, "/v1/plans/p", map[string]any{"content": "# shared"})
}

func FuzzPutPlanBody(f *testing.F) {
	fuzzBody(f, "PUT", "/v1/plans/p", "application/json", []string{
		`{"content":"x"}`, `{"content":"x","title":"t","status":"s","author":"a","steps":[{"id":"1"}]}`,
		`{"content":"x","last_known_revision":1}`, `{"content":""}`, `{"content":null}`, `{"steps":{}}`,
		`{"content":"x","last_known_revision":-1}`, `{"content":"\ud800"}`,
	}, withSessionAndPlan)
}

func FuzzPutPlanYAML(f *testing.F) {
	fuzzBody(f, "PUT", "/v1/plans/p", "application/yaml", []string{
		"content: x\n", "title: t\ncontent: |\n  # plan\nsteps:\n- id: \"1\"\n  description: d\n  owner: o\n",
		"# comment\nsteps: []\ncontent: x\n", "content: [1]\n", "&a [*a]", "content: x\nunknown: 1\n", "\t",
	}, withSessionAndPlan)
}

func FuzzPutPlanStatusBody(f *testing.F) {
	fuzzBody(f, "PUT", "/v1/plans/p/status", "application/json", []string{
		`{"status":"done"}`, `{"status":"x","last_known_revision":1}`, `{}`, `{"status":5}`,
	}, withSessionAndPlan)
}

func FuzzPutSessionPlanBody(f *testing.F) {
	fuzzBody(f, "PUT", "/v1/sessions/s/plan", "application/json", []string{
		`{"content":"# plan"}`, `{"content":"x","author":"me"}`, `{"content":"   "}`, `{}`, `{"content":1}`,
	}, withSessionAndPlan)
}

func FuzzReviewBodies(f *testing.F) {
	fuzzBody(f, "POST", "/v1/sessions/s/plan/review", "application/json", []string{
		``, `{}`, `{"rationale":"r"}`, `{"rationale":null}`, `{"feedback":"x"}`,
	}, withSessionAndPlan)
}

func FuzzToolsFilterBody(f *testing.F) {
	fuzzBody(f, "POST", "/v1/sessions/s/tools/filter", "application/json", []string{
		`{"tools":[]}`, `{"tools":[{"name":"read","annotations":{"readOnlyHint":true}},{"name":"shell"}]}`,
		`{"tools":[{"name":""}]}`, `{"tools":[{"name":"a"},{"name":"a"}]}`, `{"tools":[{"name":"a","annotations":{"readOnlyHint":"yes"}}]}`,
		`{"tools":[{"name":"a","inputSchema":{"type":"object"},"_meta":{}}]}`, `{"tools":null}`,
	}, withSessionAndPlan)
}

func FuzzToolsCheckBody(f *testing.F) {
	fuzzBody(f, "POST", "/v1/sessions/s/tools/check", "application/json", []string{
		`{"name":"shell"}`, `{"name":"read","annotations":{"readOnlyHint":true}}`, `{"name":""}`, `{}`,
	}, withSessionAndPlan)
}

func FuzzPutTodosBody(f *testing.F) {
	fuzzBody(f, "PUT", "/v1/sessions/s/todos", "application/json", []string{
		`{"todos":[]}`, `{"todos":[{"content":"a","status":"pending"},{"id":"x","content":"b","status":"in_progress"}]}`,
		`{"todos":[{"content":"a","status":"in_progress"},{"content":"b","status":"in_progress"}]}`,
		`{"todos":[{"content":"","status":"done"}]}`, `{"todos":[{"id":"a","content":"x","status":"pending"},{"id":"a","content":"y","status":"pending"}]}`,
	}, withSessionAndPlan)
}

// fuzzHeader feeds arbitrary values of one request header to a GET route:
// a problem or a success, never a 5xx.
func fuzzHeader(f *testing.F, path, header string, seeds []string, accept string) {
	for _, s := range seeds {
		f.Add(s)
	}
	env := apitest.New(f)
	withSessionAndPlan(env)
	f.Fuzz(func(t *testing.T, v string) {
		req := httptest.NewRequest("GET", "http://127.0.0.1"+path, nil)
		req.Header[header] = []string{v}
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		rec := httptest.NewRecorder()
		env.API.ServeHTTP(rec, req)
		checkAnswer(t, req, nil, rec)
	})
}

func FuzzLastEventID(f *testing.F) {
	fuzzHeader(f, "/v1/events?limit=5", "Last-Event-Id", []string{"", "0", "1", "-1", "99999999999999999999", "abc", " 3 ", "3\n"}, "application/json")
}

func FuzzIfNoneMatchOnGet(f *testing.F) {
	fuzzHeader(f, "/v1/plans/p", "If-None-Match", []string{"", `"1"`, "1", "*", `W/"1"`, `"1", "2"`, "abc", `"`}, "")
}

func FuzzEventsQuery(f *testing.F) {
	for _, s := range []string{"after=1", "types=session.created,plan.updated", "session_id=s&plan=p", "limit=0", "after=x", "types=nope", "session_id=%00"} {
		f.Add(s)
	}
	env := apitest.New(f)
	withSessionAndPlan(env)
	f.Fuzz(func(t *testing.T, q string) {
		req, err := http.NewRequest("GET", "/v1/events?"+q, nil)
		if err != nil {
			return // not a request line a client could send
		}
		req.Header.Set("Accept", "application/json")
		rec := httptest.NewRecorder()
		env.API.ServeHTTP(rec, req)
		checkAnswer(t, req, nil, rec)
	})
}

// withSteps prepares a plan "w" with two steps, the second depending on the
// first, for the step routes.
func withSteps(env *apitest.Env) {
	env.Call(http.MethodPut, "/v1/plans/w", map[string]any{"content": "# w", "steps": []map[string]any{
		{"id": "1", "description": "first", "owner": "a"},
		{"id": "2", "description": "second", "owner": "b", "deps": []string{"1"}},
	}})
}

func FuzzClaimBody(f *testing.F) {
	fuzzBody(f, "POST", "/v1/plans/w/steps/claim", "application/json", []string{
		`{"worker":"w1"}`, `{"worker":"w1","owner":"a","lease_seconds":60}`, `{"worker":""}`, `{"lease_seconds":-1,"worker":"x"}`,
		`{"worker":"x","lease_seconds":1e9}`, `{}`,
	}, withSteps)
}

func FuzzPatchStepBody(f *testing.F) {
	fuzzBody(f, "PATCH", "/v1/plans/w/steps/2", "application/json", []string{
		`{"status":"complete"}`, `{"status":"in_progress"}`, `{"owner":"c"}`, `{"status":"done"}`, `{"status":null}`, `{}`,
	}, withSteps)
}

func FuzzStepReportBody(f *testing.F) {
	fuzzBody(f, "POST", "/v1/plans/w/steps/1/reports", "application/json", []string{
		`{"outcome":"success","details":"ok"}`, `{"outcome":"failure","details":"x","artifacts":[{"file":"a","status":"created"}]}`,
		`{"outcome":"blocked","worker":"w1"}`, `{"outcome":"maybe"}`, `{"step_id":"2","outcome":"success"}`,
		`{"outcome":"success","timestamp":"2026-01-10T17:30:00Z"}`, `{"outcome":"success","artifacts":[{"x":1}]}`,
	}, withSteps)
}

func FuzzPutStepsYAML(f *testing.F) {
	fuzzBody(f, "PUT", "/v1/plans/w", "application/yaml", []string{
		"steps:\n- id: \"1\"\n  description: d\n  owner: o\n  deps: [\"1\"]\n",
		"steps:\n- id: a\n  description: d\n  owner: o\n  deps: [b]\n- id: b\n  description: d\n  owner: o\n  deps: [a]\n",
		"steps:\n- id: 1\n  description: d\n  owner: o\n", "steps: {}\n", "steps:\n- {id: x, description: d, owner: o, status: done}\n",
	}, withSteps)
}
