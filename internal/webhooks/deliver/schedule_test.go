package deliver

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/db"
	"github.com/planserver/planserver/internal/dbtest/migrated"
	"github.com/planserver/planserver/internal/events"
	"github.com/planserver/planserver/internal/webhooks"
)

// TestSchedulerSleepsThroughCommitsWithoutSubscriptions checks that a
// service with no subscription does not pay a scheduler pass (two reads)
// for every commit, and that a subscription created through the store
// still wakes the scheduler at once, after which commits wake it again.
// The poll interval is an hour, so every pass counted here was woken by a
// commit or a change, never by the clock.
func TestSchedulerSleepsThroughCommitsWithoutSubscriptions(t *testing.T) {
	ctx := context.Background()
	d := migrated.Fresh(t)
	commits := events.NewBroker()
	d.OnCommit(commits.Notify)
	dl, err := New(d, commits, slog.New(slog.DiscardHandler), nil, Options{PollInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	passes := make(chan struct{}, 100)
	dl.scheduled = func() { passes <- struct{}{} }
	store := webhooks.NewStore(d)
	store.OnChange(dl.Changed)

	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		dl.Run(runCtx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	pass := func(within time.Duration) bool {
		select {
		case <-passes:
			return true
		case <-time.After(within):
			return false
		}
	}
	commit := func() {
		t.Helper()
		if err := d.Write(ctx, func(tx *db.Tx) error {
			_, err := tx.Exec(`UPDATE event_retention SET pruned_through = pruned_through WHERE id = 1`)
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	if !pass(10 * time.Second) {
		t.Fatal("the scheduler made no first pass")
	}

	for i := range 10 {
		commit()
		if pass(100 * time.Millisecond) {
			t.Fatalf("commit %d woke the scheduler with no subscription", i+1)
		}
	}

	// The receiver is never dialled: no event follows the subscription's
	// cursor (the log's head at creation).
	if _, err := store.Create(ctx, api.WebhookCreate{URL: "http://127.0.0.1:9/hook", Events: []string{"plan.updated"}}); err != nil {
		t.Fatal(err)
	}
	if !pass(10 * time.Second) {
		t.Fatal("creating a subscription did not wake the scheduler")
	}
	for i := range 3 {
		commit()
		if !pass(10 * time.Second) {
			t.Fatalf("commit %d did not wake the scheduler of a subscription", i+1)
		}
	}
}
