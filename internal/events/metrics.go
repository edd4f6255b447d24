package events

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the event feed's Prometheus metrics, shared by the parts
// that feed it: the streams and list of GET /v1/events (Delivered,
// Reads by "stream"), the tail (Reads by "tail"), and the pruner (Pruned).
type Metrics struct {
	Delivered *prometheus.CounterVec
	Pruned    prometheus.Counter
	// Reads counts reads of the log for event streams: by the tail, once
	// per commit for all caught-up streams, or by one stream for itself.
	Reads *prometheus.CounterVec
}

// NewMetrics registers the event feed's metrics on reg; subscribers
// reports the event streams connected now (Tail.Subscribers).
func NewMetrics(reg prometheus.Registerer, subscribers func() int) *Metrics {
	m := &Metrics{
		Delivered: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "planserver_events_delivered_total",
			Help: "Events sent to clients of GET /v1/events, by transport (sse or json).",
		}, []string{"transport"}),
		Pruned: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "planserver_events_pruned_total",
			Help: "Events deleted from the log by retention.",
		}),
		Reads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "planserver_event_log_reads_total",
			Help: "Reads of the event log for event streams (SSE), by reader: tail (one per commit for every caught-up stream) or stream (a stream reading for itself: opening, catching up, or whatever the tail cannot answer).",
		}, []string{"reader"}),
	}
	m.Reads.WithLabelValues("tail")
	m.Reads.WithLabelValues("stream")
	reg.MustRegister(m.Delivered, m.Pruned, m.Reads, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "planserver_event_subscribers",
		Help: "Event streams (SSE) connected now.",
	}, func() float64 { return float64(subscribers()) }))
	return m
}
