package http_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/planserver/planserver/internal/apitest"
	"github.com/planserver/planserver/internal/app"
	"github.com/planserver/planserver/internal/auth"
	planhttp "github.com/planserver/planserver/internal/http"
)

// slowLimit allows bursts of 2 and then one request every 1000 s, so the
// third request in a row is refused however slow the machine is.
func slowLimit(c *app.Config) { c.RateLimit, c.RateBurst = 0.001, 2 }

func rateLimited(t *testing.T, resp *apitest.Response) {
	t.Helper()
	if resp.Status != http.StatusTooManyRequests || resp.Code() != "rate_limited" {
		t.Fatalf("want 429 rate_limited, got %d %s", resp.Status, resp.Body)
	}
	secs, err := strconv.Atoi(resp.Header.Get("Retry-After"))
	if err != nil || secs < 1 || secs > 1000 {
		t.Errorf("Retry-After %q", resp.Header.Get("Retry-After"))
	}
}

func TestRateLimitPerToken(t *testing.T) {
	env := apitest.New(t, func(c *app.Config) { c.Auth = planhttp.AuthToken }, slowLimit)
	a := env.As(env.Token(auth.Admin, "a", ""))
	b := env.As(env.Token(auth.Viewer, "b", ""))
	for range 2 {
		if r := a.Call("GET", "/v1/sessions", nil); r.Status != http.StatusOK {
			t.Fatalf("within the burst: %d %s", r.Status, r.Body)
		}
	}
	rateLimited(t, a.Call("GET", "/v1/sessions", nil))
	// A write is refused before it does anything.
	rateLimited(t, a.Call("POST", "/v1/sessions", map[string]any{"id": "late"}))
	if n := countRows(t, env, "sessions", ""); n != 0 {
		t.Errorf("a rate-limited create wrote %d sessions", n)
	}
	// Another token has its own budget; the operations endpoints have none.
	if r := b.Call("GET", "/v1/sessions", nil); r.Status != http.StatusOK {
		t.Errorf("another token: %d %s", r.Status, r.Body)
	}
	for range 3 {
		if r := a.Call("GET", "/healthz", nil); r.Status != http.StatusOK {
			t.Errorf("healthz: %d", r.Status)
		}
	}
	// Failed authentications count against the client's address.
	bogus := env.As(auth.NewToken())
	for range 2 {
		if r := bogus.Call("GET", "/v1/sessions", nil); r.Status != http.StatusUnauthorized {
			t.Fatalf("bogus token: %d %s", r.Status, r.Body)
		}
	}
	rateLimited(t, bogus.Call("GET", "/v1/sessions", nil))
}

// TestNoRateLimitWithoutTokens: with --auth none the server is the loopback
// user's alone, and its host apps (a TUI, a web UI, the agent's tool
// filter every turn) share one address; limits are per token.
func TestNoRateLimitWithoutTokens(t *testing.T) {
	env := apitest.New(t, slowLimit)
	for range 10 {
		if r := env.Call("GET", "/v1/sessions", nil); r.Status != http.StatusOK {
			t.Fatalf("without tokens: %d %s", r.Status, r.Body)
		}
	}
}

func TestCORS(t *testing.T) {
	const allowed = "https://console.example.com"
	env := apitest.New(t, func(c *app.Config) {
		c.Auth = planhttp.AuthToken
		c.CORSOrigins = []string{allowed}
	})
	admin := env.As(env.Token(auth.Admin, "console", ""))
	createSession(t, admin, map[string]any{"id": "s"})

	// A preflight carries no token and is answered before authentication.
	// OPTIONS is not an operation of the contract, so it goes around
	// env.Call.
	preflight := func(origin string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodOptions, env.Server.URL+"/v1/sessions/s/mode", nil)
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", "PATCH")
		req.Header.Set("Access-Control-Request-Headers", "authorization, content-type, if-match")
		resp, err := env.Client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	resp := preflight(allowed)
	h := resp.Header
	if resp.StatusCode != http.StatusOK || h.Get("Access-Control-Allow-Origin") != allowed ||
		h.Get("Access-Control-Allow-Methods") != "PATCH" ||
		!strings.Contains(strings.ToLower(h.Get("Access-Control-Allow-Headers")), "authorization") ||
		!strings.Contains(strings.ToLower(h.Get("Access-Control-Allow-Headers")), "if-match") {
		t.Errorf("allowed preflight: %d %v", resp.StatusCode, h)
	}
	resp = preflight("https://evil.example.net")
	if v := resp.Header.Get("Access-Control-Allow-Origin"); v != "" {
		t.Errorf("disallowed origin got Access-Control-Allow-Origin %q", v)
	}
	if v := resp.Header.Get("Access-Control-Allow-Methods"); v != "" {
		t.Errorf("disallowed origin got Access-Control-Allow-Methods %q", v)
	}

	// The actual request: the origin is echoed and the headers a UI needs
	// are exposed.
	r := admin.Call("GET", "/v1/sessions/s", nil, "Origin", allowed)
	exposed := strings.ToLower(r.Header.Get("Access-Control-Expose-Headers"))
	if r.Header.Get("Access-Control-Allow-Origin") != allowed {
		t.Errorf("actual request: %v", r.Header)
	}
	for _, name := range []string{"etag", "location", "retry-after", "x-request-id"} {
		if !strings.Contains(exposed, name) {
			t.Errorf("%s is not exposed: %q", name, exposed)
		}
	}
	if r := admin.Call("GET", "/v1/sessions/s", nil, "Origin", "https://evil.example.net"); r.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("disallowed origin's request: %v", r.Header)
	}

	// Without --cors-origins there is no CORS at all.
	plain := apitest.New(t)
	req, _ := http.NewRequest(http.MethodOptions, plain.Server.URL+"/v1/sessions", nil)
	req.Header.Set("Origin", allowed)
	req.Header.Set("Access-Control-Request-Method", "POST")
	pr, err := plain.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	pr.Body.Close()
	if pr.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("CORS without --cors-origins: %v", pr.Header)
	}
}
