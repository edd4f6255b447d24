package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/planserver/planserver/internal/tracing"
)

// pgTracer is pgx's tracer hook: a span per query and per batch made
// under a traced context (a request's reads; a write's reads, under its
// db.write span). The write pipeline's own round trips are recorded by
// the committer instead (db.lock_wait, db.round_trip, db.commit).
type pgTracer struct{}

var (
	_ pgx.QueryTracer = pgTracer{}
	_ pgx.BatchTracer = pgTracer{}
)

type pgSpanKey struct{}

func (pgTracer) start(ctx context.Context, name, sql string) context.Context {
	if !tracing.Enabled() || !trace.SpanContextFromContext(ctx).IsValid() {
		return ctx
	}
	ctx, sp := tracing.Tracer().Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("db.system", "postgresql"), attribute.String("db.statement", sql)))
	return context.WithValue(ctx, pgSpanKey{}, sp)
}

func (pgTracer) end(ctx context.Context, err error) {
	sp, ok := ctx.Value(pgSpanKey{}).(trace.Span)
	if !ok {
		return
	}
	if err != nil {
		sp.SetStatus(codes.Error, err.Error())
	}
	sp.End()
}

func (t pgTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	return t.start(ctx, "pg.query", data.SQL)
}

func (t pgTracer) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryEndData) {
	t.end(ctx, data.Err)
}

func (t pgTracer) TraceBatchStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceBatchStartData) context.Context {
	return t.start(ctx, "pg.batch", "")
}

func (pgTracer) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

func (t pgTracer) TraceBatchEnd(ctx context.Context, _ *pgx.Conn, data pgx.TraceBatchEndData) {
	t.end(ctx, data.Err)
}
