// Package sqlite is planserver's embedded engine, the default: a database
// is one SQLite file (modernc.org/sqlite, no cgo) in WAL mode, written by
// one connection whose batches commit in savepoints (Commit), read by a
// pool of snapshots, its statements prepared once per connection
// (stmtcache.go) and its WAL checkpointed off the write path
// (checkpoint.go). It registers itself with internal/db for every DSN no
// other driver takes: a program links it in by importing it.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/pressly/goose/v3"

	"github.com/planserver/planserver/internal/db"
	"github.com/planserver/planserver/migrations"
)

func init() { db.RegisterDefault(sqliteDriver{}) }

// sqliteDriver is the embedded default engine: a database is one file,
// at any path no other driver claims.
type sqliteDriver struct{}

func (sqliteDriver) Accepts(string) bool                  { return true }
func (sqliteDriver) Redact(dsn string) string             { return dsn }
func (sqliteDriver) File() bool                           { return true }
func (sqliteDriver) IsCorrupt(err error) bool             { return isCorrupt(err) }
func (sqliteDriver) Classify(err error) (*db.Fault, bool) { return classify(err) }

func (sqliteDriver) Open(ctx context.Context, path string, cfg db.Config) (db.Engine, error) {
	return open(ctx, path, cfg.Durability)
}

// engine is an open SQLite database: one writer connection whose
// transactions are BEGIN IMMEDIATE (writers queue on it instead of
// failing with SQLITE_BUSY), a pool of readers that WAL lets read
// committed snapshots while a write is in flight, and a connection that
// checkpoints the WAL off the write path (checkpoint.go).
type engine struct {
	path           string
	writer, reader *sql.DB
	ckpt           *checkpointer
	// generation counts this process's commits: the Version of a SQLite
	// database, which has no other writer.
	generation atomic.Uint64
}

func (e *engine) Writer() *sql.DB                         { return e.writer }
func (e *engine) Reader() *sql.DB                         { return e.reader }
func (e *engine) Rebind(query string) string              { return query }
func (e *engine) Clock() func() time.Time                 { return time.Now }
func (e *engine) StoresNUL() bool                         { return true }
func (e *engine) WriteStats() db.WriteStats               { return db.WriteStats{} }
func (e *engine) Version(context.Context) (uint64, error) { return e.generation.Load(), nil }

// KeyedWriters: the one writer runs every write, keyed or not.
func (e *engine) KeyedWriters() int { return 0 }

// Migrations: SQLite's one writer already takes turns.
func (e *engine) Migrations() db.Migrations {
	return db.Migrations{Dialect: goose.DialectSQLite3, Files: migrations.SQLite}
}

// ReadOptions: a read-only transaction on a WAL reader is one snapshot.
func (e *engine) ReadOptions() *sql.TxOptions { return &sql.TxOptions{ReadOnly: true} }

// Close stops the checkpointer, then closes the pools; the writer's last
// close checkpoints what is left, as SQLite does.
func (e *engine) Close() error {
	return errors.Join(e.ckpt.close(), e.reader.Close(), e.writer.Close())
}

// HighWater reads AUTOINCREMENT's counters from sqlite_sequence, which
// has a row for each such table that ever had a row.
func (e *engine) HighWater(q db.Querier, counters map[string]string) (map[string]int64, error) {
	marks := map[string]int64{}
	rows, err := q.Query(`SELECT name, seq FROM sqlite_sequence`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var seq int64
		if err := rows.Scan(&name, &seq); err != nil {
			return nil, err
		}
		if _, ok := counters[name]; ok {
			marks[name] = seq
		}
	}
	return marks, rows.Err()
}

func (e *engine) SetHighWater(tx *db.Tx, counters map[string]string, marks map[string]int64) error {
	for table := range counters {
		if marks[table] == 0 {
			continue
		}
		if _, err := tx.Exec(`DELETE FROM sqlite_sequence WHERE name = ?`, table); err != nil {
			return err
		}
		if _, err := tx.Exec(`INSERT INTO sqlite_sequence (name, seq) VALUES (?, ?)`, table, marks[table]); err != nil {
			return err
		}
	}
	return nil
}

// LowOnSpace reports whether the file system of the database has less than
// minFreeBytes free: a probe write of a page may fit into what a failed
// write left behind, but real writes would fail again at once.
func (e *engine) LowOnSpace() bool {
	var st syscall.Statfs_t
	return syscall.Statfs(filepath.Dir(e.path), &st) == nil && st.Bavail*uint64(st.Bsize) < minFreeBytes
}

// fileMode is the permission of the database file, and so of its -wal and
// -shm files, which SQLite creates with the database's permissions: plans
// and tokens are nobody else's to read.
const fileMode = 0o600

// open opens the SQLite file at path with the pragmas planserver
// relies on: the writer pool (one connection) and the read pool.
func open(ctx context.Context, path string, durability db.Durability) (*engine, error) {
	if err := createPrivate(path); err != nil {
		return nil, err
	}
	sync := "NORMAL"
	if durability == db.DurabilityFull {
		sync = "FULL"
	}
	// busy_timeout comes first so that the pragmas after it wait for a lock
	// held by another process instead of failing.
	base := url.Values{}
	for _, p := range []string{"busy_timeout(5000)", "journal_mode(WAL)", "synchronous(" + sync + ")", "foreign_keys(ON)"} {
		base.Add("_pragma", p)
	}
	wq := cloneValues(base)
	wq.Set("_txlock", "immediate")
	wq.Add("_pragma", fmt.Sprintf("wal_autocheckpoint(%d)", writerAutocheckpoint))
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
	rq := cloneValues(base)
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
	cc, err := newConnector("file:" + path + "?" + base.Encode())
	if err != nil {
		writer.Close()
		reader.Close()
		return nil, fmt.Errorf("open %s for checkpoints: %w", path, err)
	}
	ckpt := sql.OpenDB(cc)
	ckpt.SetMaxOpenConns(1)
	ckpt.SetMaxIdleConns(1)
	ckpt.SetConnMaxIdleTime(0)
	return &engine{path: path, writer: writer, reader: reader, ckpt: newCheckpointer(ckpt)}, nil
}

// createPrivate creates the database file with fileMode if it does not
// exist yet, whatever the umask, so SQLite never creates it with the
// process's default permissions.
func createPrivate(path string) error {
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE|os.O_EXCL, fileMode)
	switch {
	case errors.Is(err, os.ErrExist):
		return nil
	case err != nil:
		return fmt.Errorf("create %s: %w", path, err)
	}
	// The umask may have taken bits away, never added them; set exactly.
	if err := f.Chmod(fileMode); err != nil {
		f.Close()
		return fmt.Errorf("create %s: %w", path, err)
	}
	return f.Close()
}

func cloneValues(v url.Values) url.Values {
	out := url.Values{}
	for k, vs := range v {
		out[k] = append([]string(nil), vs...)
	}
	return out
}

// CheckIntegrity runs SQLite's quick_check.
func (e *engine) CheckIntegrity(ctx context.Context) error {
	rows, err := e.writer.QueryContext(ctx, `PRAGMA quick_check`)
	if err != nil {
		return fmt.Errorf("integrity check of %s: %w", e.path, err)
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return fmt.Errorf("integrity check of %s: %w", e.path, err)
		}
		if line != "ok" && len(problems) < 5 {
			problems = append(problems, line)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("integrity check of %s: %w", e.path, err)
	}
	if len(problems) > 0 {
		return fmt.Errorf("integrity check of %s failed: %s", e.path, strings.Join(problems, "; "))
	}
	return nil
}

// Backup writes a consistent copy of the database to dest, which must not
// exist, with VACUUM INTO on a connection of its own: it reads one
// snapshot, so writers carry on meanwhile (WAL) and the copy is what was
// committed when it began. The copy is compacted, has no WAL of its own,
// and is created with the database's private permissions.
// (The read pool cannot do it: query_only forbids VACUUM INTO.)
func (e *engine) Backup(ctx context.Context, dest string) error {
	f, err := os.OpenFile(dest, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fileMode)
	if errors.Is(err, os.ErrExist) {
		return fmt.Errorf("backup: %s already exists; choose a new file", dest)
	}
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	if err := errors.Join(f.Chmod(fileMode), f.Close()); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	c, err := newConnector("file:" + e.path + "?_pragma=busy_timeout(5000)")
	if err != nil {
		os.Remove(dest)
		return fmt.Errorf("backup: %w", err)
	}
	conn := sql.OpenDB(c)
	defer conn.Close()
	// VACUUM INTO writes into an existing file only when it is empty.
	if _, err := conn.ExecContext(ctx, `VACUUM INTO ?`, dest); err != nil {
		os.Remove(dest)
		return fmt.Errorf("backup to %s: %w", dest, err)
	}
	return nil
}
