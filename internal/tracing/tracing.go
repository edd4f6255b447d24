// Package tracing turns on OpenTelemetry tracing when an operator asks for
// it, and names the spans planserver makes. It is off by default: with no
// OTLP endpoint in the environment nothing is recorded and the request
// path carries no tracing middleware at all. With
// OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) set,
// spans go to that collector over OTLP/HTTP (the exporter reads the rest
// of the standard OTEL_EXPORTER_OTLP_* variables itself).
//
// The spans of one request (docs/tracing.md):
//
//	HTTP request ("PUT /v1/plans/{name}")
//	├── authorize             the token check and the route's decision
//	├── pg.query, pg.batch    reads outside a write (PostgreSQL)
//	└── db.write              from queueing the write to its answer
//	    ├── db.queue          waiting for the committer
//	    ├── db.lock_wait      the round trip that took the write lock (PostgreSQL)
//	    ├── db.round_trip     each later round trip of the write, its one-row reads in them (PostgreSQL)
//	    ├── pg.query          a read of several rows in a write (PostgreSQL)
//	    └── db.commit         the commit: an fsync on SQLite, a round trip on PostgreSQL
package tracing

import (
	"context"
	"errors"
	"os"
	"sync/atomic"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	sdkresource "go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	"go.opentelemetry.io/otel/trace"
)

// Name is the instrumentation scope of planserver's spans.
const Name = "github.com/planserver/planserver"

var enabled atomic.Bool

// Enabled reports whether Setup turned tracing on.
func Enabled() bool { return enabled.Load() }

// Tracer is planserver's tracer from the global provider (a no-op one
// until Setup turns tracing on).
func Tracer() trace.Tracer { return otel.GetTracerProvider().Tracer(Name) }

// Configured reports whether the environment names an OTLP endpoint.
func Configured() bool {
	return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// Setup turns tracing on when the environment names an OTLP endpoint,
// and returns the function that flushes and stops it (call it at exit);
// without one it does nothing. version is reported as service.version.
func Setup(ctx context.Context, version string) (shutdown func(context.Context) error, err error) {
	if !Configured() {
		return func(context.Context) error { return nil }, nil
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, err
	}
	res, err := sdkresource.Merge(sdkresource.Default(), sdkresource.NewSchemaless(
		semconv.ServiceName("planserver"), semconv.ServiceVersion(version)))
	if err != nil && !errors.Is(err, sdkresource.ErrPartialResource) {
		return nil, err
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	enabled.Store(true)
	return func(ctx context.Context) error {
		enabled.Store(false)
		return tp.Shutdown(ctx)
	}, nil
}

// Attr helpers keep attribute keys in one place.
var (
	// Decision is the authorization decision: allow or deny.
	Decision = attribute.Key("planserver.authz.decision")
	// Batch is how many writes shared the commit.
	Batch = attribute.Key("planserver.db.batch")
	// Statements is how many statements a round trip carried.
	Statements = attribute.Key("planserver.db.statements")
)
