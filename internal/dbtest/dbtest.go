// Package dbtest gives tests a fresh database on the engine under test: a
// SQLite file in the test's temp dir, or, when PLANSERVER_TEST_POSTGRES
// names a PostgreSQL server, a database of its own on that server, created
// for the test and dropped after it. The same tests thus judge both
// engines (make test, make test-postgres). It is imported only by tests,
// and imports nothing of planserver, so that every package's tests may use
// it, internal/db's own included.
package dbtest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the pgx driver, for the admin connection

	"github.com/planserver/planserver/internal/disktest"
)

// EnvPostgres names the PostgreSQL server the tests run on, as a URL of a
// database the test user may connect to and create databases from (a
// superuser on a throwaway cluster: .ci/postgres). Unset, tests run on
// SQLite.
const EnvPostgres = "PLANSERVER_TEST_POSTGRES"

// Postgres reports whether the tests run on PostgreSQL.
func Postgres() bool { return os.Getenv(EnvPostgres) != "" }

// SkipOnPostgres skips a test about SQLite itself, saying why it has no
// PostgreSQL counterpart.
func SkipOnPostgres(tb testing.TB, why string) {
	tb.Helper()
	if Postgres() {
		tb.Skip("SQLite only: " + why)
	}
}

// RequirePostgres skips a test about PostgreSQL when the tests run on
// SQLite.
func RequirePostgres(tb testing.TB) {
	tb.Helper()
	if !Postgres() {
		tb.Skipf("needs PostgreSQL: set %s (see .ci/postgres)", EnvPostgres)
	}
}

// Fresh returns a new, empty database for tb: the path of a SQLite file in
// tb's temp dir, or the URL of a PostgreSQL database dropped when tb ends.
func Fresh(tb testing.TB) string {
	tb.Helper()
	if !Postgres() {
		return filepath.Join(tb.TempDir(), "planserver.db")
	}
	return create(tb, "TEMPLATE template0 ENCODING 'UTF8'")
}

// Copy returns a new database holding a copy of the database dsn, which
// must be closed: a fixture built once and used by many tests.
func Copy(tb testing.TB, dsn string) string {
	tb.Helper()
	if !Postgres() {
		dst := filepath.Join(tb.TempDir(), "copy.db")
		for _, suffix := range []string{"", "-wal"} { // a WAL left behind, if any, goes along
			raw, err := os.ReadFile(dsn + suffix)
			if os.IsNotExist(err) && suffix != "" {
				continue
			}
			if err != nil {
				tb.Fatal(err)
			}
			if err := os.WriteFile(dst+suffix, raw, 0o600); err != nil {
				tb.Fatal(err)
			}
		}
		return dst
	}
	return create(tb, "TEMPLATE "+quoteIdent(dbName(tb, dsn)))
}

// Admin returns a connection to the test server's maintenance database,
// for tests that act on a database from outside planserver (end its
// connections, make it read-only). Only on PostgreSQL.
func Admin(tb testing.TB) *sql.DB {
	tb.Helper()
	RequirePostgres(tb)
	conn, err := admin()
	if err != nil {
		tb.Fatal(err)
	}
	return conn
}

// Name returns the database name of a PostgreSQL dsn.
func Name(tb testing.TB, dsn string) string {
	tb.Helper()
	return dbName(tb, dsn)
}

var (
	adminOnce sync.Once
	adminConn *sql.DB
	adminErr  error
)

func admin() (*sql.DB, error) {
	adminOnce.Do(func() {
		adminConn, adminErr = sql.Open("pgx", os.Getenv(EnvPostgres))
		if adminErr == nil {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			adminErr = adminConn.PingContext(ctx)
		}
		if adminErr != nil {
			adminErr = fmt.Errorf("connect to the server %s names: %w", EnvPostgres, adminErr)
		}
	})
	return adminConn, adminErr
}

var unsafeChars = regexp.MustCompile(`[^a-z0-9_]+`)

// create makes a database for tb with the given CREATE DATABASE options,
// drops it when tb ends, and returns its URL.
func create(tb testing.TB, options string) string {
	tb.Helper()
	conn, err := admin()
	if err != nil {
		tb.Fatal(err)
	}
	var r [4]byte
	_, _ = rand.Read(r[:])
	label := unsafeChars.ReplaceAllString(strings.ToLower(tb.Name()), "_")
	if len(label) > 40 {
		label = label[:40]
	}
	name := "pst_" + label + "_" + hex.EncodeToString(r[:])
	ctx := context.Background()
	// A template's last connections may still be closing: PostgreSQL
	// waits a few seconds for them, and refuses after that; try again.
	for attempt := 0; ; attempt++ {
		_, err = conn.ExecContext(ctx, "CREATE DATABASE "+quoteIdent(name)+" "+options)
		if err == nil || attempt == 5 || !strings.Contains(err.Error(), "being accessed by other users") {
			break
		}
	}
	if err != nil {
		tb.Fatalf("create test database %s: %v", name, err)
	}
	tb.Cleanup(func() {
		if _, err := conn.ExecContext(context.Background(), "DROP DATABASE IF EXISTS "+quoteIdent(name)+" WITH (FORCE)"); err != nil {
			tb.Errorf("drop test database %s: %v", name, err)
		}
	})
	u, err := url.Parse(os.Getenv(EnvPostgres))
	if err != nil {
		tb.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}

func dbName(tb testing.TB, dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		tb.Fatal(err)
	}
	return strings.TrimPrefix(u.Path, "/")
}

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// Statements is what Explain needs of a transaction (db.Tx has it).
type Statements interface {
	Exec(query string, args ...any) (sql.Result, error)
	Query(query string, args ...any) (*sql.Rows, error)
}

// Explain returns PostgreSQL's plan of query, in a transaction (tx) where
// sequential scans and sorts are priced out, as if the tables were large:
// a plan that still scans or sorts has no index to avoid it. The lines are
// joined with " | ".
func Explain(tb testing.TB, tx Statements, query string, args ...any) string {
	tb.Helper()
	for _, set := range []string{"enable_seqscan", "enable_sort", "enable_bitmapscan"} {
		if _, err := tx.Exec(`SET LOCAL ` + set + ` = off`); err != nil {
			tb.Fatal(err)
		}
	}
	rows, err := tx.Query(`EXPLAIN `+query, args...)
	if err != nil {
		tb.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			tb.Fatal(err)
		}
		plan = append(plan, strings.TrimSpace(line))
	}
	if err := rows.Err(); err != nil {
		tb.Fatal(err)
	}
	return strings.Join(plan, " | ")
}

// Rows is what the helpers below need of a database handle or
// transaction (db.Querier has it).
type Rows interface {
	Query(query string, args ...any) (*sql.Rows, error)
}

// ExplainQueryPlan returns SQLite's plan of query (EXPLAIN QUERY PLAN),
// its steps joined with " | ": "SEARCH sessions USING INDEX … (…)" for an
// index range, "SCAN" for a walk, "USE TEMP B-TREE" for a sort.
func ExplainQueryPlan(tb testing.TB, q Rows, query string, args ...any) string {
	tb.Helper()
	rows, err := q.Query(`EXPLAIN QUERY PLAN `+query, args...)
	if err != nil {
		tb.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var (
			id, parent, notused int
			detail              string
		)
		if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
			tb.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if err := rows.Err(); err != nil {
		tb.Fatal(err)
	}
	return strings.Join(plan, " | ")
}

// EventLog returns expr (SQL over a row of events, such as plan or
// plan || ' ' || type) for each event in seq order, and fails tb unless
// the seqs run 1, 2, 3… without a gap.
func EventLog(tb testing.TB, q Rows, expr string) []string {
	tb.Helper()
	rows, err := q.Query(`SELECT seq, ` + expr + ` FROM events ORDER BY seq`)
	if err != nil {
		tb.Fatal(err)
	}
	defer rows.Close()
	var log []string
	for rows.Next() {
		var (
			seq  int64
			text string
		)
		if err := rows.Scan(&seq, &text); err != nil {
			tb.Fatal(err)
		}
		if seq != int64(len(log))+1 {
			tb.Fatalf("event seq %d after %d events: the log has a gap", seq, len(log))
		}
		log = append(log, text)
	}
	if err := rows.Err(); err != nil {
		tb.Fatal(err)
	}
	return log
}

// WaitAdvisoryWaiters waits until n transactions of the PostgreSQL
// database q reads wait for an advisory lock (a write's lock), and fails
// tb after 10 s.
func WaitAdvisoryWaiters(tb testing.TB, q Rows, n int) {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var waiting int
		rows, err := q.Query(`SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted`)
		if err != nil {
			tb.Fatal(err)
		}
		for rows.Next() {
			err = rows.Scan(&waiting)
		}
		if err == nil {
			err = rows.Err()
		}
		rows.Close()
		if err != nil {
			tb.Fatal(err)
		}
		if waiting >= n {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%d transactions wait for an advisory lock, want %d", waiting, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// OnSmallDisk returns a fresh database whose data lives on a tmpfs of size
// (disktest.SmallDisk), and that tmpfs's directory, for tests that fill it
// (disktest.Fill): on SQLite the file is on it; on PostgreSQL the database's
// tables are, in a tablespace of their own. It needs root (to mount) and,
// on PostgreSQL, the server on this machine (to give it the directory);
// elsewhere the test is skipped, saying why.
func OnSmallDisk(tb testing.TB, size string) (dsn, dir string) {
	tb.Helper()
	if !Postgres() {
		dir = disktest.SmallDisk(tb, size)
		return filepath.Join(dir, "planserver.db"), dir
	}
	conn := Admin(tb)
	var dataDir string
	if err := conn.QueryRow(`SHOW data_directory`).Scan(&dataDir); err != nil {
		tb.Skipf("cannot read the PostgreSQL server's data directory: %v", err)
	}
	st, err := os.Stat(dataDir)
	if err != nil {
		tb.Skipf("the PostgreSQL server is not on this machine: %v", err)
	}
	owner := st.Sys().(*syscall.Stat_t)
	dir = disktest.SmallDisk(tb, size)
	// The server's user must reach the directory through the test's.
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			tb.Fatal(err)
		}
	}
	space := filepath.Join(dir, "tablespace")
	if err := os.Mkdir(space, 0o700); err != nil {
		tb.Fatal(err)
	}
	if err := os.Chown(space, int(owner.Uid), int(owner.Gid)); err != nil {
		tb.Fatal(err)
	}
	var r [4]byte
	_, _ = rand.Read(r[:])
	ts := "pst_small_" + hex.EncodeToString(r[:])
	if _, err := conn.Exec(`CREATE TABLESPACE ` + ts + ` LOCATION '` + space + `'`); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _, _ = conn.Exec(`DROP TABLESPACE IF EXISTS ` + ts) })
	dsn = Fresh(tb) // dropped before the tablespace: cleanups run last first
	if _, err := conn.Exec(`ALTER DATABASE ` + quoteIdent(Name(tb, dsn)) + ` SET default_tablespace = ` + ts); err != nil {
		tb.Fatal(err)
	}
	return dsn, dir
}
