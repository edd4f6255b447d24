package http_test

import (
	"net/http"
	"testing"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/apitest"
	"github.com/planserver/planserver/internal/auth"
)

// TestMeForTokens: GET /v1/me names a token by its name and role, an agent
// with its scope, and the anonymous admin of --auth none; none of them
// gets a CSRF token, which only a cookie needs.
func TestMeForTokens(t *testing.T) {
	env := apitest.New(t, withTokens)
	as := env.As(env.Token(auth.Admin, "ops", ""))
	createSession(t, as, map[string]any{"id": "root"})
	agent := env.Token(auth.Agent, "worker", "root")
	for _, tc := range []struct {
		token string
		want  api.Me
	}{
		{env.Token(auth.Viewer, "watcher", ""), api.Me{Kind: "token", Subject: "watcher", Name: "watcher", Role: "viewer"}},
		{agent, api.Me{Kind: "token", Subject: "worker", Name: "worker", Role: "agent"}},
	} {
		resp := env.As(tc.token).Call(http.MethodGet, "/v1/me", nil)
		if resp.Status != http.StatusOK {
			t.Fatalf("GET /v1/me = %d %s", resp.Status, resp.Body)
		}
		var got api.Me
		resp.JSON(t, &got)
		if got.Kind != tc.want.Kind || got.Subject != tc.want.Subject || got.Name != tc.want.Name ||
			got.Role != tc.want.Role || got.Email != "" || got.CSRFToken != nil || got.ExpiresAt != nil {
			t.Errorf("GET /v1/me = %+v, want %+v", got, tc.want)
		}
		if tc.want.Role == "agent" && (got.SessionID == nil || *got.SessionID != "root") {
			t.Errorf("agent's session_id = %v, want root", got.SessionID)
		}
		if cc := resp.Header.Get("Cache-Control"); cc != "no-store" {
			t.Errorf("Cache-Control %q", cc)
		}
	}
	if resp := env.As("").Call(http.MethodGet, "/v1/me", nil); resp.Status != http.StatusUnauthorized {
		t.Errorf("GET /v1/me without a credential = %d", resp.Status)
	}

	open := apitest.New(t)
	var got api.Me
	resp := open.Call(http.MethodGet, "/v1/me", nil)
	resp.JSON(t, &got)
	if got.Kind != "token" || got.Subject != "anonymous" || got.Role != "admin" {
		t.Errorf("--auth none: GET /v1/me = %+v", got)
	}
}
