package http_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/planserver/planserver/internal/apitest"
	"github.com/planserver/planserver/internal/app"
	"github.com/planserver/planserver/internal/http/listener"
)

// listening serves env's API behind its Listener on a real http.Server
// with the given read timeout and a 4 KiB header limit, the way serve
// does.
func listening(t *testing.T, env *apitest.Env, readTimeout time.Duration) (*httptest.Server, *listener.Listener) {
	t.Helper()
	ts := httptest.NewUnstartedServer(env.API)
	ln := env.API.Listener(ts.Listener, 0)
	ts.Listener = ln
	ts.Config.ConnContext = ln.ConnContext
	ts.Config.ReadHeaderTimeout = time.Minute
	ts.Config.ReadTimeout = readTimeout
	ts.Config.MaxHeaderBytes = 4 << 10
	ts.Start()
	t.Cleanup(func() {
		env.API.Shutdown()
		ts.Close()
	})
	return ts, ln
}

// send writes raw bytes on a new connection to ts and returns it.
func send(t *testing.T, ts *httptest.Server, raw string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	return c
}

// answer reads one answer from c and checks it is a problem document of
// the contract with the given status and code.
func answer(t *testing.T, c net.Conn, status int, code string) (*http.Response, []byte) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err := apitest.ValidateProblem(t, resp.StatusCode, resp.Header, body); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != status || !strings.Contains(string(body), `"code":"`+code+`"`) {
		t.Fatalf("answer %d %s, want %d %s", resp.StatusCode, body, status, code)
	}
	return resp, body
}

// TestRequestsNetHTTPRefusesAreProblems: requests net/http refuses before
// any handler runs used to get its plain-text answers; every one is now a
// problem document of the contract.
func TestRequestsNetHTTPRefusesAreProblems(t *testing.T) {
	env := apitest.New(t)
	ts, _ := listening(t, env, time.Minute)
	for _, c := range []struct {
		name, raw  string
		status     int
		code, says string
	}{
		{"oversized headers", "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + strings.Repeat("a", 8<<10) + "\r\n\r\n",
			431, "headers_too_large", "header fields are larger"},
		{"malformed request line", "BOGUS\r\n\r\n", 400, "invalid_argument", "malformed request"},
		{"no Host", "GET /healthz HTTP/1.1\r\n\r\n", 400, "invalid_argument", "missing required Host header"},
		{"malformed header", "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nBad Header: y\r\n\r\n", 400, "invalid_argument", "malformed request"},
		{"unknown transfer coding", "POST /v1/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: zstd\r\n\r\n",
			400, "invalid_argument", "nsupported transfer encoding"},
		{"unsupported version", "GET /healthz HTTP/2.7\r\nHost: 127.0.0.1\r\n\r\n", 400, "invalid_argument", "unsupported protocol version"},
		{"unknown expectation", "POST /v1/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nExpect: 200-ok\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}",
			400, "invalid_argument", "Expect"},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp, body := answer(t, send(t, ts, c.raw), c.status, c.code)
			if !strings.Contains(string(body), c.says) || !resp.Close {
				t.Errorf("%d %s (close %v), want it to say %q and close", resp.StatusCode, body, resp.Close, c.says)
			}
		})
	}
	// The server serves on after them all.
	if resp := env.Call("GET", "/healthz", nil); resp.Status != 200 {
		t.Errorf("healthz: %d", resp.Status)
	}
}

// TestStalledBodyIs408: a body that stops arriving before the read
// deadline is the client's doing: 408 request_timeout, never 500.
func TestStalledBodyIs408(t *testing.T) {
	env := apitest.New(t)
	ts, _ := listening(t, env, 300*time.Millisecond)
	for _, start := range []string{"POST /v1/sessions HTTP/1.1\r\nContent-Type: application/json",
		"PUT /v1/plans/stalled/content HTTP/1.1\r\nContent-Type: text/markdown"} {
		c := send(t, ts, start+"\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n{\"id\":")
		resp, body := answer(t, c, http.StatusRequestTimeout, "request_timeout")
		if !resp.Close {
			t.Errorf("%s: the 408 keeps the connection open: %s", start, body)
		}
	}
	// A body cut short by the client closing is a 400, not a 500 either.
	c := send(t, ts, "POST /v1/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"id\":")
	c.(*net.TCPConn).CloseWrite()
	answer(t, c, http.StatusBadRequest, "invalid_argument")
}

// TestDrainCutsOffOnlyRequestsStillArriving: Drain answers a stalled
// upload 408 once its grace is over, lets an upload that completes within
// the grace succeed, and leaves requests already read (an event stream)
// alone past it.
func TestDrainCutsOffOnlyRequestsStillArriving(t *testing.T) {
	env := apitest.New(t, func(c *app.Config) { c.SSEHeartbeat = 20 * time.Millisecond })
	ts, ln := listening(t, env, time.Minute)
	stream, err := dialStream(ts.Client(), ts.URL, "")
	if err != nil || stream.resp.StatusCode != 200 {
		t.Fatalf("stream: %v", err)
	}
	defer stream.close()
	head := "PUT /v1/plans/%s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 20\r\n\r\n"
	stalled := send(t, ts, strings.Replace(head, "%s", "stalled", 1)+`{"content":`)
	late := send(t, ts, strings.Replace(head, "%s", "late", 1)+`{"content":`)
	time.Sleep(100 * time.Millisecond)
	begin := time.Now()
	ln.Drain(300 * time.Millisecond)
	if _, err := io.WriteString(late, `"# late"}`); err != nil {
		t.Fatal(err)
	}
	_ = late.SetReadDeadline(time.Now().Add(5 * time.Second))
	if resp, err := http.ReadResponse(bufio.NewReader(late), nil); err != nil || resp.StatusCode != 201 {
		t.Errorf("an upload completed within the grace: %v %v", resp, err)
	}
	answer(t, stalled, http.StatusRequestTimeout, "request_timeout")
	if took := time.Since(begin); took < 250*time.Millisecond || took > 2*time.Second {
		t.Errorf("the stalled upload was cut off %v after Drain(300ms)", took)
	}
	// The stream was read whole before the drain: it goes on past it.
	for time.Since(begin) < time.Second {
		if _, err := stream.block(); err != nil {
			t.Fatalf("the event stream ended %v after Drain: %v", time.Since(begin), err)
		}
	}
	if n := ln.Dropped(); n != 1 {
		t.Errorf("Dropped() = %d, want 1", n)
	}
}

// TestEventStreamCap: above MaxEventStreams the stream is 503 with
// Retry-After, as the contract says, and a freed slot is taken again.
func TestEventStreamCap(t *testing.T) {
	env := apitest.New(t, func(c *app.Config) { c.MaxEventStreams = 2 })
	a, b := openStream(t, env, ""), openStream(t, env, "")
	resp := env.Call("GET", "/v1/events", nil, "Accept", "text/event-stream")
	if resp.Status != http.StatusServiceUnavailable || resp.Code() != "unavailable" || resp.Header.Get("Retry-After") != "5" {
		t.Fatalf("third stream: %d %s, Retry-After %q", resp.Status, resp.Body, resp.Header.Get("Retry-After"))
	}
	if resp := env.Call("GET", "/v1/events", nil); resp.Status != 200 {
		t.Errorf("JSON pages above the stream cap: %d %s", resp.Status, resp.Body)
	}
	a.close()
	_ = b
	eventually(t, "a freed slot serves a stream", func() bool {
		s, err := dialStream(env.Client, env.Server.URL, "")
		if err != nil {
			return false
		}
		defer s.close()
		return s.resp.StatusCode == 200
	})
}

// TestConflictingFramingIsRefused: a request with both Content-Length and
// Transfer-Encoding (the request-smuggling shape) is 400 and its
// connection closed; ordinary chunked and pipelined requests, and bodies
// that merely contain such header lines, are served as before.
func TestConflictingFramingIsRefused(t *testing.T) {
	env := apitest.New(t)
	ts, _ := listening(t, env, time.Minute)
	// The target in absolute form has colons: it is a request line all
	// the same, not a header field.
	for _, target := range []string{"/v1/sessions", "http://127.0.0.1/v1/sessions"} {
		smuggled := "POST " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" +
			"Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n" +
			"c\r\n{\"id\":\"sm\"}\r\n0\r\n\r\n"
		c := send(t, ts, smuggled)
		resp, body := answer(t, c, 400, "invalid_argument")
		if !strings.Contains(string(body), "Content-Length and Transfer-Encoding") || !resp.Close {
			t.Errorf("conflicting framing (%s): close %v, %s", target, resp.Close, body)
		}
		_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
		if n, err := c.Read(make([]byte, 1)); err == nil || n > 0 {
			t.Errorf("the connection stayed open after a conflicting request (%s)", target)
		}
		if r := env.Call("GET", "/v1/sessions/sm", nil); r.Status != 404 {
			t.Fatalf("the smuggled request (%s) took effect: %d", target, r.Status)
		}
	}

	// Two ordinary requests pipelined on one connection, the first
	// chunked, the second with a body that looks like framing headers.
	tricky := `{"id":"b","title":"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"}`
	pipelined := "POST /v1/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" +
		"Transfer-Encoding: chunked\r\n\r\n" + "a\r\n{\"id\":\"a\"}\r\n0\r\n\r\n" +
		"POST /v1/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" +
		"Content-Length: " + strconv.Itoa(len(tricky)) + "\r\n\r\n" + tricky
	c := send(t, ts, pipelined)
	br := bufio.NewReader(c)
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	for _, id := range []string{"a", "b"} {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("answer for %s: %v", id, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 201 {
			t.Errorf("pipelined create %s: %d %s", id, resp.StatusCode, body)
		}
	}
}
