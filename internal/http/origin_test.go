package http_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/planserver/planserver/internal/apitest"
	"github.com/planserver/planserver/internal/app"
	"github.com/planserver/planserver/internal/auth"
	planhttp "github.com/planserver/planserver/internal/http"
)

// pendingReview makes session id wait for review of its first plan.
func pendingReview(t *testing.T, env *apitest.Env, id string) {
	t.Helper()
	createSession(t, env, map[string]any{"id": id, "mode": "plan"})
	if r := env.Call("PUT", "/v1/sessions/"+id+"/plan", map[string]any{"content": "# Plan\n1. Do it\n"}); r.Status != http.StatusCreated {
		t.Fatalf("write plan: %d %s", r.Status, r.Body)
	}
	if r := env.Call("POST", "/v1/sessions/"+id+"/plan/review", nil); r.Status != http.StatusOK {
		t.Fatalf("ask for review: %d %s", r.Status, r.Body)
	}
}

func permissionDenied(t *testing.T, what string, r *apitest.Response) {
	t.Helper()
	if r.Status != http.StatusForbidden || r.Code() != "permission_denied" {
		t.Errorf("%s: want 403 permission_denied, got %d %s", what, r.Status, r.Body)
	}
}

// TestCrossSiteWritesRefused is issue 20's attack: with the default
// --auth none on loopback, a page on another site sends
// fetch(url, {method: "POST", mode: "no-cors", body: new Blob([json])}).
// The browser sends it without asking (a Blob has no type, so there is no
// Content-Type and no preflight) and adds the page's Origin. It must
// change nothing, on any state-changing route, CORS on or off.
func TestCrossSiteWritesRefused(t *testing.T) {
	env := apitest.New(t)
	pendingReview(t, env, "victim")
	const evil = "http://evil.example"

	// The no-cors Blob: JSON without a Content-Type.
	permissionDenied(t, "reject", env.Bad("POST", "/v1/sessions/victim/plan/reject",
		`{"feedback":"pwned"}`, "Origin", evil, "Content-Type", ""))
	permissionDenied(t, "create", env.Bad("POST", "/v1/sessions", `{"id":"evil"}`, "Origin", evil, "Content-Type", ""))
	// A bodiless POST needs no Content-Type at all, so it stays an attack
	// whatever the server thinks of media types.
	permissionDenied(t, "create without a body", env.Bad("POST", "/v1/sessions", nil, "Origin", evil))
	permissionDenied(t, "ask for review", env.Bad("POST", "/v1/sessions/victim/plan/review", nil, "Origin", evil))
	// Pages can send every other method too once CORS would let them; a
	// form post or a simple request with text/plain is the same attack.
	permissionDenied(t, "text/plain", env.Bad("POST", "/v1/sessions", `{"id":"evil"}`, "Origin", evil, "Content-Type", "text/plain"))
	permissionDenied(t, "mode", env.Bad("PATCH", "/v1/sessions/victim/mode", map[string]string{"mode": "build"}, "Origin", evil))
	permissionDenied(t, "plan", env.Bad("PUT", "/v1/sessions/victim/plan", map[string]string{"content": "# Evil\n"}, "Origin", evil))
	permissionDenied(t, "delete", env.Bad("DELETE", "/v1/sessions/victim", nil, "Origin", evil))
	// Opaque origins (sandboxed frames, file: pages) and look-alikes.
	for _, o := range []string{"null", "http://127.0.0.1.evil.example", env.Server.URL + ".evil.example", "file://", "garbage"} {
		permissionDenied(t, "Origin "+o, env.Bad("POST", "/v1/sessions", nil, "Origin", o))
	}

	s := getSession(t, env, "victim")
	if s.Mode != "plan" || s.Review.State != "pending" {
		t.Errorf("the victim changed: mode %s, review %s", s.Mode, s.Review.State)
	}
	if n := countRows(t, env, "sessions", ""); n != 1 {
		t.Errorf("cross-site requests created %d sessions", n-1)
	}
	if n := countRows(t, env, "events", "actor = 'anonymous' AND type = 'session.review_rejected'"); n != 0 {
		t.Errorf("a cross-site reject was recorded")
	}

	// Reads from another origin are not refused: without CORS the
	// browser does not show the answer to the page.
	if r := env.Call("GET", "/v1/sessions/victim", nil, "Origin", evil); r.Status != http.StatusOK {
		t.Errorf("cross-origin read: %d %s", r.Status, r.Body)
	}
	// Requests without Origin (curl, SDKs, agents) and from the server's
	// own origin (the review console) still work.
	if r := env.Call("POST", "/v1/sessions", map[string]any{"id": "from-curl"}); r.Status != http.StatusCreated {
		t.Errorf("no Origin: %d %s", r.Status, r.Body)
	}
	if r := env.Call("POST", "/v1/sessions/victim/plan/reject", map[string]any{"feedback": "from the console"},
		"Origin", env.Server.URL, "If-Match", `"1"`); r.Status != http.StatusOK {
		t.Errorf("same origin: %d %s", r.Status, r.Body)
	}
	u, _ := url.Parse(env.Server.URL)
	_, port, _ := strings.Cut(u.Host, ":")
	if r := env.Call("POST", "/v1/sessions", map[string]any{"id": "from-localhost"},
		"Host", "localhost:"+port, "Origin", "http://LOCALHOST:"+port); r.Status != http.StatusCreated {
		t.Errorf("same origin by another loopback name: %d %s", r.Status, r.Body)
	}
}

// TestCrossSiteWithCORS: a configured CORS origin may write; any other
// origin is still refused, preflight or not.
func TestCrossSiteWithCORS(t *testing.T) {
	const console = "https://console.example.com"
	env := apitest.New(t, func(c *app.Config) {
		c.Auth = planhttp.AuthToken
		c.CORSOrigins = []string{console}
	})
	admin := env.As(env.Token(auth.Admin, "console", ""))
	r := admin.Call("POST", "/v1/sessions", map[string]any{"id": "ok"}, "Origin", console)
	if r.Status != http.StatusCreated || r.Header.Get("Access-Control-Allow-Origin") != console {
		t.Errorf("CORS origin: %d %v %s", r.Status, r.Header, r.Body)
	}
	// A token does not make a foreign origin acceptable: it is refused
	// before authentication, whatever the credential.
	permissionDenied(t, "foreign origin with a token", admin.Bad("POST", "/v1/sessions", `{"id":"evil"}`,
		"Origin", "https://evil.example.net", "Content-Type", ""))
	permissionDenied(t, "foreign origin without a token", env.Bad("POST", "/v1/sessions", nil,
		"Origin", "https://evil.example.net"))
	if n := countRows(t, env, "sessions", ""); n != 1 {
		t.Errorf("%d sessions, want 1", n)
	}
}

// TestHostCheck: with --auth none, a DNS-rebinding page (its own name now
// resolves to 127.0.0.1, so the browser thinks it is same-origin) sends
// its own name as Host and is refused on every route; loopback names and
// --allowed-hosts are served.
func TestHostCheck(t *testing.T) {
	env := apitest.New(t)
	createSession(t, env, map[string]any{"id": "s"})
	u, _ := url.Parse(env.Server.URL)
	_, port, _ := strings.Cut(u.Host, ":")

	for _, host := range []string{"attacker.example", "attacker.example:" + port, "localhost.attacker.example",
		"127.0.0.1.nip.io:" + port, "10.0.0.1:" + port, "[::2]:" + port, "0.0.0.0:" + port} {
		permissionDenied(t, "GET with Host "+host, env.Call("GET", "/v1/sessions/s", nil, "Host", host))
		permissionDenied(t, "POST with Host "+host, env.Call("POST", "/v1/sessions/s/plan/review", nil, "Host", host))
		permissionDenied(t, "console with Host "+host, env.Call("GET", "/ui/", nil, "Host", host))
		permissionDenied(t, "healthz with Host "+host, env.Call("GET", "/healthz", nil, "Host", host))
	}
	for _, host := range []string{"localhost", "localhost:" + port, "LOCALHOST:" + port, "app.localhost:" + port,
		"127.0.0.1", "127.0.0.1:" + port, "127.9.8.7:80", "[::1]", "[::1]:" + port, "localhost.:" + port} {
		if r := env.Call("GET", "/v1/sessions/s", nil, "Host", host); r.Status != http.StatusOK {
			t.Errorf("Host %s: %d %s", host, r.Status, r.Body)
		}
	}

	// Behind a proxy, the names it forwards are listed.
	proxied := apitest.New(t, func(c *app.Config) {
		c.AllowedHosts = []string{"planserver.internal", "plans.example.com:8443", "[fd00::1]"}
	})
	for host, want := range map[string]int{
		"planserver.internal":        http.StatusOK,
		"PlanServer.Internal:9000":   http.StatusOK,
		"plans.example.com:8443":     http.StatusOK,
		"plans.example.com":          http.StatusForbidden,
		"plans.example.com:443":      http.StatusForbidden,
		"[fd00::1]:8080":             http.StatusOK,
		"127.0.0.1:" + port:          http.StatusOK,
		"evil.planserver.internal":   http.StatusForbidden,
		"planserver.internal.evil.x": http.StatusForbidden,
	} {
		if r := proxied.Call("GET", "/v1/sessions", nil, "Host", host); r.Status != want {
			t.Errorf("--allowed-hosts, Host %s: %d, want %d", host, r.Status, want)
		}
	}

	// With tokens, the Host check is off unless --allowed-hosts is set: a
	// rebinding page has no token to use.
	tokens := apitest.New(t, func(c *app.Config) { c.Auth = planhttp.AuthToken })
	viewer := tokens.As(tokens.Token(auth.Viewer, "v", ""))
	if r := viewer.Call("GET", "/v1/sessions", nil, "Host", "planserver.example.com"); r.Status != http.StatusOK {
		t.Errorf("--auth token without --allowed-hosts: %d %s", r.Status, r.Body)
	}
	if r := tokens.Call("GET", "/v1/sessions", nil, "Host", "planserver.example.com"); r.Status != http.StatusUnauthorized {
		t.Errorf("--auth token, no token: %d %s", r.Status, r.Body)
	}
	strict := apitest.New(t, func(c *app.Config) {
		c.Auth = planhttp.AuthToken
		c.AllowedHosts = []string{"planserver.example.com"}
	})
	sv := strict.As(strict.Token(auth.Viewer, "v", ""))
	if r := sv.Call("GET", "/v1/sessions", nil, "Host", "planserver.example.com"); r.Status != http.StatusOK {
		t.Errorf("listed host: %d %s", r.Status, r.Body)
	}
	permissionDenied(t, "--auth token with --allowed-hosts, other Host", sv.Call("GET", "/v1/sessions", nil, "Host", "other.example.com"))
}

// TestRefusalsNameTheirRoute: a request refused before routing is still
// logged and counted under the route it was for.
func TestRefusalsNameTheirRoute(t *testing.T) {
	env := apitest.New(t)
	permissionDenied(t, "reject", env.Bad("POST", "/v1/sessions/x/plan/reject", nil, "Origin", "http://evil.example"))
	r := env.Call("GET", "/metrics", nil)
	want := `planserver_http_requests_total{method="POST",route="/v1/sessions/{id}/plan/reject",status="403"} 1`
	if !strings.Contains(string(r.Body), want) {
		t.Errorf("metrics lack %s", want)
	}
}
