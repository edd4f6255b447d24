package deliver

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/apierr"
	"github.com/planserver/planserver/internal/db"
	"github.com/planserver/planserver/internal/events"
	"github.com/planserver/planserver/internal/webhooks"
)

// Defaults of Options.
const (
	DefaultConnectTimeout = 5 * time.Second
	DefaultTimeout        = 15 * time.Second
	DefaultLeaseTTL       = 30 * time.Second
	// DefaultMaxResponseBytes is how much of an answer is read; the rest
	// is dropped with the connection.
	DefaultMaxResponseBytes = 64 << 10
	// ResponseLogBytes is how much of an answer the delivery log keeps.
	ResponseLogBytes = 512
	// DefaultPollInterval is how often the scheduler looks for
	// subscriptions without a worker (new ones, those another replica gave
	// up), and an idle worker re-reads the log without a wake-up (commits
	// on other replicas wake it through the broker too).
	DefaultPollInterval = time.Second
	// pageSize is how many events a worker reads at a time.
	pageSize = 100
	// MaxUnrecorded is the most deliveries a replica killed mid-run can
	// have made without recording them: a run of successes is recorded
	// together, at most a page of them. Another replica delivers those
	// again, with the same webhook-id.
	MaxUnrecorded = pageSize
)

// Options configure a Deliverer.
type Options struct {
	// AllowHosts are the private targets allowed (--webhook-allow-hosts).
	AllowHosts []string
	// PublicURL starts the console links of slack messages.
	PublicURL string
	// Schedule is the retry schedule; webhooks.Schedule when nil.
	Schedule []time.Duration
	// LeaseTTL is how long a subscription's lease lasts unrenewed: how soon
	// another replica takes over from a killed one.
	LeaseTTL time.Duration
	// ConnectTimeout bounds each connection; Timeout a whole attempt.
	ConnectTimeout, Timeout time.Duration
	// MaxResponseBytes bounds the answer bytes read.
	MaxResponseBytes int64
	// OnDial, when set, sees every address a delivery connects to, just
	// before the connection is made; an error stops it (Guard.OnDial).
	OnDial func(address string) error
	// Owner names this deliverer in leases; a random one when empty.
	Owner string
	// LogRetention bounds the delivery log (age and rows per subscription);
	// the webhooks defaults when zero.
	LogMaxAge  time.Duration
	LogMaxRows int
	// PollInterval is how often the scheduler and an idle worker look
	// without a wake-up; DefaultPollInterval when zero.
	PollInterval time.Duration
}

// Deliverer runs the deliveries of every subscription it holds the lease
// of.
type Deliverer struct {
	opt     Options
	db      *db.DB
	store   *webhooks.Store
	broker  *events.Broker
	log     *slog.Logger
	client  *http.Client
	guard   *Guard
	metrics *metrics

	// changed wakes the scheduler after a write of a subscription through
	// this replica's API (Changed).
	changed chan struct{}
	// scheduled, when set, is called after each pass of the scheduler
	// (tests).
	scheduled func()

	mu      sync.Mutex
	workers map[string]bool
}

// New returns a deliverer over d (woken by broker after commits).
func New(d *db.DB, broker *events.Broker, log *slog.Logger, reg prometheus.Registerer, opt Options) (*Deliverer, error) {
	g, err := NewGuard(opt.AllowHosts)
	if err != nil {
		return nil, err
	}
	g.OnDial = opt.OnDial
	if opt.Schedule == nil {
		opt.Schedule = webhooks.Schedule
	}
	if opt.LeaseTTL <= 0 {
		opt.LeaseTTL = DefaultLeaseTTL
	}
	if opt.ConnectTimeout <= 0 {
		opt.ConnectTimeout = DefaultConnectTimeout
	}
	if opt.Timeout <= 0 {
		opt.Timeout = DefaultTimeout
	}
	if opt.MaxResponseBytes <= 0 {
		opt.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if opt.LogMaxAge == 0 {
		opt.LogMaxAge = webhooks.DefaultLogAge
	}
	if opt.LogMaxRows == 0 {
		opt.LogMaxRows = webhooks.DefaultLogRows
	}
	if opt.PollInterval <= 0 {
		opt.PollInterval = DefaultPollInterval
	}
	if opt.Owner == "" {
		b := make([]byte, 6)
		_, _ = rand.Read(b)
		host, _ := os.Hostname()
		opt.Owner = fmt.Sprintf("%s/%d/%s", host, os.Getpid(), hex.EncodeToString(b))
	}
	transport := &http.Transport{
		Proxy:                 nil, // never through an environment's proxy: the guard judges the target itself
		DialContext:           g.DialContext(opt.ConnectTimeout),
		TLSHandshakeTimeout:   opt.ConnectTimeout,
		ResponseHeaderTimeout: opt.Timeout,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       90 * time.Second,
	}
	return &Deliverer{
		opt: opt, db: d, store: webhooks.NewStore(d), broker: broker, log: log, guard: g,
		client: &http.Client{
			Transport: transport,
			Timeout:   opt.Timeout,
			// Redirects are not followed: a 3xx is a failed attempt, so a
			// target cannot bounce a delivery to an address of its choice.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		metrics: newMetrics(reg),
		changed: make(chan struct{}, 1),
		workers: map[string]bool{},
	}, nil
}

// Changed tells the scheduler that a subscription was written (created,
// updated, rotated, a redelivery asked), so that it looks at once: while
// there are none, commits do not wake it (Run).
func (d *Deliverer) Changed() {
	select {
	case d.changed <- struct{}{}:
	default:
	}
}

// Run delivers until ctx is done: it starts a worker for every
// subscription that has none, at once and then whenever a commit, a
// change (Changed) or the poll interval comes, and prunes the delivery log
// hourly. While no subscription exists, commits do not wake it: each pass
// reads the subscriptions and the log's head, which every commit of every
// replica would otherwise cost on a service that delivers nothing. A
// subscription created through this replica wakes it (Changed); one
// created through another replica, whose scheduler starts its worker, is
// seen here within the poll interval.
func (d *Deliverer) Run(ctx context.Context) {
	wake, unsubscribe := d.broker.Subscribe()
	defer unsubscribe()
	tick := time.NewTicker(d.opt.PollInterval)
	defer tick.Stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	lastPrune := time.Time{}
	for {
		subs, err := d.store.All(ctx)
		if err != nil && ctx.Err() == nil {
			d.log.Error("webhooks: list subscriptions", slog.Any("error", err))
		}
		head, _ := events.Head(ctx, d.db)
		live := map[string]bool{}
		for _, s := range subs {
			live[s.ID] = true
			d.metrics.lag.WithLabelValues(s.ID).Set(float64(max(head-s.Cursor, 0)))
			if d.startable(s) {
				wg.Add(1)
				go func(id string) {
					defer wg.Done()
					d.work(ctx, id)
				}(s.ID)
			}
		}
		d.metrics.forget(live)
		if time.Since(lastPrune) > time.Hour {
			lastPrune = time.Now()
			if _, err := d.store.Prune(ctx, d.db.Now(), d.opt.LogMaxAge, d.opt.LogMaxRows); err != nil && ctx.Err() == nil {
				d.log.Error("webhooks: prune the delivery log", slog.Any("error", err))
			}
		}
		if d.scheduled != nil {
			d.scheduled()
		}
		commits := wake
		if len(subs) == 0 && err == nil {
			commits = nil
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-commits:
		case <-d.changed:
		}
	}
}

// startable reports whether s needs a worker here and marks it taken: it
// has none here, and no other owner holds an unexpired lease.
func (d *Deliverer) startable(s *webhooks.Sub) bool {
	if s.LeaseOwner != "" && s.LeaseOwner != d.opt.Owner && s.LeaseUntil > db.FormatTime(d.db.Now()) {
		return false
	}
	if s.State != api.WebhookActive && s.LeaseOwner == "" {
		// Resting: a paused or failing subscription needs a worker only
		// for a redelivery, which the worker looks for; start one lazily.
		if m, err := d.store.NextManual(context.Background(), s.ID); err != nil || m == nil {
			return false
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.workers[s.ID] {
		return false
	}
	d.workers[s.ID] = true
	return true
}

// work delivers subscription id while this deliverer holds its lease.
func (d *Deliverer) work(ctx context.Context, id string) {
	defer func() {
		d.mu.Lock()
		delete(d.workers, id)
		d.mu.Unlock()
	}()
	_, ok, err := d.store.Acquire(ctx, id, d.opt.Owner, d.opt.LeaseTTL)
	if err != nil || !ok {
		return
	}
	defer func() {
		// A clean stop hands the subscription over at once; a killed
		// process's lease runs out instead.
		rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = d.store.Release(rctx, id, d.opt.Owner)
	}()
	wake, unsubscribe := d.broker.Subscribe()
	defer unsubscribe()
	renewed := time.Now()
	for ctx.Err() == nil {
		wait, err := d.step(ctx, id)
		if err != nil {
			if errors.Is(err, webhooks.ErrLostLease) || apierr.CodeOf(err) == apierr.NotFound || ctx.Err() != nil {
				return
			}
			d.log.Error("webhooks: deliver", slog.String("webhook", id), slog.Any("error", err))
			wait = d.opt.PollInterval
		}
		if wait < 0 {
			return // nothing more to do here (paused or failing)
		}
		if wait == 0 {
			renewed = time.Now()
			continue
		}
		if time.Since(renewed) > d.opt.LeaseTTL/3 {
			if err := d.store.Renew(ctx, id, d.opt.Owner, d.opt.LeaseTTL); err != nil {
				return
			}
			renewed = time.Now()
		}
		timer := time.NewTimer(min(wait, d.opt.LeaseTTL/3))
		select {
		case <-ctx.Done():
		case <-wake:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// step does the next piece of work of subscription id: a redelivery, or
// the next event after its cursor. It returns how long to wait before the
// next step (0: go on at once; negative: stop, the subscription rests).
func (d *Deliverer) step(ctx context.Context, id string) (time.Duration, error) {
	s, err := d.store.Load(ctx, id)
	if err != nil {
		return 0, err
	}
	if s.LeaseOwner != d.opt.Owner {
		return 0, webhooks.ErrLostLease
	}
	if m, err := d.store.NextManual(ctx, id); err != nil {
		return 0, err
	} else if m != nil {
		return 0, d.redeliver(ctx, s, m)
	}
	if s.State != api.WebhookActive {
		return -1, nil
	}
	now := d.db.Now()
	if s.NextAttemptAt != nil {
		if due, err := time.Parse(db.TimeFormat, *s.NextAttemptAt); err == nil && due.After(now) {
			return due.Sub(now), nil
		}
	}
	q := events.Query{After: s.Cursor, Limit: pageSize, Types: webhooks.LogTypes(s.Events), Plan: s.Plan}
	if s.Session != "" {
		q.SessionID, q.SessionPath = s.Session, s.SessionPath
	}
	page, err := events.Read(ctx, d.db, q)
	if apierr.CodeOf(err) == apierr.CursorExpired {
		// The log was pruned past the cursor: the events in between are
		// gone and cannot be delivered. Say so rather than skip them.
		reason := fmt.Sprintf("the event log was pruned past this subscription's cursor (%d) before its events were delivered "+
			"(--event-retention, --event-max-rows); the events in between are lost to it. PATCH state active to resume from the oldest retained event", s.Cursor)
		d.log.Warn("webhooks: cursor behind retention", slog.String("webhook", id), slog.Int64("cursor", s.Cursor))
		return -1, d.store.MarkFailing(ctx, id, d.opt.Owner, d.opt.LeaseTTL, reason)
	}
	if err != nil {
		return 0, err
	}
	if len(page.Events) > 0 {
		// The subscription is read again after its events: an event
		// committed after a rotation of the secret (or a change of URL
		// or format) must go out with the new one, and the first read
		// may have come before that change and the event after it.
		if s, err = d.store.Load(ctx, id); err != nil {
			return 0, err
		}
		if s.LeaseOwner != d.opt.Owner {
			return 0, webhooks.ErrLostLease
		}
	}
	// A run of successes is recorded together (Store.Delivered): at most
	// a page, or a third of the lease, whichever comes first.
	var (
		run      []webhooks.Attempt
		runStart = time.Now()
		attempts = s.Attempts
	)
	flush := func(cursor int64) error {
		if len(run) == 0 && cursor <= s.Cursor {
			return nil
		}
		err := d.store.Delivered(context.WithoutCancel(ctx), id, d.opt.Owner, d.opt.LeaseTTL, run, cursor)
		run, runStart, s.Cursor = nil, time.Now(), max(s.Cursor, cursor)
		return err
	}
	for _, e := range page.Events {
		typ, ok := webhooks.Classify(s.Events, e)
		if !ok {
			continue
		}
		if ctx.Err() != nil {
			return 0, flush(e.Seq - 1)
		}
		msg, err := webhooks.Build(s.ID, s.Format, typ, d.opt.PublicURL, e)
		if err != nil {
			return 0, err
		}
		a := d.attempt(ctx, s, msg)
		a.Seq, a.MessageID, a.Type, a.Number = e.Seq, msg.ID, typ, attempts+1
		if a.OK {
			if ts, err := time.Parse(time.RFC3339Nano, e.Time); err == nil {
				d.metrics.delay.WithLabelValues(s.ID).Observe(time.Since(ts).Seconds())
			}
			run, attempts = append(run, a), 0
			if time.Since(runStart) > d.opt.LeaseTTL/3 {
				if err := flush(e.Seq); err != nil {
					return 0, err
				}
			}
			continue
		}
		// A failure: record the run before it, then the failure and its retry.
		if err := flush(e.Seq - 1); err != nil {
			return 0, err
		}
		if ctx.Err() != nil {
			return 0, ctx.Err() // cut short by shutdown: not the target's failure
		}
		wait := time.Duration(-1)
		if delay, ok := webhooks.Backoff(d.opt.Schedule, a.Number); ok {
			a.NextRetry, wait = d.db.Now().Add(delay), delay
		} else {
			d.log.Warn("webhooks: retries used up, subscription failing", slog.String("webhook", s.ID), slog.Int64("seq", e.Seq))
		}
		return wait, d.store.Record(context.WithoutCancel(ctx), s.ID, d.opt.Owner, d.opt.LeaseTTL, a)
	}
	if page.Next > s.Cursor {
		return 0, flush(page.Next)
	}
	if len(run) > 0 {
		return 0, flush(run[len(run)-1].Seq)
	}
	return d.opt.PollInterval, nil
}

// redeliver sends a queued redelivery once, whatever its outcome.
func (d *Deliverer) redeliver(ctx context.Context, s *webhooks.Sub, m *api.Delivery) error {
	page, err := events.Read(ctx, d.db, events.Query{After: m.EventSeq - 1, Limit: 1})
	a := webhooks.Attempt{Manual: m.ID}
	switch {
	case apierr.CodeOf(err) == apierr.CursorExpired || (err == nil && (len(page.Events) == 0 || page.Events[0].Seq != m.EventSeq)):
		a.Error = fmt.Sprintf("event %d is no longer in the event log (pruned by retention)", m.EventSeq)
	case err != nil:
		return err
	default:
		msg, err := webhooks.Build(s.ID, s.Format, m.Type, d.opt.PublicURL, page.Events[0])
		if err != nil {
			return err
		}
		a = d.attempt(ctx, s, msg)
		a.Manual = m.ID
	}
	return d.store.Record(context.WithoutCancel(ctx), s.ID, d.opt.Owner, d.opt.LeaseTTL, a)
}

// attempt POSTs msg to s's target and reports the outcome.
func (d *Deliverer) attempt(ctx context.Context, s *webhooks.Sub, msg webhooks.Message) webhooks.Attempt {
	var a webhooks.Attempt
	// The timestamp is the wall clock's: receivers judge it against theirs.
	now := time.Now()
	ts := now.Unix()
	sig, err := webhooks.Sign(s.Secrets(now), msg.ID, ts, msg.Body)
	if err != nil {
		a.Error = err.Error()
		return a
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL, bytes.NewReader(msg.Body))
	if err != nil {
		a.Error = "bad target URL: " + err.Error()
		return a
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "planserver-webhooks")
	req.Header.Set("webhook-id", msg.ID)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
	req.Header.Set("webhook-signature", sig)
	start := time.Now()
	resp, err := d.client.Do(req)
	if err != nil {
		a.Latency = time.Since(start)
		a.Error = describe(err)
		d.metrics.deliveries.WithLabelValues(s.ID, "failure").Inc()
		return a
	}
	head := make([]byte, ResponseLogBytes)
	n, _ := io.ReadFull(resp.Body, head)
	// Drain what is left up to the cap, so the connection can be reused;
	// a larger answer is cut off with its connection.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, d.opt.MaxResponseBytes-int64(n)))
	resp.Body.Close()
	a.Latency = time.Since(start)
	a.StatusCode = resp.StatusCode
	a.Response = validText(head[:n])
	a.OK = resp.StatusCode >= 200 && resp.StatusCode < 300
	if !a.OK {
		a.Error = "target answered " + resp.Status
		if resp.StatusCode >= 300 && resp.StatusCode < 400 {
			a.Error += " (redirects are not followed; point the subscription at the final URL)"
		}
		d.metrics.deliveries.WithLabelValues(s.ID, "failure").Inc()
	} else {
		d.metrics.deliveries.WithLabelValues(s.ID, "success").Inc()
	}
	return a
}

// describe is an attempt's error in the delivery log.
func describe(err error) string {
	msg := err.Error()
	if errors.Is(err, ErrRefused) {
		return "target refused: " + msg
	}
	return msg
}

// validText returns b as valid UTF-8 text for the log.
func validText(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return string(bytes.ToValidUTF8(b, []byte("\uFFFD")))
}

// metrics are the deliverer's Prometheus series, per subscription.
type metrics struct {
	deliveries *prometheus.CounterVec
	lag        *prometheus.GaugeVec
	delay      *prometheus.HistogramVec
	mu         sync.Mutex
	known      map[string]bool
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "planserver_webhook_deliveries_total",
			Help: "Webhook delivery attempts by subscription and outcome (success: a 2xx; failure: anything else).",
		}, []string{"webhook", "outcome"}),
		lag: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "planserver_webhook_lag_events",
			Help: "Events appended after a subscription's cursor (delivered or not yet judged), by subscription.",
		}, []string{"webhook"}),
		delay: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "planserver_webhook_delivery_lag_seconds",
			Help:    "Time from an event's commit to its successful delivery, by subscription.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 3600},
		}, []string{"webhook"}),
		known: map[string]bool{},
	}
	if reg != nil {
		reg.MustRegister(m.deliveries, m.lag, m.delay)
	}
	return m
}

// forget drops the series of subscriptions that are gone.
func (m *metrics) forget(live map[string]bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for id := range m.known {
		if !live[id] {
			m.deliveries.DeletePartialMatch(prometheus.Labels{"webhook": id})
			m.lag.DeleteLabelValues(id)
			m.delay.DeleteLabelValues(id)
			delete(m.known, id)
		}
	}
	for id := range live {
		m.known[id] = true
	}
}
