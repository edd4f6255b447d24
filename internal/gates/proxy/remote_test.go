package proxy_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/gates/proxy"
	"github.com/planserver/planserver/internal/sessions"
)

// TestRemoteCheckerAsksThroughTheClient: the stdio gate's checker sends
// each tool with its upstream in _meta and the session's token, and a
// refusal reads as the gate has always written it: method, URL, status,
// and the problem's code and detail when there is one.
func TestRemoteCheckerAsksThroughTheClient(t *testing.T) {
	var got api.Tool
	var auth string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth = r.Header.Get("Authorization")
		switch r.URL.Path {
		case "/v1/sessions/s1/tools/check":
			_ = json.NewDecoder(r.Body).Decode(&got)
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write([]byte(`{"type":"about:blank","title":"Forbidden","status":403,"code":"permission_denied","detail":"not yours"}`))
		default:
			w.WriteHeader(http.StatusBadGateway)
		}
	}))
	defer srv.Close()
	c := proxy.RemoteChecker{Server: srv.URL, Session: "s1", Token: "tok"}
	_, _, err := c.Check(context.Background(), sessions.Tool{Name: "deploy", Upstream: "ops"})
	want := "POST " + srv.URL + "/v1/sessions/s1/tools/check answered 403 permission_denied: not yours"
	if err == nil || err.Error() != want {
		t.Errorf("check: %v, want %s", err, want)
	}
	if got.Name != "deploy" || got.Meta[api.UpstreamMeta] != "ops" || auth != "Bearer tok" {
		t.Errorf("sent %+v with %q", got, auth)
	}
	_, err = c.Filter(context.Background(), []sessions.Tool{{Name: "deploy"}})
	want = "POST " + srv.URL + "/v1/sessions/s1/tools/filter answered 502"
	if err == nil || err.Error() != want {
		t.Errorf("filter: %v, want %s", err, want)
	}
	_, err = c.EffectiveMode(context.Background())
	want = "GET " + srv.URL + "/v1/sessions/s1 answered 502"
	if err == nil || err.Error() != want {
		t.Errorf("mode: %v, want %s", err, want)
	}
}
