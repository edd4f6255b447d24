// Package app is planserver's composition root: given an open database, it
// builds the domain stores (sessions, plans, tokens and sign-ins,
// webhooks, gates), the access check, the event tail and head cache, the
// webhook deliverer, the MCP endpoint and the gate, the host-hook service,
// and the HTTP server that serves them, and it owns the background jobs
// (the pruner, the webhook deliverer, the lease sweeper). It opens
// nothing itself: serve opens the database, and the tests' servers
// (internal/apitest) build through it too, so they run what serve runs.
package app

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/planserver/planserver/internal/auth"
	"github.com/planserver/planserver/internal/events"
	"github.com/planserver/planserver/internal/gates"
	"github.com/planserver/planserver/internal/gates/proxy"
	"github.com/planserver/planserver/internal/hosthook"
	"github.com/planserver/planserver/internal/hosthookcmd"
	"github.com/planserver/planserver/internal/hosthookservice"
	planhttp "github.com/planserver/planserver/internal/http"
	"github.com/planserver/planserver/internal/http/response"
	"github.com/planserver/planserver/internal/mcp"
	"github.com/planserver/planserver/internal/plans"
	"github.com/planserver/planserver/internal/sessions"
	"github.com/planserver/planserver/internal/webhooks"
	"github.com/planserver/planserver/internal/webhooks/deliver"
)

// Config is everything planserver is built from: the HTTP layer's
// settings (planhttp.Config, embedded, so that its fields read as the
// app's: DB, Logger, the body limits, access, CORS, streams, sign-in), and
// the domain's below.
type Config struct {
	planhttp.Config
	// PlanModeAllow is the plan-mode allowlist: tools offered in plan mode
	// whatever their annotations. Nil means sessions.DefaultPlanModeAllow;
	// empty means none.
	PlanModeAllow []string
	// UpstreamTimeout bounds every call to a gate's tool server
	// (--upstream-timeout); 0 means proxy.DefaultUpstreamTimeout.
	UpstreamTimeout time.Duration
	// PlanHistory is how many revisions of a shared plan stay readable, the
	// current one included (--plan-history); 100 when zero.
	PlanHistory int
	// Now, when set, replaces the database's clock, which every
	// transaction reads (timestamps, claim leases, the ready set, token
	// expiry). Tests move it forward instead of sleeping.
	Now func() time.Time
	// EventRetention bounds the event log (PruneEvents, RunPruner); the
	// zero value keeps every event.
	EventRetention events.Retention
	// Hooks is how host hooks (POST /v1/hooks/{host}) judge shell
	// commands and name planserver's own MCP server.
	Hooks HookConfig
	// Webhooks configures the webhook deliverer (RunWebhooks).
	Webhooks deliver.Options
	// LeaseSweepInterval is how often RunLeaseSweeper looks for lapsed
	// step leases; plans.SweepInterval when 0.
	LeaseSweepInterval time.Duration
}

// HookConfig is how the host-hook service judges shell commands.
type HookConfig struct {
	// Shell judges shell commands in plan mode: the sandbox every
	// rewritable command runs in, the early denial of certain writers, the
	// allowlist where no sandbox runs (hosthookcmd.ShellPolicy). A nil
	// Writes or Strict is hosthookcmd.ShellPolicy's with the default
	// table.
	Shell hosthook.Policy
	// OwnServers are the names hosts give planserver's own MCP server
	// (mcp__<name>__tool); "planserver" when empty.
	OwnServers []string
}

// App is planserver built: the HTTP server and the jobs that run beside
// it.
type App struct {
	// HTTP is the API server (an http.Handler).
	HTTP *planhttp.Server

	cfg       Config
	log       *slog.Logger
	sessions  *sessions.Store
	plans     *plans.Store
	deliverer *deliver.Deliverer
	metrics   *events.Metrics
}

// New builds planserver on cfg.DB, which the caller opened and migrated
// and closes after the jobs have stopped.
func New(cfg Config) *App {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.MaxPlanBytes <= 0 {
		cfg.MaxPlanBytes = planhttp.DefaultMaxPlanBytes
	}
	if cfg.UpstreamTimeout <= 0 {
		cfg.UpstreamTimeout = proxy.DefaultUpstreamTimeout
	}
	if cfg.Now != nil {
		cfg.DB.SetClock(cfg.Now)
	}
	reg := cfg.Registry
	if reg == nil {
		reg = prometheus.NewRegistry()
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	a := &App{cfg: cfg, log: cfg.Logger}

	a.sessions = sessions.NewStore(cfg.DB, sessions.Config{History: cfg.PlanHistory})
	gate := sessions.NewGate(cfg.PlanModeAllow)
	access := auth.NewAuthorizer(a.sessions)
	// A plan body that starts, completes or claims a step executes it
	// exactly as the step routes do, so it takes the same decision.
	a.plans = plans.NewStore(cfg.DB, plans.Config{History: cfg.PlanHistory, MaxContentBytes: cfg.MaxPlanBytes, Access: access})
	tokens := auth.NewStore(cfg.DB)
	signIns := auth.SignInConfig{}
	if o := cfg.OIDC; o != nil {
		signIns = auth.SignInConfig{Timeouts: auth.Timeouts{Idle: o.Settings().Idle, MaxAge: o.Settings().MaxAge},
			Attempts: o.Settings().Attempts, Rules: o.Settings().Roles}
	}
	registry := gates.NewStore(cfg.DB)

	var tail *events.Tail
	a.metrics = events.NewMetrics(reg, func() int { return tail.Subscribers() })
	tail = events.NewTail(cfg.DB, events.TailOptions{OnRead: a.metrics.Reads.WithLabelValues("tail").Inc})
	cfg.DB.OnCommit(tail.Notify)
	subscriptions := webhooks.NewStore(cfg.DB)
	a.deliverer = newDeliverer(cfg, reg)
	subscriptions.OnChange(a.deliverer.Changed)

	ownTools := map[string]bool{}
	for _, op := range mcp.Operations {
		ownTools[op.Name] = op.ReadOnly
	}
	shell := cfg.Hooks.Shell
	if shell.Writes == nil || shell.Strict == nil {
		def := hosthookcmd.ShellPolicy(nil, shell.Sandbox)
		if shell.Writes == nil {
			shell.Writes = def.Writes
		}
		if shell.Strict == nil {
			shell.Strict = def.Strict
		}
	}
	hostHooks := hosthookservice.New(hosthookservice.Config{Sessions: a.sessions, Gate: gate, Access: access, Gates: registry,
		Shell: shell, OwnServers: cfg.Hooks.OwnServers, OwnTools: ownTools, MaxPlanBytes: cfg.MaxPlanBytes,
		Registry: reg, Logger: cfg.Logger})

	backend := mcp.Backend{
		Sessions:             a.sessions,
		Plans:                a.plans,
		Gate:                 gate,
		Access:               access,
		ReviewURL:            planhttp.ReviewURL,
		Problem:              response.Problem,
		MaxPlanBytes:         cfg.MaxPlanBytes,
		UpstreamTimeout:      cfg.UpstreamTimeout,
		RequirePreconditions: cfg.RequirePreconditions,
		Version:              cfg.Version,
		Logger:               cfg.Logger,
	}
	endpoint := mcp.New(backend)
	upstreams := proxy.NewUpstreams(backend, registry)
	// Say at start which tool servers the gate fronts, and which of their
	// tools the operator declared read-only: what plan mode lets through
	// beyond the annotations.
	if list, err := registry.List(context.Background()); err == nil {
		for _, g := range list {
			cfg.Logger.Info("gate registered", "name", g.Name, "url", g.URL, "path", "/mcp/gate/"+g.Name,
				"extra_read_only_tools", strings.Join(g.ReadOnlyTools, ","))
		}
	}

	httpCfg := cfg.Config
	httpCfg.Registry = reg
	a.HTTP = planhttp.New(httpCfg, planhttp.Deps{
		Sessions:     a.sessions,
		Gate:         gate,
		Access:       access,
		Tokens:       tokens,
		SignIns:      tokens.SignIns(signIns),
		Plans:        a.plans,
		Webhooks:     subscriptions,
		Tail:         tail,
		Head:         events.NewHeadCache(cfg.DB),
		EventMetrics: a.metrics,
		Gates:        registry,
		MCP:          endpoint,
		GateProxy:    upstreams,
		Hooks:        hostHooks,
	})
	return a
}

// newDeliverer builds the deliverer of cfg's webhook options.
func newDeliverer(cfg Config, reg prometheus.Registerer) *deliver.Deliverer {
	// The deliverer has a broker of its own: its wake-ups are not event
	// streams, and the streams' gauge (planserver_event_subscribers) must
	// count only those.
	wake := events.NewBroker()
	cfg.DB.OnCommit(wake.Notify)
	d, err := deliver.New(cfg.DB, wake, cfg.Logger, reg, cfg.Webhooks)
	if err != nil {
		// The options were validated by the caller (serve checks
		// --webhook-allow-hosts); a bad list here is a programming error.
		cfg.Logger.Error("webhooks: bad options", slog.Any("error", err))
		d, _ = deliver.New(cfg.DB, wake, cfg.Logger, nil, deliver.Options{})
	}
	return d
}
