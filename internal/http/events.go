package http

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/apierr"
	"github.com/planserver/planserver/internal/auth"
	"github.com/planserver/planserver/internal/db"
	"github.com/planserver/planserver/internal/events"
	"github.com/planserver/planserver/internal/http/request"
	"github.com/planserver/planserver/internal/http/response"
)

// eventsPath is the event feed: the log itself, so it carries no
// X-Event-Seq snapshot head.
const eventsPath = "/v1/events"

// Event stream defaults.
const (
	// DefaultSSEHeartbeat is how often an idle stream gets a comment line,
	// so proxies and clients can tell a quiet stream from a dead one.
	DefaultSSEHeartbeat = 15 * time.Second
	// DefaultSSEWriteTimeout is how long one write to a stream may take
	// before its client is dropped as stuck.
	DefaultSSEWriteTimeout = 10 * time.Second
	// sseRetry is the reconnection delay, in milliseconds, streams ask for.
	sseRetry = 3000
	// sseBatch is how many events a stream reads from the log at a time.
	sseBatch = 500
)

// withEventHead gives every GET under /v1 but the feed an X-Event-Seq
// header: the log's head, read before the handler reads its snapshot. A
// client that lists, then watches the feed after X-Event-Seq, may see a
// change both in the list and in the feed, but can never miss one.
func (s *Server) withEventHead(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if (r.Method == http.MethodGet || r.Method == http.MethodHead) && r.URL.Path != eventsPath {
			head, err := s.head.Head(r.Context())
			if err != nil {
				response.Problem(w, r, err)
				return
			}
			w.Header().Set("X-Event-Seq", strconv.FormatInt(head, 10))
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Server) listEvents(w http.ResponseWriter, r *http.Request) error {
	w.Header().Add("Vary", "Accept")
	media, err := request.Negotiate(r, "application/json", "text/event-stream")
	if err != nil {
		return err
	}
	q, err := eventQuery(r)
	if media == "text/event-stream" {
		return s.gatedStream(w, r, q, err)
	}
	if err != nil {
		return err
	}
	page, err := events.Read(r.Context(), s.cfg.DB, q)
	if err != nil {
		return err
	}
	if page.Events == nil {
		page.Events = []events.Event{}
	}
	s.eventMetrics.Delivered.WithLabelValues("json").Add(float64(len(page.Events)))
	response.JSON(w, http.StatusOK, api.EventPage{Events: page.Events, NextAfter: page.Next})
	return nil
}

// eventQuery reads the cursor and filters of GET /v1/events. Last-Event-ID
// wins over ?after=: a browser's EventSource reconnects to the URL it was
// given, ?after= included, and adds Last-Event-ID with the last event it
// received, which is the newer cursor.
func eventQuery(r *http.Request) (events.Query, error) {
	v := r.URL.Query()
	q := events.Query{After: -1, SessionID: v.Get("session_id"), Plan: v.Get("plan"),
		// An agent's feed is its subtree and the events of no session;
		// a session_id outside it was answered 404 by the route's rule.
		Scope: auth.PrincipalFrom(r.Context()).SessionPath}
	if after := v.Get("after"); after != "" {
		n, err := parseCursor("after", after)
		if err != nil {
			return q, err
		}
		q.After = n
	}
	if id := strings.TrimSpace(r.Header.Get("Last-Event-ID")); id != "" {
		n, err := parseCursor("Last-Event-ID", id)
		if err != nil {
			return q, err
		}
		q.After = n
	}
	limit, err := request.PageSize(r)
	if err != nil {
		return q, err
	}
	q.Limit = limit
	if v.Has("types") {
		types := strings.Split(v.Get("types"), ",")
		if len(types) > len(events.Types) {
			// Every type once is all a filter can say; more is noise (or
			// an attempt to make a huge query).
			return q, apierr.Invalid("types", "names %d types; there are only %d", len(types), len(events.Types))
		}
		for _, t := range types {
			q.Types = append(q.Types, strings.TrimSpace(t))
		}
	}
	return q, q.Validate()
}

// parseCursor parses an event seq given as a cursor.
func parseCursor(field, s string) (int64, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, apierr.Invalid(field, "must be an event seq (a whole number, 0 or more), got %q", s)
	}
	return n, nil
}

// errorEventsParam opts a stream into reporting a refusal at open as an
// error event instead of an HTTP status: a browser EventSource cannot read
// the status of a failed request, so a UI could not tell an expired cursor
// from a revoked token from a network failure.
const errorEventsParam = "error_events"

// streamEvents serves the feed as Server-Sent Events. It only ever sends
// rows read back from the log: the tail's wake-ups carry nothing, they
// only prompt a read from the stream's cursor, so catch-up and live
// delivery are the same loop and cannot race, reorder or skip. That read
// is the tail's, in memory, when the tail's last read of the log answers
// it exactly (events.Tail.Take), and the stream's own otherwise.
//
// The stream is authorized for as long as it lasts, not only when it
// opens: every page is read in a snapshot that first checks the caller's
// token again (revoked, expired, its session deleted), and so does every
// heartbeat. A stream whose caller lost its right ends with an error event
// carrying the problem, and not one event committed after the revocation
// reaches it. qerr is the error of the stream's query, if any.
func (s *Server) streamEvents(w http.ResponseWriter, r *http.Request, q events.Query, qerr error) error {
	ctx := r.Context()
	p := auth.PrincipalFrom(ctx)
	q.Guard = func(tx db.Querier) error { return s.tokens.Recheck(tx, p) }
	// Subscribe before the first read: a commit that lands after the read
	// leaves a wake-up pending, so the loop never sleeps past it. The tail
	// re-checks the principal in each of its reads with the same Guard.
	key := p.RecheckKey()
	wake, unsubscribe := s.tail.Subscribe(key, q.Guard)
	defer unsubscribe()
	q.Limit = sseBatch
	// The first read comes before the response starts, so an expired or
	// bad cursor is still an HTTP status (410, 400) the client can act on
	// (or, opted in, an error event).
	var page events.Page
	err := qerr
	if err == nil {
		page, err = s.readStream(ctx, q, "")
	}
	optedIn := r.URL.Query().Get(errorEventsParam) == "true"
	if err != nil && !optedIn {
		return err
	}
	// A stream lives as long as its client, past the server's
	// WriteTimeout: sseWriter sets a deadline per write instead. (Its
	// ReadTimeout is no concern: net/http clears the read deadline once
	// the request is read.)
	sw := &sseWriter{rc: http.NewResponseController(w), w: w, timeout: s.cfg.SSEWriteTimeout}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // nginx: pass each event on at once
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return nil // a stream's headers, without the stream
	}
	fmt.Fprintf(&sw.buf, "retry: %d\n\n", sseRetry)
	if err != nil {
		s.endStream(sw, r, err)
		return nil
	}
	if sw.flush() != nil {
		return nil
	}
	// sent is the cursor the client holds: the last id it was given.
	sent := max(q.After, 0)
	heartbeat := time.NewTicker(s.cfg.SSEHeartbeat)
	defer heartbeat.Stop()
	for {
		for i, e := range page.Events {
			var data []byte
			if page.Encoded != nil {
				data = page.Encoded[i] // the tail encoded it once for all streams
			} else if data, err = json.Marshal(e); err != nil {
				response.NoteFailure(r, fmt.Errorf("encode event %d: %w", e.Seq, err))
				return nil
			}
			fmt.Fprintf(&sw.buf, "id: %d\nevent: %s\ndata: %s\n\n", e.Seq, e.Type, data)
			sent = e.Seq
		}
		if len(page.Events) > 0 {
			if sw.flush() != nil {
				return nil
			}
			s.eventMetrics.Delivered.WithLabelValues("sse").Add(float64(len(page.Events)))
		}
		q.After, q.SessionPath = page.Next, page.SessionPath
		if len(page.Events) < sseBatch {
			if err := s.awaitEvents(ctx, wake, heartbeat.C, sw, &sent, q.After, p); err != nil {
				s.endStream(sw, r, err)
				return nil
			}
		} else if s.shuttingDown() {
			return nil // mid catch-up; the client resumes after the restart
		}
		if ctx.Err() != nil {
			return nil
		}
		if page, err = s.readStream(ctx, q, key); err != nil {
			s.endStream(sw, r, err)
			return nil
		}
	}
}

// readStream reads a stream's next page: from the tail when it can answer
// for the principal named key exactly, else from the log (key "": always
// from the log, as at the stream's opening, whose answer may still be an
// HTTP status).
func (s *Server) readStream(ctx context.Context, q events.Query, key string) (events.Page, error) {
	if key != "" {
		if page, ok, err := s.tail.Take(q, key); ok {
			return page, err
		}
	}
	s.eventMetrics.Reads.WithLabelValues("stream").Inc()
	return events.Read(ctx, s.cfg.DB, q)
}

// errStreamEnds ends a stream without an error event: the client left, a
// write failed, or the server is shutting down (clients reconnect).
var errStreamEnds = errors.New("stream ends")

// endStream ends a stream whose headers are gone with an error event
// carrying the problem (410 when the cursor was pruned, 401 when the token
// is no longer valid), which an EventSource can read, unlike a status.
func (s *Server) endStream(sw *sseWriter, r *http.Request, err error) {
	if errors.Is(err, errStreamEnds) || r.Context().Err() != nil {
		return
	}
	_, _, body := response.ProblemOf(r, err)
	data, _ := json.Marshal(body)
	fmt.Fprintf(&sw.buf, "event: error\ndata: %s\n\n", data)
	_ = sw.flush()
}

// awaitEvents waits for a commit, sending heartbeats meanwhile. It returns
// nil when woken, errStreamEnds when the stream must end quietly (the
// client left, a write failed, the server is shutting down), and the
// problem when the caller's token no longer holds, which each heartbeat
// checks. A heartbeat also carries the cursor when the log moved past
// events the stream's filters skipped (an id line without data updates an
// EventSource's Last-Event-ID but fires no event), so a reconnect resumes
// from there and a quiet subscription's cursor does not age out of the
// retained log.
func (s *Server) awaitEvents(ctx context.Context, wake <-chan struct{}, tick <-chan time.Time, sw *sseWriter, sent *int64, cursor int64, p auth.Principal) error {
	for {
		select {
		case <-wake:
			return nil
		case <-ctx.Done():
			return errStreamEnds
		case <-s.shutdown:
			return errStreamEnds
		case <-tick:
			if err := s.tokens.Recheck(s.cfg.DB.Reader(ctx), p); err != nil {
				return err
			}
			sw.buf.WriteString(": heartbeat\n")
			if cursor > *sent {
				fmt.Fprintf(&sw.buf, "id: %d\n", cursor)
				*sent = cursor
			}
			sw.buf.WriteString("\n")
			if sw.flush() != nil {
				return errStreamEnds
			}
		}
	}
}

// sseWriter sends what is buffered in buf under a fresh write deadline and
// flushes it to the client, so a client that stops reading is dropped
// after timeout instead of holding its handler forever.
type sseWriter struct {
	rc      *http.ResponseController
	w       http.ResponseWriter
	timeout time.Duration
	buf     bytes.Buffer
}

func (sw *sseWriter) flush() error {
	defer sw.buf.Reset()
	if err := sw.rc.SetWriteDeadline(time.Now().Add(sw.timeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	if _, err := sw.w.Write(sw.buf.Bytes()); err != nil {
		return err
	}
	return sw.rc.Flush()
}

// Shutdown ends every event stream. http.Server.Shutdown waits for
// handlers to return but cannot end a stream, so serve registers this with
// RegisterOnShutdown. It is safe to call more than once.
func (s *Server) Shutdown() { s.shutdownOnce.Do(func() { close(s.shutdown) }) }

func (s *Server) shuttingDown() bool {
	select {
	case <-s.shutdown:
		return true
	default:
		return false
	}
}
