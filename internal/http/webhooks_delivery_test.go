package http_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/apitest"
	"github.com/planserver/planserver/internal/app"
	"github.com/planserver/planserver/internal/dbtest"
	"github.com/planserver/planserver/internal/events"
	"github.com/planserver/planserver/internal/webhooks"
	"github.com/planserver/planserver/internal/webhooks/deliver"
)

// fastSchedule retries quickly and long enough for the fault tests never
// to exhaust it.
var fastSchedule = []time.Duration{50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond, 300 * time.Millisecond,
	400 * time.Millisecond, 500 * time.Millisecond, 500 * time.Millisecond, 500 * time.Millisecond, 500 * time.Millisecond,
	500 * time.Millisecond, 500 * time.Millisecond, 500 * time.Millisecond, 500 * time.Millisecond, 500 * time.Millisecond,
	500 * time.Millisecond, 500 * time.Millisecond, 500 * time.Millisecond, 500 * time.Millisecond, 500 * time.Millisecond,
	500 * time.Millisecond, 500 * time.Millisecond, 500 * time.Millisecond, 500 * time.Millisecond, 500 * time.Millisecond}

// webhookEnv starts planserver on the database at path with its
// deliverer running (as serve runs it); stop ends the deliverer. configure
// may adjust the rest of the configuration.
func webhookEnv(t *testing.T, path string, opt deliver.Options, configure ...func(*app.Config)) (env *apitest.Env, stop func()) {
	t.Helper()
	if opt.Schedule == nil {
		opt.Schedule = fastSchedule
	}
	if opt.Timeout == 0 {
		opt.Timeout = time.Second
	}
	if opt.LeaseTTL == 0 {
		opt.LeaseTTL = 3 * time.Second
	}
	env = apitest.Open(t, path, append([]func(*app.Config){func(c *app.Config) { c.Webhooks = opt }}, configure...)...)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		env.App.RunWebhooks(ctx)
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			<-done
		})
	}
	t.Cleanup(stop)
	return env, stop
}

// logSeqs returns the seqs of the events after `after` of the given types.
func logSeqs(t *testing.T, env *apitest.Env, after int64, types string) []int64 {
	t.Helper()
	resp := env.Call("GET", fmt.Sprintf("/v1/events?after=%d&limit=1000&types=%s", after, types), nil, "Accept", "application/json")
	var page api.EventPage
	resp.JSON(t, &page)
	var out []int64
	for _, e := range page.Events {
		out = append(out, e.Seq)
	}
	return out
}

// checkDelivered checks the at-least-once, in-order promise: the accepted
// deliveries, with repeats of an already accepted event dropped, are
// exactly want, in order; every repeat carries the first one's webhook-id.
func checkDelivered(t *testing.T, got []received, want []int64, webhookID string) (duplicates int) {
	t.Helper()
	seen := map[int64]string{}
	var order []int64
	for _, r := range got {
		if id, ok := seen[r.Seq]; ok {
			duplicates++
			if id != r.ID {
				t.Errorf("event %d came twice with different webhook-ids %s and %s", r.Seq, id, r.ID)
			}
			continue
		}
		if r.ID != webhooks.MessageID(webhookID, r.Seq) {
			t.Errorf("event %d came with webhook-id %s", r.Seq, r.ID)
		}
		seen[r.Seq] = r.ID
		order = append(order, r.Seq)
	}
	if !slices.Equal(order, want) {
		t.Fatalf("delivered %v; want every event once, in order: %v", order, want)
	}
	return duplicates
}

// subscribe creates a subscription to the receiver's path and makes the
// receiver trust its secret.
func subscribe(t *testing.T, env *apitest.Env, rcv *receiver, path string, body map[string]any) api.WebhookCreated {
	t.Helper()
	body["url"] = rcv.URL(path)
	wh := createWebhook(t, env, body)
	rcv.Trust(path, wh.Secret)
	return wh
}

func getWebhook(t *testing.T, env *apitest.Env, id string) api.Webhook {
	t.Helper()
	var wh api.Webhook
	env.Call("GET", "/v1/webhooks/"+id, nil).JSON(t, &wh)
	return wh
}

func deliveries(t *testing.T, env *apitest.Env, id string) []api.Delivery {
	t.Helper()
	var page api.DeliveryList
	env.Call("GET", "/v1/webhooks/"+id+"/deliveries?limit=1000", nil).JSON(t, &page)
	return page.Deliveries
}

func TestWebhookDeliveryVerifiedByStandardWebhooks(t *testing.T) {
	rcv := startReceiver(t)
	env, _ := webhookEnv(t, dbtest.Fresh(t), deliver.Options{AllowHosts: []string{"127.0.0.1"}, PublicURL: "https://planserver.example.com/"})
	createSession(t, env, map[string]any{"id": "work", "title": "Refactor billing", "mode": "plan"})
	createSession(t, env, map[string]any{"id": "other"})
	all := []string{"review.requested", "review.decided", "step.completed", "step.claim_expired", "plan.changed", "tool_call.denied"}
	std := subscribe(t, env, rcv, "/standard", map[string]any{"events": all})
	slack := subscribe(t, env, rcv, "/slack", map[string]any{"events": all, "format": "slack", "session": "work"})

	// A review requested and approved, a step completed, a tool denied.
	env.Call("PUT", "/v1/sessions/work/plan", map[string]any{"content": "# Plan\n"})
	env.Call("PUT", "/v1/sessions/other/plan", map[string]any{"content": "# Other\n"})
	if r := env.Call("POST", "/v1/sessions/work/plan/review", map[string]any{}); r.Status != http.StatusOK {
		t.Fatalf("review: %d %s", r.Status, r.Body)
	}
	if r := env.Call("POST", "/v1/sessions/other/plan/review", map[string]any{}); r.Status != http.StatusOK {
		t.Fatalf("review: %d %s", r.Status, r.Body)
	}
	if r := env.Call("POST", "/v1/sessions/work/tools/check", map[string]any{"name": "shell"}); r.Status != http.StatusOK {
		t.Fatalf("check: %d %s", r.Status, r.Body)
	}
	if r := env.Call("POST", "/v1/sessions/work/plan/approve", nil, "If-Match", "1"); r.Status != http.StatusOK {
		t.Fatalf("approve: %d %s", r.Status, r.Body)
	}
	putPlan(t, env, "billing", map[string]any{"content": "x", "steps": []map[string]any{{"id": "s1", "description": "d", "owner": "o"}}}, http.StatusCreated)
	if r := env.Call("PATCH", "/v1/plans/billing/steps/s1", map[string]any{"status": "complete"}); r.Status != http.StatusOK {
		t.Fatalf("complete: %d %s", r.Status, r.Body)
	}

	want := map[string][]string{
		"/standard": {"review.requested", "review.requested", "tool_call.denied", "review.decided", "plan.changed", "step.completed"},
		// The slack subscription follows session work only.
		"/slack": {"review.requested", "tool_call.denied", "review.decided"},
	}
	for path, types := range want {
		waitFor(t, 10*time.Second, "deliveries to "+path, func() bool { return len(rcv.accepted(path)) >= len(types) })
	}
	for _, r := range rcv.Received() {
		if !r.Verified || r.SignatureCount != 1 {
			t.Errorf("a delivery failed Standard Webhooks verification: %+v", r)
		}
	}
	var gotTypes []string
	for _, r := range rcv.accepted("/standard") {
		gotTypes = append(gotTypes, r.Type)
	}
	if !slices.Equal(gotTypes, want["/standard"]) {
		t.Fatalf("standard deliveries: %v, want %v", gotTypes, want["/standard"])
	}
	texts := rcv.accepted("/slack")
	if len(texts) != 3 ||
		texts[0].Text != "Plan revision 1 of *Refactor billing* waits for your review: <https://planserver.example.com/ui/sessions/work/review?revision=1>" ||
		!strings.HasPrefix(texts[1].Text, "Plan mode denied the tool *shell* to session *work*") ||
		texts[2].Text != "Plan revision 1 of *Refactor billing* was approved by anonymous: <https://planserver.example.com/ui/sessions/work/review?revision=1>" {
		t.Fatalf("slack texts: %+v", texts)
	}
	// The delivery log shows each attempt with its status and latency,
	// and the cursor stands after the last event delivered. The receiver
	// has an event before the deliverer records the answer to it, so the
	// log may trail the receiver for a moment.
	var log []api.Delivery
	waitFor(t, 10*time.Second, "the delivery log of "+std.ID, func() bool {
		log = deliveries(t, env, std.ID)
		return len(log) >= 6
	})
	if len(log) != 6 || log[0].State != "succeeded" || log[0].StatusCode == nil || *log[0].StatusCode != 204 || log[0].LatencyMS == nil {
		t.Fatalf("delivery log: %+v", log)
	}
	if wh := getWebhook(t, env, std.ID); wh.Cursor < log[0].EventSeq || wh.State != "active" {
		t.Fatalf("after delivery: %+v", wh)
	}
	_ = slack
	// Metrics name the subscription.
	resp := env.Call("GET", "/metrics", nil)
	if !strings.Contains(string(resp.Body), `planserver_webhook_deliveries_total{outcome="success",webhook="`+std.ID+`"} 6`) {
		t.Errorf("metrics lack the deliveries: %s", grepLines(string(resp.Body), "planserver_webhook"))
	}
}

// TestWebhookCreatedThroughTheAPIStartsAtOnce: with no subscription the
// scheduler sleeps through commits, and only the poll (an hour here) would
// find a new one; creating it through the API wakes the scheduler, so the
// next event is delivered at once.
func TestWebhookCreatedThroughTheAPIStartsAtOnce(t *testing.T) {
	rcv := startReceiver(t)
	env, _ := webhookEnv(t, dbtest.Fresh(t), deliver.Options{AllowHosts: []string{"127.0.0.1"}, PollInterval: time.Hour})
	// A commit with nothing subscribed, and time for the scheduler's first
	// pass, which finds nothing and sleeps.
	putPlan(t, env, "before", map[string]any{"content": "x"}, http.StatusCreated)
	time.Sleep(300 * time.Millisecond)
	subscribe(t, env, rcv, "/hook", map[string]any{"events": []string{"plan.changed"}})
	putPlan(t, env, "billing", map[string]any{"content": "x"}, http.StatusCreated)
	waitFor(t, 10*time.Second, "the delivery of plan billing", func() bool { return len(rcv.accepted("/hook")) >= 1 })
	if got := rcv.accepted("/hook"); len(got) != 1 || got[0].Type != "plan.changed" {
		t.Fatalf("deliveries: %+v", got)
	}
}

func grepLines(s, substr string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestWebhookRotationSignsWithBoth: during a rotation's overlap every
// delivery carries two signatures; a receiver that knows only the old
// secret still verifies it.
func TestWebhookRotationSignsWithBoth(t *testing.T) {
	rcv := startReceiver(t)
	env, _ := webhookEnv(t, dbtest.Fresh(t), deliver.Options{AllowHosts: []string{"127.0.0.1"}})
	wh := subscribe(t, env, rcv, "/old", map[string]any{"events": []string{"plan.changed"}})
	var rotated api.WebhookCreated
	env.Call("POST", "/v1/webhooks/"+wh.ID+"/rotate-secret", map[string]any{"overlap_seconds": 600}).JSON(t, &rotated)
	putPlan(t, env, "p1", map[string]any{"content": "x"}, http.StatusCreated)
	waitFor(t, 10*time.Second, "a delivery verified with the old secret", func() bool { return len(rcv.accepted("/old")) == 1 })
	if got := rcv.accepted("/old")[0]; got.SignatureCount != 2 {
		t.Fatalf("overlap delivery: %+v", got)
	}
	// Without an overlap the old secret stops at once.
	env.Call("POST", "/v1/webhooks/"+wh.ID+"/rotate-secret", map[string]any{"overlap_seconds": 0}).JSON(t, &rotated)
	putPlan(t, env, "p2", map[string]any{"content": "x"}, http.StatusCreated)
	waitFor(t, 10*time.Second, "a delivery the old secret cannot verify", func() bool { return len(rcv.Received()) >= 2 })
	if got := rcv.Received()[1]; got.Verified || got.SignatureCount != 1 {
		t.Fatalf("after the overlap the old secret still verifies: %+v", got)
	}
	rcv.Trust("/old", rotated.Secret)
	waitFor(t, 10*time.Second, "the retry verified with the new secret", func() bool { return len(rcv.accepted("/old")) == 2 })
}

// TestWebhookFaults: the receiver fails, hangs, closes connections and is
// down while planserver restarts; afterwards every event was delivered,
// in order, with no gap, and repeats share their webhook-id.
func TestWebhookFaults(t *testing.T) {
	rcv := startReceiver(t)
	path := dbtest.Fresh(t)
	opt := deliver.Options{AllowHosts: []string{"127.0.0.1"}, Timeout: 300 * time.Millisecond}
	env, stop := webhookEnv(t, path, opt)
	wh := subscribe(t, env, rcv, "/faults", map[string]any{"events": []string{"plan.changed"}})
	n := 0
	write := func(count int) {
		for i := 0; i < count; i++ {
			n++
			if r := env.Call("PUT", fmt.Sprintf("/v1/plans/p%d", n%7), map[string]any{"content": fmt.Sprint(n)}); r.Status >= 300 {
				t.Fatalf("write: %d %s", r.Status, r.Body)
			}
		}
	}
	write(5)
	waitFor(t, 10*time.Second, "first deliveries", func() bool { return len(rcv.accepted("/faults")) == 5 })
	for _, mode := range []string{"fail", "hang", "close"} {
		rcv.Mode(mode, "")
		write(5)
		waitFor(t, 10*time.Second, "attempts under "+mode, func() bool {
			c := 0
			for _, r := range rcv.Received() {
				if r.Mode == mode {
					c++
				}
			}
			return c >= 2
		})
		if wh := getWebhook(t, env, wh.ID); wh.Attempts == 0 || wh.NextAttemptAt == nil {
			t.Errorf("under %s the subscription shows no retry: %+v", mode, wh)
		}
		rcv.Mode("ok", "")
	}
	// The receiver goes down, planserver restarts, events keep coming; the
	// receiver comes back on its port.
	port := rcv.Port
	rcv.Stop()
	write(5)
	time.Sleep(200 * time.Millisecond)
	stop()
	env.Close()
	env, _ = webhookEnv(t, path, opt)
	write(5)
	rcv.Start(port)
	want := logSeqs(t, env, wh.Cursor, "plan.created,plan.updated")
	if len(want) != 5+15+10 {
		t.Fatalf("%d events to deliver: %v", len(want), want)
	}
	waitFor(t, 30*time.Second, "every event delivered", func() bool {
		acc := rcv.accepted("/faults")
		return len(acc) > 0 && acc[len(acc)-1].Seq == want[len(want)-1]
	})
	dups := checkDelivered(t, rcv.accepted("/faults"), want, wh.ID)
	t.Logf("%d events delivered in order after faults; %d accepted twice", len(want), dups)
	failed := 0
	for _, d := range deliveries(t, env, wh.ID) {
		if d.State == "failed" {
			failed++
			if d.Error == "" || d.NextRetryAt == nil {
				t.Errorf("a failed attempt without its error or next retry: %+v", d)
			}
		}
	}
	if failed < 6 {
		t.Errorf("only %d failed attempts in the delivery log", failed)
	}
}

// TestWebhookFailingAndRedeliver: when the schedule is used up the
// subscription is failing and says why; redelivering resumes it; a
// delivered event is redelivered once with its webhook-id.
func TestWebhookFailingAndRedeliver(t *testing.T) {
	rcv := startReceiver(t)
	env, _ := webhookEnv(t, dbtest.Fresh(t), deliver.Options{AllowHosts: []string{"127.0.0.1"},
		Schedule: []time.Duration{20 * time.Millisecond, 20 * time.Millisecond}})
	wh := subscribe(t, env, rcv, "/r", map[string]any{"events": []string{"plan.changed"}})
	putPlan(t, env, "one", map[string]any{"content": "x"}, http.StatusCreated)
	waitFor(t, 10*time.Second, "a delivery", func() bool { return len(rcv.accepted("/r")) == 1 })
	rcv.Mode("fail", "")
	putPlan(t, env, "two", map[string]any{"content": "x"}, http.StatusCreated)
	waitFor(t, 10*time.Second, "the subscription failing", func() bool { return getWebhook(t, env, wh.ID).State == "failing" })
	got := getWebhook(t, env, wh.ID)
	if got.Attempts != 3 || !strings.Contains(got.StateReason, "failed 3 attempts") {
		t.Fatalf("failing: %+v", got)
	}
	log := deliveries(t, env, wh.ID)
	if len(log) != 4 || log[0].State != "failed" || log[0].NextRetryAt != nil || log[1].NextRetryAt == nil ||
		log[0].Response != "receiver is failing on purpose" || *log[0].StatusCode != 500 {
		t.Fatalf("log: %+v", log)
	}
	// Failing: nothing more is sent.
	putPlan(t, env, "three", map[string]any{"content": "x"}, http.StatusCreated)
	time.Sleep(300 * time.Millisecond)
	if c := len(rcv.Received()); c != 4 {
		t.Fatalf("a failing subscription kept sending: %d", c)
	}
	rcv.Mode("ok", "")
	r := env.Call("POST", fmt.Sprintf("/v1/webhooks/%s/deliveries/%d/redeliver", wh.ID, log[0].ID), nil)
	if r.Status != http.StatusAccepted {
		t.Fatalf("redeliver: %d %s", r.Status, r.Body)
	}
	waitFor(t, 10*time.Second, "the rest delivered", func() bool { return len(rcv.accepted("/r")) == 3 })
	if got := getWebhook(t, env, wh.ID); got.State != "active" || got.Attempts != 0 {
		t.Fatalf("after redeliver: %+v", got)
	}
	// Redelivering an event already delivered sends it once more, with
	// the same webhook-id, out of the cursor's order.
	first := deliveries(t, env, wh.ID)
	oldest := first[len(first)-1]
	var queued api.Delivery
	env.Call("POST", fmt.Sprintf("/v1/webhooks/%s/deliveries/%d/redeliver", wh.ID, oldest.ID), nil).JSON(t, &queued)
	if queued.State != "pending" || !queued.Manual || queued.MessageID != oldest.MessageID {
		t.Fatalf("queued: %+v", queued)
	}
	waitFor(t, 10*time.Second, "the redelivery", func() bool { return len(rcv.accepted("/r")) == 4 })
	acc := rcv.accepted("/r")
	if acc[3].ID != oldest.MessageID || acc[3].Seq != oldest.EventSeq {
		t.Fatalf("redelivered %+v, want %s", acc[3], oldest.MessageID)
	}
	waitFor(t, 5*time.Second, "the redelivery logged", func() bool {
		for _, d := range deliveries(t, env, wh.ID) {
			if d.ID == queued.ID {
				return d.State == "succeeded"
			}
		}
		return false
	})
}

// TestWebhookCursorBehindRetention: when the log is pruned past an
// undelivered cursor the subscription is failing with the reason, and
// resuming starts from the oldest retained event.
func TestWebhookCursorBehindRetention(t *testing.T) {
	rcv := startReceiver(t)
	env, _ := webhookEnv(t, dbtest.Fresh(t), deliver.Options{AllowHosts: []string{"127.0.0.1"}})
	wh := subscribe(t, env, rcv, "/behind", map[string]any{"events": []string{"plan.changed"}})
	env.Call("PATCH", "/v1/webhooks/"+wh.ID, map[string]any{"state": "paused"})
	for i := 0; i < 5; i++ {
		putPlan(t, env, fmt.Sprintf("p%d", i), map[string]any{"content": "x"}, http.StatusCreated)
	}
	// Keep only the newest 2 events.
	if _, err := pruneTo(env, 2); err != nil {
		t.Fatal(err)
	}
	env.Call("PATCH", "/v1/webhooks/"+wh.ID, map[string]any{"state": "active"})
	waitFor(t, 10*time.Second, "the retained events delivered", func() bool { return len(rcv.accepted("/behind")) == 2 })
	acc := rcv.accepted("/behind")
	if acc[0].Seq != wh.Cursor+4 || acc[1].Seq != wh.Cursor+5 {
		t.Fatalf("after resuming: %+v", acc)
	}
	// Now the cursor falls behind while the subscription is active but
	// its target is failing.
	rcv.Mode("fail", "")
	for i := 0; i < 3; i++ {
		putPlan(t, env, fmt.Sprintf("q%d", i), map[string]any{"content": "x"}, http.StatusCreated)
	}
	waitFor(t, 10*time.Second, "a failed attempt", func() bool { return getWebhook(t, env, wh.ID).Attempts > 0 })
	if _, err := pruneTo(env, 1); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "failing for retention", func() bool { return getWebhook(t, env, wh.ID).State == "failing" })
	if got := getWebhook(t, env, wh.ID); !strings.Contains(got.StateReason, "pruned past") {
		t.Fatalf("reason: %+v", got)
	}
}

// pruneTo prunes the event log to its newest rows events.
func pruneTo(env *apitest.Env, rows int64) (int64, error) {
	return events.Prune(context.Background(), env.DB, events.Retention{MaxRows: rows}, time.Now())
}
