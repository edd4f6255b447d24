package db

import (
	"context"
	"database/sql"
	"time"
)

// Tx is one transaction: a write transaction (in its own savepoint when it
// shares a commit) or a read of one snapshot. It carries its context and
// its clock, so every statement in it runs under the same context and
// every timestamp it writes is the same instant.
type Tx struct {
	tx  runner
	eng engine
	now time.Time
	ctx context.Context
	// pipe, on a PostgreSQL write, holds the statements whose rows nobody
	// reads until the next round trip (pgcommit.go).
	pipe *pipeline
}

// runner is what a transaction's statements run on: a *sql.Tx, or on
// PostgreSQL the writer's connection, whose transaction the pipeline
// begins and ends.
type runner interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Now is the transaction's clock: the one time it writes and decides by.
func (t *Tx) Now() time.Time { return t.now }

// NowText is Now in TimeFormat, as stored.
func (t *Tx) NowText() string { return FormatTime(t.now) }

// Context is the context the transaction's statements run under.
func (t *Tx) Context() context.Context { return t.ctx }

// Exec runs a statement that returns no rows. In a PostgreSQL write it
// is sent with the next round trip: its failure is reported by the next
// Query or QueryRow, by its result's RowsAffected, or as the write's own
// outcome, and the write fails either way.
func (t *Tx) Exec(query string, args ...any) (sql.Result, error) {
	if t.pipe != nil {
		return t.pipe.exec(t.eng.rebind(query), args), nil
	}
	res, err := t.tx.ExecContext(t.ctx, t.eng.rebind(query), args...)
	return res, Classify(err)
}

// ExecAtEnd runs a statement that returns no rows and that nothing in the
// write reads back: an event's append. In a PostgreSQL keyed write
// (DB.WriteKeyed) it runs after every write of the batch, just before the
// commit, in the order queued, and its failure fails the whole batch:
// the event counter's row, which every append locks until the commit, is
// then held by one batch at a time for the shortest while, so batches
// of other keys run beside it until their own end. Anywhere else it is
// Exec.
func (t *Tx) ExecAtEnd(query string, args ...any) error {
	if t.pipe != nil && t.pipe.keyed {
		t.pipe.execAtEnd(t.eng.rebind(query), args)
		return nil
	}
	_, err := t.Exec(query, args...)
	return err
}

// Query runs a statement that returns rows.
func (t *Tx) Query(query string, args ...any) (*sql.Rows, error) {
	if t.pipe != nil {
		if err := t.pipe.beforeRead(); err != nil {
			return nil, Classify(err)
		}
	}
	rows, err := t.tx.QueryContext(t.ctx, t.eng.rebind(query), args...)
	return rows, Classify(err)
}

// QueryRow runs a statement that returns at most one row. In a
// PostgreSQL write it travels with the statements queued before it, in
// one round trip (pipeline.queryRow).
func (t *Tx) QueryRow(query string, args ...any) *Row {
	if t.pipe != nil {
		return t.pipe.queryRow(t.eng.rebind(query), args)
	}
	return &Row{sql: t.tx.QueryRowContext(t.ctx, t.eng.rebind(query), args...)}
}

// Row is the answer of QueryRow: at most one row, scanned once, as with
// *sql.Row. A row that came back in a PostgreSQL write's pipeline is
// scanned by pgx, whose conversions differ from database/sql's in places
// (scan a column into a Go type its PostgreSQL type maps to); the
// PostgreSQL suite runs every write through it.
type Row struct {
	sql *sql.Row
	// read is a row that came back in a write's pipeline; ahead, one
	// its batch read before the write ran (pgahead.go).
	read  *pipelineRead
	ahead *aheadRead
	err   error
}

// Scan copies the row's columns into dest; sql.ErrNoRows when the
// statement answered no row.
func (r *Row) Scan(dest ...any) error {
	switch {
	case r.sql != nil:
		return r.sql.Scan(dest...)
	case r.read != nil:
		return r.read.scan(dest)
	case r.ahead != nil:
		return r.ahead.scan(dest)
	default:
		return r.err
	}
}
