package sqlite

import (
	"container/list"
	"context"
	"database/sql/driver"
	"errors"
	"strings"

	msqlite "modernc.org/sqlite"
)

// Profiling (docs/benchmarks.md) showed a third of a plan write's CPU and a
// fifth of a read's in SQLite's parser: database/sql prepares every query
// anew, and the stores run the same few dozen statements all day. The
// connector below keeps each connection's prepared statements, keyed by SQL
// text, and reuses them, so a statement is parsed once per connection.
// Nothing above this file changes: stores still pass SQL text.

// maxCachedStatements bounds each connection's cache. Queries built from
// filters have a few variants each, so the stores' statements fit; when a
// client's filters make more, the least recently used statement that is
// not in use is finalized to make room, so no client can fill the cache
// and turn it off for everyone else.
const maxCachedStatements = 256

// connector opens modernc.org/sqlite connections wrapped in a statement
// cache.
type connector struct {
	inner driver.Connector
	// begin is the statement that starts a read-write transaction: BEGIN
	// IMMEDIATE on the writer (_txlock=immediate), BEGIN elsewhere.
	begin string
}

// newConnector returns a caching connector for a modernc.org/sqlite DSN.
func newConnector(dsn string) (driver.Connector, error) {
	inner, err := msqlite.NewConnector(dsn)
	if err != nil {
		return nil, err
	}
	begin := "BEGIN"
	if strings.Contains(dsn, "_txlock=immediate") {
		begin = "BEGIN IMMEDIATE"
	}
	return &connector{inner: inner, begin: begin}, nil
}

func (c *connector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &cachingConn{Conn: conn, stmts: map[string]*cachedStmt{}, lru: list.New(), begin: c.begin}, nil
}

func (c *connector) Driver() driver.Driver { return c.inner.Driver() }

// cachedStmt is one prepared statement and whether a result set of it is
// still open (then the statement cannot be reused until it is closed).
type cachedStmt struct {
	stmt  driver.Stmt
	busy  bool
	query string
	// use is the statement's place in its connection's LRU list.
	use *list.Element
}

// cachingConn is a modernc.org/sqlite connection that reuses prepared
// statements. A connection is used by one goroutine at a time
// (database/sql guarantees it), so the cache needs no lock.
type cachingConn struct {
	driver.Conn
	stmts map[string]*cachedStmt
	// lru orders the cached statements, most recently used first.
	lru *list.List
	// begin starts a read-write transaction (see connector).
	begin string
}

// interfaces database/sql looks for on a driver connection; the wrapper
// must offer every one the wrapped connection does.
var (
	_ driver.ConnBeginTx        = (*cachingConn)(nil)
	_ driver.ConnPrepareContext = (*cachingConn)(nil)
	_ driver.ExecerContext      = (*cachingConn)(nil)
	_ driver.QueryerContext     = (*cachingConn)(nil)
	_ driver.Pinger             = (*cachingConn)(nil)
	_ driver.SessionResetter    = (*cachingConn)(nil)
	_ driver.Validator          = (*cachingConn)(nil)
)

// statement returns the cached statement for query, preparing it on first
// use; nil when it is in use by an open result set or cannot be cached.
func (c *cachingConn) statement(ctx context.Context, query string) *cachedStmt {
	if s, ok := c.stmts[query]; ok {
		if s.busy {
			return nil
		}
		c.lru.MoveToFront(s.use)
		return s
	}
	if len(c.stmts) >= maxCachedStatements && !c.evict() {
		return nil // every cached statement is in use
	}
	st, err := c.Conn.(driver.ConnPrepareContext).PrepareContext(ctx, query)
	if err != nil {
		return nil // the uncached path reports the error
	}
	s := &cachedStmt{stmt: st, query: query}
	s.use = c.lru.PushFront(s)
	c.stmts[query] = s
	return s
}

// evict finalizes the least recently used statement that no open result
// set holds, and reports whether there was one.
func (c *cachingConn) evict() bool {
	for e := c.lru.Back(); e != nil; e = e.Prev() {
		s := e.Value.(*cachedStmt)
		if s.busy {
			continue
		}
		c.lru.Remove(e)
		delete(c.stmts, s.query)
		_ = s.stmt.Close()
		return true
	}
	return false
}

func (c *cachingConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	s := c.statement(ctx, query)
	if s == nil {
		return c.Conn.(driver.QueryerContext).QueryContext(ctx, query, args)
	}
	rows, err := s.stmt.(driver.StmtQueryContext).QueryContext(ctx, args)
	if err != nil {
		return nil, err
	}
	s.busy = true
	return &cachedRows{Rows: rows, stmt: s}, nil
}

func (c *cachingConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	s := c.statement(ctx, query)
	if s == nil {
		return c.Conn.(driver.ExecerContext).ExecContext(ctx, query, args)
	}
	return s.stmt.(driver.StmtExecContext).ExecContext(ctx, args)
}

func (c *cachingConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	return c.Conn.(driver.ConnPrepareContext).PrepareContext(ctx, query)
}

// BeginTx starts a transaction with cached BEGIN, COMMIT and ROLLBACK
// statements: every request's read opens and ends a transaction, and
// profiling showed preparing those three statements anew each time cost a
// tenth of a read. They run under a context of their own: a BEGIN that
// took effect must reach database/sql as a transaction even if the
// caller gave up meanwhile (database/sql then rolls it back), and a
// ROLLBACK must run whatever the caller's context says.
func (c *cachingConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	begin := c.begin
	if opts.ReadOnly {
		begin = "BEGIN"
	}
	if _, err := c.ExecContext(context.Background(), begin, nil); err != nil {
		return nil, err
	}
	return cachedTx{c}, nil
}

// cachedTx ends a transaction begun by cachingConn.BeginTx.
type cachedTx struct{ c *cachingConn }

func (t cachedTx) Commit() error {
	_, err := t.c.ExecContext(context.Background(), "COMMIT", nil)
	if err != nil {
		// A COMMIT that failed (a full disk, say) may leave the
		// transaction open; database/sql expects it ended. A ROLLBACK
		// of a transaction SQLite already rolled back fails harmlessly.
		_, _ = t.c.ExecContext(context.Background(), "ROLLBACK", nil)
	}
	return err
}

func (t cachedTx) Rollback() error {
	_, err := t.c.ExecContext(context.Background(), "ROLLBACK", nil)
	return err
}

func (c *cachingConn) Ping(ctx context.Context) error { return c.Conn.(driver.Pinger).Ping(ctx) }

func (c *cachingConn) ResetSession(ctx context.Context) error {
	return c.Conn.(driver.SessionResetter).ResetSession(ctx)
}

func (c *cachingConn) IsValid() bool { return c.Conn.(driver.Validator).IsValid() }

// Close finalizes every cached statement, then closes the connection.
func (c *cachingConn) Close() error {
	var errs []error
	for q, s := range c.stmts {
		errs = append(errs, s.stmt.Close())
		delete(c.stmts, q)
	}
	c.lru.Init()
	return errors.Join(append(errs, c.Conn.Close())...)
}

// cachedRows releases its statement for reuse when closed.
type cachedRows struct {
	driver.Rows
	stmt *cachedStmt
}

func (r *cachedRows) Close() error {
	err := r.Rows.Close()
	r.stmt.busy = false
	return err
}
