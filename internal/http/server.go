// Package http serves planserver's HTTP API: the chi router with every route
// in routes(), middleware, JSON and problem+json helpers, preconditions, and
// one file of handlers per resource. It never writes SQL: handlers decode,
// call a domain store, and respond. It builds no store and runs no job:
// the composition root (internal/app) hands it what it serves (Deps).
package http

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/apierr"
	"github.com/planserver/planserver/internal/auth"
	"github.com/planserver/planserver/internal/db"
	"github.com/planserver/planserver/internal/events"
	"github.com/planserver/planserver/internal/hosthookservice"
	"github.com/planserver/planserver/internal/http/request"
	"github.com/planserver/planserver/internal/http/response"
	"github.com/planserver/planserver/internal/http/signin"
	"github.com/planserver/planserver/internal/plans"
	"github.com/planserver/planserver/internal/sessions"
	"github.com/planserver/planserver/internal/tracing"
	"github.com/planserver/planserver/internal/webhooks"
)

// Config is the HTTP layer's own settings; what it serves comes in Deps,
// built by the composition root (internal/app).
type Config struct {
	// DB is read directly for what is the transport's own: readiness, the
	// event log a stream reads, the answers cache, the process metrics.
	DB     *db.DB
	Logger *slog.Logger
	// MaxBodyBytes bounds JSON request bodies (413 above).
	MaxBodyBytes int64
	// MaxPlanBytes bounds the Markdown content of a shared or session plan
	// (413 above). JSON bodies carrying a plan may be this much larger than
	// MaxBodyBytes, since escaping can double the content.
	MaxPlanBytes int64
	// RequirePreconditions makes updates and deletes without If-Match (or
	// last_known_revision) fail with 428.
	RequirePreconditions bool
	// Registry collects the Prometheus metrics served at /metrics; a bare
	// one is made when nil (the composition root always gives one).
	Registry *prometheus.Registry
	// Version is reported by /healthz.
	Version string
	// Auth is AuthNone (the default: every caller is an anonymous admin)
	// or AuthToken (every /v1 request carries a bearer token).
	Auth string
	// RateLimit is the requests a second each token may make with
	// AuthToken (failed authentications count per client IP), in bursts of
	// up to RateBurst; 0 turns rate limiting off. AuthNone is never limited.
	RateLimit float64
	RateBurst int
	// CORSOrigins are the browser origins allowed to call the API; none
	// turns CORS off.
	CORSOrigins []string
	// AllowedHosts are Host names (optionally with a port) the server
	// answers to besides loopback ones; see hostGuard in origin.go.
	AllowedHosts []string
	// SSEHeartbeat is the interval of the comment lines an idle event
	// stream gets; DefaultSSEHeartbeat when 0.
	SSEHeartbeat time.Duration
	// SSEWriteTimeout bounds each write to an event stream: a client that
	// does not take the bytes in time is dropped. DefaultSSEWriteTimeout
	// when 0.
	SSEWriteTimeout time.Duration
	// MaxEventStreams bounds the event streams open at once (503 above,
	// see limits.go); 0 sets no bound.
	MaxEventStreams int
	// OIDC turns sign-in on (package signin; with AuthToken only): people sign
	// in at /auth/login and reach /v1 with a cookie. Nil: tokens only.
	OIDC *signin.OIDC
}

// Deps are what the handlers serve, built by the composition root: the
// domain stores, the access check, the event tail, and the other
// endpoints as small interfaces, so that this package builds none of them
// and imports no other transport.
type Deps struct {
	Sessions *sessions.Store
	// Gate is the plan-mode tool policy (the --plan-mode-allow list).
	Gate   sessions.Gate
	Access *auth.Authorizer
	Tokens *auth.Store
	// SignIns keeps the sign-ins of Config.OIDC (Tokens.SignIns with the
	// provider's settings).
	SignIns  *auth.SignIns
	Plans    *plans.Store
	Webhooks *webhooks.Store
	// Tail wakes event streams after every commit, and serves the
	// caught-up ones from one read of the log; Head is the log's head for
	// X-Event-Seq; EventMetrics count what the feed sends and reads.
	Tail         *events.Tail
	Head         *events.HeadCache
	EventMetrics *events.Metrics
	// Gates is the gate registry of /v1/gates.
	Gates GateRegistry
	// MCP is the endpoint at POST /mcp, GateProxy the gate of registered
	// tool servers at POST /mcp/gate/{name} (internal/mcp).
	MCP       http.Handler
	GateProxy GateProxy
	// Hooks answers host hooks' calls (internal/hosthookservice).
	Hooks HostHooks
}

// GateRegistry is the gate registry the /v1/gates routes serve
// (gates.Store).
type GateRegistry interface {
	Put(ctx context.Context, name string, in api.GateWrite) (*api.Gate, bool, error)
	Get(ctx context.Context, name string) (*api.Gate, error)
	List(ctx context.Context) ([]api.Gate, error)
	Delete(ctx context.Context, name string) error
}

// GateProxy serves the gate called name (proxy.Upstreams, internal/gates/proxy).
type GateProxy interface {
	ServeGate(w http.ResponseWriter, r *http.Request, name string)
}

// HostHooks answers one host hook's call (hosthookservice.Service).
type HostHooks interface {
	Answer(ctx context.Context, q hosthookservice.Request) hosthookservice.Answer
}

// Server is the planserver HTTP API.
type Server struct {
	cfg      Config
	log      *slog.Logger
	metrics  *httpMetrics
	registry *prometheus.Registry
	router   chi.Router
	// schemaVersion is the schema this binary expects, for /readyz.
	schemaVersion int64

	sessions *sessions.Store
	gate     sessions.Gate
	// authz is the one access check (auth.Authorizer), shared with the
	// plans store and the MCP endpoint.
	authz *auth.Authorizer
	// hooks answers host hooks' calls (hooks.go).
	hooks  HostHooks
	tokens *auth.Store
	// signIns keeps the sign-ins of OIDC (nil oidc: none are made).
	signIns *auth.SignIns
	oidc    *signin.OIDC
	limiter *limiter
	plans   *plans.Store
	// gates are the tool servers of /mcp/gate/{name} (mcp.go), served by
	// mcp and gateProxy.
	gates     GateRegistry
	mcp       http.Handler
	gateProxy GateProxy
	// webhooks are the webhook subscriptions.
	webhooks *webhooks.Store

	// tail wakes event streams after every commit, and serves the caught-up
	// ones from one read of the log (events.Tail).
	tail *events.Tail
	// head is the event log's head for X-Event-Seq.
	head *events.HeadCache
	// answers keeps the answers of GET a session and GET a plan between
	// commits (answers.go).
	answers      *response.Cache
	eventMetrics *events.Metrics
	streams      *streamGate
	// shutdown is closed by Shutdown to end every event stream.
	shutdown     chan struct{}
	shutdownOnce sync.Once
}

// DefaultMaxBodyBytes bounds JSON bodies when Config names no limit.
const DefaultMaxBodyBytes = 1 << 20

// DefaultMaxPlanBytes bounds plan content when Config names no limit.
const DefaultMaxPlanBytes = 1 << 20

// New returns the API server for cfg, serving deps.
func New(cfg Config, deps Deps) *Server {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.MaxPlanBytes <= 0 {
		cfg.MaxPlanBytes = DefaultMaxPlanBytes
	}
	if cfg.SSEHeartbeat <= 0 {
		cfg.SSEHeartbeat = DefaultSSEHeartbeat
	}
	if cfg.SSEWriteTimeout <= 0 {
		cfg.SSEWriteTimeout = DefaultSSEWriteTimeout
	}
	reg := cfg.Registry
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	s := &Server{
		cfg:          cfg,
		log:          cfg.Logger,
		metrics:      newHTTPMetrics(reg),
		registry:     reg,
		sessions:     deps.Sessions,
		gate:         deps.Gate,
		authz:        deps.Access,
		hooks:        deps.Hooks,
		tokens:       deps.Tokens,
		signIns:      deps.SignIns,
		plans:        deps.Plans,
		gates:        deps.Gates,
		mcp:          deps.MCP,
		gateProxy:    deps.GateProxy,
		webhooks:     deps.Webhooks,
		tail:         deps.Tail,
		head:         deps.Head,
		eventMetrics: deps.EventMetrics,
		limiter:      newLimiter(cfg.RateLimit, cfg.RateBurst),
		shutdown:     make(chan struct{}),
	}
	s.oidc = cfg.OIDC
	s.streams = newStreamGate(cfg.MaxEventStreams, reg)
	registerProcessMetrics(reg, cfg.DB, cfg.Version)
	s.answers = response.NewCache(cfg.DB)
	s.schemaVersion = db.KnownVersion()
	s.router = s.routes()
	return s
}

// ServeHTTP makes Server an http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.router.ServeHTTP(w, r) }

// routes lists the whole API in one place.
func (s *Server) routes() chi.Router {
	r := chi.NewRouter()
	if tracing.Enabled() {
		// Outermost, so that the request log line carries the trace id.
		r.Use(traceRequests)
	}
	r.Use(request.AssignID, s.observe, securityHeaders, conflictingFraming)
	r.Use(s.hostGuard, s.originGuard) // origin.go: no driving the server from another site's page
	if len(s.cfg.CORSOrigins) > 0 {
		// Before routing and authentication: a preflight carries no token.
		r.Use(corsHandler(s.cfg.CORSOrigins))
	}
	r.Use(middleware.GetHead)
	r.NotFound(s.notFound)
	r.MethodNotAllowed(s.methodNotAllowed)

	r.Get("/healthz", s.healthz)
	r.Get("/readyz", s.h(s.readyz))
	r.Method(http.MethodGet, "/metrics", promhttp.HandlerFor(s.registry, promhttp.HandlerOpts{}))
	r.Get("/openapi.yaml", serveOpenAPI)
	s.uiRoutes(r)     // ui.go: the review console at /ui/
	s.mcpRoutes(r)    // mcp.go: the MCP endpoint at /mcp
	s.signInRoutes(r) // signin.go: /auth/login, /auth/callback, /auth/logout

	// Every /v1 route needs a rule in auth.Routes; guard enforces it.
	r.Route("/v1", func(r chi.Router) {
		r.Use(s.guard)
		r.Use(s.withEventHead)
		r.Get("/events", s.h(s.listEvents))
		r.Post("/sessions", s.h(s.createSession))
		r.Get("/sessions", s.h(s.listSessions))
		r.Get("/sessions/{id}", s.h(s.getSession))
		r.Patch("/sessions/{id}", s.h(s.patchSession))
		r.Delete("/sessions/{id}", s.h(s.deleteSession))
		r.Patch("/sessions/{id}/mode", s.h(s.setSessionMode))
		r.Put("/sessions/{id}/plan", s.h(s.putSessionPlan))
		r.Get("/sessions/{id}/plan", s.h(s.getSessionPlan))
		r.Get("/sessions/{id}/plan/revisions", s.h(s.listSessionPlanRevisions))
		r.Get("/sessions/{id}/plan/revisions/{revision}", s.h(s.getSessionPlanRevision))
		r.Get("/sessions/{id}/plan/diff", s.h(s.diffSessionPlan))
		r.Get("/sessions/{id}/reviews", s.h(s.reviewHistory))
		r.Post("/sessions/{id}/plan/review", s.h(reviewAction(s, s.sessions.RequestReview)))
		r.Post("/sessions/{id}/plan/approve", s.h(s.approvePlan))
		r.Delete("/sessions/{id}/scope", s.h(s.liftScope))
		r.Post("/sessions/{id}/plan/reject", s.h(reviewAction(s, s.sessions.Reject)))
		r.Post("/sessions/{id}/tools/filter", s.h(s.filterTools))
		r.Post("/sessions/{id}/tools/check", s.h(s.checkTool))
		r.Put("/sessions/{id}/todos", s.h(s.putTodos))
		r.Get("/sessions/{id}/todos", s.h(s.getTodos))

		r.Get("/plans", s.h(s.listPlans))
		r.Put("/plans/{name}", s.h(s.putPlan))
		r.Get("/plans/{name}", s.h(s.getPlan))
		r.Delete("/plans/{name}", s.h(s.deletePlan))
		r.Get("/plans/{name}/content", s.h(s.getPlanContent))
		r.Put("/plans/{name}/content", s.h(s.putPlanContent))
		r.Get("/plans/{name}/status", s.h(s.getPlanStatus))
		r.Put("/plans/{name}/status", s.h(s.setPlanStatus))
		r.Get("/plans/{name}/revisions", s.h(s.listPlanRevisions))
		r.Get("/plans/{name}/revisions/{revision}", s.h(s.getPlanRevision))
		r.Get("/plans/{name}/diff", s.h(s.diffPlan))
		r.Get("/plans/{name}/steps", s.h(s.listSteps))
		r.Post("/plans/{name}/steps/claim", s.h(s.claimNextStep))
		r.Get("/plans/{name}/steps/{step_id}", s.h(s.getStep))
		r.Patch("/plans/{name}/steps/{step_id}", s.h(s.patchStep))
		r.Post("/plans/{name}/steps/{step_id}/claim", s.h(s.claimStep))
		r.Post("/plans/{name}/steps/{step_id}/reports", s.h(s.addStepReport))
		r.Get("/plans/{name}/reports", s.h(s.listReports))

		r.Post("/tokens", s.h(s.createToken))
		r.Get("/tokens", s.h(s.listTokens))
		r.Get("/tokens/{name}", s.h(s.getToken))
		r.Delete("/tokens/{name}", s.h(s.revokeToken))

		// Host hooks (hooks.go): one decision home for planserver hook and
		// hosts that call HTTP hooks.
		r.Post("/hooks/{host}", s.h(s.hook))

		r.Put("/gates/{name}", s.h(s.putGate))
		r.Get("/gates", s.h(s.listGates))
		r.Get("/gates/{name}", s.h(s.getGate))
		r.Delete("/gates/{name}", s.h(s.deleteGate))

		r.Post("/webhooks", s.h(s.createWebhook))
		r.Get("/webhooks", s.h(s.listWebhooks))
		r.Get("/webhooks/{id}", s.h(s.getWebhook))
		r.Patch("/webhooks/{id}", s.h(s.patchWebhook))
		r.Delete("/webhooks/{id}", s.h(s.deleteWebhook))
		r.Post("/webhooks/{id}/rotate-secret", s.h(s.rotateWebhookSecret))
		r.Get("/webhooks/{id}/deliveries", s.h(s.listWebhookDeliveries))
		r.Post("/webhooks/{id}/deliveries/{delivery}/redeliver", s.h(s.redeliverWebhook))
		r.Get("/me", s.h(signin.Me)) // signin.Me: who is calling, cookie or token

		// signin.Admin: the admin's list of sign-ins, and ending them.
		r.Get("/signins", s.h(s.signInAdmin().List))
		r.Delete("/signins", s.h(s.signInAdmin().RevokeSubject))
		r.Get("/signins/{id}", s.h(s.signInAdmin().Get))
		r.Delete("/signins/{id}", s.h(s.signInAdmin().Revoke))
	})
	return r
}

func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	if plansNotFound(w, r) {
		return
	}
	response.Problem(w, r, apierr.New(apierr.NotFound, "no route for %s %s", r.Method, r.URL.Path))
}

// probeMethods are the methods tried to build a 405's Allow header.
var probeMethods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}

// methodNotAllowed answers 405 with the Allow header chi does not set for a
// custom handler: the methods that do match the path.
func (s *Server) methodNotAllowed(w http.ResponseWriter, r *http.Request) {
	var allowed []string
	path := r.URL.RawPath
	if path == "" {
		path = r.URL.Path
	}
	for _, m := range probeMethods {
		if s.router.Match(chi.NewRouteContext(), m, path) {
			allowed = append(allowed, m)
		} else if m == http.MethodHead && s.router.Match(chi.NewRouteContext(), http.MethodGet, path) {
			allowed = append(allowed, m)
		}
	}
	w.Header().Set("Allow", strings.Join(allowed, ", "))
	response.Problem(w, r, apierr.New(apierr.MethodNotAllowed, "%s is not allowed on %s; allowed: %s",
		r.Method, r.URL.Path, strings.Join(allowed, ", ")))
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	response.JSON(w, http.StatusOK, map[string]string{"status": "ok", "version": s.cfg.Version})
}

// readyz reports ready when the database answers reads, its writes can
// commit (after a storage fault it probes until one does), and its schema
// is the one this binary expects.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := s.cfg.DB.Ready(ctx); err != nil {
		if e, ok := apierr.As(err); ok && e.Code != apierr.Internal {
			return err
		}
		return &apierr.Error{Code: apierr.Unavailable, Detail: "database unreachable", RetryAfter: 5, Cause: err}
	}
	current, err := s.cfg.DB.AppliedVersion(ctx)
	if err != nil {
		return &apierr.Error{Code: apierr.Unavailable, Detail: "schema version unreadable", Cause: err}
	}
	if current != s.schemaVersion {
		return apierr.New(apierr.Unavailable, "schema at version %d, this binary expects %d", current, s.schemaVersion)
	}
	response.JSON(w, http.StatusOK, map[string]any{"status": "ready", "schema_version": current})
	return nil
}

func serveOpenAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/yaml")
	_, _ = w.Write(api.Spec)
}
