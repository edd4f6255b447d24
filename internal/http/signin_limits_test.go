package http_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/planserver/planserver/internal/apitest"
	"github.com/planserver/planserver/internal/app"
	"github.com/planserver/planserver/internal/auth"
	"github.com/planserver/planserver/internal/dbtest"
	"github.com/planserver/planserver/internal/http/signin"
)

// fromAddress is a client whose connections come from the loopback
// address src (127.0.0.0/8 is all loopback), so that one test can be many
// clients; it follows no redirects and keeps no cookies.
func fromAddress(src string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
	return &http.Client{Timeout: 10 * time.Second,
		Transport:     &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// get sends GET path from c, checks the exchange against the contract
// and returns the answer.
func (e *signInEnv) get(t *testing.T, c *http.Client, path string, header ...string) *apitest.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, e.Server.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	hresp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer hresp.Body.Close()
	body, _ := io.ReadAll(hresp.Body)
	resp := &apitest.Response{Status: hresp.StatusCode, Header: hresp.Header, Body: body}
	if err := apitest.Validate(t, req, nil, resp, true); err != nil {
		t.Errorf("GET %s: %v", path, err)
	}
	return resp
}

// attempts counts the login attempts on record.
func (e *signInEnv) attempts(t *testing.T) int {
	t.Helper()
	var n int
	if err := e.DB.Reader(context.Background()).QueryRow(`SELECT count(*) FROM signin_attempts`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// commits is the database's commit version, which every commit moves.
func (e *signInEnv) commits(t *testing.T) uint64 {
	t.Helper()
	v, err := e.DB.Version(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestLoginFlood: /auth/login is unauthenticated and records an attempt
// per request, so it is bounded three ways. With --rate-limit 5
// --rate-burst 10, a client that floods it gets 429 problem+json with
// Retry-After beyond its bucket; one client never holds more than its
// share of attempts (its newest); when many clients fill the table, a
// login is 503 problem+json with Retry-After and writes nothing; and the
// attempts expire, after which logins work again. Made-up callbacks and
// logouts are limited by the same bucket and never reach the writer. The
// issue's flood (400 logins, all 302, 400 rows) is the first part.
func TestLoginFlood(t *testing.T) {
	e := newSignInServer(t, dbtest.Fresh(t), newIDP(t), func(c *app.Config) { c.RateLimit, c.RateBurst = 5, 10 },
		func(s *signin.Settings) { s.Attempts = auth.AttemptLimits{PerClient: 8, Total: 20} })
	admin := e.As(e.Token(auth.Admin, "ops", ""))

	// One client, 400 logins as fast as it can send them.
	flooder := fromAddress("127.0.0.1")
	start := time.Now()
	counts := map[int]int{}
	for range 400 {
		resp := e.get(t, flooder, "/auth/login")
		counts[resp.Status]++
		if resp.Status == http.StatusTooManyRequests {
			if resp.Code() != "rate_limited" || resp.Header.Get("Retry-After") == "" {
				t.Fatalf("a limited login: %d %s %v", resp.Status, resp.Body, resp.Header)
			}
		} else if resp.Status != http.StatusFound {
			t.Fatalf("a login: %d %s", resp.Status, resp.Body)
		}
	}
	allowed := 10 + int(5*time.Since(start).Seconds()) + 1
	if counts[http.StatusFound] > allowed || counts[http.StatusTooManyRequests] < 400-allowed {
		t.Errorf("400 logins from one client: %v, want at most %d let through", counts, allowed)
	}
	if n := e.attempts(t); n > 8 {
		t.Errorf("one client holds %d attempts, more than its 8", n)
	}
	// Authenticated writes go on.
	putPlan(t, admin, "during", map[string]any{"content": "x"}, http.StatusCreated)

	// Many clients, each within its rate: the table fills to its bound,
	// and the logins beyond it are refused without a write.
	refused := 0
	for i := 2; i <= 6; i++ {
		c := fromAddress("127.0.0." + strconv.Itoa(i))
		for range 8 {
			before := e.commits(t)
			resp := e.get(t, c, "/auth/login")
			switch resp.Status {
			case http.StatusFound:
			case http.StatusServiceUnavailable:
				refused++
				if resp.Code() != "unavailable" || resp.Header.Get("Retry-After") == "" {
					t.Fatalf("a login beyond the bound: %d %s", resp.Status, resp.Body)
				}
				if after := e.commits(t); after != before {
					t.Errorf("a refused login committed (version %d to %d)", before, after)
				}
			default:
				t.Fatalf("a login from client %d: %d %s", i, resp.Status, resp.Body)
			}
			if n := e.attempts(t); n > 20 {
				t.Fatalf("%d attempts on record, more than the 20 allowed", n)
			}
		}
	}
	if refused == 0 || e.attempts(t) != 20 {
		t.Errorf("40 logins from five more clients: %d refused, %d attempts on record; want some refused, 20 on record", refused, e.attempts(t))
	}

	// A callback with a made-up state (and a cookie to match) or a logout
	// with a made-up cookie writes nothing, and floods draw on the same
	// bucket as logins.
	prober := fromAddress("127.0.0.7")
	before := e.commits(t)
	limited := 0
	for range 30 {
		state := auth.NewNonce()
		resp, err := prober.Do(mustRequest(t, http.MethodGet, e.Server.URL+signin.CallbackPath+"?"+
			url.Values{"code": {"x"}, "state": {state}}.Encode(), "Cookie", "planserver_login="+state))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusTooManyRequests {
			limited++
		} else if resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("a made-up callback: %d", resp.StatusCode)
		}
		resp, err = prober.Do(mustRequest(t, http.MethodPost, e.Server.URL+"/auth/logout", "Cookie",
			signin.Cookie+"="+auth.SignInPrefix+auth.NewNonce()))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if limited == 0 {
		t.Error("30 made-up callbacks and logouts from one client: none limited")
	}
	if after := e.commits(t); after != before {
		t.Errorf("made-up callbacks and logouts committed (version %d to %d)", before, after)
	}

	// Attempts expire: past their ten minutes, logins work again and the
	// table holds only the new one.
	e.DB.SetClock(func() time.Time { return time.Now().Add(11 * time.Minute) })
	defer e.DB.SetClock(time.Now)
	if resp := e.get(t, fromAddress("127.0.0.8"), "/auth/login"); resp.Status != http.StatusFound {
		t.Fatalf("a login once the attempts expired: %d %s", resp.Status, resp.Body)
	}
	if n := e.attempts(t); n != 1 {
		t.Errorf("%d attempts on record after expiry, want the new one", n)
	}
}

func mustRequest(t *testing.T, method, u string, header ...string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return req
}
