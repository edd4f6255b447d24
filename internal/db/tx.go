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
	tx  *sql.Tx
	eng engine
	now time.Time
	ctx context.Context
}

// Now is the transaction's clock: the one time it writes and decides by.
func (t *Tx) Now() time.Time { return t.now }

// NowText is Now in TimeFormat, as stored.
func (t *Tx) NowText() string { return FormatTime(t.now) }

// Context is the context the transaction's statements run under.
func (t *Tx) Context() context.Context { return t.ctx }

// Exec runs a statement that returns no rows.
func (t *Tx) Exec(query string, args ...any) (sql.Result, error) {
	res, err := t.tx.ExecContext(t.ctx, t.eng.rebind(query), args...)
	return res, Classify(err)
}

// Query runs a statement that returns rows.
func (t *Tx) Query(query string, args ...any) (*sql.Rows, error) {
	rows, err := t.tx.QueryContext(t.ctx, t.eng.rebind(query), args...)
	return rows, Classify(err)
}

// QueryRow runs a statement that returns at most one row.
func (t *Tx) QueryRow(query string, args ...any) *sql.Row {
	return t.tx.QueryRowContext(t.ctx, t.eng.rebind(query), args...)
}
