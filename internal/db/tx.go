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
	// A transaction's statements run one by one through database/sql on
	// r, rebound by eng, unless its engine runs them its own way (st).
	r   Runner
	eng Engine
	st  Statements
	now time.Time
	ctx context.Context
}

// Runner is what database/sql runs statements on: a *sql.Tx, a *sql.Conn.
type Runner interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Statements runs a write's statements where its engine does not send
// each one when it is made (PostgreSQL's pipeline sends several in one
// round trip). Its statements have ? placeholders: it rebinds them
// itself. A statement's failure may be reported later than the call that
// made it (by a later call, or as the write's outcome), never lost: the
// write fails either way.
type Statements interface {
	// Exec runs a statement that returns no rows.
	Exec(ctx context.Context, query string, args []any) (sql.Result, error)
	// ExecAtEnd runs a statement that nothing in the write reads back
	// (Tx.ExecAtEnd), possibly after every write of the batch.
	ExecAtEnd(ctx context.Context, query string, args []any) error
	// Query runs a statement that returns rows.
	Query(ctx context.Context, query string, args []any) (*sql.Rows, error)
	// QueryRow runs a statement that returns at most one row.
	QueryRow(ctx context.Context, query string, args []any) *Row
}

// Now is the transaction's clock: the one time it writes and decides by.
func (t *Tx) Now() time.Time { return t.now }

// NowText is Now in TimeFormat, as stored.
func (t *Tx) NowText() string { return FormatTime(t.now) }

// Context is the context the transaction's statements run under.
func (t *Tx) Context() context.Context { return t.ctx }

// Exec runs a statement that returns no rows. Its engine may send it
// later, with the next statement whose answer the write needs
// (Statements): its failure is then reported by the next Query or
// QueryRow, by its result's RowsAffected, or as the write's own outcome,
// and the write fails either way.
func (t *Tx) Exec(query string, args ...any) (sql.Result, error) {
	if t.st != nil {
		res, err := t.st.Exec(t.ctx, query, args)
		return res, Classify(err)
	}
	res, err := t.r.ExecContext(t.ctx, t.eng.Rebind(query), args...)
	return res, Classify(err)
}

// ExecAtEnd runs a statement that returns no rows and that nothing in the
// write reads back: an event's append. In a keyed write (DB.WriteKeyed)
// an engine that runs keyed batches beside each other runs it after
// every write of the batch, just before the commit, in the order queued,
// and its failure fails the whole batch: the event counter's row, which
// every append locks until the commit, is then held by one batch at a
// time for the shortest while, so batches of other keys run beside it
// until their own end. Anywhere else it is Exec.
func (t *Tx) ExecAtEnd(query string, args ...any) error {
	if t.st != nil {
		return Classify(t.st.ExecAtEnd(t.ctx, query, args))
	}
	_, err := t.Exec(query, args...)
	return err
}

// Query runs a statement that returns rows.
func (t *Tx) Query(query string, args ...any) (*sql.Rows, error) {
	if t.st != nil {
		rows, err := t.st.Query(t.ctx, query, args)
		return rows, Classify(err)
	}
	rows, err := t.r.QueryContext(t.ctx, t.eng.Rebind(query), args...)
	return rows, Classify(err)
}

// QueryRow runs a statement that returns at most one row. Its engine may
// send it together with the statements made before it, in one round trip
// (Statements).
func (t *Tx) QueryRow(query string, args ...any) *Row {
	if t.st != nil {
		return t.st.QueryRow(t.ctx, query, args)
	}
	return &Row{s: t.r.QueryRowContext(t.ctx, t.eng.Rebind(query), args...)}
}

// Row is the answer of QueryRow: at most one row, scanned once, as with
// *sql.Row. An engine may answer it with a row of its own (RowOf): a row
// that came back in PostgreSQL's pipeline is scanned by pgx, whose
// conversions differ from database/sql's in places (scan a column into a
// Go type its PostgreSQL type maps to); the PostgreSQL suite runs every
// write through it.
type Row struct {
	s   Scanner
	err error
}

// Scanner is a row an engine answers QueryRow with (*sql.Row is one).
// Scan answers sql.ErrNoRows when the statement answered no row.
type Scanner interface {
	Scan(dest ...any) error
}

// RowOf returns the Row that s scans.
func RowOf(s Scanner) *Row { return &Row{s: s} }

// RowErr returns a Row whose Scan answers err: its statement failed.
func RowErr(err error) *Row { return &Row{err: err} }

// Scan copies the row's columns into dest; sql.ErrNoRows when the
// statement answered no row.
func (r *Row) Scan(dest ...any) error {
	if r.s != nil {
		return r.s.Scan(dest...)
	}
	return r.err
}
