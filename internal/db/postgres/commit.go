package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/planserver/planserver/internal/db"
	"github.com/planserver/planserver/internal/tracing"
)

// Group commit on PostgreSQL, in as few round trips as the guarantees
// allow. The batch is the same as on SQLite (internal/db/sqlite): whatever queued
// while the last commit ran, each write in a savepoint, one commit, nobody
// answered before it. What differs is how the statements travel. A round
// trip to the server costs far more than executing a planserver statement,
// and every one of them is paid while the write lock is held, so:
//
//   - A statement whose rows nobody reads (Tx.Exec) is not sent when it is
//     made: it waits in the pipeline and goes with the next statement that
//     must be answered, as one pgx batch (one round trip). BEGIN, the write
//     lock and the write's SAVEPOINT wait the same way, so the lock is taken
//     in the round trip of the batch's first read, not before it.
//   - A one-row read (Tx.QueryRow) is the last statement of that batch: what
//     was queued and the read cost one round trip together. A read of
//     several rows (Tx.Query) follows the batch in a round trip of its own.
//   - A write's last statements and its RELEASE are not sent when the write
//     ends: they go with the next write's SAVEPOINT and first statements,
//     or with the NOTIFY and the COMMIT after the batch's last write. A
//     write that reads once and then writes costs one round trip in a
//     batch, and two from BEGIN to COMMIT alone.
//   - A keyed write's first read, when it declares it, costs none in a
//     batch: the batch sends the declared reads with its BEGIN and locks
//     (ahead.go).
//   - When such a carried statement fails, nothing after it ran: the
//     pipeline undoes its write alone (ROLLBACK TO its savepoint, which
//     the RELEASE that did not run leaves in place) and sends again what
//     followed, so the write running now never sees the failure and no
//     write function runs twice (undoCarried). The failed write is told
//     its own error.
//   - A write that fails before anything of it reached the server costs no
//     round trip at all.
//
// Postgres aborts the transaction at a failed statement, so no write can
// go on after one of its statements failed: sending a statement later
// changes which call reports the failure (the next read, or the end of
// the write), never whether the write fails. Tx.Exec's result reads its
// row count by sending what is queued.

// pipeline is one batch's connection and the statements queued on it.
type pipeline struct {
	conn  *pgx.Conn
	ctx   context.Context
	queue []queued
	// err is the first statement failure since the last rollback, and
	// errOwner the write it belongs to (infra for the batch's own
	// statements: BEGIN, the lock, savepoints, NOTIFY, COMMIT).
	err      error
	errOwner int
	// owner is the write running now; flushes counts round trips.
	owner   int
	flushes int
	// lock: when the round trip that carried the write lock was sent and
	// came back.
	lockQueued         bool
	lockSent, lockedAt time.Time
	lockWaited         time.Duration
	// spans records the round trips for tracing (db.Span), when on;
	// committing marks the flush that carries the COMMIT.
	trace      bool
	spans      []db.Span
	committing bool
	// read is the read sent last, until its row is scanned (queryRow).
	read *pipelineRead
	// undo lets a round trip undo an earlier write of the batch whose
	// carried statement failed (every write has its savepoint); undone
	// lists those writes until the committer takes them (takeUndone).
	undo   bool
	undone []undoneWrite
	// keyed marks a batch of keyed writes; atEnd holds their statements
	// that run just before the commit (Tx.ExecAtEnd), each with its
	// write.
	keyed bool
	atEnd []queued
	// ahead holds, by write, the row of its first read when the batch
	// sent that read ahead (prefetch), until the write reads it or runs
	// any other statement first.
	ahead map[int]*aheadRead
}

// undoneWrite is a write of the batch undone after its end, and why.
type undoneWrite struct {
	owner int
	err   error
}

// infra owns the batch's own statements.
const infra = db.WholeBatch

type queued struct {
	sql   string
	args  []any
	owner int
	res   *pipeResult
	// atEnd marks a statement a keyed write queued for the end of its
	// batch (Tx.ExecAtEnd): its failure is the batch's, and it goes when
	// its write is undone.
	atEnd bool
}

// pipeResult is the sql.Result of a queued statement: its row count is
// known once the statement was sent.
type pipeResult struct {
	p    *pipeline
	tag  pgconn.CommandTag
	err  error
	sent bool
}

func (r *pipeResult) LastInsertId() (int64, error) {
	return 0, errors.New("LastInsertId is not supported on PostgreSQL: use RETURNING")
}

func (r *pipeResult) RowsAffected() (int64, error) {
	if !r.sent {
		if err := r.p.flush(); err != nil && !r.sent {
			return 0, db.Classify(err)
		}
	}
	if r.err != nil {
		return 0, db.Classify(r.err)
	}
	return r.tag.RowsAffected(), nil
}

// exec queues a statement of the write running now.
func (p *pipeline) exec(query string, args []any) sql.Result {
	res := &pipeResult{p: p}
	p.queue = append(p.queue, queued{sql: query, args: args, owner: p.owner, res: res})
	if isDDL(query) {
		// pgx prepares every statement of a batch before it runs any, so
		// a statement after this one in the same batch could not name
		// what it creates: it goes at once.
		_ = p.flush()
		p.flushes++
	}
	return res
}

// isDDL reports whether query changes the schema (tests and tools create
// tables inside writes; the stores never do).
func isDDL(query string) bool {
	q := strings.TrimLeft(query, " \t\r\n")
	for _, kw := range []string{"CREATE", "ALTER", "DROP"} {
		if len(q) >= len(kw) && strings.EqualFold(q[:len(kw)], kw) {
			return true
		}
	}
	return false
}

func (p *pipeline) queueInfra(query string, args ...any) {
	p.queue = append(p.queue, queued{sql: query, args: args, owner: infra})
}

// flush sends every queued statement in one round trip. After a failure
// the transaction is aborted until a rollback: what is queued then is
// dropped, and the failure is answered again.
func (p *pipeline) flush() error {
	_, err := p.send("", nil)
	return err
}

// queryRow sends what is queued and then query in one round trip, and
// answers query's row. A failure of what was queued leaves the
// transaction aborted, so the query fails too, and the write reports the
// first failure (engine.Commit); the query's own failure is the write's to
// report, as with a read of its own.
func (p *pipeline) queryRow(query string, args []any) *db.Row {
	read, err := p.send(query, args)
	if read == nil {
		return db.RowErr(err)
	}
	return db.RowOf(read)
}

// pipelineRead is the row of a read sent at the end of a batch. The
// connection answers nothing else until it is scanned or finished.
type pipelineRead struct {
	p      *pipeline
	br     pgx.BatchResults
	rows   pgx.Rows
	hasRow bool
}

// Scan scans the row; only while its write has not gone on.
func (r *pipelineRead) Scan(dest ...any) error {
	defer r.p.finishRead()
	switch {
	case r.p.read != r:
		return errors.New("a pipelined row was scanned after its write went on")
	case r.hasRow:
		return r.rows.Scan(dest...)
	case r.rows.Err() != nil:
		return r.rows.Err()
	default:
		return sql.ErrNoRows
	}
}

// finishRead ends a read whose row was not scanned, before the connection
// is used again.
func (p *pipeline) finishRead() {
	if r := p.read; r != nil {
		p.read = nil
		r.rows.Close()
		_ = r.br.Close() // the read's failure, if any, was its own to report
	}
}

// send sends every queued statement and then the read query, if any, in
// one round trip, and returns the read with its row received.
func (p *pipeline) send(query string, args []any) (*pipelineRead, error) {
	return p.roundTrip(nil, query, args)
}

// roundTrip is send, with the reads of ahead sent after what is queued
// and before query, and their rows received (prefetch).
func (p *pipeline) roundTrip(ahead []*aheadRead, query string, args []any) (*pipelineRead, error) {
	p.finishRead()
	if (len(p.queue) == 0 && len(ahead) == 0 && query == "") || p.err != nil {
		for _, q := range p.queue {
			if q.res != nil {
				q.res.err, q.res.sent = p.err, true
			}
		}
		p.queue = p.queue[:0]
		return nil, p.err
	}
	b := &pgx.Batch{QueuedQueries: make([]*pgx.QueuedQuery, 0, len(p.queue)+len(ahead)+1)}
	for _, q := range p.queue {
		b.Queue(q.sql, q.args...)
	}
	for _, a := range ahead {
		b.Queue(a.sql, a.args...)
	}
	if query != "" {
		b.Queue(query, args...)
	}
	start := time.Now()
	if p.lockQueued {
		p.lockSent = start
	}
	br := p.conn.SendBatch(p.ctx, b)
	for _, q := range p.queue {
		tag, err := br.Exec()
		if q.res != nil {
			q.res.tag, q.res.err, q.res.sent = tag, err, true
		}
		if err != nil && p.err == nil {
			p.err, p.errOwner = err, q.owner
			if q.atEnd {
				p.errOwner = infra
			}
		}
	}
	for _, a := range ahead {
		if err := a.receive(br); err != nil && p.err == nil {
			p.err, p.errOwner = err, infra
		}
	}
	var read *pipelineRead
	if query != "" {
		rows, _ := br.Query() // an error is also the rows' Err
		read = &pipelineRead{p: p, br: br, rows: rows}
		read.hasRow = rows.Next() // waits for the row: the round trip ends here
		p.read = read
	} else if err := br.Close(); err != nil && p.err == nil {
		p.err, p.errOwner = err, infra
	}
	end := time.Now()
	if p.trace {
		sp := db.Span{Name: "db.round_trip", Start: start, End: end, Statements: len(b.QueuedQueries), Owner: p.owner, Err: p.err}
		switch {
		case p.lockQueued:
			sp.Name, sp.Owner = "db.lock_wait", infra
		case p.committing:
			sp.Name, sp.Owner = "db.commit", infra
		}
		p.spans = append(p.spans, sp)
	}
	if p.lockQueued {
		p.lockQueued = false
		p.lockedAt = end
		p.lockWaited = end.Sub(start)
	}
	p.flushes++
	if p.err != nil && p.undo && p.errOwner >= 0 && p.errOwner != p.owner {
		return p.undoCarried(query, args)
	}
	p.queue = p.queue[:0]
	return read, p.err
}

// undoCarried undoes the write whose carried statement failed in the round
// trip just made, and sends again what was queued after that write's
// RELEASE, with the read query if any. The statements of a batch run in
// order and a failure aborts the rest, so nothing queued after the failed
// statement ran, and the innermost savepoint is the failed write's.
func (p *pipeline) undoCarried(query string, args []any) (*pipelineRead, error) {
	failed := undoneWrite{owner: p.errOwner, err: p.err}
	p.finishRead()
	cut := 0
	for i, q := range p.queue {
		if q.owner == failed.owner && !q.atEnd {
			cut = i + 2 // past the write's statements and its RELEASE
		}
	}
	var rest []queued
	for _, q := range p.queue[min(cut, len(p.queue)):] {
		if !q.atEnd || q.owner != failed.owner {
			rest = append(rest, q)
		}
	}
	p.queue, p.err = p.queue[:0], nil
	if err := p.undoSavepoint(); err != nil {
		p.err, p.errOwner = err, infra
		return nil, p.err
	}
	p.undone = append(p.undone, failed)
	p.queue = rest
	return p.send(query, args)
}

// execAtEnd queues a statement of the write running now for the end of
// the batch (Tx.ExecAtEnd).
func (p *pipeline) execAtEnd(query string, args []any) {
	p.atEnd = append(p.atEnd, queued{sql: query, args: args, owner: p.owner})
}

// dropAtEnd forgets what the write owner queued for the end of the
// batch: the write was undone.
func (p *pipeline) dropAtEnd(owner int) {
	kept := p.atEnd[:0]
	for _, q := range p.atEnd {
		if q.owner != owner {
			kept = append(kept, q)
		}
	}
	p.atEnd = kept
}

// lockKeys queues the locks a batch of keyed writes takes after BEGIN:
// the write lock shared, so that no other write runs beside it, then the
// lock of every key of the batch, exclusive, in ascending order.
//
// Every batch takes its keys' locks together, in one order, before any
// of its writes runs, so no two batches can each hold a lock the other
// waits for. The only other row every write changes is the event
// counter's (and commit_version's), which a keyed batch reaches at its
// end (Tx.ExecAtEnd), holding no lock that another batch waits for
// behind it: a batch that holds the counter waits for nothing but its
// commit. The counter, locked from a batch's first append to its commit,
// makes commits of batches that append follow seq order: each is visible
// before the next takes a seq. A batch that waits for the counter has
// run every statement but its appends; batches of other keys run beside
// it until they reach the counter too.
func (p *pipeline) lockKeys(batch []*db.Write) {
	keys := make([]int32, 0, len(batch))
	for _, w := range batch {
		keys = append(keys, w.Key())
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	p.keyed = true
	p.queueInfra(`SELECT pg_advisory_xact_lock_shared($1)`, writeLockKey)
	p.queueInfra(`SELECT count(pg_advisory_xact_lock($1::int4, k)) FROM unnest($2::int4[]) AS k`, keyLockSpace, keys)
}

// takeUndone returns the writes undone since the last call.
func (p *pipeline) takeUndone() []undoneWrite {
	u := p.undone
	p.undone = nil
	return u
}

// beforeRead sends what is queued ahead of a read, which then reaches the
// server too.
func (p *pipeline) beforeRead() error {
	err := p.flush()
	p.flushes++
	return err
}

// rollbackTo undoes the write running now (its savepoint), after dropping
// what of it was never sent. When something of it reached the server, the
// rollback goes at once: pgx would prepare the statements of a batch
// before running its ROLLBACK TO, and a transaction aborted by the failure
// refuses that.
func (p *pipeline) rollbackTo(flushesAtStart int) error {
	p.finishRead()
	if p.flushes == flushesAtStart {
		// Nothing of the write reached the server, not even its
		// savepoint, which was queued last before it ran.
		for len(p.queue) > 0 {
			last := p.queue[len(p.queue)-1]
			p.queue = p.queue[:len(p.queue)-1]
			if last.owner == infra {
				break // the SAVEPOINT
			}
		}
		return nil
	}
	p.queue = p.queue[:0] // all the write's own: its flush took the rest
	p.err = nil
	return p.undoSavepoint()
}

// undoSavepoint rolls back to the innermost savepoint and releases it, in
// a round trip of its own.
func (p *pipeline) undoSavepoint() error {
	p.flushes++
	_, err := p.conn.PgConn().Exec(p.ctx, `ROLLBACK TO w; RELEASE w`).ReadAll()
	return err
}

// rollback ends the transaction, whatever state it is in.
func (p *pipeline) rollback() {
	p.finishRead()
	p.queue = p.queue[:0]
	if p.conn.PgConn().TxStatus() != 'I' {
		_, _ = p.conn.Exec(p.ctx, `ROLLBACK`)
		p.flushes++
	}
}

// lockStats accumulates the write lock's hold and wait times
// (WriteStats).
type lockStats struct {
	// trips counts the round trips of write transactions.
	trips     atomic.Int64
	commits   atomic.Int64
	writes    atomic.Int64
	heldNanos atomic.Int64
	waitNanos atomic.Int64
}

// WriteStats reports the round trips of write transactions, and how many
// commits took the write lock, how many writes they committed, and how
// long they held it and waited for it in total (DB.LockStats).
func (e *engine) WriteStats() db.WriteStats {
	return db.WriteStats{RoundTrips: e.locks.trips.Load(), LockCommits: e.locks.commits.Load(), LockWrites: e.locks.writes.Load(),
		LockHeld: time.Duration(e.locks.heldNanos.Load()), LockWaited: time.Duration(e.locks.waitNanos.Load())}
}

// pipeStatements are a write's statements on the batch's pipeline
// (db.Statements): conn is the writer's connection, for reads of several
// rows, which go through database/sql after what is queued.
type pipeStatements struct {
	e    *engine
	p    *pipeline
	conn *sql.Conn
}

func (s *pipeStatements) Exec(_ context.Context, query string, args []any) (sql.Result, error) {
	return s.p.exec(s.e.Rebind(query), args), nil
}

func (s *pipeStatements) ExecAtEnd(ctx context.Context, query string, args []any) error {
	if s.p.keyed {
		s.p.execAtEnd(s.e.Rebind(query), args)
		return nil
	}
	_, err := s.Exec(ctx, query, args)
	return err
}

func (s *pipeStatements) Query(ctx context.Context, query string, args []any) (*sql.Rows, error) {
	if err := s.p.beforeRead(); err != nil {
		return nil, err
	}
	return s.conn.QueryContext(ctx, s.e.Rebind(query), args...)
}

func (s *pipeStatements) QueryRow(_ context.Context, query string, args []any) *db.Row {
	return s.p.queryRow(s.e.Rebind(query), args)
}

// Commit runs a batch in one PostgreSQL transaction, its statements in as
// few round trips as the guarantees allow (the pipeline above).
func (e *engine) Commit(b *db.Batch) {
	ctx := context.Background()
	failAll := func(err error) {
		err = b.Failed(err)
		for _, w := range b.Writes {
			if w.Err == nil {
				w.Err = err
			}
		}
	}
	conn, err := e.writer.Conn(ctx)
	if err != nil {
		failAll(fmt.Errorf("begin write: %w", db.Classify(err)))
		return
	}
	defer conn.Close()
	p := &pipeline{ctx: ctx, trace: tracing.Enabled()}
	defer func() { b.Trace(p.spans) }()
	defer func() { e.locks.trips.Add(int64(p.flushes)) }()
	if err := conn.Raw(func(dc any) error {
		sc, ok := dc.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("writer connection is %T, not pgx's", dc)
		}
		p.conn = sc.Conn()
		return nil
	}); err != nil {
		failAll(fmt.Errorf("begin write: %w", err))
		return
	}
	// The pgx connection is used after Raw returns: conn stays checked
	// out until this batch ends, and this goroutine is its only user.
	begin := func() {
		p.queueInfra(`BEGIN`)
		if b.Keyed {
			p.lockKeys(b.Writes)
		} else {
			p.queueInfra(`SELECT pg_advisory_xact_lock($1)`, writeLockKey)
		}
		p.lockQueued = true
	}
	begin()

	alone := len(b.Writes) == 1
	p.undo = !alone
	succeeded, last := 0, -1
	// settleUndone fails the writes a round trip undone after their end.
	settleUndone := func() {
		for _, u := range p.takeUndone() {
			p.dropAtEnd(u.owner)
			w := b.Writes[u.owner]
			w.Err = db.Classify(u.err)
			b.SawError(w.Err)
			succeeded--
		}
	}
	for i, w := range b.Writes {
		if err := w.Context().Err(); err != nil {
			w.Err = err // gave up while queued; nothing of it ran
			continue
		}
		last = i
	}
	if b.Keyed && !alone {
		if err := p.prefetch(b.Writes, e.Rebind); err != nil {
			// A read sent ahead failed, and the transaction with it
			// (or BEGIN or a lock did, which fails again below): begin
			// again, each write reading for itself.
			p.rollback()
			p.err, p.ahead = nil, nil
			begin()
		}
	}
	st := &pipeStatements{e: e, p: p, conn: conn}
	for i := 0; i < len(b.Writes); i++ {
		w := b.Writes[i]
		if w.Err != nil {
			continue
		}
		p.owner = i
		if !alone {
			p.queueInfra(`SAVEPOINT w`)
		}
		start := p.flushes
		werr := w.RunOn(st, p.takeAhead())
		settleUndone()
		if werr == nil && p.err == nil && !alone {
			// Its statements still queued go with the next round trip
			// (undoCarried if one fails).
			p.queueInfra(`RELEASE w`)
			if i == last && !b.Keyed {
				// A keyed batch took its keys' locks at its start, and
				// no others (lockKeys).
				last = takeQueued(b, last)
			}
		}
		if p.err != nil {
			if p.errOwner != i {
				// The batch's own statement failed (BEGIN, the lock, a
				// savepoint): nothing of the batch can commit.
				abortPipelined(p, b, fmt.Errorf("write transaction: %w", db.Classify(p.err)))
				return
			}
			werr = db.Classify(p.err) // the write's own statement: its failure
		}
		if werr != nil {
			w.Err = werr
			p.dropAtEnd(i)
			if alone {
				if p.flushes > 0 {
					p.rollback()
				}
				b.SawError(werr)
				return
			}
			if err := p.rollbackTo(start); err != nil {
				abortPipelined(p, b, fmt.Errorf("roll back to savepoint: %w", db.Classify(err)))
				return
			}
			continue
		}
		succeeded++
	}
	p.owner = infra
	if succeeded == 0 {
		if p.flushes > 0 {
			p.rollback()
		}
		return
	}
	// In the commit's transaction, so that the commit version moves
	// exactly when the commit becomes visible (DB.Version). A write of a
	// batch whose statements sent here fail is undone alone and the rest
	// sent again (undoCarried).
	for _, q := range p.atEnd {
		q.atEnd = true
		p.queue = append(p.queue, q)
	}
	p.queueInfra(`UPDATE commit_version SET version = version + 1 WHERE id = 1`)
	p.queueInfra(`SELECT pg_notify($1, $2)`, notifyChannel, e.id)
	p.queueInfra(`COMMIT`)
	p.committing = true
	err = p.flush()
	p.committing = false
	settleUndone()
	if err != nil && alone && p.errOwner == last {
		// The write's own statement, sent with the commit, failed; the
		// COMMIT never ran.
		w := b.Writes[last]
		w.Err = db.Classify(err)
		b.SawError(w.Err)
		p.rollback()
		return
	}
	committed := time.Now()
	if !p.lockedAt.IsZero() {
		e.locks.commits.Add(1)
		e.locks.heldNanos.Add(int64(committed.Sub(p.lockedAt)))
		e.locks.waitNanos.Add(int64(p.lockWaited))
	}
	if err != nil {
		p.rollback()
		failAll(fmt.Errorf("commit: %w", db.Classify(err)))
		return
	}
	e.locks.writes.Add(int64(succeeded))
	b.Committed()
}

// takeQueued adds to a batch the writes that queued while it ran (up to
// the largest batch), as if they had been queued before it began: they
// run after every write of it, in queue order. On PostgreSQL a batch
// spends most of its time waiting for the write lock and in round trips,
// during which this replica's writers queue again; taking them in makes
// fewer, larger commits, each paying the lock's hand-over and the
// commit's fsync once, where they would otherwise wait for the next batch
// and the lock once more. last is the index of the batch's last write
// that runs; the returned one counts the writes taken in. A batch of one
// write runs without a savepoint and takes none in.
func takeQueued(b *db.Batch, last int) int {
	n := b.TakeQueued()
	for i := len(b.Writes) - n; i < len(b.Writes); i++ {
		if b.Writes[i].Err = b.Writes[i].Context().Err(); b.Writes[i].Err == nil {
			last = i
		}
	}
	return last
}

// abortPipelined rolls back a batch that cannot go on and fails every
// write of it that had not failed already with cause.
func abortPipelined(p *pipeline, b *db.Batch, cause error) {
	p.rollback()
	cause = b.Failed(cause)
	for _, w := range b.Writes {
		if w.Err == nil {
			w.Err = cause
		}
	}
}
