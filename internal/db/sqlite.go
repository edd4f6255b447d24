package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"

	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"github.com/planserver/planserver/migrations"
)

// engine is what differs between the engines under the stores: how SQL
// is written, how a write transaction begins and ends, what a read
// snapshot is, the schema's migrations, and the few operations only one
// engine has. Everything else (group commit, clocks, faults, hooks) is the
// same code for both.
type engine interface {
	// name is the engine's name, for logs and errors.
	name() string
	// rebind rewrites a statement written with ? placeholders into the
	// engine's own.
	rebind(query string) string
	// readOptions begin a read of one consistent snapshot (DB.Read).
	readOptions() *sql.TxOptions
	// dialect and migrations are goose's dialect and this engine's
	// migration files.
	dialect() goose.Dialect
	migrations() fs.FS
	// migrationLock, when not nil, makes processes that migrate one
	// database at once (replicas starting together) take turns.
	migrationLock() lock.SessionLocker
	// checkIntegrity checks the stored pages, where the engine leaves that
	// to planserver.
	checkIntegrity(ctx context.Context, writer *sql.DB) error
	// backup writes a consistent copy of the database to dest.
	backup(ctx context.Context, dest string) error
	// lowOnSpace reports whether the storage is still too full to write
	// after a disk-full fault; false when the engine cannot tell (then a
	// probe write decides).
	lowOnSpace() bool
	// highWater reads the counters of the tables in counterKeys: the
	// highest key each ever handed out (0 for none), deleted or not.
	highWater(q Querier) (map[string]int64, error)
	// setHighWater sets those counters, in a write transaction, so that
	// the next key of each table is above its mark.
	setHighWater(tx *Tx, marks map[string]int64) error
	// version is DB.Version.
	version(ctx context.Context, db *DB) (uint64, error)
	// close releases what the engine holds besides the two pools.
	close() error
}

// sqliteEngine is the embedded default: one file, one writer connection
// whose transactions are BEGIN IMMEDIATE (writers queue on it instead of
// failing with SQLITE_BUSY), a pool of readers that WAL lets read committed
// snapshots while a write is in flight.
type sqliteEngine struct {
	path string
	// ckpt checkpoints the WAL off the write path (checkpoint.go).
	ckpt *checkpointer
}

func (sqliteEngine) name() string               { return "sqlite" }
func (sqliteEngine) rebind(query string) string { return query }
func (sqliteEngine) dialect() goose.Dialect     { return goose.DialectSQLite3 }
func (sqliteEngine) migrations() fs.FS          { return migrations.SQLite }

func (e sqliteEngine) close() error { return e.ckpt.close() }

// version: this process is the file's only writer, so its own commit
// generation counts every commit.
func (sqliteEngine) version(_ context.Context, db *DB) (uint64, error) {
	return db.generation.Load(), nil
}

// migrationLock: SQLite's one writer already takes turns.
func (sqliteEngine) migrationLock() lock.SessionLocker { return nil }

// readOptions: a read-only transaction on a WAL reader is one snapshot.
func (sqliteEngine) readOptions() *sql.TxOptions { return &sql.TxOptions{ReadOnly: true} }

// highWater reads AUTOINCREMENT's counters from sqlite_sequence, which
// has a row for each such table that ever had a row.
func (sqliteEngine) highWater(q Querier) (map[string]int64, error) {
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
		if _, ok := counterKeys[name]; ok {
			marks[name] = seq
		}
	}
	return marks, rows.Err()
}

func (sqliteEngine) setHighWater(tx *Tx, marks map[string]int64) error {
	for table := range counterKeys {
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

// lowOnSpace reports whether the file system of the database has less than
// minFreeBytes free: a probe write of a page may fit into what a failed
// write left behind, but real writes would fail again at once.
func (e sqliteEngine) lowOnSpace() bool {
	var st syscall.Statfs_t
	return syscall.Statfs(filepath.Dir(e.path), &st) == nil && st.Bavail*uint64(st.Bsize) < minFreeBytes
}

// fileMode is the permission of the database file, and so of its -wal and
// -shm files, which SQLite creates with the database's permissions: plans
// and tokens are nobody else's to read.
const fileMode = 0o600

// openSQLite opens the SQLite file at path with the pragmas planserver
// relies on: the writer pool (one connection) and the read pool.
func openSQLite(ctx context.Context, path string, durability Durability) (sqliteEngine, *sql.DB, *sql.DB, error) {
	if err := createPrivate(path); err != nil {
		return sqliteEngine{}, nil, nil, err
	}
	sync := "NORMAL"
	if durability == DurabilityFull {
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
		return sqliteEngine{}, nil, nil, fmt.Errorf("open %s: %w", path, err)
	}
	writer := sql.OpenDB(wc)
	writer.SetMaxOpenConns(1)
	writer.SetMaxIdleConns(1)
	writer.SetConnMaxLifetime(0)
	writer.SetConnMaxIdleTime(0)
	if err := writer.PingContext(ctx); err != nil {
		writer.Close()
		return sqliteEngine{}, nil, nil, fmt.Errorf("open %s: %w", path, err)
	}
	rq := cloneValues(base)
	rq.Add("_pragma", "query_only(ON)")
	rc, err := newConnector("file:" + path + "?" + rq.Encode())
	if err != nil {
		writer.Close()
		return sqliteEngine{}, nil, nil, fmt.Errorf("open %s for reading: %w", path, err)
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
		return sqliteEngine{}, nil, nil, fmt.Errorf("open %s for checkpoints: %w", path, err)
	}
	ckpt := sql.OpenDB(cc)
	ckpt.SetMaxOpenConns(1)
	ckpt.SetMaxIdleConns(1)
	ckpt.SetConnMaxIdleTime(0)
	return sqliteEngine{path: path, ckpt: newCheckpointer(ckpt)}, writer, reader, nil
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

// checkIntegrity runs SQLite's quick_check.
func (e sqliteEngine) checkIntegrity(ctx context.Context, writer *sql.DB) error {
	rows, err := writer.QueryContext(ctx, `PRAGMA quick_check`)
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

// backup writes a consistent copy of the database to dest, which must not
// exist, with VACUUM INTO on a connection of its own: it reads one
// snapshot, so writers carry on meanwhile (WAL) and the copy is what was
// committed when it began. The copy is compacted, has no WAL of its own,
// and is created with the database's private permissions.
// (The read pool cannot do it: query_only forbids VACUUM INTO.)
func (e sqliteEngine) backup(ctx context.Context, dest string) error {
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
