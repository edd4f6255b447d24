package listener_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/planserver/planserver/internal/http/listener"
)

// These tests hold the evidence for what package listener does beyond
// net/http: each sends raw requests to a plain net/http server of the
// standard library and to one behind a Listener, and shows where they
// differ. Should a Go release change net/http's answers, they fail, and
// the piece of the listener they justify can go.

// serve starts h on a loopback server with a 4 KiB header limit, behind a
// Listener when wrapped.
func serve(t *testing.T, h http.Handler, wrapped bool) *httptest.Server {
	t.Helper()
	ts := httptest.NewUnstartedServer(h)
	if wrapped {
		ln := listener.New(ts.Listener, 0, prometheus.NewRegistry())
		ts.Listener = ln
		ts.Config.ConnContext = ln.ConnContext
	}
	ts.Config.MaxHeaderBytes = 4 << 10
	ts.Start()
	t.Cleanup(ts.Close)
	return ts
}

// exchange sends raw on a new connection to ts and reads one answer.
func exchange(t *testing.T, ts *httptest.Server, raw string) (*http.Response, string) {
	t.Helper()
	c, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(body)
}

// TestNetHTTPAcceptsAmbiguousFraming: net/http serves a request that has
// both Content-Length and Transfer-Encoding (RFC 9112 §6.1, the
// request-smuggling shape): it drops Content-Length, reads the chunks and
// runs the handler, which cannot tell. Behind a Listener the handler is
// told (AmbiguousFraming), and the API refuses it.
func TestNetHTTPAcceptsAmbiguousFraming(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ambiguous := listener.AmbiguousFraming(r)
		body, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "ambiguous=%v content-length=%q transfer-encoding=%v body=%s",
			ambiguous, r.Header.Get("Content-Length"), r.TransferEncoding, body)
	})
	raw := "POST /x HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n" +
		"b\r\n{\"id\":\"sm\"}\r\n0\r\n\r\n"
	const served = `content-length="" transfer-encoding=[chunked] body={"id":"sm"}`

	resp, body := exchange(t, serve(t, h, false), raw)
	if resp.StatusCode != 200 || body != "ambiguous=false "+served {
		t.Errorf("plain net/http: %d %q, want it to serve the request framed by its chunks", resp.StatusCode, body)
	}
	resp, body = exchange(t, serve(t, h, true), raw)
	if resp.StatusCode != 200 || body != "ambiguous=true "+served {
		t.Errorf("behind a Listener: %d %q, want the handler told", resp.StatusCode, body)
	}
}

// TestNetHTTPRefusalsArePlainText: the requests net/http refuses before
// any handler runs get its plain-text answers (or, for an unknown Expect,
// none at all); the contract promises problem documents, which the
// Listener writes in their place: 431 for oversized headers, 400 for the
// rest.
func TestNetHTTPRefusalsArePlainText(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("the handler ran for %s %s", r.Method, r.URL)
	})
	plain, ours := serve(t, h, false), serve(t, h, true)
	for _, c := range []struct {
		name, raw string
		// status and text are net/http's answer; contentType "" when it
		// has no body.
		status      int
		contentType string
		text        string
		// ourStatus and says are the Listener's problem document.
		ourStatus int
		says      string
	}{
		{"oversized headers", "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + strings.Repeat("a", 8<<10) + "\r\n\r\n",
			431, "text/plain; charset=utf-8", "431 Request Header Fields Too Large", 431, `"code":"headers_too_large"`},
		{"malformed request line", "BOGUS\r\n\r\n",
			400, "text/plain; charset=utf-8", "400 Bad Request", 400, `"detail":"malformed request"`},
		{"no Host", "GET / HTTP/1.1\r\n\r\n",
			400, "text/plain; charset=utf-8", "400 Bad Request: missing required Host header", 400, "missing required Host header"},
		{"malformed header", "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nBad Header: y\r\n\r\n",
			400, "text/plain; charset=utf-8", "400 Bad Request: invalid header name", 400, "invalid header name"},
		{"unknown transfer coding", "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: zstd\r\n\r\n",
			501, "text/plain; charset=utf-8", "Unsupported transfer encoding", 400, "Unsupported transfer encoding"},
		{"unsupported version", "GET / HTTP/2.7\r\nHost: 127.0.0.1\r\n\r\n",
			505, "text/plain; charset=utf-8", "505 HTTP Version Not Supported: unsupported protocol version", 400, "unsupported protocol version"},
		{"unknown expectation", "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nExpect: 200-ok\r\nContent-Length: 2\r\n\r\n{}",
			417, "", "", 400, "Expect header is not supported"},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp, body := exchange(t, plain, c.raw)
			if resp.StatusCode != c.status || resp.Header.Get("Content-Type") != c.contentType || body != c.text || !resp.Close {
				t.Errorf("net/http: %d %q %q (close %v), want %d %q %q",
					resp.StatusCode, resp.Header.Get("Content-Type"), body, resp.Close, c.status, c.contentType, c.text)
			}
			resp, body = exchange(t, ours, c.raw)
			if resp.StatusCode != c.ourStatus || resp.Header.Get("Content-Type") != "application/problem+json" ||
				!strings.Contains(body, c.says) || !resp.Close {
				t.Errorf("Listener: %d %q %s (close %v), want a %d problem saying %q",
					resp.StatusCode, resp.Header.Get("Content-Type"), body, resp.Close, c.ourStatus, c.says)
			}
		})
	}
}
