package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/cli"
)

// TestWebhookCLI drives every webhook command against a real server. The
// target is a closed loopback port (allowed with --webhook-allow-hosts),
// so the attempts fail with a refused connection and nothing leaves the
// machine.
func TestWebhookCLI(t *testing.T) {
	p := start(t, filepath.Join(t.TempDir(), "p.db"), "--webhook-allow-hosts", "127.0.0.1", "--public-url", "https://ps.example.com")
	target := "http://" + freeAddr(t) + "/hook"
	created := decode[api.WebhookCreated](t, ok(t, p, "webhook", "create", target, "--event", "plan.changed,review.requested", "--json"))
	if !strings.HasPrefix(created.Secret, "whsec_") || len(created.Events) != 2 {
		t.Fatalf("created: %+v", created)
	}
	human := ok(t, p, "webhook", "create", target, "--event", "step.completed", "--format", "slack")
	if !strings.Contains(human, "secret: whsec_") || !strings.Contains(human, "not shown again") {
		t.Fatalf("create says: %s", human)
	}
	if out := ok(t, p, "webhook", "list"); !strings.Contains(out, created.ID) || strings.Contains(out, "whsec_") {
		t.Fatalf("list: %s", out)
	}
	if out := ok(t, p, "webhook", "show", created.ID); !strings.Contains(out, "state:    active") || strings.Contains(out, "whsec_") {
		t.Fatalf("show: %s", out)
	}
	md := filepath.Join(t.TempDir(), "plan.md")
	if err := os.WriteFile(md, []byte("# Billing\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ok(t, p, "plan", "put", "billing", "--create", md)
	var log []api.Delivery
	deadline := time.Now().Add(15 * time.Second)
	for len(log) == 0 && time.Now().Before(deadline) {
		log = decode[[]api.Delivery](t, ok(t, p, "webhook", "deliveries", created.ID, "--json"))
		time.Sleep(100 * time.Millisecond)
	}
	if len(log) == 0 || log[0].State != "failed" || !strings.Contains(log[0].Error, "refused") {
		t.Fatalf("deliveries: %+v", log)
	}
	if out := ok(t, p, "webhook", "deliveries", created.ID); !strings.Contains(out, "NEXT RETRY") || !strings.Contains(out, "plan.changed") {
		t.Fatalf("deliveries table: %s", out)
	}
	if out := ok(t, p, "webhook", "redeliver", created.ID, strconv.FormatInt(log[0].ID, 10)); !strings.Contains(out, "delivered again") {
		t.Fatalf("redeliver: %s", out)
	}
	updated := decode[api.Webhook](t, ok(t, p, "webhook", "update", created.ID, "--pause", "--event", "plan.changed", "--json"))
	if updated.State != "paused" || len(updated.Events) != 1 {
		t.Fatalf("update: %+v", updated)
	}
	rotated := decode[api.WebhookCreated](t, ok(t, p, "webhook", "rotate-secret", created.ID, "--overlap", "1h", "--json"))
	if rotated.Secret == created.Secret || rotated.PreviousSecretExpiresAt == nil {
		t.Fatalf("rotate: %+v", rotated)
	}
	ok(t, p, "webhook", "delete", created.ID)
	if e := fails(t, p, cli.ExitNotFound, "webhook", "show", created.ID); !strings.Contains(e, "no webhook") {
		t.Fatalf("show after delete: %s", e)
	}
	if e := fails(t, p, cli.ExitFailure, "webhook", "create", "ftp://x", "--event", "plan.changed"); !strings.Contains(e, "url") {
		t.Fatalf("bad url: %s", e)
	}
	if e := fails(t, p, cli.ExitFailure, "webhook", "create", target, "--event", "nope"); !strings.Contains(e, "unknown event type") {
		t.Fatalf("bad type: %s", e)
	}
	fails(t, p, cli.ExitUsage, "webhook", "create", target)
	fails(t, p, cli.ExitUsage, "webhook", "redeliver", "wh_x", "abc")
	if out := ok(t, p, "webhook", "--help"); !strings.Contains(out, "rotate-secret") {
		t.Fatalf("help: %s", out)
	}
}
