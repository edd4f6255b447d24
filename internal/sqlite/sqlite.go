// Package sqlite owns the database handle: opening SQLite with the pragmas
// planserver relies on, the split between one writer connection (immediate
// transactions, so writers queue instead of failing with SQLITE_BUSY) and a
// pool of readers (WAL lets them read committed snapshots while a write is
// in flight), the embedded goose migrations, and the one place where write
// transactions begin, commit and announce their commit.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pressly/goose/v3"

	"github.com/planserver/planserver/migrations"
)

// Durability selects SQLite's synchronous pragma.
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

// DB is an open planserver database.
type DB struct {
	// Writer has exactly one connection; every transaction on it is
	// BEGIN IMMEDIATE. Use Write rather than Writer directly.
	Writer *sql.DB
	// Reader is a pool of read-only connections.
	Reader *sql.DB
	// Path is the database file.
	Path string
	// baseDSN opens a connection with the common pragmas and neither the
	// writer's immediate transactions nor the readers' query_only.
	baseDSN string

	mu          sync.Mutex
	afterCommit []func()
}

// Open opens (creating if needed) the database at path. It does not migrate.
func Open(ctx context.Context, path string, durability Durability) (*DB, error) {
	if durability == "" {
		durability = DurabilityNormal
	}
	sync := "NORMAL"
	if durability == DurabilityFull {
		sync = "FULL"
	}
	// busy_timeout comes first so that the pragmas after it wait for a lock
	// held by another process instead of failing.
	pragmas := []string{"busy_timeout(5000)", "journal_mode(WAL)", "synchronous(" + sync + ")", "foreign_keys(ON)"}
	q := url.Values{}
	for _, p := range pragmas {
		q.Add("_pragma", p)
	}
	wq := url.Values{"_txlock": {"immediate"}}
	for k, v := range q {
		wq[k] = v
	}
	wc, err := newConnector("file:" + path + "?" + wq.Encode())
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	writer := sql.OpenDB(wc)
	writer.SetMaxOpenConns(1)
	writer.SetMaxIdleConns(1)
	writer.SetConnMaxLifetime(0)
	writer.SetConnMaxIdleTime(0)
	if err := writer.PingContext(ctx); err != nil {
		writer.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	rq := url.Values{}
	for k, v := range q {
		rq[k] = v
	}
	rq.Add("_pragma", "query_only(ON)")
	rc, err := newConnector("file:" + path + "?" + rq.Encode())
	if err != nil {
		writer.Close()
		return nil, fmt.Errorf("open %s for reading: %w", path, err)
	}
	reader := sql.OpenDB(rc)
	readers := max(4, 2*runtime.GOMAXPROCS(0))
	reader.SetMaxOpenConns(readers)
	reader.SetMaxIdleConns(readers)
	reader.SetConnMaxIdleTime(0)
	return &DB{Writer: writer, Reader: reader, Path: path, baseDSN: "file:" + path + "?" + q.Encode()}, nil
}

// Close closes both pools.
func (db *DB) Close() error {
	return errors.Join(db.Reader.Close(), db.Writer.Close())
}

// OnCommit registers fn to run after every successful write transaction,
// e.g. to wake event subscribers. fn must not block.
func (db *DB) OnCommit(fn func()) {
	db.mu.Lock()
	defer db.mu.Unlock()
	db.afterCommit = append(db.afterCommit, fn)
}

// Write runs fn in one immediate transaction on the writer connection and
// commits it when fn returns nil. After the commit, the OnCommit hooks run,
// so nothing observes a change before it is durable in the log.
func (db *DB) Write(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := db.Writer.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin write: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	if err := fn(tx); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	db.mu.Lock()
	hooks := db.afterCommit
	db.mu.Unlock()
	for _, h := range hooks {
		h()
	}
	return nil
}

// Read runs fn in one read transaction, so every query in it sees the same
// committed snapshot.
func (db *DB) Read(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := db.Reader.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("begin read: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // read-only; nothing to keep
	return fn(tx)
}

// ErrSchemaTooNew is returned when the database was migrated by a newer
// planserver than this binary.
var ErrSchemaTooNew = errors.New("database schema is newer than this binary")

func (db *DB) provider(logOut io.Writer) (*goose.Provider, error) {
	opts := []goose.ProviderOption{goose.WithDisableGlobalRegistry(true)}
	if logOut != nil {
		opts = append(opts, goose.WithSlog(slog.New(slog.NewTextHandler(logOut, nil))))
	}
	return goose.NewProvider(goose.DialectSQLite3, db.Writer, migrations.FS, opts...)
}

// SchemaVersions reports the version the database is at and the newest
// version this binary knows.
func (db *DB) SchemaVersions(ctx context.Context) (current, known int64, err error) {
	p, err := db.provider(nil)
	if err != nil {
		return 0, 0, err
	}
	current, err = p.GetDBVersion(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("read schema version: %w", err)
	}
	sources := p.ListSources()
	if len(sources) > 0 {
		known = sources[len(sources)-1].Version
	}
	return current, known, nil
}

// MigrateUp applies every pending migration. It refuses a database whose
// schema is newer than this binary, rather than running against columns it
// does not know.
func (db *DB) MigrateUp(ctx context.Context, logOut io.Writer) (from, to int64, err error) {
	current, known, err := db.SchemaVersions(ctx)
	if err != nil {
		return 0, 0, err
	}
	if current > known {
		return current, current, fmt.Errorf("%w: %s is at schema version %d, this planserver knows versions up to %d; run a planserver at least as new as the one that last migrated it",
			ErrSchemaTooNew, db.Path, current, known)
	}
	p, err := db.provider(logOut)
	if err != nil {
		return 0, 0, err
	}
	if _, err := p.Up(ctx); err != nil {
		return current, current, fmt.Errorf("migrate up: %w", err)
	}
	return current, known, nil
}

// MigrateDown rolls back the newest applied migration.
func (db *DB) MigrateDown(ctx context.Context, logOut io.Writer) (int64, error) {
	p, err := db.provider(logOut)
	if err != nil {
		return 0, err
	}
	res, err := p.Down(ctx)
	if err != nil {
		return 0, fmt.Errorf("migrate down: %w", err)
	}
	return res.Source.Version, nil
}

// MigrationStatus is one row of `planserver migrate status`.
type MigrationStatus struct {
	Version   int64
	Name      string
	Applied   bool
	AppliedAt time.Time
}

// MigrateStatus lists every known migration and whether it is applied.
func (db *DB) MigrateStatus(ctx context.Context) ([]MigrationStatus, error) {
	p, err := db.provider(nil)
	if err != nil {
		return nil, err
	}
	st, err := p.Status(ctx)
	if err != nil {
		return nil, fmt.Errorf("migrate status: %w", err)
	}
	out := make([]MigrationStatus, 0, len(st))
	for _, s := range st {
		out = append(out, MigrationStatus{
			Version:   s.Source.Version,
			Name:      s.Source.Path,
			Applied:   s.State == goose.StateApplied,
			AppliedAt: s.AppliedAt,
		})
	}
	return out, nil
}

// AppliedVersion reads the schema version from the read pool, without
// touching the writer connection, so health checks never queue behind
// writes.
func (db *DB) AppliedVersion(ctx context.Context) (int64, error) {
	var v int64
	err := db.Reader.QueryRowContext(ctx,
		`SELECT version_id FROM goose_db_version WHERE is_applied ORDER BY id DESC LIMIT 1`).Scan(&v)
	if err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	return v, nil
}

// KnownVersion is the newest schema version this binary carries.
func KnownVersion() int64 {
	names, _ := fs.Glob(migrations.FS, "*.sql") // the pattern is valid
	var known int64
	for _, name := range names {
		digits, _, _ := strings.Cut(name, "_")
		if v, err := strconv.ParseInt(digits, 10, 64); err == nil && v > known {
			known = v
		}
	}
	return known
}

// Backup writes a consistent copy of the database to dest, which must not
// exist, with VACUUM INTO on a connection of its own: it reads one
// snapshot, so writers carry on meanwhile (WAL) and the copy is what was
// committed when it began. The copy is compacted and has no WAL of its own.
// (The read pool cannot do it: query_only forbids VACUUM INTO.)
func (db *DB) Backup(ctx context.Context, dest string) error {
	if _, err := os.Stat(dest); err == nil {
		return fmt.Errorf("backup: %s already exists; choose a new file", dest)
	}
	c, err := newConnector(db.baseDSN)
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	conn := sql.OpenDB(c)
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `VACUUM INTO ?`, dest); err != nil {
		return fmt.Errorf("backup to %s: %w", dest, err)
	}
	return nil
}
