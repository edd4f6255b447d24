package http_test

import (
	"bytes"
	"encoding/base64"
	"net/http"
	"strings"
	"testing"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/apitest"
	"github.com/planserver/planserver/internal/auth"
)

// createWebhook subscribes url and returns the answer, secret included.
func createWebhook(t *testing.T, env *apitest.Env, body map[string]any) api.WebhookCreated {
	t.Helper()
	resp := env.Call("POST", "/v1/webhooks", body)
	if resp.Status != http.StatusCreated {
		t.Fatalf("create webhook: %d %s", resp.Status, resp.Body)
	}
	var out api.WebhookCreated
	resp.JSON(t, &out)
	if resp.Header.Get("Location") != "/v1/webhooks/"+out.ID || resp.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("create webhook: headers %v", resp.Header)
	}
	return out
}

func TestWebhookAPI(t *testing.T) {
	env := apitest.New(t)
	createSession(t, env, map[string]any{"id": "work", "title": "Refactor billing"})
	created := createWebhook(t, env, map[string]any{
		"url": "https://hooks.example.com/planserver", "events": []string{"review.requested", "step.completed", "review.requested"},
		"format": "slack", "session": "work",
	})
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(created.Secret, "whsec_"))
	if !strings.HasPrefix(created.Secret, "whsec_") || err != nil || len(key) != 32 {
		t.Fatalf("secret %q: want whsec_ and 32 bytes in base64", created.Secret)
	}
	if created.State != "active" || created.Format != "slack" || created.Session != "work" ||
		strings.Join(created.Events, ",") != "review.requested,step.completed" {
		t.Fatalf("created: %+v", created.Webhook)
	}
	// The subscription starts at the log's head: the session's creation is
	// not news to it.
	if created.Cursor < 1 {
		t.Fatalf("cursor %d: want the head of the log", created.Cursor)
	}

	resp := env.Call("GET", "/v1/webhooks/"+created.ID, nil)
	var got api.Webhook
	resp.JSON(t, &got)
	if resp.Status != http.StatusOK || got.ID != created.ID || got.URL != created.URL {
		t.Fatalf("get: %d %s", resp.Status, resp.Body)
	}
	second := createWebhook(t, env, map[string]any{"url": "http://10.0.0.1:9000/x", "events": []string{"plan.changed"}})
	resp = env.Call("GET", "/v1/webhooks?limit=1", nil)
	var page api.WebhookList
	resp.JSON(t, &page)
	if resp.Status != http.StatusOK || len(page.Webhooks) != 1 || page.NextPageToken == "" {
		t.Fatalf("list page 1: %d %s", resp.Status, resp.Body)
	}
	resp = env.Call("GET", "/v1/webhooks?limit=1&page_token="+page.NextPageToken, nil)
	var page2 api.WebhookList
	resp.JSON(t, &page2)
	if len(page2.Webhooks) != 1 || page2.NextPageToken != "" || page2.Webhooks[0].ID == page.Webhooks[0].ID {
		t.Fatalf("list page 2: %s", resp.Body)
	}

	resp = env.Call("PATCH", "/v1/webhooks/"+created.ID, map[string]any{"events": []string{"review.decided"}, "state": "paused", "session": ""},
		"Content-Type", "application/merge-patch+json")
	got = api.Webhook{}
	resp.JSON(t, &got)
	if resp.Status != http.StatusOK || got.State != "paused" || got.Session != "" || strings.Join(got.Events, ",") != "review.decided" {
		t.Fatalf("patch: %d %s", resp.Status, resp.Body)
	}
	resp = env.Call("PATCH", "/v1/webhooks/"+created.ID, map[string]any{"state": "active"})
	resp.JSON(t, &got)
	if resp.Status != http.StatusOK || got.State != "active" {
		t.Fatalf("resume: %d %s", resp.Status, resp.Body)
	}

	// Rotation: a new secret, the old one overlapping for the window.
	resp = env.Call("POST", "/v1/webhooks/"+created.ID+"/rotate-secret", map[string]any{"overlap_seconds": 3600})
	var rotated api.WebhookCreated
	resp.JSON(t, &rotated)
	if resp.Status != http.StatusOK || !strings.HasPrefix(rotated.Secret, "whsec_") || rotated.Secret == created.Secret ||
		rotated.PreviousSecretExpiresAt == nil {
		t.Fatalf("rotate: %d %s", resp.Status, resp.Body)
	}
	resp = env.Call("POST", "/v1/webhooks/"+created.ID+"/rotate-secret", nil)
	var again api.WebhookCreated
	resp.JSON(t, &again)
	if resp.Status != http.StatusOK || again.Secret == rotated.Secret {
		t.Fatalf("rotate without a body: %d %s", resp.Status, resp.Body)
	}

	// No later answer, and no event, carries a secret.
	secrets := []string{created.Secret, rotated.Secret, again.Secret, second.Secret}
	for _, path := range []string{"/v1/webhooks", "/v1/webhooks/" + created.ID, "/v1/webhooks/" + created.ID + "/deliveries", "/v1/events?limit=1000"} {
		resp := env.Call("GET", path, nil, "Accept", "application/json")
		if resp.Status != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, resp.Status, resp.Body)
		}
		for _, s := range secrets {
			if bytes.Contains(resp.Body, []byte(strings.TrimPrefix(s, "whsec_"))) {
				t.Errorf("GET %s shows a secret: %s", path, resp.Body)
			}
		}
	}

	resp = env.Call("GET", "/v1/webhooks/"+created.ID+"/deliveries", nil)
	var log api.DeliveryList
	resp.JSON(t, &log)
	if resp.Status != http.StatusOK || len(log.Deliveries) != 0 {
		t.Fatalf("deliveries: %d %s", resp.Status, resp.Body)
	}
	if resp := env.Call("POST", "/v1/webhooks/"+created.ID+"/deliveries/99/redeliver", nil); resp.Status != http.StatusNotFound || resp.Code() != "not_found" {
		t.Fatalf("redeliver an unknown delivery: %d %s", resp.Status, resp.Body)
	}
	if resp := env.Call("DELETE", "/v1/webhooks/"+created.ID, nil); resp.Status != http.StatusNoContent {
		t.Fatalf("delete: %d %s", resp.Status, resp.Body)
	}
	for _, r := range []*apitest.Response{
		env.Call("GET", "/v1/webhooks/"+created.ID, nil),
		env.Call("DELETE", "/v1/webhooks/"+created.ID, nil),
		env.Call("GET", "/v1/webhooks/"+created.ID+"/deliveries", nil),
	} {
		if r.Status != http.StatusNotFound || r.Code() != "not_found" {
			t.Fatalf("after delete: %d %s", r.Status, r.Body)
		}
	}
}

func TestWebhookBadInput(t *testing.T) {
	env := apitest.New(t)
	many := make([]string, 65)
	for i := range many {
		many[i] = "plan.changed"
	}
	cases := []struct {
		name, field string
		body        any
	}{
		{"not a URL", "url", map[string]any{"url": "not a url", "events": []string{"plan.changed"}}},
		{"ftp", "url", map[string]any{"url": "ftp://example.com/x", "events": []string{"plan.changed"}}},
		{"credentials", "url", map[string]any{"url": "https://user:pw@example.com/x", "events": []string{"plan.changed"}}},
		{"no host", "url", map[string]any{"url": "https:///x", "events": []string{"plan.changed"}}},
		{"huge URL", "url", map[string]any{"url": "https://example.com/" + strings.Repeat("a", 3000), "events": []string{"plan.changed"}}},
		{"unknown type", "events[1]", map[string]any{"url": "https://example.com/x", "events": []string{"plan.changed", "plan.exploded"}}},
		{"no types", "events", map[string]any{"url": "https://example.com/x", "events": []string{}}},
		{"huge filter", "events", map[string]any{"url": "https://example.com/x", "events": many}},
		{"unknown format", "format", map[string]any{"url": "https://example.com/x", "events": []string{"plan.changed"}, "format": "teams"}},
		{"unknown session", "session", map[string]any{"url": "https://example.com/x", "events": []string{"plan.changed"}, "session": "nobody"}},
		{"bad plan name", "plan", map[string]any{"url": "https://example.com/x", "events": []string{"plan.changed"}, "plan": "../etc"}},
		{"unknown field", "secret", map[string]any{"url": "https://example.com/x", "events": []string{"plan.changed"}, "secret": "whsec_mine"}},
	}
	for _, c := range cases {
		resp := env.Bad("POST", "/v1/webhooks", c.body)
		if resp.Status != http.StatusBadRequest || resp.Code() != "invalid_argument" || !strings.Contains(string(resp.Body), c.field) {
			t.Errorf("%s: %d %s; want 400 invalid_argument naming %s", c.name, resp.Status, resp.Body, c.field)
		}
	}
	resp := env.Call("GET", "/v1/webhooks", nil)
	var list api.WebhookList
	resp.JSON(t, &list)
	if len(list.Webhooks) != 0 {
		t.Fatalf("a refused subscription was stored: %s", resp.Body)
	}
	wh := createWebhook(t, env, map[string]any{"url": "https://example.com/x", "events": []string{"plan.changed"}})
	for _, c := range []struct {
		body  any
		field string
	}{
		{map[string]any{"state": "failing"}, "state"},
		{map[string]any{"url": "javascript:alert(1)"}, "url"},
		{map[string]any{"events": []string{"nope"}}, "events[0]"},
		{map[string]any{"format": ""}, "format"},
		{map[string]any{"cursor": 0}, "cursor"},
	} {
		resp := env.Bad("PATCH", "/v1/webhooks/"+wh.ID, c.body)
		if resp.Status != http.StatusBadRequest || resp.Code() != "invalid_argument" || !strings.Contains(string(resp.Body), c.field) {
			t.Errorf("PATCH %v: %d %s", c.body, resp.Status, resp.Body)
		}
	}
	for _, body := range []any{map[string]any{"overlap_seconds": -1}, map[string]any{"overlap_seconds": 1 << 40}} {
		if resp := env.Bad("POST", "/v1/webhooks/"+wh.ID+"/rotate-secret", body); resp.Status != http.StatusBadRequest {
			t.Errorf("rotate %v: %d %s", body, resp.Status, resp.Body)
		}
	}
	if resp := env.Bad("POST", "/v1/webhooks/"+wh.ID+"/deliveries/abc/redeliver", nil); resp.Status != http.StatusBadRequest {
		t.Errorf("redeliver abc: %d %s", resp.Status, resp.Body)
	}
	if resp := env.Bad("GET", "/v1/webhooks?limit=5000", nil); resp.Status != http.StatusBadRequest {
		t.Errorf("limit 5000: %d %s", resp.Status, resp.Body)
	}
	if resp := env.Bad("GET", "/v1/webhooks?page_token=garbage", nil); resp.Status != http.StatusBadRequest {
		t.Errorf("bad page token: %d %s", resp.Status, resp.Body)
	}
	// Nothing the refused patches named was kept.
	resp = env.Call("GET", "/v1/webhooks/"+wh.ID, nil)
	var got api.Webhook
	resp.JSON(t, &got)
	if got.URL != "https://example.com/x" || got.State != "active" || strings.Join(got.Events, ",") != "plan.changed" {
		t.Fatalf("after refused patches: %s", resp.Body)
	}
}

func TestWebhooksAreAdminOnly(t *testing.T) {
	env, admin := tokenEnv(t)
	createSession(t, admin, map[string]any{"id": "work"})
	wh := createWebhook(t, admin, map[string]any{"url": "https://example.com/x", "events": []string{"plan.changed"}})
	for _, who := range []*apitest.Env{env.As(env.Token(auth.Agent, "coder", "work")), env.As(env.Token(auth.Viewer, "watcher", ""))} {
		for _, r := range []*apitest.Response{
			who.Call("GET", "/v1/webhooks", nil),
			who.Call("GET", "/v1/webhooks/"+wh.ID, nil),
			who.Call("POST", "/v1/webhooks", map[string]any{"url": "https://example.com/y", "events": []string{"plan.changed"}}),
			who.Call("POST", "/v1/webhooks/"+wh.ID+"/rotate-secret", nil),
			who.Call("DELETE", "/v1/webhooks/"+wh.ID, nil),
		} {
			if r.Status != http.StatusForbidden || r.Code() != "permission_denied" {
				t.Errorf("non-admin: %d %s", r.Status, r.Body)
			}
		}
	}
}
