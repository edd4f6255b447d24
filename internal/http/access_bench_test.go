package http_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/planserver/planserver/internal/apitest"
	"github.com/planserver/planserver/internal/app"
	"github.com/planserver/planserver/internal/auth"
	planhttp "github.com/planserver/planserver/internal/http"
)

// BenchmarkAccess measures what access control adds to a read:
// GET /v1/sessions/{id} on a session two levels below the agent's, served
// in-process, without tokens, with an admin token (one indexed lookup by
// hash) and with an agent token (the lookup and the scope walk).
func BenchmarkAccess(b *testing.B) {
	for _, tc := range []struct {
		name  string
		auth  string
		role  auth.Role
		scope string
	}{
		{"none", planhttp.AuthNone, "", ""},
		{"admin", planhttp.AuthToken, auth.Admin, ""},
		{"agent", planhttp.AuthToken, auth.Agent, "a"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			env := apitest.New(b, func(c *app.Config) { c.Auth = tc.auth })
			setup := env.As(env.Token(auth.Admin, "setup", ""))
			for _, s := range []string{`{"id":"a"}`, `{"id":"a.b","parent_id":"a"}`, `{"id":"a.b.c","parent_id":"a.b"}`} {
				if r := setup.Call("POST", "/v1/sessions", s); r.Status != http.StatusCreated {
					b.Fatalf("create: %d %s", r.Status, r.Body)
				}
			}
			header := ""
			if tc.role != "" {
				header = "Bearer " + env.Token(tc.role, "bench", tc.scope)
			}
			b.ResetTimer()
			for b.Loop() {
				req := httptest.NewRequest("GET", "http://127.0.0.1/v1/sessions/a.b.c", nil)
				if header != "" {
					req.Header.Set("Authorization", header)
				}
				w := httptest.NewRecorder()
				env.API.ServeHTTP(w, req)
				if w.Code != http.StatusOK {
					b.Fatalf("%d %s", w.Code, w.Body)
				}
			}
		})
	}
}
