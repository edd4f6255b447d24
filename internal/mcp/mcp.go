// Package mcp serves planserver over the Model Context Protocol at /mcp:
// the seeds' plan tools (shared plans, the session plan and its review,
// the plan-mode harness, todos, structured steps) for any MCP client, with
// the tool list and every call gated by the bound session's effective mode.
//
// It owns the MCP side only. Every tool is an operation of the HTTP API
// (Operations maps each to its route in auth.Routes): it is authorized with
// that route's action through auth.Authorizer, the one access check, and it calls
// the same store method, so the same events, actors and errors follow. It
// never imports internal/http; the server fills in a Backend and mounts the
// Endpoint.
package mcp

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/apierr"
	"github.com/planserver/planserver/internal/auth"
	"github.com/planserver/planserver/internal/plans"
	"github.com/planserver/planserver/internal/sessions"
)

// SessionHeader names the session an MCP client acts for, when its
// credential does not: with an admin token or --auth none. An agent token
// is bound to its own session; it may name one of that session's
// descendants here (a sub-agent), never a session outside its tree.
const SessionHeader = "Planserver-Session"

// MetaSession is the request _meta key that names the session, for clients
// that cannot set headers; a request naming two different sessions (header
// and _meta) is refused.
const MetaSession = "planserver/session"

// Upstream is the upstream recorded in tool_call.denied events for the
// endpoint's own tools.
const Upstream = "planserver"

// Backend is what the endpoint needs of the HTTP server that mounts it.
// internal/http.Server fills it in with its own stores and checks, so the
// MCP tools and the HTTP routes cannot drift apart.
type Backend struct {
	Sessions *sessions.Store
	Plans    *plans.Store
	// Gate is the plan-mode tool policy (the --plan-mode-allow list).
	Gate sessions.Gate
	// Access is the one access check (auth.Authorizer): whether ctx's
	// caller may perform a on session target ("" for none), answering
	// hidden when the target is outside an agent's scope.
	Access Access
	// ReviewURL is the human review page of one plan revision of a session,
	// under base (the URL the client reached this server at).
	ReviewURL func(base, sessionID string, revision int64) string
	// Problem writes err as the server's application/problem+json answer.
	Problem func(w http.ResponseWriter, r *http.Request, err error)
	// MaxPlanBytes bounds session plan content (--max-plan-bytes).
	MaxPlanBytes int64
	// UpstreamTimeout bounds every call to a gate's tool server, connecting
	// included (--upstream-timeout), for the gate proxy
	// (internal/gates/proxy); 0 means proxy.DefaultUpstreamTimeout.
	UpstreamTimeout time.Duration
	// RequirePreconditions is --require-preconditions: updates and deletes
	// need last_known_revision.
	RequirePreconditions bool
	Version              string
	Logger               *slog.Logger
}

// Access is what the endpoint needs of the access check (auth.Authorizer).
type Access interface {
	Authorize(ctx context.Context, a auth.Action, target string, hidden error) error
}

// Endpoint is the /mcp handler.
type Endpoint struct {
	b      Backend
	ops    map[string]Operation
	server *sdk.Server
	// registered are the tools added to server, to check that every
	// operation has a handler.
	registered map[string]bool
	handler    http.Handler
}

// New builds the endpoint: one SDK server holding every tool, served by a
// stateless streamable-HTTP handler (each POST stands alone, as the
// 2026-07-28 revision has it; 2025-11-25 clients get a session per
// request). What a caller sees and may call is decided per request by the
// middleware (gate.go), from the request's own credential and session.
func New(b Backend) *Endpoint {
	if b.Logger == nil {
		b.Logger = slog.Default()
	}
	e := &Endpoint{b: b, ops: map[string]Operation{}}
	for _, op := range Operations {
		e.ops[op.Name] = op
	}
	e.server = sdk.NewServer(&sdk.Implementation{Name: "planserver", Title: "planserver", Version: b.Version},
		&sdk.ServerOptions{
			Instructions: instructions,
			// A stateless server cannot send notifications between
			// requests, so it does not promise list_changed; the cache
			// hints below tell clients to list again instead.
			Capabilities: &sdk.ServerCapabilities{Tools: &sdk.ToolCapabilities{}},
			SetCacheable: func(_ context.Context, _ sdk.Request, c *sdk.Cacheable) {
				// The tool list depends on the caller and on the session's
				// mode, which a human may change at any moment: stale at
				// once (the client lists again at its next turn), and never
				// to be shared with another caller.
				c.TTLMs = 0
				c.CacheScope = "private"
			},
		})
	e.addTools()
	e.server.AddReceivingMiddleware(e.gateMiddleware)
	e.handler = sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return e.server },
		&sdk.StreamableHTTPOptions{
			Stateless:    true,
			JSONResponse: true,
			// The server's own Host check (hostGuard, with --allowed-hosts)
			// already ran; the SDK's would refuse a proxy's public name.
			DisableLocalhostProtection: true,
		})
	return e
}

// instructions are sent to clients with the server's description.
const instructions = `planserver keeps this session's plan, its human review and its build/plan mode, and shared plans with structured steps.
In plan mode only read-only tools and the plan tools are offered: investigate, write the plan (write_session_plan or plan_write), then ask for review (exit_plan_mode or plan_exit) and stop. Only a human approves a plan, on the review page the review tools return; no tool can leave plan mode.
Writes to shared plans take last_known_revision: on a version conflict, re-read the plan and retry with the revision the error names. edit_plan changes a plan by exact string replacement, and read_plan takes a line range, so a large plan need not be sent whole.`

// ServeHTTP serves one MCP request. The caller has been authenticated and
// allowed to connect by the server's guard; the base URL of the request is
// kept for the review links the tools return.
func (e *Endpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	Serve(e.handler, e.b.Problem, w, r)
}

// Serve serves r with h, an SDK handler, keeping the base URL of the
// request for the review links the tools return. The SDK answers
// transport errors (a wrong method or media type, a malformed body) in
// plain text; every error of this server is a problem document, so those
// are answered with problem instead.
func Serve(h http.Handler, problem func(http.ResponseWriter, *http.Request, error), w http.ResponseWriter, r *http.Request) {
	r = r.WithContext(context.WithValue(r.Context(), baseKey{}, baseURL(r)))
	pw := &problemWriter{ResponseWriter: w}
	h.ServeHTTP(pw, r)
	if pw.plain {
		w.Header().Del("X-Content-Type-Options")
		problem(w, r, &apierr.Error{Code: statusCode(pw.status), Detail: strings.TrimSpace(pw.body.String())})
	}
}

type baseKey struct{}

// baseURL is the URL the client reached this server at. The Host header
// has passed the server's Host check; the scheme is the connection's.
func baseURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

func baseFrom(ctx context.Context) string {
	s, _ := ctx.Value(baseKey{}).(string)
	return s
}

// problemWriter holds back a plain-text error answer so that ServeHTTP can
// answer a problem document instead. Everything else passes through.
type problemWriter struct {
	http.ResponseWriter
	status int
	plain  bool
	body   bytes.Buffer
}

func (p *problemWriter) WriteHeader(code int) {
	if code >= 400 && strings.HasPrefix(p.Header().Get("Content-Type"), "text/plain") {
		p.status, p.plain = code, true
		p.Header().Del("Content-Type")
		return
	}
	p.ResponseWriter.WriteHeader(code)
}

func (p *problemWriter) Write(b []byte) (int, error) {
	if p.plain {
		return p.body.Write(b)
	}
	return p.ResponseWriter.Write(b)
}

// Flush lets event streams through.
func (p *problemWriter) Flush() {
	if f, ok := p.ResponseWriter.(http.Flusher); ok && !p.plain {
		f.Flush()
	}
}

// Unwrap is for http.ResponseController.
func (p *problemWriter) Unwrap() http.ResponseWriter { return p.ResponseWriter }

// statusCode is the error code of a transport error the SDK answered with
// an HTTP status. The statuses the SDK answers a client's mistake with
// have their usual code (api.CodeForStatus); any other is this server's
// fault: internal, where api.CodeForStatus would give 401, 410, 429, 503
// and others a code of their own.
func statusCode(status int) apierr.Code {
	switch status {
	case http.StatusBadRequest, http.StatusForbidden, http.StatusNotFound, http.StatusMethodNotAllowed,
		http.StatusNotAcceptable, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType:
		return api.CodeForStatus(status)
	}
	return apierr.Internal
}
