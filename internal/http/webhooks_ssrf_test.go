package http_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/planserver/planserver/internal/apitest"
	"github.com/planserver/planserver/internal/dbtest"
	"github.com/planserver/planserver/internal/webhooks/deliver"
)

// dials records every address a deliverer connected to (deliver.Options.OnDial).
type dials struct {
	mu    sync.Mutex
	addrs []string
}

func (d *dials) add(a string) { d.mu.Lock(); d.addrs = append(d.addrs, a); d.mu.Unlock() }
func (d *dials) all() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.addrs...)
}

// refusedAttempt waits for the first attempt of subscription id and
// returns its error.
func refusedAttempt(t *testing.T, env *apitest.Env, id string) string {
	t.Helper()
	waitFor(t, 10*time.Second, "an attempt of "+id, func() bool { return len(deliveries(t, env, id)) > 0 })
	d := deliveries(t, env, id)[0]
	if d.State != "failed" || d.StatusCode != nil {
		t.Fatalf("attempt of %s: %+v", id, d)
	}
	return d.Error
}

// TestWebhookTargetsRefused: private, loopback, link-local and metadata
// targets are refused at dial time, against the resolved address, unless
// --webhook-allow-hosts lists them. Nothing is sent anywhere but loopback:
// the metadata and private addresses are proved refused through the dial
// hook, which sees no connection attempted.
func TestWebhookTargetsRefused(t *testing.T) {
	rcv := startReceiver(t)
	var seen dials
	env, _ := webhookEnv(t, dbtest.Fresh(t), deliver.Options{OnDial: seen.add})
	targets := map[string]string{
		"loopback":        rcv.URL("/a"),
		"loopback v6":     fmt.Sprintf("http://[::1]:%d/a", rcv.Port),
		"metadata":        "http://169.254.169.254/latest/meta-data/",
		"metadata v6":     "http://[fd00:ec2::254]/latest/meta-data/",
		"private":         "http://10.1.2.3:8080/hook",
		"name to loopack": fmt.Sprintf("http://localhost:%d/a", rcv.Port),
	}
	ids := map[string]string{}
	for name, u := range targets {
		ids[name] = createWebhook(t, env, map[string]any{"url": u, "events": []string{"plan.changed"}}).ID
	}
	putPlan(t, env, "p", map[string]any{"content": "x"}, http.StatusCreated)
	for name, id := range ids {
		if e := refusedAttempt(t, env, id); !strings.Contains(e, "target refused") || !strings.Contains(e, "--webhook-allow-hosts") {
			t.Errorf("%s: attempt error %q", name, e)
		}
	}
	if got := seen.all(); len(got) != 0 {
		t.Fatalf("refused targets were dialled: %v", got)
	}
	if got := rcv.Received(); len(got) != 0 {
		t.Fatalf("the receiver got refused deliveries: %+v", got)
	}
}

// TestWebhookAllowList: the allow list opens exactly what it names; other
// loopback addresses stay refused, checked on the resolved address; and
// a redirect from an allowed target to a refused one is not followed.
func TestWebhookAllowList(t *testing.T) {
	rcv := startReceiver(t)
	other := startReceiver(t)
	var seen dials
	env, _ := webhookEnv(t, dbtest.Fresh(t), deliver.Options{AllowHosts: []string{"127.0.0.1"}, OnDial: seen.add})
	ok := subscribe(t, env, rcv, "/ok", map[string]any{"events": []string{"plan.changed"}})
	refused := map[string]string{
		"127.0.0.2": fmt.Sprintf("http://127.0.0.2:%d/a", rcv.Port),
		"::1":       fmt.Sprintf("http://[::1]:%d/a", rcv.Port),
	}
	ids := map[string]string{}
	for name, u := range refused {
		ids[name] = createWebhook(t, env, map[string]any{"url": u, "events": []string{"plan.changed"}}).ID
	}
	putPlan(t, env, "p", map[string]any{"content": "x"}, http.StatusCreated)
	waitFor(t, 10*time.Second, "the allowed delivery", func() bool { return len(rcv.accepted("/ok")) == 1 })
	for name, id := range ids {
		if e := refusedAttempt(t, env, id); !strings.Contains(e, "target refused") {
			t.Errorf("%s: attempt error %q", name, e)
		}
	}
	for _, a := range seen.all() {
		if !strings.HasPrefix(a, "127.0.0.1:") {
			t.Fatalf("dialled %s, which the allow list does not name", a)
		}
	}

	// A redirect to another loopback address is not followed: the attempt
	// fails with the 307 and the other receiver hears nothing.
	rcv.Mode("ok", fmt.Sprintf("http://localhost:%d/stolen", other.Port))
	putPlan(t, env, "q", map[string]any{"content": "x"}, http.StatusCreated)
	waitFor(t, 10*time.Second, "the redirected attempt", func() bool {
		for _, d := range deliveries(t, env, ok.ID) {
			if d.StatusCode != nil && *d.StatusCode == 307 {
				return strings.Contains(d.Error, "redirects are not followed")
			}
		}
		return false
	})
	if got := other.Received(); len(got) != 0 {
		t.Fatalf("the redirect was followed: %+v", got)
	}
	for _, a := range seen.all() {
		if a != fmt.Sprintf("127.0.0.1:%d", rcv.Port) {
			t.Fatalf("dialled %s", a)
		}
	}
}
