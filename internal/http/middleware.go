package http

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/trace"

	"github.com/planserver/planserver/internal/apierr"
	"github.com/planserver/planserver/internal/http/listener"
	"github.com/planserver/planserver/internal/http/request"
	"github.com/planserver/planserver/internal/http/response"
)

// statusRecorder remembers the status and size of a response. It forwards
// Unwrap so http.ResponseController still reaches the connection (flushes
// and write deadlines for the event stream).
type statusRecorder struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	n, err := s.ResponseWriter.Write(b)
	s.bytes += int64(n)
	return n, err
}

func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// httpMetrics are the per-request Prometheus metrics.
type httpMetrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

func newHTTPMetrics(reg prometheus.Registerer) *httpMetrics {
	m := &httpMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "planserver_http_requests_total",
			Help: "HTTP requests served, by method, route pattern and status.",
		}, []string{"method", "route", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "planserver_http_request_duration_seconds",
			Help:    "HTTP request latency, by method and route pattern.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}, []string{"method", "route"}),
	}
	reg.MustRegister(m.requests, m.duration)
	return m
}

// observe logs one line per request and records its metrics, after the
// request, when chi knows the route pattern. It also recovers panics into a
// 500 internal problem, logged with the stack.
// traceRequests opens the span of each request (tracing on only): named
// by its method until the router has matched it, then by its route
// (observe), so that spans of one route group together whatever the ids.
var traceRequests = otelhttp.NewMiddleware("planserver",
	otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return r.Method }))

func (s *Server) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		r, failed := response.TrackFailure(r)
		rec := &statusRecorder{ResponseWriter: w}
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				err := fmt.Errorf("panic: %v\n%s", p, debug.Stack())
				if rec.status == 0 {
					response.Problem(rec, r, err)
				} else {
					response.NoteFailure(r, err)
				}
			}
			route := s.routePattern(r)
			status := rec.status
			if status == 0 {
				status = http.StatusOK
			}
			elapsed := time.Since(start)
			s.metrics.requests.WithLabelValues(r.Method, route, strconv.Itoa(status)).Inc()
			s.metrics.duration.WithLabelValues(r.Method, route).Observe(elapsed.Seconds())
			level := slog.LevelInfo
			// request_id leads, as a logger made With it would write it;
			// building such a logger for each request cost 3% of a kept
			// GET's CPU (docs/benchmarks.md).
			attrs := []slog.Attr{
				slog.String("request_id", request.ID(r)),
				slog.String("method", r.Method),
				slog.String("route", route),
				slog.String("path", r.URL.Path),
				slog.Int("status", status),
				slog.Int64("bytes", rec.bytes),
				slog.Float64("duration_ms", float64(elapsed.Microseconds())/1000),
			}
			if cause := failed(); status >= 500 || cause != nil {
				level = slog.LevelError
				if cause != nil {
					attrs = append(attrs, slog.Any("error", cause))
				}
			}
			if sc := trace.SpanContextFromContext(r.Context()); sc.IsValid() {
				attrs = append(attrs, slog.String("trace_id", sc.TraceID().String()))
				trace.SpanFromContext(r.Context()).SetName(r.Method + " " + route)
			}
			s.log.LogAttrs(r.Context(), level, "request", attrs...)
		}()
		next.ServeHTTP(rec, r)
	})
}

// routePattern is the pattern of the route r reached, for logs and
// metrics. A request answered before the /v1 router routed it (guard's
// 401, 429 and 403) has only the mount's pattern, "/v1/*", so the route
// it was headed for is looked up; "unmatched" when there is none.
func (s *Server) routePattern(r *http.Request) string {
	if rc := chi.RouteContext(r.Context()); rc != nil {
		if p := rc.RoutePattern(); p != "" && !strings.HasSuffix(p, "/*") {
			return p
		}
	}
	if route, _ := s.resolve(r); route != "" {
		_, pattern, _ := strings.Cut(route, " ")
		return pattern
	}
	return "unmatched"
}

// securityHeaders sets headers every API response should carry.
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Cache-Control", "no-cache")
		next.ServeHTTP(w, r)
	})
}

// Listener wraps ln in the server's connection layer (package listener);
// maxConns <= 0 sets no cap. Its gauges are served at /metrics. Set its
// ConnContext as the http.Server's, or conflictingFraming sees nothing.
func (s *Server) Listener(ln net.Listener, maxConns int) *listener.Listener {
	return listener.New(ln, maxConns, s.registry)
}

// conflictingFraming answers a request that named both Content-Length and
// Transfer-Encoding with 400, and closes its connection: net/http would
// serve it, framed by its chunks (package listener says why that is
// refused).
func conflictingFraming(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if listener.AmbiguousFraming(r) {
			w.Header().Set("Connection", "close")
			response.Problem(w, r, apierr.New(apierr.InvalidArgument,
				"the request has both Content-Length and Transfer-Encoding, which frame its body two ways "+
					"(RFC 9112 §6.1); send one of them. The connection is closed."))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// handler is the shape of every route's handler: it decodes, validates,
// calls a store and responds, and returns the error to answer instead of
// writing it, so no handler can forget to stop after an error.
type handler func(w http.ResponseWriter, r *http.Request) error

// h adapts a handler to net/http: a returned error is answered as a
// problem document.
func (s *Server) h(fn handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := fn(w, r); err != nil {
			response.Problem(w, r, err)
		}
	}
}
