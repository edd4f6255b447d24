// Package postgres is planserver's engine for many replicas on one
// PostgreSQL server (pgx): writes serialized across replicas by advisory
// locks, keyed writes of different keys beside each other, each batch's
// statements pipelined into as few round trips as the guarantees allow
// (Commit, commit.go, ahead.go), LISTEN/NOTIFY to wake every replica, and
// the server's clock. It registers itself with internal/db for
// postgres:// and postgresql:// URLs: a program links it in by importing
// it.
package postgres

import (
	"context"
	"crypto/rand"
	"database/sql"
	"database/sql/driver"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"github.com/planserver/planserver/internal/db"
	"github.com/planserver/planserver/migrations"
)

// PostgreSQL runs planserver as many replicas on one database. The stores
// and the core are the same; what differs is here:
//
//   - Writes are serialized across every replica exactly as SQLite's one
//     writer serializes them: each write transaction first takes a
//     transaction-scoped advisory lock (writeLockKey), held until its
//     commit. Group commit still runs several writes under one lock. So a
//     write sees every write committed before it, revision checks and
//     claims cannot interleave, and event seqs (allocated inside the
//     transaction, see migrations/postgres) follow commit order.
//   - Keyed writes (DB.WriteKeyed), which touch only their key's rows,
//     hold that lock shared, plus one advisory lock per key, exclusive:
//     batches of different keys run at once, on any replica, while every
//     other write still runs alone. Their events are appended at the end
//     of their batch (Tx.ExecAtEnd), so the event counter's row is held
//     only from there to the commit, and seqs still follow commit order
//     (pipeline.lockKeys).
//   - Reads of several statements (DB.Read) run REPEATABLE READ, READ ONLY:
//     one snapshot, as a SQLite read transaction is.
//   - Time is the database server's: every replica's clock (Tx.Now, DB.Now)
//     is its own clock corrected by its measured offset from the server's
//     (serverClock), so leases, token expiry and timestamps are judged the
//     same on every replica however their clocks drift.
//   - A commit that changed something NOTIFYs notifyChannel inside its
//     transaction, so the notification is delivered exactly when the
//     commit is visible. Every replica LISTENs on a connection of its own
//     and runs its OnCommit hooks (wake event streams, invalidate the
//     cached head), so a stream on one replica sees a write made through
//     another.

// writeLockKey is the advisory lock every write transaction holds: "plansrvr"
// in ASCII. Advisory locks are per database, so several planserver
// databases on one server do not wait for each other.
const writeLockKey int64 = 0x706c616e73727672

// keyLockSpace is the first half of every key's advisory lock (the key's
// hash, db.Write.Key, the second): "plnk". Two-part advisory locks never meet the one-part
// writeLockKey and migrateLockKey.
const keyLockSpace int32 = 0x706c6e6b

// notifyChannel is the channel of the commit notifications.
const notifyChannel = "planserver_commit"

func init() { db.Register(pgDriver{}) }

// pgDriver serves databases on a PostgreSQL server: postgres:// and
// postgresql:// URLs.
type pgDriver struct{}

func (pgDriver) Accepts(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://")
}

// Redact masks the URL's password (and a password query parameter).
func (pgDriver) Redact(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return "postgres://(unparsable URL)"
	}
	if _, has := u.User.Password(); has {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	if q := u.Query(); q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// File: a server's database is shared by any number of replicas.
func (pgDriver) File() bool { return false }
func (pgDriver) Classify(err error) (*db.Fault, bool) {
	f := classify(err)
	return f, f != nil
}

// IsCorrupt: a damaged PostgreSQL database is the server's to report and
// repair (its fault says so); there is no file to restore.
func (pgDriver) IsCorrupt(error) bool { return false }

func (pgDriver) Open(ctx context.Context, dsn string, cfg db.Config) (db.Engine, error) {
	return open(ctx, dsn, cfg.KeyedWriters, cfg.Committed)
}

// engine is a PostgreSQL database shared by any number of
// planserver processes.
type engine struct {
	// writer is the committers' connections: one, plus one per keyed
	// writer; reader the read pool.
	writer, reader *sql.DB
	keyedWriters   int
	// id names this process in its commit notifications, so that its
	// listener skips its own (the hooks already ran after the commit).
	id string
	// binds caches rebind's output per statement.
	binds     sync.Map
	bindCount atomic.Int64
	listen    *listener
	clock     *serverClock
	// versions reads commit_version for Version.
	versions versionReads
	// locks accumulates the write lock's hold and wait times.
	locks lockStats
}

// maxCachedBinds bounds the rebind cache: statements built from filters
// have a bounded set of shapes, but a query with one placeholder per
// ancestor has as many shapes as trees have depths.
const maxCachedBinds = 4096

// open connects the writer (one connection, and one per keyed
// writer), the read pool and the listener, whose notifications run
// committed.
func open(ctx context.Context, dsn string, keyedWriters int, committed func()) (*engine, error) {
	name := pgDriver{}.Redact(dsn)
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", name, err)
	}
	cfg.Tracer = pgTracer{} // spans only under a traced request (trace.go)
	if cfg.RuntimeParams["application_name"] == "" {
		cfg.RuntimeParams["application_name"] = "planserver"
	}
	var idBytes [8]byte
	_, _ = rand.Read(idBytes[:])
	e := &engine{id: hex.EncodeToString(idBytes[:]), clock: &serverClock{}, keyedWriters: keyedWriters}
	writers := 1 + keyedWriters

	wcfg := cfg.Copy()
	// A writer that stalls inside its transaction (a paused or partitioned
	// replica) would hold the write lock, and so every replica's writes:
	// the server ends such a transaction, which then fails, unacknowledged.
	wcfg.RuntimeParams["idle_in_transaction_session_timeout"] = "30s"
	writer := stdlib.OpenDB(*wcfg)
	writer.SetMaxOpenConns(writers)
	writer.SetMaxIdleConns(writers)
	writer.SetConnMaxLifetime(0)
	writer.SetConnMaxIdleTime(0)
	if err := checkServer(ctx, writer); err != nil {
		writer.Close()
		return nil, fmt.Errorf("open %s: %w", name, db.Classify(err))
	}
	reader := stdlib.OpenDB(*cfg.Copy())
	readers := max(4, 2*runtime.GOMAXPROCS(0))
	reader.SetMaxOpenConns(readers)
	reader.SetMaxIdleConns(readers)
	reader.SetConnMaxIdleTime(5 * time.Minute)
	if err := reader.PingContext(ctx); err != nil {
		writer.Close()
		reader.Close()
		return nil, fmt.Errorf("open %s for reading: %w", name, db.Classify(err))
	}
	e.listen, err = startListener(ctx, cfg.Copy(), e.id, committed, e.clock)
	if err != nil {
		writer.Close()
		reader.Close()
		return nil, fmt.Errorf("listen on %s: %w", name, db.Classify(err))
	}
	e.writer, e.reader = writer, reader
	return e, nil
}

// checkServer refuses a database whose encoding is not UTF-8: the stores
// keep UTF-8 text and compare it byte by byte, as SQLite does.
func checkServer(ctx context.Context, conn *sql.DB) error {
	var encoding string
	if err := conn.QueryRowContext(ctx, `SHOW server_encoding`).Scan(&encoding); err != nil {
		return err
	}
	if encoding != "UTF8" {
		return fmt.Errorf("the database's encoding is %s; planserver needs UTF8 (CREATE DATABASE ... ENCODING 'UTF8' TEMPLATE template0)", encoding)
	}
	return nil
}

func (e *engine) Writer() *sql.DB { return e.writer }
func (e *engine) Reader() *sql.DB { return e.reader }

// Clock is the server's clock (serverClock).
func (e *engine) Clock() func() time.Time { return e.clock.now }

// KeyedWriters: keyed batches run on connections of their own, beside
// the other writes' batches and those of other replicas (lockKeys).
func (e *engine) KeyedWriters() int { return e.keyedWriters }

// StoresNUL: PostgreSQL's text cannot hold U+0000.
func (e *engine) StoresNUL() bool { return false }

// Rebind rewrites ? placeholders as $1, $2, … outside string literals,
// quoted identifiers and comments.
func (e *engine) Rebind(query string) string {
	if v, ok := e.binds.Load(query); ok {
		return v.(string)
	}
	out := rebindDollar(query)
	if e.bindCount.Load() < maxCachedBinds {
		if _, loaded := e.binds.LoadOrStore(query, out); !loaded {
			e.bindCount.Add(1)
		}
	}
	return out
}

// rebindDollar is rebind without the cache.
func rebindDollar(query string) string {
	if !strings.Contains(query, "?") {
		return query
	}
	var b strings.Builder
	b.Grow(len(query) + 16)
	n := 0
	for i := 0; i < len(query); i++ {
		c := query[i]
		switch {
		case c == '\'' || c == '"':
			// A literal or a quoted identifier; a doubled quote inside
			// it is part of it, which the loop handles as two literals.
			j := strings.IndexByte(query[i+1:], c)
			if j < 0 {
				b.WriteString(query[i:])
				return b.String()
			}
			b.WriteString(query[i : i+j+2])
			i += j + 1
		case c == '-' && i+1 < len(query) && query[i+1] == '-':
			j := strings.IndexByte(query[i:], '\n')
			if j < 0 {
				b.WriteString(query[i:])
				return b.String()
			}
			b.WriteString(query[i : i+j+1])
			i += j
		case c == '?':
			n++
			b.WriteByte('$')
			b.WriteString(fmt.Sprint(n))
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// ReadOptions: REPEATABLE READ, READ ONLY is one snapshot.
func (e *engine) ReadOptions() *sql.TxOptions {
	return &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true}
}

// migrateLockKey is the session advisory lock migrations hold: replicas
// started together would otherwise each create goose's table and apply the
// same migration. The next one waits, then finds the schema at head.
const migrateLockKey = writeLockKey + 1

// migrationLocker waits for the migration lock for as long as its context
// allows (goose's own locker polls, every second at best).
type migrationLocker struct{}

func (migrationLocker) SessionLock(ctx context.Context, conn *sql.Conn) error {
	_, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock($1)`, migrateLockKey)
	return err
}

func (migrationLocker) SessionUnlock(ctx context.Context, conn *sql.Conn) error {
	_, err := conn.ExecContext(ctx, `SELECT pg_advisory_unlock($1)`, migrateLockKey)
	return err
}

// Migrations take turns under an advisory lock of their own.
func (e *engine) Migrations() db.Migrations {
	return db.Migrations{Dialect: goose.DialectPostgres, Files: migrations.Postgres, Lock: migrationLocker{}}
}

// CheckIntegrity has nothing to do: PostgreSQL checks its own pages (and
// its data checksums, where the cluster has them) as it reads them.
func (e *engine) CheckIntegrity(context.Context) error { return nil }

// errBackupPostgres answers `planserver backup` on PostgreSQL.
var errBackupPostgres = errors.New("planserver backup copies a SQLite database; on PostgreSQL, back up with the server's own tools " +
	"(pg_dump --format=custom, or continuous archiving), or copy the data to a SQLite file with " +
	"planserver copy --from postgres://... --to FILE.db")

func (e *engine) Backup(context.Context, string) error { return errBackupPostgres }

// LowOnSpace cannot look at the server's disk: a probe write decides.
func (e *engine) LowOnSpace() bool { return false }

// Version: every replica commits to the one database, and counts its
// commits in commit_version.
func (e *engine) Version(ctx context.Context) (uint64, error) {
	return e.versions.read(ctx, e.reader)
}

// HighWater reads the identity sequences and the event seq counter
// (migrations/postgres).
func (e *engine) HighWater(q db.Querier, counters map[string]string) (map[string]int64, error) {
	marks := map[string]int64{}
	for table, key := range counters {
		if table == "events" {
			continue
		}
		var last sql.NullInt64
		if err := q.QueryRow(`SELECT pg_sequence_last_value(pg_get_serial_sequence(?, ?)::regclass)`, table, key).Scan(&last); err != nil {
			return nil, err
		}
		marks[table] = last.Int64 // NULL: never used
	}
	var last int64
	if err := q.QueryRow(`SELECT last FROM event_seq WHERE id = 1`).Scan(&last); err != nil {
		return nil, err
	}
	marks["events"] = last
	return marks, nil
}

func (e *engine) SetHighWater(tx *db.Tx, counters map[string]string, marks map[string]int64) error {
	for table, key := range counters {
		if table == "events" || marks[table] == 0 {
			continue
		}
		if _, err := tx.Exec(`SELECT setval(pg_get_serial_sequence(?, ?), ?, true)`, table, key, marks[table]); err != nil {
			return err
		}
	}
	_, err := tx.Exec(`UPDATE event_seq SET last = ? WHERE id = 1`, marks["events"])
	return err
}

// Close stops the listener, then closes the pools.
func (e *engine) Close() error {
	e.listen.stop()
	return errors.Join(e.reader.Close(), e.writer.Close())
}

// listener LISTENs for commit notifications on a connection of its own and
// runs the hooks for every commit made by another process. When the
// connection is lost it connects again, and runs the hooks once it
// listens again: notifications sent meanwhile are lost, so whoever relies
// on them must look again. Nothing is lost that way, only delayed: event
// streams re-read the log from their cursors.
type listener struct {
	cfg    *pgx.ConnConfig
	self   string
	fire   func()
	clock  *serverClock
	cancel context.CancelFunc
	done   chan struct{}
}

// listenPing is how long the listener waits for a notification before it
// checks that its connection is still alive: a connection that died
// without a word (a network partition) would otherwise wait forever. A
// variable only so that a test can make the listener idle often.
var listenPing = 30 * time.Second

// startListener connects and listens before it returns, so that no commit
// after Open can go unnoticed.
func startListener(ctx context.Context, cfg *pgx.ConnConfig, self string, fire func(), clock *serverClock) (*listener, error) {
	conn, err := listenConn(ctx, cfg)
	if err == nil {
		err = clock.sync(ctx, conn)
	}
	if err != nil {
		if conn != nil {
			conn.Close(context.Background())
		}
		return nil, err
	}
	lctx, cancel := context.WithCancel(context.Background())
	l := &listener{cfg: cfg, self: self, fire: fire, clock: clock, cancel: cancel, done: make(chan struct{})}
	go l.run(lctx, conn)
	return l, nil
}

func listenConn(ctx context.Context, cfg *pgx.ConnConfig) (*pgx.Conn, error) {
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if _, err := conn.Exec(ctx, `LISTEN `+notifyChannel); err != nil {
		conn.Close(context.Background())
		return nil, err
	}
	return conn, nil
}

func (l *listener) stop() {
	l.cancel()
	<-l.done
}

func (l *listener) run(ctx context.Context, conn *pgx.Conn) {
	defer close(l.done)
	backoff := 50 * time.Millisecond
	for {
		l.wait(ctx, conn)
		conn.Close(context.Background())
		for {
			if ctx.Err() != nil {
				return
			}
			var err error
			if conn, err = listenConn(ctx, l.cfg); err == nil {
				break
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 5*time.Second)
		}
		backoff = 50 * time.Millisecond
		// Listening again: whatever committed while it was not is found
		// by looking.
		l.fire()
	}
}

// wait delivers notifications until the connection fails or ctx ends, and
// keeps the clock's offset fresh.
func (l *listener) wait(ctx context.Context, conn *pgx.Conn) {
	if l.clock.sync(ctx, conn) != nil {
		return
	}
	for ctx.Err() == nil {
		if l.clock.stale() && l.clock.sync(ctx, conn) != nil {
			return
		}
		wctx, cancel := context.WithTimeout(ctx, listenPing)
		n, err := conn.WaitForNotification(wctx)
		cancel()
		switch {
		case err == nil:
			if n.Payload != l.self {
				l.fire()
			}
		case ctx.Err() != nil:
			return
		case wctx.Err() != nil && !conn.IsClosed():
			pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			err := conn.Ping(pctx)
			cancel()
			if err != nil {
				return
			}
		default:
			return
		}
	}
}

// classify returns the fault a PostgreSQL error is, or nil: a full
// disk is ErrDiskFull; a server that cannot take writes (read-only, a
// standby, shutting down, out of connections) or cannot be reached is
// ErrUnavailable.
func classify(err error) *db.Fault {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return nil // the caller gave up; the server is fine
	}
	unavailable := func(detail string) *db.Fault { return &db.Fault{Kind: db.ErrUnavailable, Detail: detail} }
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case pe.Code == "53100": // disk_full
			return &db.Fault{Kind: db.ErrDiskFull, Detail: "the database server's disk is full"}
		case pe.Code == "25006": // read_only_sql_transaction
			return unavailable("the database cannot take writes: the PostgreSQL server is read-only (a standby, or default_transaction_read_only is on)")
		case pe.Code == "57P01" || pe.Code == "57P02" || pe.Code == "57P03": // admin_shutdown, crash_shutdown, cannot_connect_now
			return unavailable("the PostgreSQL server is shutting down or starting up")
		case strings.HasPrefix(pe.Code, "53"): // insufficient resources: memory, connections
			return unavailable("the PostgreSQL server is out of resources (" + pe.Message + ")")
		case strings.HasPrefix(pe.Code, "08"): // connection exceptions
			return unavailable("the connection to the PostgreSQL server failed")
		case pe.Code == "58030": // io_error
			return unavailable("the PostgreSQL server's disk reports an I/O error")
		case pe.Code == "XX001" || pe.Code == "XX002": // data_corrupted, index_corrupted
			return unavailable("the PostgreSQL database is damaged; an operator must repair or restore it")
		}
		return nil
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	switch {
	case errors.As(err, &ce), errors.As(err, &ne), errors.Is(err, driver.ErrBadConn),
		errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed), pgconn.SafeToRetry(err),
		isClosedConn(err):
		return unavailable("the PostgreSQL server cannot be reached")
	}
	return nil
}

// isClosedConn recognizes pgx's error for a statement on a connection it
// has already closed after a failure (it has no exported type).
func isClosedConn(err error) bool {
	return strings.Contains(err.Error(), "conn closed")
}

// localClock is this process's clock; tests skew it.
var localClock = time.Now

// clockSync is how often a replica measures its clock's offset from the
// server's again: clocks drift by milliseconds an hour, and NTP steps.
const clockSync = 30 * time.Second

// serverClock is the database server's clock as this process sees it: the
// local clock plus the offset measured on the listener's connection (the
// server's clock_timestamp() against the middle of the round trip, so the
// error is at most half a round trip). Every replica thus judges leases
// and expiry and stamps its writes by one clock, the server's.
type serverClock struct {
	offset atomic.Int64 // nanoseconds to add to the local clock
	synced atomic.Int64 // local Unix nanoseconds of the last sync
}

func (c *serverClock) now() time.Time {
	return localClock().Add(time.Duration(c.offset.Load()))
}

func (c *serverClock) stale() bool {
	return localClock().UnixNano()-c.synced.Load() > int64(clockSync)
}

func (c *serverClock) sync(ctx context.Context, conn *pgx.Conn) error {
	t0 := localClock()
	var server time.Time
	if err := conn.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&server); err != nil {
		return err
	}
	t1 := localClock()
	c.offset.Store(int64(server.Sub(t0.Add(t1.Sub(t0) / 2))))
	c.synced.Store(t1.UnixNano())
	return nil
}
