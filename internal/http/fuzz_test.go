package http_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/planserver/planserver/internal/apitest"
)

// fuzzBody feeds arbitrary bytes as the body of one route through the real
// router on a real database: whatever the bytes, the answer is a success or
// a problem document with a 4xx status, never a 5xx, and the server keeps
// answering. setup prepares what the route needs (a session to patch).
func fuzzBody(f *testing.F, method, path, contentType string, seeds []string, setup func(env *apitest.Env)) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	env := apitest.New(f)
	if setup != nil {
		setup(env)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req := httptest.NewRequest(method, path, bytes.NewReader(body))
		req.Header.Set("Content-Type", contentType)
		rec := httptest.NewRecorder()
		env.API.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%s %s with %q: %d %s", method, path, body, rec.Code, rec.Body)
		}
		if rec.Code >= 400 {
			var p struct {
				Status int    `json:"status"`
				Code   string `json:"code"`
			}
			if rec.Header().Get("Content-Type") != "application/problem+json" ||
				json.Unmarshal(rec.Body.Bytes(), &p) != nil || p.Status != rec.Code || p.Code == "" {
				t.Fatalf("%s %s with %q: %d is not a problem document: %s", method, path, body, rec.Code, rec.Body)
			}
		}
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
