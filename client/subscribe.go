package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/planserver/planserver/api"
)

// SubscribeOptions tune how a Subscription reconnects. The zero value is
// a sensible default.
type SubscribeOptions struct {
	// MinBackoff is the wait before reconnecting after a stream ends or a
	// connection fails. It doubles with each consecutive failure up to
	// MaxBackoff, with jitter (a wait is between half and all of the
	// current bound), so many subscribers of a restarted server do not
	// reconnect in step. Zero: the server's retry hint (3 s), or 1 s
	// before the server sent one.
	MinBackoff time.Duration
	// MaxBackoff bounds a wait; 30 s when zero. A Retry-After from the
	// server (429, 503) waits longer when it says so.
	MaxBackoff time.Duration
	// MaxAttempts ends the subscription after this many consecutive
	// failed attempts to (re)connect, with the last failure; 0 retries for
	// as long as the context lasts.
	MaxAttempts int
	// IdleTimeout drops a connection that sent nothing, not even a
	// heartbeat, for this long, and reconnects: a peer that vanished
	// without closing the connection is noticed. Set it to a few of the
	// server's heartbeat intervals (--sse-heartbeat, 15 s by default); 0
	// waits forever.
	IdleTimeout time.Duration
	// OnReconnect, when set, is called before each wait to reconnect with
	// why the last attempt ended, how many attempts in a row failed, and
	// the wait: for logs and progress displays.
	OnReconnect func(err error, attempt int, wait time.Duration)
}

// Delivery is one thing a Subscription delivers.
type Delivery struct {
	// Event is the next event, or nil when the delivery only moves the
	// cursor: a heartbeat said the log moved past events the filters
	// skipped.
	Event *api.Event
	// Cursor is the seq to resume after: persist it and pass it as
	// EventQuery.After to subscribe again later, from where this left off.
	Cursor int64
}

// Subscription follows the event log as Server-Sent Events, reconnecting
// after drops and server restarts with Last-Event-ID, so that each event
// is delivered once, in order, with no gap. Read it with Next.
type Subscription struct {
	c     *Client
	q     EventQuery
	o     SubscribeOptions
	ch    chan Delivery
	done  chan struct{}
	stop  context.CancelFunc
	close sync.Once
	// err is the terminal error, set before done is closed.
	err error
	// cursor is the last seq Next returned (or the query's); valid when
	// hasCursor. It is the consumer's resume point.
	cursor    atomic.Int64
	hasCursor atomic.Bool
	// sent is the last seq handed to Next, which run resumes after; valid
	// when hasSent. Only run's goroutine uses it: Next stores cursor only
	// after the hand-off, when run may already be reconnecting.
	sent    int64
	hasSent bool
	// retry is the server's reconnection hint, in milliseconds.
	retry atomic.Int64
}

// Subscribe follows the events q selects, from q.After (or the oldest
// retained event), until ctx is done, Close is called, or a terminal
// error: ErrCursorExpired (events after the cursor were pruned: re-read the
// state and subscribe after its EventSeq), ErrUnauthenticated (the token
// was revoked or expired), or any other refusal of the request itself
// (ErrInvalidArgument, ErrNotFound, ErrPermissionDenied). Network
// failures, server restarts and failures that are no fault of the request
// (ErrUnavailable, ErrInternal, ErrRateLimited, ErrInsufficientStorage,
// ErrRequestTimeout) are retried.
func (c *Client) Subscribe(ctx context.Context, q EventQuery, o SubscribeOptions) *Subscription {
	ctx, stop := context.WithCancel(ctx)
	s := &Subscription{c: c, q: q, o: o, ch: make(chan Delivery), done: make(chan struct{}), stop: stop}
	if q.After != nil {
		s.cursor.Store(*q.After)
		s.hasCursor.Store(true)
		s.sent, s.hasSent = *q.After, true
	}
	go s.run(ctx)
	return s
}

// Next waits for the next delivery. After the subscription ended it
// returns the terminal error every time (context.Canceled after Close).
func (s *Subscription) Next(ctx context.Context) (Delivery, error) {
	select {
	case d := <-s.ch:
		s.cursor.Store(d.Cursor)
		s.hasCursor.Store(true)
		return d, nil
	case <-s.done:
		return Delivery{}, s.err
	case <-ctx.Done():
		return Delivery{}, ctx.Err()
	}
}

// Cursor returns the seq to resume after, that of the last delivery Next
// returned, and false while nothing was delivered to a subscription that
// started without a cursor.
func (s *Subscription) Cursor() (int64, bool) { return s.cursor.Load(), s.hasCursor.Load() }

// Close ends the subscription and waits for its connection to close.
func (s *Subscription) Close() {
	s.close.Do(s.stop)
	<-s.done
}

// run connects, reads, and reconnects until a terminal error.
func (s *Subscription) run(ctx context.Context) {
	defer close(s.done)
	failures := 0
	for {
		opened, err := s.stream(ctx)
		if ctx.Err() != nil {
			s.err = ctx.Err()
			return
		}
		if terminal(err) {
			s.err = err
			return
		}
		if opened {
			failures = 0 // the server was there: start the backoff over
		}
		failures++
		if s.o.MaxAttempts > 0 && failures > s.o.MaxAttempts {
			s.err = fmt.Errorf("planserver client: events: giving up after %d failed attempts: %w", s.o.MaxAttempts, err)
			return
		}
		wait := s.backoff(failures, err)
		if s.o.OnReconnect != nil {
			s.o.OnReconnect(err, failures, wait)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			s.err = ctx.Err()
			return
		case <-t.C:
		}
	}
}

// errStreamEnded is why a stream the server closed without an error event
// is reconnected: a restart, a shutdown, a proxy's timeout.
var errStreamEnded = errors.New("planserver client: event stream ended")

// errIdle is why a connection that stayed silent past IdleTimeout is
// dropped and reconnected.
var errIdle = errors.New("planserver client: event stream idle past its timeout")

// terminal reports whether err ends a subscription rather than prompting
// a reconnection: a refusal of the request itself, or an answer this
// client cannot read. Server-side failures and network errors pass.
func terminal(err error) bool {
	var e *Error
	if errors.As(err, &e) {
		switch e.Code {
		case api.CodeRateLimited, api.CodeUnavailable, api.CodeInsufficientStorage, api.CodeInternal, api.CodeRequestTimeout:
			return false
		case "":
			return e.Status < 500
		}
		return true
	}
	var pe *protocolError
	return errors.As(err, &pe)
}

// protocolError is a stream this client cannot read: retrying would read
// the same bytes again.
type protocolError struct{ msg string }

func (e *protocolError) Error() string { return "planserver client: event stream: " + e.msg }

// backoff is the wait before attempt number attempt (1 for the first
// retry): bounded exponential, with equal jitter, at least the server's
// Retry-After.
func (s *Subscription) backoff(attempt int, err error) time.Duration {
	lo, hi := s.o.MinBackoff, s.o.MaxBackoff
	if lo <= 0 {
		lo = time.Second
		if ms := s.retry.Load(); ms > 0 {
			lo = time.Duration(ms) * time.Millisecond
		}
	}
	if hi <= 0 {
		hi = 30 * time.Second
	}
	d := lo
	for i := 1; i < attempt && d < hi; i++ {
		d *= 2
	}
	d = min(d, hi)
	d = d/2 + rand.N(d/2+1)
	var e *Error
	if errors.As(err, &e) && e.RetryAfter > d {
		d = e.RetryAfter
	}
	return d
}

// stream makes one connection and reads it until it ends. opened reports
// whether the server accepted it.
func (s *Subscription) stream(ctx context.Context) (opened bool, err error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	req, err := s.c.NewRequest(ctx, http.MethodGet, "/v1/events", nil)
	if err != nil {
		return false, err
	}
	req.URL.RawQuery = s.q.values().Encode()
	req.Header.Set("Accept", mediaEvents)
	if s.hasSent {
		req.Header.Set("Last-Event-ID", strconv.FormatInt(s.sent, 10))
	}
	var idle *time.Timer
	if s.o.IdleTimeout > 0 {
		// Armed before the request: a server that accepts the connection
		// and never answers is as dead as one that stops mid-stream.
		idle = time.AfterFunc(s.o.IdleTimeout, func() { cancel(errIdle) })
		defer idle.Stop()
	}
	resp, err := s.c.do(req, nil)
	if err != nil {
		return false, orCause(ctx, err)
	}
	defer resp.Body.Close()
	if !isMedia(resp.Header.Get("Content-Type"), mediaEvents) {
		return true, &protocolError{fmt.Sprintf("answered %q, not text/event-stream", resp.Header.Get("Content-Type"))}
	}
	r := &sseReader{br: bufio.NewReaderSize(resp.Body, 64<<10)}
	if idle != nil {
		r.onLine = func() { idle.Reset(s.o.IdleTimeout) }
	}
	for {
		b, err := r.block()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return true, errStreamEnded
			}
			return true, orCause(ctx, err)
		}
		// A consumer slow to take a delivery is no sign of a dead
		// connection: the idle clock runs only while reading.
		if idle != nil {
			idle.Stop()
		}
		if err := s.handle(ctx, b); err != nil {
			return true, orCause(ctx, err)
		}
		if idle != nil {
			idle.Reset(s.o.IdleTimeout)
		}
	}
}

// orCause is err, or the reason ctx was cancelled when that is what ended
// the read (an idle timeout).
func orCause(ctx context.Context, err error) error {
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
		return cause
	}
	return err
}

// handle acts on one block of the stream.
func (s *Subscription) handle(ctx context.Context, b sseBlock) error {
	if b.retry != "" {
		if ms, err := strconv.ParseInt(b.retry, 10, 64); err == nil && ms > 0 {
			s.retry.Store(ms)
		}
	}
	if b.event == "error" {
		// The server ends a stream whose token died, or whose cursor was
		// pruned while it lagged, with the problem.
		return problemError(http.MethodGet, "/v1/events", []byte(b.data))
	}
	if !b.hasID {
		return nil // the retry hint, or a heartbeat with nothing to move
	}
	seq, err := strconv.ParseInt(b.id, 10, 64)
	if err != nil {
		return &protocolError{fmt.Sprintf("id %q is not an event seq", b.id)}
	}
	d := Delivery{Cursor: seq}
	if b.hasData {
		var e api.Event
		if err := json.Unmarshal([]byte(b.data), &e); err != nil {
			return &protocolError{fmt.Sprintf("event %d: %v", seq, err)}
		}
		d.Event = &e
	}
	select {
	case s.ch <- d:
		s.sent, s.hasSent = seq, true
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// sseBlock is one block of an event stream, up to its blank line.
type sseBlock struct {
	id, event, data, retry string
	hasID, hasData         bool
}

// sseReader reads an event stream block by block (the WHATWG
// Server-Sent Events format: fields, comments, a blank line ends a block).
type sseReader struct {
	br *bufio.Reader
	// onLine, when set, is called for every line read: the stream is alive.
	onLine func()
}

// maxSSELine bounds one line: an event carries a session plan, at most a
// few MiB once escaped.
const maxSSELine = 32 << 20

// block reads the next block that has a field; blocks of comments only
// (heartbeats without an id) are skipped.
func (r *sseReader) block() (sseBlock, error) {
	var b sseBlock
	var data []string
	fields := false
	for {
		line, err := r.line()
		if err != nil {
			return b, err
		}
		if r.onLine != nil {
			r.onLine()
		}
		if line == "" {
			if fields {
				b.data = strings.Join(data, "\n")
				return b, nil
			}
			continue
		}
		if strings.HasPrefix(line, ":") {
			continue // a comment: the heartbeat
		}
		name, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		fields = true
		switch name {
		case "id":
			b.id, b.hasID = value, true
		case "event":
			b.event = value
		case "data":
			data = append(data, value)
			b.hasData = true
		case "retry":
			b.retry = value
		}
	}
}

// line reads one line without its end (\n, \r\n).
func (r *sseReader) line() (string, error) {
	var buf []byte
	for {
		chunk, err := r.br.ReadSlice('\n')
		buf = append(buf, chunk...)
		if len(buf) > maxSSELine {
			return "", &protocolError{"a line longer than 32 MiB"}
		}
		if err == nil {
			break
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			if errors.Is(err, io.EOF) && len(buf) > 0 {
				err = io.ErrUnexpectedEOF
			}
			return "", err
		}
	}
	return strings.TrimSuffix(strings.TrimSuffix(string(buf), "\n"), "\r"), nil
}
