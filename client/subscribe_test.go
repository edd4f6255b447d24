package client_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/client"
	"github.com/planserver/planserver/internal/app"
	"github.com/planserver/planserver/internal/auth"
	"github.com/planserver/planserver/internal/events"
	planhttp "github.com/planserver/planserver/internal/http"
)

// reconnects makes a subscription reconnect quickly, and records each
// reconnection.
type reconnects struct {
	mu    sync.Mutex
	errs  []error
	waits []time.Duration
}

func (r *reconnects) options() client.SubscribeOptions {
	return client.SubscribeOptions{MinBackoff: 10 * time.Millisecond, MaxBackoff: 100 * time.Millisecond,
		OnReconnect: func(err error, attempt int, wait time.Duration) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.errs = append(r.errs, err)
			r.waits = append(r.waits, wait)
		}}
}

func (r *reconnects) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.errs)
}

// next is Subscription.Next that fails the test after a while.
func next(t *testing.T, s *client.Subscription) client.Delivery {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	d, err := s.Next(ctx)
	if err != nil {
		t.Fatalf("next: %v", err)
	}
	return d
}

// nextEvent skips cursor moves and returns the next event.
func nextEvent(t *testing.T, s *client.Subscription) api.Event {
	t.Helper()
	for {
		if d := next(t, s); d.Event != nil {
			if d.Cursor != d.Event.Seq {
				t.Errorf("cursor %d for event %d", d.Cursor, d.Event.Seq)
			}
			return *d.Event
		}
	}
}

// ended waits for the subscription's terminal error.
func ended(t *testing.T, s *client.Subscription) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	for {
		d, err := s.Next(ctx)
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) {
				t.Fatal("the subscription did not end")
			}
			return err
		}
		if d.Event != nil {
			t.Errorf("event after the end should have come: %+v", d.Event)
		}
	}
}

// createDirect creates a session through the server's handler, before it
// listens: a change made while every subscriber is disconnected.
func createDirect(t *testing.T, s *server, id string) {
	t.Helper()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("POST", "http://127.0.0.1/v1/sessions", strings.NewReader(`{"id":"`+id+`"}`))
	req.Header.Set("Content-Type", "application/json")
	s.API.ServeHTTP(rec, req)
	if rec.Code != http.StatusCreated {
		t.Fatalf("create %s: %d %s", id, rec.Code, rec.Body)
	}
}

func create(t *testing.T, c *client.Client, id string) {
	t.Helper()
	if _, err := c.CreateSession(t.Context(), api.SessionCreate{ID: client.Ptr(id)}); err != nil {
		t.Fatal(err)
	}
}

// TestSubscribeResumesAcrossRestart: the server is stopped and started
// again on the same database file while a subscriber follows it; the
// subscriber reconnects after the last event it delivered and gets every
// later event once, in order, including one written while it was away.
func TestSubscribeResumesAcrossRestart(t *testing.T) {
	srv := startServer(t)
	c := checkedClient(t, srv.URL())
	create(t, c, "a")
	create(t, c, "b")
	var r reconnects
	sub := c.Subscribe(t.Context(), client.EventQuery{}, r.options())
	defer sub.Close()
	if e := nextEvent(t, sub); e.Seq != 1 || e.SessionID != "a" || e.Type != api.EventSessionCreated {
		t.Fatalf("first event %+v", e)
	}
	if e := nextEvent(t, sub); e.Seq != 2 {
		t.Fatalf("second event %+v", e)
	}
	srv.restart(func(s *server) { createDirect(t, s, "while-down") })
	create(t, c, "after")
	if e := nextEvent(t, sub); e.Seq != 3 || e.SessionID != "while-down" {
		t.Errorf("after the restart: %+v", e)
	}
	if e := nextEvent(t, sub); e.Seq != 4 || e.SessionID != "after" {
		t.Errorf("live after the restart: %+v", e)
	}
	if cur, ok := sub.Cursor(); !ok || cur != 4 {
		t.Errorf("cursor %d %v", cur, ok)
	}
	if r.count() < 1 || !strings.Contains(r.errs[0].Error(), "ended") {
		t.Errorf("reconnections %v", r.errs)
	}
	sub.Close()
	if _, err := sub.Next(t.Context()); !errors.Is(err, context.Canceled) {
		t.Errorf("next after close: %v", err)
	}
}

// TestSubscribeFromACursor: a subscription given a cursor starts after it.
func TestSubscribeFromACursor(t *testing.T) {
	srv := startServer(t)
	c := checkedClient(t, srv.URL())
	for _, id := range []string{"a", "b", "c"} {
		create(t, c, id)
	}
	sub := c.Subscribe(t.Context(), client.EventQuery{After: client.Ptr[int64](2)}, client.SubscribeOptions{})
	defer sub.Close()
	if cur, ok := sub.Cursor(); !ok || cur != 2 {
		t.Errorf("cursor before delivery %d %v", cur, ok)
	}
	if e := nextEvent(t, sub); e.Seq != 3 || e.SessionID != "c" {
		t.Errorf("first event after 2: %+v", e)
	}
}

// TestSubscribeDeliversHeartbeatCursors: a filtered subscription is told,
// by heartbeats, that the log moved past events it skipped, so its resume
// point does not fall behind into what retention prunes.
func TestSubscribeDeliversHeartbeatCursors(t *testing.T) {
	srv := startServer(t, func(c *app.Config) { c.SSEHeartbeat = 20 * time.Millisecond })
	c := checkedClient(t, srv.URL())
	sub := c.Subscribe(t.Context(), client.EventQuery{Types: []string{api.EventPlanCreated}}, client.SubscribeOptions{})
	defer sub.Close()
	create(t, c, "skipped-1")
	create(t, c, "skipped-2")
	for {
		d := next(t, sub)
		if d.Event != nil {
			t.Fatalf("an event the filter skips: %+v", d.Event)
		}
		if d.Cursor == 2 {
			break
		}
	}
	if cur, _ := sub.Cursor(); cur != 2 {
		t.Errorf("cursor %d after the heartbeat", cur)
	}
	if _, err := c.PutPlanContent(t.Context(), "p", "# p"); err != nil {
		t.Fatal(err)
	}
	if e := nextEvent(t, sub); e.Seq != 3 || e.Type != api.EventPlanCreated || e.Plan != "p" {
		t.Errorf("plan event %+v", e)
	}
}

// TestSubscribeCursorExpired: while the subscriber is away, the events
// after its cursor are pruned; its reconnection is refused with 410, which
// ends the subscription with ErrCursorExpired instead of retrying.
func TestSubscribeCursorExpired(t *testing.T) {
	srv := startServer(t, func(c *app.Config) { c.EventRetention = events.Retention{MaxRows: 1} })
	c := checkedClient(t, srv.URL())
	create(t, c, "a")
	var r reconnects
	sub := c.Subscribe(t.Context(), client.EventQuery{}, r.options())
	defer sub.Close()
	if e := nextEvent(t, sub); e.Seq != 1 {
		t.Fatalf("first event %+v", e)
	}
	srv.restart(func(s *server) {
		createDirect(t, s, "b")
		createDirect(t, s, "c")
		if n, err := s.App.PruneEvents(t.Context(), time.Now()); err != nil || n != 2 {
			t.Fatalf("pruned %d, %v", n, err)
		}
	})
	err := ended(t, sub)
	var e *client.Error
	if !errors.Is(err, client.ErrCursorExpired) || !errors.As(err, &e) || e.Status != http.StatusGone {
		t.Fatalf("after pruning: %v", err)
	}
	if cur, _ := sub.Cursor(); cur != 1 {
		t.Errorf("cursor %d: the resume point of a later recovery must stay where delivery stopped", cur)
	}
}

// TestSubscribeEndsWithItsToken: a token revoked while its stream is open
// ends the stream with an error event; the subscription reports
// ErrUnauthenticated from it, without trying to reconnect.
func TestSubscribeEndsWithItsToken(t *testing.T) {
	srv := startServer(t, func(c *app.Config) {
		c.Auth = planhttp.AuthToken
		c.SSEHeartbeat = 20 * time.Millisecond
	})
	store := auth.NewStore(srv.DB)
	admin, _, err := store.Create(t.Context(), auth.CreateInput{Role: "admin", Name: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	watcher, _, err := store.Create(t.Context(), auth.CreateInput{Role: "viewer", Name: "watcher"})
	if err != nil {
		t.Fatal(err)
	}
	c := checkedClient(t, srv.URL(), client.WithToken(admin))
	var r reconnects
	sub := checkedClient(t, srv.URL(), client.WithToken(watcher)).Subscribe(t.Context(), client.EventQuery{}, r.options())
	defer sub.Close()
	create(t, c, "a")
	if e := nextEvent(t, sub); e.SessionID != "a" || e.Actor != "alice" {
		t.Fatalf("event %+v", e)
	}
	if err := c.RevokeToken(t.Context(), "watcher"); err != nil {
		t.Fatal(err)
	}
	err = ended(t, sub)
	if !errors.Is(err, client.ErrUnauthenticated) || r.count() != 0 {
		t.Fatalf("after revocation: %v, %d reconnections", err, r.count())
	}

	// A dead token is refused at open: the same error, no retries.
	var r2 reconnects
	again := checkedClient(t, srv.URL(), client.WithToken(watcher)).Subscribe(t.Context(), client.EventQuery{}, r2.options())
	defer again.Close()
	if err := ended(t, again); !errors.Is(err, client.ErrUnauthenticated) || r2.count() != 0 {
		t.Errorf("revoked token at open: %v, %d reconnections", err, r2.count())
	}
}

// TestSubscribeRefusalsAreTerminal: a request the server refuses as such
// (a malformed session filter) is not retried.
func TestSubscribeRefusalsAreTerminal(t *testing.T) {
	srv := startServer(t)
	var r reconnects
	sub := checkedClient(t, srv.URL()).Subscribe(t.Context(), client.EventQuery{SessionID: "-bad"}, r.options())
	defer sub.Close()
	if err := ended(t, sub); !errors.Is(err, client.ErrInvalidArgument) || r.count() != 0 {
		t.Errorf("malformed session id: %v, %d reconnections", err, r.count())
	}
}

// TestSubscribeBacksOff: with no server to reach, the waits grow
// exponentially within their bounds, with jitter, and MaxAttempts ends
// the subscription with the last failure.
func TestSubscribeBacksOff(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nobody listens here now
	c, err := client.New("http://" + addr)
	if err != nil {
		t.Fatal(err)
	}
	var r reconnects
	o := r.options()
	o.MinBackoff, o.MaxBackoff, o.MaxAttempts = 4*time.Millisecond, 20*time.Millisecond, 5
	sub := c.Subscribe(t.Context(), client.EventQuery{}, o)
	defer sub.Close()
	err = ended(t, sub)
	var op *net.OpError
	if !errors.As(err, &op) || !strings.Contains(err.Error(), "giving up after 5") {
		t.Fatalf("end: %v", err)
	}
	if r.count() != 5 {
		t.Fatalf("%d reconnections", r.count())
	}
	for i, bound := range []time.Duration{4, 8, 16, 20, 20} {
		bound *= time.Millisecond
		if w := r.waits[i]; w < bound/2 || w > bound {
			t.Errorf("wait %d = %v, want within [%v, %v]", i+1, w, bound/2, bound)
		}
	}
}

// TestSubscribeIdleTimeout: a connection that stays silent past
// IdleTimeout is dropped and made again, and nothing is lost or repeated.
func TestSubscribeIdleTimeout(t *testing.T) {
	srv := startServer(t, func(c *app.Config) { c.SSEHeartbeat = time.Hour })
	c := checkedClient(t, srv.URL())
	create(t, c, "a")
	var r reconnects
	o := r.options()
	o.IdleTimeout = 100 * time.Millisecond
	sub := c.Subscribe(t.Context(), client.EventQuery{}, o)
	defer sub.Close()
	if e := nextEvent(t, sub); e.Seq != 1 {
		t.Fatalf("first %+v", e)
	}
	for deadline := time.Now().Add(10 * time.Second); r.count() < 2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no reconnection of an idle stream")
		}
	}
	if err := r.errs[0]; !strings.Contains(err.Error(), "idle") {
		t.Errorf("reconnected because %v", err)
	}
	create(t, c, "b")
	if e := nextEvent(t, sub); e.Seq != 2 {
		t.Errorf("after idle reconnections: %+v", e)
	}
}
