package client_test

import (
	"errors"
	"net/http"
	"sync"
	"testing"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/client"
)

func TestTokens(t *testing.T) {
	env, admin := tokenServer(t)
	ctx := t.Context()
	c := checkedClient(t, env.Server.URL, client.WithToken(admin), client.WithUserAgent("tokens-test"))
	created, err := c.CreateToken(ctx, api.TokenCreate{Role: api.RoleViewer, Name: "dashboard", TTL: "1h"})
	if err != nil || created.Secret == "" || created.Name != "dashboard" || created.ExpiresAt == nil {
		t.Fatalf("create: %+v %v", created, err)
	}
	list, err := c.ListTokens(ctx)
	if err != nil || len(list.Tokens) != 2 {
		t.Fatalf("list: %+v %v", list, err)
	}
	viewer := checkedClient(t, env.Server.URL, client.WithToken(created.Secret))
	if _, err := viewer.ListPlans(ctx, client.PlanQuery{}); err != nil {
		t.Errorf("viewer reads: %v", err)
	}
	if _, err := viewer.PutPlanContent(ctx, "p", "# p"); !errors.Is(err, client.ErrPermissionDenied) {
		t.Errorf("viewer writes: %v", err)
	}
	if err := c.RevokeToken(ctx, "dashboard"); err != nil {
		t.Fatal(err)
	}
	tok, err := c.GetToken(ctx, "dashboard")
	if err != nil || tok.RevokedAt == nil || tok.LastUsedAt == nil {
		t.Fatalf("get: %+v %v", tok, err)
	}
	if _, err := viewer.ListPlans(ctx, client.PlanQuery{}); !errors.Is(err, client.ErrUnauthenticated) {
		t.Errorf("revoked token: %v", err)
	}
	if _, err := c.GetToken(ctx, "nobody"); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("missing token: %v", err)
	}
}

func TestHealthAndReady(t *testing.T) {
	_, c := newTest(t)
	h, err := c.Health(t.Context())
	if err != nil || h.Status != "ok" || h.Version != "test" {
		t.Errorf("health: %+v %v", h, err)
	}
	r, err := c.Ready(t.Context())
	if err != nil || r.Status != "ready" || r.SchemaVersion < 1 {
		t.Errorf("ready: %+v %v", r, err)
	}
}

func TestListEvents(t *testing.T) {
	env, c := newTest(t)
	ctx := t.Context()
	var head client.ResponseMeta
	if _, err := c.ListSessions(ctx, client.SessionQuery{}, client.Meta(&head)); err != nil || head.EventSeq != 0 {
		t.Fatalf("head of an empty log: %+v %v", head, err)
	}
	for _, id := range []string{"a", "b", "c"} {
		if _, err := c.CreateSession(ctx, api.SessionCreate{ID: client.Ptr(id)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.SetMode(ctx, "b", api.ModePlan); err != nil {
		t.Fatal(err)
	}
	page, err := c.ListEvents(ctx, client.EventQuery{Limit: 2})
	if err != nil || len(page.Events) != 2 || page.NextAfter != 2 || page.Events[0].Type != api.EventSessionCreated {
		t.Fatalf("first page: %+v %v", page, err)
	}
	rest, err := c.ListEvents(ctx, client.EventQuery{After: &page.NextAfter, Limit: 10})
	if err != nil || len(rest.Events) != 2 || rest.NextAfter != 4 {
		t.Fatalf("second page: %+v %v", rest, err)
	}
	filtered, err := c.ListEvents(ctx, client.EventQuery{SessionID: "b", Types: []string{api.EventSessionModeChanged}})
	if err != nil || len(filtered.Events) != 1 || filtered.Events[0].SessionID != "b" || filtered.NextAfter != 4 {
		t.Fatalf("filtered: %+v %v", filtered, err)
	}
	// A type the contract does not list: only the answer is checked.
	bad := badClient(t, env.Server.URL)
	if _, err := bad.ListEvents(ctx, client.EventQuery{Types: []string{"no.such"}}); !errors.Is(err, client.ErrInvalidArgument) {
		t.Errorf("unknown type: %v", err)
	}
}

// recorder keeps the headers of every request a client sends.
type recorder struct {
	next    http.RoundTripper
	mu      sync.Mutex
	headers []http.Header
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	r.headers = append(r.headers, req.Header.Clone())
	r.mu.Unlock()
	return r.next.RoundTrip(req)
}

func TestEveryRequestCarriesTokenAndUserAgent(t *testing.T) {
	env, admin := tokenServer(t)
	rec := &recorder{next: &contractCheck{tb: t, next: http.DefaultTransport}}
	c, err := client.New(env.Server.URL, client.WithToken(admin), client.WithUserAgent("planserver-tui/1.2"),
		client.WithHTTPClient(&http.Client{Transport: rec}))
	if err != nil {
		t.Fatal(err)
	}
	var meta client.ResponseMeta
	if _, err := c.GetSession(t.Context(), "nobody", client.Meta(&meta)); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("get: %v", err)
	}
	// Meta describes refusals too.
	if meta.Status != http.StatusNotFound || meta.RequestID == "" || meta.Revision != 0 {
		t.Errorf("meta of a 404: %+v", meta)
	}
	sub := c.Subscribe(t.Context(), client.EventQuery{After: client.Ptr[int64](0)}, client.SubscribeOptions{})
	create(t, c, "a")
	if e := nextEvent(t, sub); e.Seq != 1 {
		t.Errorf("event %+v", e)
	}
	sub.Close()
	if len(rec.headers) < 3 {
		t.Fatalf("%d requests", len(rec.headers))
	}
	for _, h := range rec.headers {
		if h.Get("Authorization") != "Bearer "+admin || h.Get("User-Agent") != "planserver-tui/1.2" {
			t.Errorf("headers %v", h)
		}
	}
}
