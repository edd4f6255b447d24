package mcp_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/planserver/planserver/internal/apitest"
	"github.com/planserver/planserver/internal/app"
	"github.com/planserver/planserver/internal/auth"
	planhttp "github.com/planserver/planserver/internal/http"
)

var listRequest = map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}

const streamableAccept = "application/json, text/event-stream"

// TestTransportAnswers: /mcp is POST only, behind the same authentication
// as /v1, and its transport errors are problem documents like every other
// error of the server (checked against api/openapi.yaml by apitest).
func TestTransportAnswers(t *testing.T) {
	env := apitest.New(t, func(c *app.Config) { c.Auth = planhttp.AuthToken })
	token := env.Token(auth.Viewer, "v", "")
	as := env.As(token)

	for _, method := range []string{"GET", "DELETE", "PUT"} {
		resp := as.Do(apitest.Request{Method: method, Path: "/mcp", Header: map[string]string{"Accept": streamableAccept}})
		mustStatus(t, resp, http.StatusMethodNotAllowed)
		if resp.Header.Get("Allow") != "POST" || resp.Code() != "method_not_allowed" {
			t.Fatalf("%s /mcp: Allow %q, code %q", method, resp.Header.Get("Allow"), resp.Code())
		}
	}

	resp := env.Call("POST", "/mcp", listRequest, "Accept", streamableAccept)
	mustStatus(t, resp, http.StatusUnauthorized)

	// The SDK's own refusals come back as problem documents.
	resp = as.Call("POST", "/mcp", listRequest, "Accept", "application/json")
	mustStatus(t, resp, http.StatusBadRequest)
	if resp.Code() != "invalid_argument" || !strings.Contains(string(resp.Body), "text/event-stream") {
		t.Fatalf("POST without text/event-stream in Accept: %s", resp.Body)
	}
	resp = as.Bad("POST", "/mcp", "{", "Accept", streamableAccept)
	mustStatus(t, resp, http.StatusBadRequest)
	if resp.Code() != "invalid_argument" {
		t.Fatalf("malformed body: %s", resp.Body)
	}

	resp = as.Call("POST", "/mcp", listRequest, "Accept", streamableAccept)
	mustStatus(t, resp, http.StatusOK)
	if !strings.Contains(string(resp.Body), `"read_plan"`) || strings.Contains(string(resp.Body), `"write_plan"`) {
		t.Fatalf("a viewer's tools/list: %s", resp.Body)
	}
}
