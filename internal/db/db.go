// Package db is planserver's storage core. It opens the database, hands
// out the two kinds of transaction every store uses — write transactions,
// serialized and grouped into shared commits (Write), and reads of one
// consistent snapshot (Read) — carries each transaction's clock, says
// which errors are storage faults (Fault: a full disk, a database that
// cannot serve), migrates the schema, and copies a database between
// engines. It speaks no API: the transports give a fault its answer
// (internal/apierr).
//
// Each engine is a driver of its own (Driver, Engine: internal/db/sqlite,
// internal/db/postgres), commit strategy included; nothing here or above
// it asks which one runs. Stores write portable SQL with ? placeholders,
// which the engine adapts.
package db

import (
	"context"
	"database/sql"
	"fmt"
	"hash/fnv"
	"sync"
	"time"
)

// Durability selects how hard a commit is pushed to disk on SQLite. On
// PostgreSQL the server's own settings (synchronous_commit) decide.
type Durability string

// Durability levels: normal may lose the last transactions on power loss
// (never on a process crash, thanks to WAL); full fsyncs every commit.
const (
	DurabilityNormal Durability = "normal"
	DurabilityFull   Durability = "full"
)

// ParseDurability validates a --durability value.
func ParseDurability(s string) (Durability, error) {
	switch Durability(s) {
	case DurabilityNormal, DurabilityFull:
		return Durability(s), nil
	}
	return "", fmt.Errorf("durability %q: want normal or full", s)
}

// TimeFormat is how every timestamp is stored and served: RFC 3339, UTC,
// milliseconds. Fixed width, so text order is time order.
const TimeFormat = "2006-01-02T15:04:05.000Z"

// FormatTime formats t in TimeFormat.
func FormatTime(t time.Time) string { return t.UTC().Format(TimeFormat) }

// Options tune Open.
type Options struct {
	// Durability is SQLite's synchronous setting; normal when empty.
	Durability Durability
	// Clock is the time every transaction reads (Tx.Now); when nil,
	// time.Now on SQLite and the database server's clock on PostgreSQL
	// (so every replica judges time alike). Tests move it forward instead
	// of sleeping.
	Clock func() time.Time
	// MaxBatch bounds how many write transactions share one commit;
	// DefaultMaxBatch when 0, 1 turns group commit off.
	MaxBatch int
	// KeyedWriters is how many connections run keyed writes (WriteKeyed)
	// at once on PostgreSQL, each its own batches; DefaultKeyedWriters
	// when 0. SQLite has one writer for every write.
	KeyedWriters int
}

// DefaultKeyedWriters is how many batches of keyed writes a PostgreSQL
// replica runs at once. Measured on 16 cores (docs/benchmarks.md, "The
// 16-core verdict"), two writers made one replica's PUTs 1.6 to 1.8 times
// as fast and two replicas' 1.4 times, and three replicas' 0.87 to 0.92
// times; the 2-core VM agreed (one replica 1.25 to 1.31 times, three
// 0.85 to 0.94). The common deployments gain, and one with three or more
// replicas on a busy database can say --pg-writers 1.
const DefaultKeyedWriters = 2

// DefaultMaxBatch is the largest group of write transactions committed
// together: enough to amortize a commit's fsync under load, small enough
// that one batch never holds its first writer long.
const DefaultMaxBatch = 64

// DB is an open planserver database.
type DB struct {
	// Path is the database's DSN fit for messages: a SQLite file, or a
	// PostgreSQL URL without its password (Redact).
	Path string

	eng Engine
	// reader is eng's read pool, kept at hand for every read.
	reader *sql.DB

	clockMu sync.RWMutex
	clock   func() time.Time

	hooksMu sync.Mutex
	hooks   []func()

	commits *committer
	// keyed runs WriteKeyed's writes where the engine runs them beside
	// the others (Engine.KeyedWriters); nil elsewhere, where commits runs
	// them.
	keyed     *committer
	health    health
	closeOnce sync.Once
}

// Open opens the database dsn with the driver that accepts it (a
// postgres:// or postgresql:// URL is PostgreSQL's, anything else a
// SQLite file, created if needed; the program links the drivers in). It
// does not migrate.
func Open(ctx context.Context, dsn string, opt Options) (*DB, error) {
	if opt.Durability == "" {
		opt.Durability = DurabilityNormal
	}
	if opt.MaxBatch <= 0 {
		opt.MaxBatch = DefaultMaxBatch
	}
	if opt.KeyedWriters <= 0 {
		opt.KeyedWriters = DefaultKeyedWriters
	}
	drv := driverFor(dsn)
	if drv == nil {
		return nil, fmt.Errorf("open %s: no database driver is linked into this program", dsn)
	}
	db := &DB{Path: drv.Redact(dsn), clock: opt.Clock}
	eng, err := drv.Open(ctx, dsn, Config{Durability: opt.Durability, KeyedWriters: opt.KeyedWriters, Committed: db.committed})
	if err != nil {
		return nil, err
	}
	db.eng, db.reader = eng, eng.Reader()
	if db.clock == nil {
		db.clock = eng.Clock()
	}
	if n := eng.KeyedWriters(); n > 0 {
		db.keyed = newCommitter(db, opt.MaxBatch, n, true)
	}
	db.commits = newCommitter(db, opt.MaxBatch, 1, false)
	return db, nil
}

// Engine returns the engine under db, for its driver's own tests.
func (db *DB) Engine() Engine { return db.eng }

// Close stops accepting writes, finishes the ones queued, and closes both
// pools. It is safe to call more than once.
func (db *DB) Close() error {
	var err error
	db.closeOnce.Do(func() {
		db.commits.stop()
		if db.keyed != nil {
			db.keyed.stop()
		}
		err = db.eng.Close()
	})
	return err
}

// SetClock replaces the clock transactions read. Tests call it before any
// request is served.
func (db *DB) SetClock(now func() time.Time) {
	db.clockMu.Lock()
	defer db.clockMu.Unlock()
	db.clock = now
}

// Now reads the database's clock: the time of a read that needs one (which
// steps are ready, which leases ran out).
func (db *DB) Now() time.Time {
	db.clockMu.RLock()
	defer db.clockMu.RUnlock()
	return db.clock()
}

// OnCommit registers fn to run after every commit that changed something,
// e.g. to wake event subscribers. fn must not block. On PostgreSQL it also
// runs after commits of other planserver processes on the same database
// (LISTEN/NOTIFY), and whenever notifications may have been missed (after
// the listening connection was lost): a hook must treat a call as "look
// again", never as "exactly one commit happened".
func (db *DB) OnCommit(fn func()) {
	db.hooksMu.Lock()
	defer db.hooksMu.Unlock()
	db.hooks = append(db.hooks, fn)
}

func (db *DB) committed() {
	db.hooksMu.Lock()
	hooks := db.hooks
	db.hooksMu.Unlock()
	for _, h := range hooks {
		h()
	}
}

// Write runs fn in a write transaction and returns once the transaction
// is durable (or failed). Write transactions are serialized: fn sees every
// earlier write and nothing runs beside it (keyed writes included).
// Several may share one commit (group commit), each in a savepoint of its
// own, so one that fails rolls back alone; none is acknowledged before
// the commit that holds it.
//
// Once fn has started it runs to the end even if ctx is cancelled: its
// statements run under a context of their own, since interrupting one
// statement would roll back every write sharing the commit. A write whose
// ctx ends while it waits for its turn is dropped with ctx's error.
func (db *DB) Write(ctx context.Context, fn func(tx *Tx) error) error {
	return db.commits.do(ctx, &Write{fn: fn})
}

// Key names what a keyed write reads and changes: the rows of one kind of
// resource (Kind) that belong to one name.
type Key struct {
	Kind, Name string
}

// WriteKeyed is Write for a write that reads and changes nothing but the
// rows of key, and appends events (with Tx.ExecAtEnd). Keyed writes of
// one key are serialized, and each sees every earlier write of any kind.
// An engine may run keyed writes of different keys at once
// (Engine.KeyedWriters: PostgreSQL does, on several connections of this
// replica and on other replicas, which is what lets writes scale with
// replicas); every other write still runs alone. Event seqs stay gap-free
// and in commit order.
//
// A write that reads or changes a row of another key, or one no key
// owns, must use Write: keyed writes of other keys may be changing it.
func (db *DB) WriteKeyed(ctx context.Context, key Key, fn func(tx *Tx) error) error {
	return db.keyedCommitter().do(ctx, &Write{fn: fn, key: key.hash()})
}

// Query is a statement and its arguments.
type Query struct {
	SQL  string
	Args []any
}

// WriteKeyedFirst is WriteKeyed for a write whose first statement is the
// one-row read first, such as the head of the plan it writes: fn gets
// first's row, and scans it before it runs anything else (or never).
// Nothing of the write ran before the read, and no other write of its
// key runs beside it, so an engine may read it before the write runs: a
// batch of keyed writes on PostgreSQL reads every write's first row in
// its first round trip, instead of one round trip for each write. On
// SQLite the write simply reads it first.
func (db *DB) WriteKeyedFirst(ctx context.Context, key Key, first Query, fn func(tx *Tx, first *Row) error) error {
	return db.keyedCommitter().do(ctx, &Write{first: &first, fnFirst: fn, key: key.hash()})
}

// keyedCommitter is the committer of keyed writes.
func (db *DB) keyedCommitter() *committer {
	if db.keyed != nil {
		return db.keyed
	}
	return db.commits
}

// hash is the number that names k to an engine (Write.Key): a hash of it.
// Two keys may share one; their writes then take turns, which costs time,
// never correctness.
func (k Key) hash() int32 {
	h := fnv.New32a()
	h.Write([]byte(k.Kind))
	h.Write([]byte{0})
	h.Write([]byte(k.Name))
	return int32(h.Sum32())
}

// Read runs fn in one read-only transaction, so every query in it sees the
// same committed snapshot. A read that one statement answers needs no
// transaction: use db's Query and QueryRow directly.
func (db *DB) Read(ctx context.Context, fn func(tx *Tx) error) error {
	tx, err := db.reader.BeginTx(ctx, db.eng.ReadOptions())
	if err != nil {
		return fmt.Errorf("begin read: %w", Classify(err))
	}
	defer tx.Rollback() //nolint:errcheck // read-only; nothing to keep
	return fn(&Tx{r: tx, eng: db.eng, now: db.Now(), ctx: ctx})
}

// Reader returns the read pool bound to ctx, for reads that one statement
// answers: no transaction around it.
func (db *DB) Reader(ctx context.Context) Querier { return pool{db: db, ctx: ctx} }

// pool is the read pool as a Querier.
type pool struct {
	db  *DB
	ctx context.Context
}

func (p pool) Query(query string, args ...any) (*sql.Rows, error) {
	rows, err := p.db.reader.QueryContext(p.ctx, p.db.eng.Rebind(query), args...)
	return rows, Classify(err)
}

func (p pool) QueryRow(query string, args ...any) *Row {
	return &Row{s: p.db.reader.QueryRowContext(p.ctx, p.db.eng.Rebind(query), args...)}
}

// Stats reports the connection pools' statistics, for metrics.
func (db *DB) Stats() (writer, reader sql.DBStats) { return db.eng.Writer().Stats(), db.reader.Stats() }

// LockStats reports, where writes take a write lock in the database
// (PostgreSQL), how many commits took it, how many writes they
// committed, and how long they held it and waited for it in total. Held
// runs from the return of the round trip that took the lock to the
// return of the COMMIT (the lock is released by the commit); waited is
// that first round trip, the lock's wait included. All are zero on
// SQLite.
func (db *DB) LockStats() (commits, writes int64, held, waited time.Duration) {
	s := db.eng.WriteStats()
	return s.LockCommits, s.LockWrites, s.LockHeld, s.LockWaited
}

// RoundTrips reports how many round trips to the server write
// transactions have made so far; 0 where the database is no server.
func (db *DB) RoundTrips() int64 { return db.eng.WriteStats().RoundTrips }

// QueueLength reports how many write transactions wait for the writer.
func (db *DB) QueueLength() int {
	n := db.commits.queued()
	if db.keyed != nil {
		n += db.keyed.queued()
	}
	return n
}

// Querier is what reads need: the read pool (Reader) and a transaction
// (*Tx) both offer it. Its statements run under the context it was made
// with.
type Querier interface {
	Query(query string, args ...any) (*sql.Rows, error)
	QueryRow(query string, args ...any) *Row
}

var (
	_ Querier = pool{}
	_ Querier = (*Tx)(nil)
)

// CheckIntegrity checks the stored pages where the engine leaves that to
// planserver (SQLite's quick_check): a damaged file is refused at start
// rather than found by the first unlucky request. PostgreSQL checks its
// own pages; there it does nothing.
func (db *DB) CheckIntegrity(ctx context.Context) error { return db.eng.CheckIntegrity(ctx) }

// Backup writes a consistent copy of the database to dest, which must not
// exist, while writers carry on. On SQLite it is a compacted SQLite file
// with the database's private permissions; PostgreSQL refuses, naming the
// tools that do it (pg_dump, planserver copy).
func (db *DB) Backup(ctx context.Context, dest string) error { return db.eng.Backup(ctx, dest) }
