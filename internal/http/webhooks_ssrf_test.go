package http_test

import (
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/planserver/planserver/internal/apitest"
	"github.com/planserver/planserver/internal/dbtest"
	"github.com/planserver/planserver/internal/webhooks/deliver"
)

// dials records every address a deliverer was about to connect to
// (deliver.Options.OnDial), and stops every connection that would leave
// the machine: a test sends traffic to loopback only, even when the guard
// under test fails to refuse an address.
type dials struct {
	mu    sync.Mutex
	addrs []string
}

func (d *dials) add(a string) error {
	d.mu.Lock()
	d.addrs = append(d.addrs, a)
	d.mu.Unlock()
	if ap, err := netip.ParseAddrPort(a); err != nil || !ap.Addr().Unmap().IsLoopback() {
		return fmt.Errorf("the test stopped a dial of %s: it never leaves loopback", a)
	}
	return nil
}
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

// TestWebhookSpecialPurposeTargetsRefused: an address in a range of
// IANA's special-purpose registries is refused through the real router and
// deliverer, the ones that stand for another address included: NAT64's
// local-use prefix (64:ff9b:1::/48, RFC 8215) and its well-known one
// carrying the metadata address, an IPv4-compatible address, a site-local
// one, 6to4 and Teredo addresses embedding a private IPv4 address. The
// attempt's error names the range; no connection is attempted (and the
// dial hook would stop one before it left the machine).
func TestWebhookSpecialPurposeTargetsRefused(t *testing.T) {
	var seen dials
	env, _ := webhookEnv(t, dbtest.Fresh(t), deliver.Options{OnDial: seen.add})
	targets := map[string]string{
		"http://[64:ff9b:1::a9fe:a9fe]/latest/meta-data/": "64:ff9b:1::/48",
		"http://[64:ff9b::a9fe:a9fe]/latest/meta-data/":   "64:ff9b::/96",
		"http://[::a9fe:a9fe]/hook":                       "::/96",
		"http://[fec0::1]/hook":                           "fec0::/10",
		"http://[2002:a00:1::1]/hook":                     "2002::/16",
		// Teredo: server 10.0.0.1, client 10.0.0.1 (obfuscated).
		"http://[2001:0:a00:1::f5ff:fffe]/hook": "2001::/32",
		"http://192.0.0.170/hook":               "192.0.0.170/32",
		"http://198.18.0.1/hook":                "198.18.0.0/15",
	}
	ids := map[string]string{}
	for u := range targets {
		ids[u] = createWebhook(t, env, map[string]any{"url": u, "events": []string{"plan.changed"}}).ID
	}
	putPlan(t, env, "p", map[string]any{"content": "x"}, http.StatusCreated)
	for u, prefix := range targets {
		if e := refusedAttempt(t, env, ids[u]); !strings.Contains(e, "target refused") || !strings.Contains(e, prefix) {
			t.Errorf("%s: attempt error %q, want a refusal naming %s", u, e, prefix)
		}
	}
	if got := seen.all(); len(got) != 0 {
		t.Fatalf("refused targets were about to be dialled: %v", got)
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
