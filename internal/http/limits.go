package http

import (
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/planserver/planserver/internal/apierr"
	"github.com/planserver/planserver/internal/events"
)

// streamRetryAfter is the Retry-After, in seconds, of an event stream
// refused above the cap: streams last long, so a slot frees up slowly.
const streamRetryAfter = 5

// streamGate bounds the event streams open at once (--max-event-streams).
// Each stream holds a connection, and so a file descriptor, for as long as
// its client stays; without a bound a crowd of watchers exhausts the
// descriptors and every new client, health checks included, hangs
// unaccepted. It is a counting semaphore; nil slots means no bound.
type streamGate struct {
	slots    chan struct{}
	rejected prometheus.Counter
}

func newStreamGate(limit int, reg prometheus.Registerer) *streamGate {
	g := &streamGate{rejected: prometheus.NewCounter(prometheus.CounterOpts{
		Name: "planserver_event_streams_rejected_total",
		Help: "Event streams answered 503 because --max-event-streams were open.",
	})}
	reg.MustRegister(g.rejected)
	if limit > 0 {
		g.slots = make(chan struct{}, limit)
	}
	return g
}

// gatedStream serves the event stream when a slot is free, and otherwise
// answers 503 unavailable with Retry-After. The refusal closes the
// connection, so a refused client does not keep a descriptor idle either.
// qerr is the stream's query error, passed on to streamEvents.
func (s *Server) gatedStream(w http.ResponseWriter, r *http.Request, q events.Query, qerr error) error {
	g := s.streams
	if g.slots != nil {
		select {
		case g.slots <- struct{}{}:
			defer func() { <-g.slots }()
		default:
			g.rejected.Inc()
			w.Header().Set("Connection", "close")
			return &apierr.Error{Code: apierr.Unavailable, RetryAfter: streamRetryAfter, Detail: fmt.Sprintf(
				"%d event streams are open, this server's limit (--max-event-streams); retry in %d s, or read GET /v1/events as JSON pages",
				cap(g.slots), streamRetryAfter)}
		}
	}
	return s.streamEvents(w, r, q, qerr)
}

// planBodyLimit bounds the body of a write carrying a whole plan, shared or session plan: room for
// content at the limit even when JSON or YAML escaping doubles it, plus the
// other fields. The content itself is then held to MaxPlanBytes.
func (s *Server) planBodyLimit() int64 {
	return max(s.cfg.MaxBodyBytes, 2*s.cfg.MaxPlanBytes+64<<10)
}
