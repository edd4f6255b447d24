// Package listener owns the server's connections: the cap on how many are
// open, the problem documents that replace net/http's plain-text refusals
// of requests it cannot parse, the refusal of requests framed two ways
// (framing.go), and the drain that cuts off requests still arriving when a
// shutdown begins. The API contract promises each of these answers
// (api/openapi.yaml, "Some answers come from the connection layer").
package listener

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/planserver/planserver/internal/apierr"
	"github.com/planserver/planserver/internal/http/response"
)

// Connection-level answers.
const (
	// connRetryAfter is the Retry-After, in seconds, of a connection
	// refused above the cap: keep-alive connections come and go quickly.
	connRetryAfter = 2
	// rejectLinger bounds how long a refused connection is kept to deliver
	// its answer before it is closed. The answer waits for the request's
	// head, which on a loaded machine can arrive seconds after the
	// connection (the flaky-test hunt saw over a second, with every core
	// busy): answered before it, a client takes the answer for a stray and
	// fails ("server closed idle connection") instead of reading the 503.
	rejectLinger = 5 * time.Second
	// maxRejecting bounds the refused connections being answered at once,
	// each for up to rejectLinger, so a flood cannot spend the file
	// descriptors the cap keeps free.
	maxRejecting = 32
)

// Listener is the server's net.Listener. It does three things net/http
// cannot be told to do:
//
//   - It caps the connections open at once (--max-connections) below the
//     file-descriptor limit: a connection above the cap is accepted and
//     answered 503 unavailable with Retry-After and Connection: close, so
//     clients learn to back off instead of hanging in the accept queue
//     while health checks starve.
//   - It rewrites the plain-text answers net/http gives, outside any
//     handler, to requests it cannot parse (431 for oversized headers, 400
//     for malformed requests, 501 and 505, 417) into problem documents:
//     every error answer is application/problem+json.
//   - Drain cuts off requests that are still arriving when a shutdown
//     begins, so a client that never sends its body cannot hold the
//     shutdown: its handler's read fails and it is answered 408.
type Listener struct {
	net.Listener
	maxConns  int64
	open      atomic.Int64
	rejected  atomic.Int64
	rejecting chan struct{}
	rejection []byte

	mu    sync.Mutex
	conns map[*conn]struct{}
	// drainAt is the read deadline Drain set for every request still
	// arriving; zero before a shutdown.
	drainAt time.Time
	dropped atomic.Int64
}

// New wraps ln; maxConns <= 0 sets no cap. Its gauges are registered
// with reg.
func New(ln net.Listener, maxConns int, reg prometheus.Registerer) *Listener {
	l := &Listener{
		Listener:  ln,
		maxConns:  int64(max(maxConns, 0)),
		rejecting: make(chan struct{}, maxRejecting),
		conns:     map[*conn]struct{}{},
	}
	l.rejection = problemAnswer(apierr.New(apierr.Unavailable,
		"the server has %d connections open, its limit (--max-connections); retry in %d s", maxConns, connRetryAfter),
		"Retry-After: "+strconv.Itoa(connRetryAfter))
	reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "planserver_connections_open",
			Help: "Client connections open now.",
		}, func() float64 { return float64(l.open.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "planserver_connections_rejected_total",
			Help: "Connections answered 503 because --max-connections were open.",
		}, func() float64 { return float64(l.rejected.Load()) }),
	)
	return l
}

// Accept returns the next connection under the cap, answering and closing
// those above it itself.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		nc, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		// Accept runs on the one goroutine of http.Server.Serve, so the
		// count only drops between this check and the increment.
		if l.maxConns > 0 && l.open.Load() >= l.maxConns {
			l.rejected.Add(1)
			// With maxRejecting being answered already, wait for one to
			// finish: meanwhile new connections queue in the kernel's
			// backlog, where they hold no descriptor of ours.
			l.rejecting <- struct{}{}
			go func() {
				defer func() { <-l.rejecting }()
				l.reject(nc)
			}()
			continue
		}
		l.open.Add(1)
		c := &conn{Conn: nc, l: l}
		l.mu.Lock()
		l.conns[c] = struct{}{}
		l.mu.Unlock()
		return c, nil
	}
}

// reject answers a connection above the cap, spending at most
// rejectLinger on it. The answer waits for the request's head: a client that receives an
// answer before it has sent its request takes it for a stray and fails
// (Go's, for one). After the answer it half-closes and reads what else the
// client sent until the client closes too: closing with unread bytes
// would reset the connection and could destroy the answer unread.
func (l *Listener) reject(nc net.Conn) {
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(rejectLinger))
	head := make([]byte, 0, 1024)
	buf := make([]byte, 1024)
	for !bytes.Contains(head, []byte("\r\n\r\n")) && len(head) < 16<<10 {
		n, err := nc.Read(buf)
		head = append(head, buf[:n]...)
		if err != nil {
			break
		}
	}
	if _, err := nc.Write(l.rejection); err != nil {
		return
	}
	if cw, ok := nc.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(nc, 64<<10))
}

// Drain gives every request still arriving (headers or body not yet read)
// until grace from now; reads after that fail, so its handler answers 408
// and the shutdown need not wait for it. Requests already read are left
// alone: they finish within the server's own shutdown grace.
func (l *Listener) Drain(grace time.Duration) {
	l.mu.Lock()
	l.drainAt = time.Now().Add(grace)
	conns := make([]*conn, 0, len(l.conns))
	for c := range l.conns {
		conns = append(conns, c)
	}
	l.mu.Unlock()
	for _, c := range conns {
		c.applyDeadline()
	}
}

// Dropped is how many connections Drain's deadline cut off while a request
// was still arriving on them.
func (l *Listener) Dropped() int64 { return l.dropped.Load() }

// Open is how many accepted connections are open now.
func (l *Listener) Open() int64 { return l.open.Load() }

func (l *Listener) drainDeadline() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.drainAt
}

// conn is one accepted connection.
type conn struct {
	net.Conn
	l         *Listener
	closeOnce sync.Once

	mu sync.Mutex
	// deadline is the read deadline net/http asked for last. net/http
	// clears it (the zero time) when it has read a request whole and
	// starts watching for the client going away while the handler runs;
	// any other value means a request is being read, or awaited.
	deadline time.Time
	dropped  bool
	// arriving is set when a read returns bytes and cleared when an answer
	// is written: a request is on its way, not merely awaited.
	arriving atomic.Bool
	// framing follows the requests' framing (framing.go).
	framing framing
}

// SetReadDeadline keeps net/http's deadline, but never past a drain's.
func (c *conn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.deadline = t
	return c.Conn.SetReadDeadline(c.effective(c.l.drainDeadline()))
}

func (c *conn) SetDeadline(t time.Time) error {
	if err := c.Conn.SetWriteDeadline(t); err != nil {
		return err
	}
	return c.SetReadDeadline(t)
}

// effective is the read deadline to apply given a drain's (zero: none).
// A request read whole is never cut off: its handler's context would be
// cancelled while the client waits for the answer. c.mu is held.
func (c *conn) effective(drain time.Time) time.Time {
	if drain.IsZero() {
		return c.deadline
	}
	if c.deadline.IsZero() {
		return time.Time{} // the request is read; its handler runs
	}
	if c.deadline.After(drain) {
		return drain
	}
	return c.deadline
}

func (c *conn) applyDeadline() {
	c.mu.Lock()
	defer c.mu.Unlock()
	_ = c.Conn.SetReadDeadline(c.effective(c.l.drainDeadline()))
}

// Read counts the connection as dropped when the drain's deadline, not
// net/http's own, ended a read while a request was arriving on it (an
// idle keep-alive connection timing out lost nothing).
func (c *conn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 {
		c.arriving.Store(true)
		c.framing.feed(b[:n])
	}
	if ne, ok := err.(net.Error); ok && ne.Timeout() && c.arriving.Load() {
		c.mu.Lock()
		drain := c.l.drainDeadline()
		if !drain.IsZero() && !c.dropped && !c.deadline.IsZero() && !c.deadline.Before(drain) {
			c.dropped = true
			c.l.dropped.Add(1)
		}
		c.mu.Unlock()
	}
	return n, err
}

// Write passes the server's answers through, except net/http's canned
// plain-text errors, which become problem documents.
func (c *conn) Write(b []byte) (int, error) {
	c.arriving.Store(false)
	if p := cannedAnswer(b); p != nil {
		if _, err := c.Conn.Write(p); err != nil {
			return 0, err
		}
		return len(b), nil
	}
	return c.Conn.Write(b)
}

func (c *conn) Close() error {
	c.closeOnce.Do(func() {
		c.l.open.Add(-1)
		c.l.mu.Lock()
		delete(c.l.conns, c)
		c.l.mu.Unlock()
	})
	return c.Conn.Close()
}

// net/http answers requests it cannot parse by writing one of these
// straight to the connection (net/http/server.go, conn.serve): a status
// line, then exactly cannedHeaders, then a short text. Nothing routed
// starts that way: every answer of the router carries Cache-Control (the
// API's securityHeaders middleware), which sorts before Content-Type.
var (
	cannedHeaders = []byte("\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n")
	// An Expect other than 100-continue is answered 417 with no body.
	cannedExpect = []byte("HTTP/1.1 417 Expectation Failed\r\nConnection: close\r\n")
)

// cannedAnswer returns the problem answer that replaces b when b is one of
// net/http's canned errors, else nil. Oversized headers are 431
// headers_too_large; every other request net/http refuses before routing
// is malformed as far as this API goes: 400 invalid_argument, with
// net/http's reason in the detail.
func cannedAnswer(b []byte) []byte {
	if len(b) > 1024 || !bytes.HasPrefix(b, []byte("HTTP/1.1 ")) {
		return nil
	}
	if bytes.HasPrefix(b, cannedExpect) {
		return problemAnswer(apierr.New(apierr.InvalidArgument,
			"the Expect header is not supported (only Expect: 100-continue is)"))
	}
	statusLine, text, ok := bytes.Cut(b, cannedHeaders)
	if !ok || bytes.Contains(statusLine, []byte("\r\n")) || len(statusLine) < len("HTTP/1.1 NNN") {
		return nil
	}
	status, err := strconv.Atoi(string(statusLine[9:12]))
	if err != nil {
		return nil
	}
	if status == http.StatusRequestHeaderFieldsTooLarge {
		return problemAnswer(apierr.New(apierr.HeadersTooLarge,
			"the request line and header fields are larger than this server accepts"))
	}
	// The reason is what follows the status text: "400 Bad Request:
	// missing required Host header" in both the status line and the text,
	// or the text alone ("Unsupported transfer encoding").
	reason := string(text)
	prefix := strconv.Itoa(status) + " " + http.StatusText(status)
	if r, ok := bytes.CutPrefix(text, []byte(prefix)); ok {
		reason = string(bytes.TrimPrefix(r, []byte(": ")))
	}
	detail := "malformed request"
	if reason != "" {
		detail += ": " + reason
	}
	return problemAnswer(apierr.New(apierr.InvalidArgument, "%s", detail))
}

// problemAnswer is a whole HTTP/1.1 answer carrying e's problem document,
// for the connection layer, where there is no ResponseWriter. The
// connection closes after it.
func problemAnswer(e *apierr.Error, headers ...string) []byte {
	body, _ := json.Marshal(response.ProblemBody(e)) // strings and numbers only
	var b bytes.Buffer
	status := response.Status(e)
	fmt.Fprintf(&b, "HTTP/1.1 %d %s\r\n", status, http.StatusText(status))
	b.WriteString("Content-Type: application/problem+json\r\n")
	b.WriteString("X-Content-Type-Options: nosniff\r\n")
	b.WriteString("Cache-Control: no-cache\r\n")
	for _, h := range headers {
		b.WriteString(h + "\r\n")
	}
	fmt.Fprintf(&b, "Content-Length: %d\r\nConnection: close\r\n\r\n", len(body))
	b.Write(body)
	return b.Bytes()
}
