package http

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/cors"
	"go.opentelemetry.io/otel/trace"

	"github.com/planserver/planserver/internal/apierr"
	"github.com/planserver/planserver/internal/auth"
	"github.com/planserver/planserver/internal/events"
	"github.com/planserver/planserver/internal/http/request"
	"github.com/planserver/planserver/internal/http/response"
	"github.com/planserver/planserver/internal/http/signin"
	"github.com/planserver/planserver/internal/sessions"
	"github.com/planserver/planserver/internal/tracing"
)

// The values of Config.Auth.
const (
	// AuthNone treats every caller as auth.Anonymous, an admin. The
	// command line allows it only on a loopback address.
	AuthNone = "none"
	// AuthToken requires a bearer token on every /v1 request.
	AuthToken = "token"
)

// guard is the /v1 middleware that answers, in this order, who is calling
// (401), whether they are over their rate (429), and whether they may call
// this route on this session (404 for a session outside an agent's scope,
// 403 for an action the role lacks). It runs before the handler reads the
// body or checks any precondition, so 401/403/404 come before 412. Handlers
// of Refined routes check the action their body names with s.allow.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		span := startAuthorize(r)
		if len(r.Header.Values("Authorization")) > 1 {
			// Which one would count depends on who reads the request: a
			// proxy and this server could each pick another.
			span.end("deny")
			response.Problem(w, r, apierr.Invalid("Authorization", "sent more than once; send one Authorization header"))
			return
		}
		route, params := s.resolve(r)
		p, err := s.authenticate(r, route)
		if err != nil {
			span.end("deny")
			// Failed attempts count against the client's address, so that
			// guessing tokens is rate limited too.
			if s.limited(w, r, "ip:"+clientKey(r)) {
				return
			}
			response.Problem(w, r, err)
			return
		}
		// Without tokens there is one caller, the loopback user, whose
		// host apps must not throttle each other; rate limits are per token
		// and per person, and a JSON-RPC batch counts as its calls.
		calls, err := s.mcpCalls(w, r, route)
		if err != nil {
			span.end("deny")
			response.Problem(w, r, err)
			return
		}
		key := "token:" + p.Name
		if p.Person != nil {
			key = "person:" + p.Person.Subject
		}
		if s.cfg.Auth == AuthToken && s.limitedN(w, r, key, calls) {
			span.end("rate_limited")
			return
		}
		ctx := events.WithActor(r.Context(), p.Name)
		if p.Person != nil {
			ctx = events.WithPerson(ctx, p.Person)
		}
		r = r.WithContext(auth.WithPrincipal(ctx, p))
		stripAccessToken(r)
		if route != "" {
			if err := s.authorizeRoute(r, route, params); err != nil {
				span.end("deny")
				response.Problem(w, r, err)
				return
			}
		}
		span.end("allow")
		// Unknown routes and methods go on to the router's 404 and 405.
		next.ServeHTTP(w, r)
	})
}

// authorizeSpan is the authorize span of a traced request (tracing.go).
type authorizeSpan struct{ span trace.Span }

// startAuthorize opens the span of the authorization decision, when the
// request is traced; it is a child of the request's span and ends before
// the handler runs.
func startAuthorize(r *http.Request) authorizeSpan {
	if !tracing.Enabled() || !trace.SpanContextFromContext(r.Context()).IsValid() {
		return authorizeSpan{}
	}
	_, sp := tracing.Tracer().Start(r.Context(), "authorize")
	return authorizeSpan{span: sp}
}

func (a authorizeSpan) end(decision string) {
	if a.span == nil {
		return
	}
	a.span.SetAttributes(tracing.Decision.String(decision))
	a.span.End()
}

// resolve finds the route a request will reach, as "METHOD /pattern", and
// its URL parameters; "" when none matches. It mirrors the router: chi
// routes on the escaped path when there is one, and HEAD is served by the
// GET handler (middleware.GetHead), so HEAD is authorized as that GET.
func (s *Server) resolve(r *http.Request) (string, *chi.Context) {
	path := r.URL.RawPath
	if path == "" {
		path = r.URL.Path
	}
	method := r.Method
	if method == http.MethodHead {
		method = http.MethodGet
	}
	rctx := chi.NewRouteContext()
	pattern := s.router.Find(rctx, method, path)
	if pattern == "" {
		return "", rctx
	}
	return method + " " + pattern, rctx
}

// authenticate returns the caller: auth.Anonymous without --auth token,
// else the principal of the bearer token, or, with sign-in on and no
// Authorization header, of the sign-in cookie (whose state-changing
// requests must carry the CSRF token). Errors: unauthenticated,
// permission_denied (no CSRF token).
func (s *Server) authenticate(r *http.Request, route string) (auth.Principal, error) {
	if s.cfg.Auth != AuthToken {
		return auth.Anonymous, nil
	}
	if s.oidc != nil && r.Header.Get("Authorization") == "" && !r.URL.Query().Has("access_token") {
		c, err := r.Cookie(signin.Cookie)
		if err != nil {
			return auth.Principal{}, signInHint(apierr.New(apierr.Unauthenticated,
				"sign in at %s (people), or send the header Authorization: Bearer <token> (agents and scripts)", signin.LoginPath))
		}
		{
			p, err := s.signIns.Authenticate(r.Context(), c.Value)
			if err != nil {
				return auth.Principal{}, signInHint(err)
			}
			if stateChanging(r.Method) {
				if err := signin.CheckCSRF(r, c.Value); err != nil {
					return auth.Principal{}, err
				}
			}
			return p, nil
		}
	}
	secret, err := bearerToken(r, route)
	if err != nil {
		return auth.Principal{}, err
	}
	return s.tokens.Authenticate(r.Context(), secret)
}

// signInHint adds to an unauthenticated answer the sign_in member, the
// path where a person signs in, so the console can offer it.
func signInHint(err error) error {
	e, ok := apierr.As(err)
	if !ok || e.Code != apierr.Unauthenticated {
		return err
	}
	out := *e
	out.Extra = map[string]any{"sign_in": signin.LoginPath}
	return &out
}

// bearerToken reads the token from Authorization: Bearer, or on the event
// stream only, from ?access_token= (a browser EventSource cannot set
// headers; anywhere else a token in a URL would only end up in logs).
func bearerToken(r *http.Request, route string) (string, error) {
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, token, ok := strings.Cut(strings.TrimSpace(h), " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") {
			return "", apierr.New(apierr.Unauthenticated, `the Authorization header must be "Bearer <token>"`)
		}
		return strings.TrimSpace(token), nil
	}
	if r.URL.Query().Has("access_token") {
		if route != auth.EventStream {
			return "", apierr.New(apierr.Unauthenticated,
				"access_token is accepted only on %s; send the header Authorization: Bearer <token>", auth.EventStream)
		}
		return r.URL.Query().Get("access_token"), nil
	}
	return "", apierr.New(apierr.Unauthenticated,
		"this server requires a token: send the header Authorization: Bearer <token> (create one with planserver token create)")
}

// stripAccessToken removes a used access_token from the request, so no
// handler or log line downstream ever sees the secret.
func stripAccessToken(r *http.Request) {
	q := r.URL.Query()
	if !q.Has("access_token") {
		return
	}
	q.Del("access_token")
	u := *r.URL
	u.RawQuery = q.Encode()
	r.URL = &u
}

// limited takes one request from key's rate limit; when none is left it
// answers 429 with Retry-After and reports true.
func (s *Server) limited(w http.ResponseWriter, r *http.Request, key string) bool {
	return s.limitedN(w, r, key, 1)
}

// limitedN is limited for a request that is n calls (a JSON-RPC batch).
func (s *Server) limitedN(w http.ResponseWriter, r *http.Request, key string, n int) bool {
	ok, wait := s.limiter.allow(key, time.Now(), n)
	if ok {
		return false
	}
	if n > s.limiter.burst {
		// Never allowed whole; Retry-After is when a full burst is back,
		// for a client that splits the batch.
		w.Header().Set("Retry-After", strconv.Itoa(retryAfter(time.Duration(float64(s.limiter.burst)/float64(s.limiter.rate)*float64(time.Second)))))
		response.Problem(w, r, apierr.New(apierr.RateLimited,
			"this JSON-RPC batch holds %d calls, more than this caller's burst of %d (--rate-burst): each call counts "+
				"against the rate limit like a request of its own; send fewer at once", n, s.limiter.burst))
		return true
	}
	secs := retryAfter(wait)
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	response.Problem(w, r, apierr.New(apierr.RateLimited,
		"more than %g requests a second (bursts of %d) from this caller; retry in %d s",
		float64(s.limiter.rate), s.limiter.burst, secs))
	return true
}

// MaxBatch bounds the messages of one JSON-RPC batch sent to /mcp or a
// gate: a batch is many calls in one request, and the work of a request
// must stay bounded.
const MaxBatch = 32

// mcpCalls is how many calls a request to /mcp or a gate carries, for the
// rate limit: the messages of a JSON-RPC batch, one otherwise. It reads
// the body (at most the limit of a plan write) and puts it back for the
// endpoint. A batch above MaxBatch is 400 invalid_argument.
func (s *Server) mcpCalls(w http.ResponseWriter, r *http.Request, route string) (int, error) {
	if route != "POST /mcp" && route != "POST /mcp/gate/{name}" {
		return 1, nil
	}
	body, err := request.ReadBody(w, r, s.planBodyLimit())
	if err != nil {
		return 0, err
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 || trimmed[0] != '[' {
		return 1, nil
	}
	var batch []json.RawMessage
	if json.Unmarshal(trimmed, &batch) != nil {
		return 1, nil // not JSON: the endpoint answers the parse error
	}
	if len(batch) > MaxBatch {
		return 0, apierr.Invalid("body", "a JSON-RPC batch holds at most %d messages; this one holds %d: send them in smaller batches or one by one",
			MaxBatch, len(batch))
	}
	return max(1, len(batch)), nil
}

// clientKey names the client a request comes from, for the limits of
// requests nobody is authenticated for yet: its address, or an IPv6
// client's /64, since one host commonly holds a whole /64 and could
// otherwise take a fresh address for every request. X-Forwarded-For is
// not trusted: anyone can send it.
func clientKey(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	ip = ip.Unmap().WithZone("")
	if ip.Is6() {
		return netip.PrefixFrom(ip, 64).Masked().String()
	}
	return ip.String()
}

// authorizeRoute applies the route's rule from auth.Routes. A route
// without a rule is refused for everyone: a new route must state its
// access before anyone can call it.
func (s *Server) authorizeRoute(r *http.Request, route string, params *chi.Context) error {
	rule, ok := auth.Routes[route]
	if !ok {
		return fmt.Errorf("route %s has no rule in auth.Routes", route)
	}
	target := ""
	if rule.SessionParam != "" {
		target = params.URLParam(rule.SessionParam)
	}
	if err := s.authz.Authorize(r.Context(), rule.Action, target, sessions.NotFound(target)); err != nil {
		return err
	}
	if rule.SessionQuery != "" {
		if id := r.URL.Query().Get(rule.SessionQuery); id != "" {
			return s.authz.Authorize(r.Context(), auth.ReadSession, id, sessions.NotFound(id))
		}
	}
	return nil
}

// corsHandler is the CORS middleware for an explicit list of origins. The
// headers a browser UI needs are exposed: ETag and Location to follow
// writes, Retry-After to back off, X-Request-ID and X-Event-Seq.
func corsHandler(origins []string) func(http.Handler) http.Handler {
	return cors.Handler(cors.Options{
		AllowedOrigins: origins,
		AllowedMethods: []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete},
		AllowedHeaders: []string{"Authorization", "Content-Type", "If-Match", "If-None-Match", "Last-Event-ID",
			"Accept", "X-Request-ID"},
		ExposedHeaders: []string{"ETag", "Location", "Retry-After", "X-Request-ID", "X-Event-Seq"},
		MaxAge:         600,
	})
}
