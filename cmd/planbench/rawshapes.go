package main

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The raw section (-only raw, issue 46) settles what planserver's
// PostgreSQL PUT is judged against. A ratio is only as honest as its
// baseline, and "raw pgx" can be written many ways: this section measures
// the ways a competent engineer would write the same durable work with
// pgx, side by side with PUT through one replica, every side once per
// round (compareAll), and reports PUT ÷ each. The fastest correct shape is
// the ceiling, and the postgres section's baseline (postgresBaseline).
//
// The durable work, the same in every correct shape: worker w owns the row
// plan-w; it reads the row's revision, checks it against the revision it
// last wrote (as If-Match does; a mismatch is errStale and fails the run),
// upserts 2 KiB with the next revision, and learns of success only after
// the commit, with synchronous_commit on, has flushed the WAL. Each op
// runs to its end even after the measuring deadline (context.WithoutCancel),
// so that a worker always knows its row's revision.

// errStale is a write whose revision check failed.
var errStale = errors.New("revision check failed: the row is not at the revision this worker last wrote")

// rawShape is one way to do the work above with pgx.
type rawShape struct {
	name string
	// diagnostic marks a shape measured to explain a figure, not to judge
	// planserver by: it does less than the work above, or does it in a way
	// no one would choose. It is never the baseline.
	diagnostic bool
	// shared: every worker writes the one row plan-0, unchecked.
	shared bool
	// conns is the pool's size: 0 as many connections as workers (-c),
	// -1 pgxpool's default (max(4, number of CPUs)).
	conns int
	// writers, for group commit, is how many connections commit the
	// batches; 0: each worker commits its own writes.
	writers int
	// set: a group committer sends a batch as one statement (setUpsert).
	set bool
	// op is one write of worker w through t.
	op func(ctx context.Context, t *rawTable, w int) error
}

// rawShapes are the shapes the raw section measures, in its table's order.
var rawShapes = []rawShape{
	{name: "raw pgx: BEGIN, read, upsert, COMMIT: 4 round trips", op: txnFour},
	{name: "raw pgx, plain client: pool.Begin, SELECT, upsert, Commit", op: plainClient},
	{name: "raw pgx: read + checked upsert pipelined, 1 round trip", op: pipelined},
	{name: "raw pgx: one checked upsert, autocommit, 1 round trip", op: oneStatement},
	{name: "raw pgx: group commit", writers: 1, op: groupCommit},
	{name: "raw pgx: group commit", writers: 4, op: groupCommit},
	{name: "raw pgx: group commit, one statement a batch", writers: 1, set: true, op: groupCommit},
	{name: "raw pgx, diagnostic: BEGIN, read, upsert, COMMIT on pgxpool's default pool", diagnostic: true, conns: -1, op: txnFour},
	{name: "raw pgx, diagnostic: BEGIN, read, upsert, COMMIT, every worker on one row", diagnostic: true, shared: true, op: oneRow},
}

// postgresBaseline is the index in rawShapes of the postgres section's
// baseline: the fastest correct shape on the 16-core machine the goals are
// set on, group commit with 4 committers (66,753 writes a second there;
// docs/benchmarks.md, "Which raw pgx"). On the 2-core VM the one-statement
// group commit on 1 connection was a little faster; the raw section's last
// note names the fastest of each run.
const postgresBaseline = 5

// rawTable is one shape's table and pool, and what each worker knows.
type rawTable struct {
	pool    *pgxpool.Pool
	content string
	revs    []int64 // the revision worker w last wrote to plan-w (0: none yet)
	// The statements, on this shape's table.
	read, upsert, checked, checkedSet string
	// queue carries the writes to the group committers (writers > 0).
	queue chan *pendingWrite
}

// pendingWrite is one write waiting for a group committer: done receives
// its outcome once the batch holding it has committed (or failed).
type pendingWrite struct {
	name   string
	expect int64
	rev    int64
	done   chan error
}

// open makes the shape's table and pool on the database dsn, for workers
// workers, and starts its group committers; the func stops them and closes
// the pool.
func (s rawShape) open(ctx context.Context, dsn, table string, workers int) (*rawTable, func(), error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, nil, err
	}
	switch {
	case s.writers > 0:
		cfg.MaxConns = int32(s.writers)
	case s.conns == 0:
		cfg.MaxConns = int32(workers)
	case s.conns > 0:
		cfg.MaxConns = int32(s.conns)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	if _, err := pool.Exec(ctx, `CREATE TABLE `+table+` (name TEXT COLLATE "C" PRIMARY KEY, revision BIGINT NOT NULL, content TEXT NOT NULL)`); err != nil {
		pool.Close()
		return nil, nil, err
	}
	t := &rawTable{
		pool:    pool,
		content: string(fixedDoc(2048)),
		revs:    make([]int64, workers),
		read:    `SELECT revision FROM ` + table + ` WHERE name = $1`,
		upsert: `INSERT INTO ` + table + ` (name, revision, content) VALUES ($1, $2, $3)
			ON CONFLICT (name) DO UPDATE SET revision = excluded.revision, content = excluded.content`,
		// The check and the write in one statement: the update happens only
		// where the row is at the expected revision (PostgreSQL evaluates
		// the WHERE on the row's latest version, under the row's lock), and
		// RETURNING says whether it did. A missing row is revision 0.
		checked: `INSERT INTO ` + table + ` AS t (name, revision, content) VALUES ($1, $2::bigint + 1, $3)
			ON CONFLICT (name) DO UPDATE SET revision = excluded.revision, content = excluded.content
			WHERE t.revision = $2 RETURNING revision`,
		// The same for many rows at once: $1 the names, $2 the expected
		// revisions, $3 the contents.
		checkedSet: `INSERT INTO ` + table + ` AS t (name, revision, content)
			SELECT name, expect + 1, content FROM unnest($1::text[], $2::bigint[], $3::text[]) AS w(name, expect, content)
			ON CONFLICT (name) DO UPDATE SET revision = excluded.revision, content = excluded.content
			WHERE t.revision = excluded.revision - 1 RETURNING name, revision`,
	}
	if s.writers == 0 {
		return t, pool.Close, nil
	}
	t.queue = make(chan *pendingWrite, workers)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range s.writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t.commitBatches(stop, s.set)
		}()
	}
	return t, func() { close(stop); wg.Wait(); pool.Close() }, nil
}

// side is the shape as a side of a comparison, driven by workers workers.
func (s rawShape) side(t *rawTable) side {
	name := fmt.Sprintf("%s, %d conns, %d workers", s.name, t.pool.Config().MaxConns, len(t.revs))
	if s.writers > 0 {
		name = fmt.Sprintf("%s, %d writer%s, %d workers", s.name, s.writers, plural(s.writers), len(t.revs))
	}
	return side{name: name, op: func(ctx context.Context, w, _ int) error {
		return s.op(context.WithoutCancel(ctx), t, w)
	}}
}

func rowName(w int) string { return fmt.Sprintf("plan-%d", w) }

// checkRevision is the If-Match of the read-then-write shapes.
func (t *rawTable) checkRevision(w int, rev int64) error {
	if rev != t.revs[w] {
		return fmt.Errorf("%s at revision %d, expected %d: %w", rowName(w), rev, t.revs[w], errStale)
	}
	return nil
}

// readRevision scans a revision read; a missing row is revision 0.
func readRevision(row pgx.Row) (int64, error) {
	var rev int64
	if err := row.Scan(&rev); err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return 0, err
	}
	return rev, nil
}

// txnFour is planbench's baseline until issue 46: one transaction of four
// round trips (BEGIN; the read; the upsert; COMMIT), on its own connection.
func txnFour(ctx context.Context, t *rawTable, w int) error {
	var rev int64
	err := pgx.BeginFunc(ctx, t.pool, func(tx pgx.Tx) error {
		var err error
		if rev, err = readRevision(tx.QueryRow(ctx, t.read, rowName(w))); err != nil {
			return err
		}
		if err := t.checkRevision(w, rev); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, t.upsert, rowName(w), rev+1, t.content)
		return err
	})
	if err == nil {
		t.revs[w] = rev + 1
	}
	return err
}

// plainClient is the same transaction as a client written from the
// issue's words would spell it: Begin, QueryRow, Exec, Commit, Rollback
// deferred. It sends what txnFour sends; the two rows measure how far
// identical work reads apart in one run.
func plainClient(ctx context.Context, t *rawTable, w int) error {
	tx, err := t.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx) //nolint:errcheck // after Commit, a no-op
	rev, err := readRevision(tx.QueryRow(ctx, t.read, rowName(w)))
	if err != nil {
		return err
	}
	if err := t.checkRevision(w, rev); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, t.upsert, rowName(w), rev+1, t.content); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return err
	}
	t.revs[w] = rev + 1
	return nil
}

// pipelined sends the read and the checked upsert as one pgx batch: one
// round trip, one implicit transaction that the batch's Sync commits, and
// Close returns once the server has answered that Sync, the commit flushed.
func pipelined(ctx context.Context, t *rawTable, w int) error {
	var batch pgx.Batch
	batch.Queue(t.read, rowName(w))
	batch.Queue(t.checked, rowName(w), t.revs[w], t.content)
	br := t.pool.SendBatch(ctx, &batch)
	rev, err := readRevision(br.QueryRow())
	var next int64
	if err == nil {
		err = br.QueryRow().Scan(&next)
		if errors.Is(err, pgx.ErrNoRows) {
			err = t.checkRevision(w, rev) // the upsert's check failed: say why
			if err == nil {
				err = fmt.Errorf("%s: the checked upsert wrote nothing at revision %d: %w", rowName(w), rev, errStale)
			}
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		t.revs[w] = next
	}
	return err
}

// oneStatement is the checked upsert alone, outside a transaction block:
// one round trip, committed (and flushed) before its answer comes back.
func oneStatement(ctx context.Context, t *rawTable, w int) error {
	var next int64
	err := t.pool.QueryRow(ctx, t.checked, rowName(w), t.revs[w], t.content).Scan(&next)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("%s not at revision %d: %w", rowName(w), t.revs[w], errStale)
	}
	if err == nil {
		t.revs[w] = next
	}
	return err
}

// groupCommit hands the write to the shape's group committers and waits
// until the batch holding it has committed: the shape of planserver's own
// keyed writer, without HTTP, JSON and an event log.
func groupCommit(ctx context.Context, t *rawTable, w int) error {
	p := &pendingWrite{name: rowName(w), expect: t.revs[w], done: make(chan error, 1)}
	t.queue <- p
	if err := <-p.done; err != nil {
		return err
	}
	t.revs[w] = p.rev
	return nil
}

// commitBatches is one group committer: it takes the first waiting write
// and every other write already waiting (but a second write of a row
// already in the batch, which waits for the next), and commits them in
// one round trip and one implicit transaction: as one pgx batch of checked
// upserts, or, set, as one checked upsert of all of them (setUpsert).
// Each write hears its outcome after the batch's Sync has been answered,
// that is after the commit has flushed. A write whose check fails writes
// nothing and fails alone; an error fails the batch.
func (t *rawTable) commitBatches(stop <-chan struct{}, set bool) {
	ctx := context.Background()
	conn, err := t.pool.Acquire(ctx)
	if err != nil {
		for {
			select {
			case p := <-t.queue:
				p.done <- err
			case <-stop:
				return
			}
		}
	}
	defer conn.Release()
	var next *pendingWrite // the write that waits for the next batch
	for {
		if next == nil {
			select {
			case next = <-t.queue:
			case <-stop:
				return
			}
		}
		batch := []*pendingWrite{next}
		rows := map[string]bool{next.name: true}
		next = nil
	gather:
		for len(batch) < cap(t.queue) {
			select {
			case p := <-t.queue:
				if rows[p.name] {
					next = p
					break gather
				}
				rows[p.name] = true
				batch = append(batch, p)
			default:
				break gather
			}
		}
		var errs []error
		if set {
			errs = t.setUpsert(ctx, conn, batch)
		} else {
			errs = t.upsertEach(ctx, conn, batch)
		}
		for i, p := range batch {
			p.done <- errs[i]
		}
	}
}

// upsertEach commits a batch as one checked upsert per write.
func (t *rawTable) upsertEach(ctx context.Context, conn *pgxpool.Conn, batch []*pendingWrite) []error {
	var b pgx.Batch
	for _, p := range batch {
		b.Queue(t.checked, p.name, p.expect, t.content)
	}
	br := conn.SendBatch(ctx, &b)
	errs := make([]error, len(batch))
	for i, p := range batch {
		errs[i] = br.QueryRow().Scan(&p.rev)
		if errors.Is(errs[i], pgx.ErrNoRows) {
			errs[i] = fmt.Errorf("%s not at revision %d: %w", p.name, p.expect, errStale)
		}
	}
	if err := br.Close(); err != nil {
		for i := range errs {
			errs[i] = err
		}
	}
	return errs
}

// setUpsert commits a batch as one statement: the checked upsert of every
// write's row, revision and content, passed as arrays. A row one statement
// may upsert only once, which commitBatches sees to; the rows it returns
// are the writes that passed their check.
func (t *rawTable) setUpsert(ctx context.Context, conn *pgxpool.Conn, batch []*pendingWrite) []error {
	names, expect, contents := make([]string, len(batch)), make([]int64, len(batch)), make([]string, len(batch))
	for i, p := range batch {
		names[i], expect[i], contents[i] = p.name, p.expect, t.content
	}
	errs := make([]error, len(batch))
	rows, err := conn.Query(ctx, t.checkedSet, names, expect, contents)
	if err == nil {
		done := make(map[string]int64, len(batch))
		var name string
		var rev int64
		_, err = pgx.ForEachRow(rows, []any{&name, &rev}, func() error { done[name] = rev; return nil })
		for i, p := range batch {
			rev, ok := done[p.name]
			if !ok {
				errs[i] = fmt.Errorf("%s not at revision %d: %w", p.name, p.expect, errStale)
			}
			p.rev = rev
		}
	}
	if err != nil {
		for i := range errs {
			errs[i] = err
		}
	}
	return errs
}

// oneRow is txnFour with every worker on the row plan-0 and no check
// (another worker has moved the row since this one wrote it): the
// workers queue on the row's lock, held from each upsert to the end of
// its commit's flush, and, reading without FOR UPDATE, lose updates. A
// diagnostic: a client that measured this would measure the lock.
func oneRow(ctx context.Context, t *rawTable, _ int) error {
	return pgx.BeginFunc(ctx, t.pool, func(tx pgx.Tx) error {
		rev, err := readRevision(tx.QueryRow(ctx, t.read, rowName(0)))
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, t.upsert, rowName(0), rev+1, t.content)
		return err
	})
}

// rawSection measures every raw shape and PUT through one replica in the
// same rounds, on databases of their own.
func (b *bench) rawSection(ctx context.Context, pg *pgBench) error {
	dsn, err := pg.database(ctx, "rawshapes")
	if err != nil {
		return err
	}
	var bases []side
	for k, s := range rawShapes {
		t, closeShape, err := s.open(ctx, dsn, fmt.Sprintf("plans_%d", k), b.o.concurrency)
		if err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		defer closeShape()
		bases = append(bases, s.side(t))
	}
	put, srvs, err := b.putOnReplicas(ctx, pg, "rawput", 1)
	if err != nil {
		return err
	}
	defer stopAll(srvs)
	first := len(b.rows)
	b.compareAll(ctx, put, bases)
	fastest := -1
	for k, s := range rawShapes {
		if s.diagnostic {
			continue
		}
		if fastest < 0 || figures(b.rows[first+k].base, rateOf).median > figures(b.rows[first+fastest].base, rateOf).median {
			fastest = k
		}
	}
	r := b.rows[first+fastest]
	b.notes = append(b.notes, fmt.Sprintf("raw: the fastest correct shape in this run is %q, %.0f req/s; PUT (1 replica) ÷ it %.2f. The postgres section's baseline is %q.",
		r.baseline, figures(r.base, rateOf).median, r.ratios().median, bases[postgresBaseline].name))
	return nil
}

// rawBaseline opens the postgres section's baseline on a database of its
// own.
func (b *bench) rawBaseline(ctx context.Context, pg *pgBench) (side, func(), error) {
	dsn, err := pg.database(ctx, "raw")
	if err != nil {
		return side{}, nil, err
	}
	s := rawShapes[postgresBaseline]
	t, closeShape, err := s.open(ctx, dsn, "plans", b.o.concurrency)
	if err != nil {
		return side{}, nil, err
	}
	return s.side(t), closeShape, nil
}
