package app

import (
	"context"
	"log/slog"
	"time"

	"github.com/planserver/planserver/internal/events"
	"github.com/planserver/planserver/internal/plans"
)

// DefaultPruneInterval is how often RunPruner applies the retention.
const DefaultPruneInterval = time.Minute

// PruneEvents applies the configured retention as of now and returns how
// many events it deleted.
func (a *App) PruneEvents(ctx context.Context, now time.Time) (int64, error) {
	n, err := events.Prune(ctx, a.cfg.DB, a.cfg.EventRetention, now)
	a.metrics.Pruned.Add(float64(n))
	return n, err
}

// RunPruner prunes the event log (when a retention is configured) and the
// decisions about host tool calls whose runs were never reported
// (sessions.HookDecisionLifetime) at once and then every interval, until
// ctx is done. Failures are logged and retried at the next tick.
func (a *App) RunPruner(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if a.cfg.EventRetention != (events.Retention{}) {
			n, err := a.PruneEvents(ctx, time.Now())
			switch {
			case err != nil && ctx.Err() == nil:
				a.log.Error("prune events", slog.Any("error", err))
			case n > 0:
				a.log.Info("pruned events", slog.Int64("count", n))
			}
		}
		if _, err := a.PruneHookDecisions(ctx, time.Now()); err != nil && ctx.Err() == nil {
			a.log.Error("prune hook decisions", slog.Any("error", err))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// PruneHookDecisions deletes the decisions about host tool calls older
// than sessions.HookDecisionLifetime as of now, and returns how many.
func (a *App) PruneHookDecisions(ctx context.Context, now time.Time) (int64, error) {
	return a.sessions.PruneHookDecisions(ctx, now)
}

// RunWebhooks delivers the webhook subscriptions until ctx is done (serve
// runs it beside the server; so does every replica, and the leases decide
// which one delivers each subscription).
func (a *App) RunWebhooks(ctx context.Context) {
	a.deliverer.Run(ctx)
}

// SweepLeases records a step.claim_expired event for each lease that has
// run out and was not reported yet, and returns how many it recorded
// (plans.Store.SweepLeases); RunLeaseSweeper calls it every interval.
func (a *App) SweepLeases(ctx context.Context) (int, error) { return a.plans.SweepLeases(ctx) }

// RunLeaseSweeper records a step.claim_expired event for every lease that
// runs out (plans.Store.SweepLeases), at once and then every
// Config.LeaseSweepInterval, until ctx is done. serve runs it beside the
// server, as does every replica: the sweep's write decides which one
// reports each lease. Failures are logged and retried at the next tick.
func (a *App) RunLeaseSweeper(ctx context.Context) {
	interval := a.cfg.LeaseSweepInterval
	if interval <= 0 {
		interval = plans.SweepInterval
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		n, err := a.SweepLeases(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			a.log.Error("sweep step leases", slog.Any("error", err))
		case n > 0:
			a.log.Info("step leases ran out", slog.Int("count", n))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
