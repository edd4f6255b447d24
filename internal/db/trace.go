package db

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/planserver/planserver/internal/tracing"
)

// Tracing of writes (internal/tracing names the spans). A write runs in
// the committer's goroutine, in a batch shared with others, so its spans
// are made after the fact, from times the committer records: each write
// of a batch gets the batch's lock wait and commit under its own db.write
// span, so that a trace of one slow request shows where its time went.

// Span is one interval an engine recorded of a batch (Batch.Trace), made
// a span once the batch is over.
type Span struct {
	Name       string
	Start, End time.Time
	// Statements is how many statements a round trip carried; 0 for none
	// to report.
	Statements int
	// Owner is the index of the write it belongs to in the batch, or
	// WholeBatch.
	Owner int
	Err   error
}

// WholeBatch owns what a batch does for all its writes (Span.Owner): its
// BEGIN, locks and commit.
const WholeBatch = -1

// startWrite opens the db.write span of a write, when tracing is on.
func startWrite(ctx context.Context) (context.Context, trace.Span) {
	if !tracing.Enabled() || !trace.SpanContextFromContext(ctx).IsValid() {
		return ctx, nil
	}
	return tracing.Tracer().Start(ctx, "db.write")
}

// emitSpans makes the recorded spans of a batch, under each write's span.
func emitSpans(batch []*Write, started time.Time, spans []Span) {
	tr := tracing.Tracer()
	for i, r := range batch {
		if !trace.SpanContextFromContext(r.ctx).IsValid() {
			continue
		}
		_, q := tr.Start(r.ctx, "db.queue", trace.WithTimestamp(r.queued))
		q.End(trace.WithTimestamp(started))
		for _, s := range spans {
			if s.Owner != WholeBatch && s.Owner != i {
				continue
			}
			attrs := []attribute.KeyValue{tracing.Batch.Int(len(batch))}
			if s.Statements > 0 {
				attrs = append(attrs, tracing.Statements.Int(s.Statements))
			}
			_, sp := tr.Start(r.ctx, s.Name, trace.WithTimestamp(s.Start), trace.WithAttributes(attrs...))
			if s.Err != nil {
				sp.SetStatus(codes.Error, s.Err.Error())
			}
			sp.End(trace.WithTimestamp(s.End))
		}
	}
}
