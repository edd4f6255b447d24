package db

import (
	"context"
	"database/sql"
	"io/fs"
	"time"

	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

// Drivers. Each engine is a package of its own (internal/db/sqlite,
// internal/db/postgres) that implements Driver and registers it from its
// init; a program links in the engines it serves by importing them. The
// core — transactions, the write queue, clocks, faults, migrations, copy —
// is the same code for every engine and never asks which one runs: what
// differs is behind these two interfaces, and the conformance suite
// (internal/db/drivertest) holds every driver to the same behaviour.

// Driver is one engine's way in: which databases it serves, how it names
// them in messages, which of its errors are storage faults, and how it
// opens a database.
type Driver interface {
	// Accepts reports whether dsn names a database of this engine.
	Accepts(dsn string) bool
	// Redact returns dsn fit for logs and messages: without a password.
	Redact(dsn string) string
	// File reports whether the engine keeps a database in one file, at
	// the path its DSN names: then processes that must not overlap on it
	// take turns with a lock file (Lock), and a command that reads one
	// may check that the file exists. An engine whose databases are
	// shared by several processes by design says false.
	File() bool
	// Classify returns the storage fault err is (its Kind and Detail;
	// Classify adds the cause), or nil. ours is true when err is this
	// engine's error at all, fault or not: no other engine then looks.
	Classify(err error) (fault *Fault, ours bool)
	// IsCorrupt reports whether err says the database is damaged beyond
	// what a retry or a restart fixes: a file an operator must restore.
	IsCorrupt(err error) bool
	// Open opens the database dsn. It does not migrate.
	Open(ctx context.Context, dsn string, cfg Config) (Engine, error)
}

// Config is what a driver's Open needs besides the DSN.
type Config struct {
	// Durability is how hard a commit is pushed to disk, where the engine
	// lets planserver decide (Options.Durability).
	Durability Durability
	// KeyedWriters is how many batches of keyed writes may run at once,
	// where the engine runs them beside each other (Options.KeyedWriters).
	KeyedWriters int
	// Committed runs the OnCommit hooks. An engine that learns of commits
	// made by other processes (PostgreSQL's LISTEN) calls it for those,
	// and whenever it may have missed some.
	Committed func()
}

// Engine is an open database of one driver: its connections, its SQL
// dialect, and its commit strategy — how a batch of queued writes reaches
// the database and becomes durable (Commit).
type Engine interface {
	// Writer is the connections writes and migrations run on; Reader the
	// pool of read-only connections every read uses.
	Writer() *sql.DB
	Reader() *sql.DB
	// Rebind rewrites a statement written with ? placeholders into the
	// engine's own.
	Rebind(query string) string
	// ReadOptions begin a read of one consistent snapshot (DB.Read).
	ReadOptions() *sql.TxOptions
	// Clock is the time transactions read when Options.Clock is nil.
	Clock() func() time.Time
	// KeyedWriters is how many batches of keyed writes (DB.WriteKeyed)
	// run at once, beside the other writes' batches; 0 when every write,
	// keyed or not, takes its turn in one queue.
	KeyedWriters() int
	// Commit runs a batch of writes in one transaction, each in a
	// savepoint of its own when it shares it, commits once, and sets
	// every write's outcome (Write.Err) before it returns. It owns the
	// guarantees Write documents: the batch's writes run one at a time in
	// queue order, each sees every earlier one, and none is acknowledged
	// before the commit that holds it.
	Commit(b *Batch)
	// Version is DB.Version.
	Version(ctx context.Context) (uint64, error)
	// LowOnSpace reports whether the storage is still too full to write
	// after a disk-full fault; false when the engine cannot tell (then a
	// probe write decides).
	LowOnSpace() bool
	// CheckIntegrity checks the stored pages where the engine leaves that
	// to planserver.
	CheckIntegrity(ctx context.Context) error
	// Backup writes a consistent copy of the database to dest, or refuses
	// saying what to use instead.
	Backup(ctx context.Context, dest string) error
	// Migrations are the engine's schema migrations.
	Migrations() Migrations
	// HighWater reads the counters of the tables of counters (table →
	// key column): the highest key each ever handed out (0 for none),
	// deleted or not. SetHighWater sets them, in a write transaction, so
	// that the next key of each table is above its mark.
	HighWater(q Querier, counters map[string]string) (map[string]int64, error)
	SetHighWater(tx *Tx, counters map[string]string, marks map[string]int64) error
	// StoresNUL reports whether text may hold NUL (U+0000).
	StoresNUL() bool
	// WriteStats reports what the engine counts of its write path.
	WriteStats() WriteStats
	// Close releases everything the engine holds, both pools included.
	Close() error
}

// Migrations are an engine's schema migrations for goose.
type Migrations struct {
	Dialect goose.Dialect
	Files   fs.FS
	// Lock, when not nil, makes processes that migrate one database at
	// once (replicas starting together) take turns.
	Lock lock.SessionLocker
}

// WriteStats is what an engine counts of its write path, for metrics and
// tests; an engine that has nothing to count leaves it zero.
type WriteStats struct {
	// RoundTrips counts the round trips to the server of write
	// transactions.
	RoundTrips int64
	// LockCommits counts the commits that took a write lock, LockWrites
	// the writes they committed; LockHeld and LockWaited are how long
	// they held it and waited for it in total.
	LockCommits, LockWrites int64
	LockHeld, LockWaited    time.Duration
}

var (
	// drivers are the registered drivers (Register), asked in order.
	drivers []Driver
	// fallback takes every DSN no driver in drivers accepts
	// (RegisterDefault).
	fallback Driver
)

// Register makes d available to Open for the DSNs it accepts. It is
// called from a driver package's init.
func Register(d Driver) { drivers = append(drivers, d) }

// RegisterDefault makes d the driver of every DSN no other driver accepts
// (a file path is SQLite's). It is called from a driver package's init.
func RegisterDefault(d Driver) {
	if fallback != nil {
		panic("db: two default drivers")
	}
	fallback = d
}

// driverFor returns the driver of dsn, or nil when no linked-in driver
// takes it.
func driverFor(dsn string) Driver {
	for _, d := range drivers {
		if d.Accepts(dsn) {
			return d
		}
	}
	return fallback
}

// Redact returns dsn fit for logs and messages: a URL loses its password;
// a path is unchanged.
func Redact(dsn string) string {
	if d := driverFor(dsn); d != nil {
		return d.Redact(dsn)
	}
	return dsn
}

// IsFile reports whether dsn names a database kept in a file at that path
// (Driver.File): false for a server's, whose replicas share it.
func IsFile(dsn string) bool {
	d := driverFor(dsn)
	return d == nil || d.File()
}
