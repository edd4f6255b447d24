package postgres

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/planserver/planserver/internal/db"
	"github.com/planserver/planserver/internal/dbtest"
)

func TestRebindDollar(t *testing.T) {
	cases := []struct{ in, want string }{
		{`SELECT 1`, `SELECT 1`},
		{`SELECT a FROM t WHERE a = ? AND b IN (?, ?)`, `SELECT a FROM t WHERE a = $1 AND b IN ($2, $3)`},
		{`SELECT '?', "we?ird" FROM t WHERE a = ?`, `SELECT '?', "we?ird" FROM t WHERE a = $1`},
		{`SELECT 'it''s ?' || ? -- a comment?
			FROM t WHERE x = ?`, `SELECT 'it''s ?' || $1 -- a comment?
			FROM t WHERE x = $2`},
		{`SELECT ? -- trailing?`, `SELECT $1 -- trailing?`},
		{`SELECT 'unterminated ?`, `SELECT 'unterminated ?`},
	}
	for _, c := range cases {
		if got := rebindDollar(c.in); got != c.want {
			t.Errorf("rebind(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	// Ten and more placeholders.
	q := "VALUES (?" + strings.Repeat(", ?", 11) + ")"
	if got := rebindDollar(q); !strings.HasSuffix(got, "$11, $12)") {
		t.Errorf("twelve placeholders: %s", got)
	}
}

// TestPostgresSchemaMatchesSQLite migrates both engines and compares them:
// the same tables with the same columns, nullability and defaults' presence,
// and on PostgreSQL every text column collates as bytes ("C"), as SQLite's
// do.
func TestPostgresSchemaMatchesSQLite(t *testing.T) {
	dbtest.RequirePostgres(t)
	ctx := context.Background()
	lite := migrated(t, filepath.Join(t.TempDir(), "schema.db"))
	pg := migrated(t, dbtest.Fresh(t))

	liteCols := map[string]string{}
	rows, err := lite.Reader(ctx).Query(`SELECT m.name, p.name, p."notnull", p.dflt_value IS NOT NULL
		FROM sqlite_master m JOIN pragma_table_info(m.name) p
		WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%' AND m.name <> 'goose_db_version'`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var table, col string
		var notNull, hasDefault bool
		if err := rows.Scan(&table, &col, &notNull, &hasDefault); err != nil {
			t.Fatal(err)
		}
		liteCols[table+"."+col] = fmt.Sprintf("not null %v, default %v", notNull, hasDefault)
	}
	rows.Close()

	pgCols := map[string]string{}
	rows, err = pg.Reader(ctx).Query(`SELECT c.table_name, c.column_name, c.is_nullable = 'NO',
			c.column_default IS NOT NULL OR c.is_identity = 'YES', c.data_type, coalesce(c.collation_name, '')
		FROM information_schema.columns c JOIN information_schema.tables t
			ON t.table_schema = c.table_schema AND t.table_name = c.table_name
		WHERE c.table_schema = current_schema() AND t.table_type = 'BASE TABLE'
			AND c.table_name NOT IN ('goose_db_version', 'event_seq', 'commit_version')`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var table, col, typ, collation string
		var notNull, hasDefault bool
		if err := rows.Scan(&table, &col, &notNull, &hasDefault, &typ, &collation); err != nil {
			t.Fatal(err)
		}
		if typ == "text" && collation != "C" {
			t.Errorf("%s.%s collates %q; every text column must be COLLATE \"C\" (byte order, as on SQLite)", table, col, collation)
		}
		// SQLite's INTEGER PRIMARY KEY has no declared default; its
		// identity is the rowid. (A counter table missing here shows as a
		// difference below.)
		if identityKeys[table] == col {
			hasDefault = false
		}
		pgCols[table+"."+col] = fmt.Sprintf("not null %v, default %v", notNull, hasDefault)
	}
	rows.Close()
	for k, v := range liteCols {
		// SQLite's primary key columns may be NULL unless declared NOT
		// NULL; PostgreSQL's never are.
		if pv, ok := pgCols[k]; !ok {
			t.Errorf("%s is on SQLite only", k)
		} else if pv != v && !(strings.HasPrefix(pv, "not null true") && strings.HasPrefix(v, "not null false") && isPrimaryKey(k)) {
			t.Errorf("%s: SQLite %s, PostgreSQL %s", k, v, pv)
		}
	}
	for k := range pgCols {
		if _, ok := liteCols[k]; !ok {
			t.Errorf("%s is on PostgreSQL only", k)
		}
	}
}

// identityKeys are the tables whose key is an identity column on
// PostgreSQL and an AUTOINCREMENT rowid on SQLite (events take theirs
// from a counter row on both: migrations/postgres).
var identityKeys = map[string]string{"sessions": "pk", "step_reports": "id", "session_reviews": "id", "webhook_deliveries": "id"}

func isPrimaryKey(col string) bool {
	switch col {
	case "sessions.pk", "events.seq", "step_reports.id", "session_reviews.id", "event_retention.id", "tokens.name",
		"session_plans.session_id", "session_todos.session_id", "webhook_deliveries.id":
		return true
	}
	return false
}

// TestPostgresMigrateDownRefuses: migrations after the baseline roll back
// (when that loses nothing); the baseline refuses, since PostgreSQL's
// schema begins there and rolling it back would only drop every table.
func TestPostgresMigrateDownRefuses(t *testing.T) {
	dbtest.RequirePostgres(t)
	d := migrated(t, dbtest.Fresh(t))
	ctx := context.Background()
	// Versions may have gaps (each branch of a round takes its own
	// number), so each step rolls back the newest applied one.
	for {
		v, err := d.AppliedVersion(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if v <= 8 {
			break
		}
		if got, err := d.MigrateDown(ctx, nil); err != nil || got != v {
			t.Fatalf("migrate down from %d: rolled back %d, %v", v, got, err)
		}
	}
	_, err := d.MigrateDown(ctx, nil)
	if err == nil || !strings.Contains(err.Error(), "refusing to roll back") || !strings.Contains(err.Error(), "planserver copy") {
		t.Fatalf("migrate down at the baseline: %v, want a refusal that says what to do", err)
	}
	if v, err := d.AppliedVersion(ctx); err != nil || v != 8 {
		t.Errorf("after the refused rollback: version %d, %v", v, err)
	}
	if _, _, err := d.MigrateUp(ctx, nil); err != nil {
		t.Errorf("migrate up again: %v", err)
	}
}

// TestPostgresWritesAreSerializedAcrossReplicas: two handles on one
// database (two replicas) read a counter and write it back plus one, with
// nothing but the write lock between them. No increment is lost.
func TestPostgresWritesAreSerializedAcrossReplicas(t *testing.T) {
	dbtest.RequirePostgres(t)
	dsn := dbtest.Fresh(t)
	a, b := migrated(t, dsn), migrated(t, dsn)
	ctx := context.Background()
	if err := a.Write(ctx, func(tx *db.Tx) error {
		if _, err := tx.Exec(`CREATE TABLE counter (id INTEGER PRIMARY KEY, n BIGINT NOT NULL)`); err != nil {
			return err
		}
		_, err := tx.Exec(`INSERT INTO counter VALUES (1, 0)`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	const perWorker = 50
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		d := []*db.DB{a, b}[w%2]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perWorker; i++ {
				err := d.Write(ctx, func(tx *db.Tx) error {
					var n int64
					if err := tx.QueryRow(`SELECT n FROM counter WHERE id = 1`).Scan(&n); err != nil {
						return err
					}
					_, err := tx.Exec(`UPDATE counter SET n = ? WHERE id = 1`, n+1)
					return err
				})
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	var n int64
	if err := b.Reader(ctx).QueryRow(`SELECT n FROM counter WHERE id = 1`).Scan(&n); err != nil || n != 8*perWorker {
		t.Fatalf("counter = %d, %v; want %d: increments were lost", n, err, 8*perWorker)
	}
}

// TestPostgresCommitsWakeOtherReplicas: a commit through one handle runs
// the OnCommit hooks of another handle on the same database (NOTIFY), and
// a handle is not woken twice by its own commits.
func TestPostgresCommitsWakeOtherReplicas(t *testing.T) {
	dbtest.RequirePostgres(t)
	dsn := dbtest.Fresh(t)
	a, b := migrated(t, dsn), migrated(t, dsn)
	woken := make(chan struct{}, 16)
	a.OnCommit(func() { woken <- struct{}{} })
	var bHooks atomic.Int64
	b.OnCommit(func() { bHooks.Add(1) })
	if err := b.Write(context.Background(), func(tx *db.Tx) error {
		_, err := tx.Exec(`CREATE TABLE w (x INTEGER)`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-woken:
	case <-time.After(10 * time.Second):
		t.Fatal("a commit on b never woke a")
	}
	time.Sleep(200 * time.Millisecond) // b's own notification has arrived by now
	if n := bHooks.Load(); n != 1 {
		t.Errorf("b's hooks ran %d times for its one commit", n)
	}
	// A write that changes nothing commits nothing and wakes nobody.
	if err := b.Write(context.Background(), func(tx *db.Tx) error { return errors.New("no") }); err == nil {
		t.Fatal("failing write succeeded")
	}
	select {
	case <-woken:
		t.Error("a rolled-back write woke another replica")
	case <-time.After(300 * time.Millisecond):
	}
}

// TestPostgresLostConnectionsRecover ends every connection of a database
// from the server's side (an operator, a restart, a failover): the
// listener connects again and runs the hooks (commits may have gone
// unnoticed meanwhile), any write that fails says unavailable, and writes
// and readiness come back by themselves.
func TestPostgresLostConnectionsRecover(t *testing.T) {
	dsn := dbtest.Fresh(t)
	admin := dbtest.Admin(t)
	d := migrated(t, dsn)
	ctx := context.Background()
	woken := make(chan struct{}, 16)
	d.OnCommit(func() { woken <- struct{}{} })
	if _, err := admin.Exec(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1`, dbtest.Name(t, dsn)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-woken:
	case <-time.After(15 * time.Second):
		t.Fatal("the listener did not come back (or did not run the hooks when it did)")
	}
	probe := func() error {
		return d.Write(ctx, func(tx *db.Tx) error {
			_, err := tx.Exec(`UPDATE event_retention SET pruned_through = pruned_through WHERE id = 1`)
			return err
		})
	}
	if err := probe(); err != nil && !errors.Is(err, db.ErrUnavailable) {
		t.Fatalf("write on a terminated connection: %v, want success or unavailable", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := probe()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("writes never came back: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := d.Ready(ctx); err != nil {
		t.Errorf("not ready after reconnecting: %v", err)
	}
}

// TestPostgresReadOnlyIsUnavailable: a server that takes no writes (a
// standby, default_transaction_read_only) answers writes unavailable,
// naming the cause, and readiness says so.
func TestPostgresReadOnlyIsUnavailable(t *testing.T) {
	dsn := dbtest.Fresh(t)
	admin := dbtest.Admin(t)
	migrated(t, dsn).Close()
	if _, err := admin.Exec(`ALTER DATABASE "` + dbtest.Name(t, dsn) + `" SET default_transaction_read_only = on`); err != nil {
		t.Fatal(err)
	}
	d := migrated(t, dsn)
	ctx := context.Background()
	err := d.Write(ctx, func(tx *db.Tx) error {
		_, err := tx.Exec(`INSERT INTO revision_floors (kind, key, revision) VALUES ('t', 'k', 1)`)
		return err
	})
	if f, ok := faultOf(err, db.ErrUnavailable); !ok || f.Cause == nil || !strings.Contains(f.Detail, "read-only") {
		t.Fatalf("write to a read-only server: %v, want unavailable naming the cause", err)
	}
	if err := d.Ready(ctx); !errors.Is(err, db.ErrUnavailable) {
		t.Errorf("ready on a read-only server: %v", err)
	}
}

// TestPostgresBackupRefusesNamingTheTools: planserver backup writes SQLite
// files; on PostgreSQL it says what to use instead.
func TestPostgresBackupRefusesNamingTheTools(t *testing.T) {
	dbtest.RequirePostgres(t)
	d := migrated(t, dbtest.Fresh(t))
	err := d.Backup(context.Background(), filepath.Join(t.TempDir(), "b.db"))
	if err == nil || !strings.Contains(err.Error(), "pg_dump") || !strings.Contains(err.Error(), "planserver copy") {
		t.Fatalf("backup on PostgreSQL: %v", err)
	}
}

// TestPostgresRefusesANonUTF8Database: byte-wise text comparison needs
// UTF-8 on both engines.
func TestPostgresRefusesANonUTF8Database(t *testing.T) {
	admin := dbtest.Admin(t)
	dsn := dbtest.Fresh(t)
	name := dbtest.Name(t, dsn)
	latin := strings.Replace(dsn, "/"+name, "/"+name+"_latin1", 1)
	if _, err := admin.Exec(`CREATE DATABASE "` + name + `_latin1" TEMPLATE template0 ENCODING 'LATIN1' LC_COLLATE 'C' LC_CTYPE 'C'`); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = admin.Exec(`DROP DATABASE IF EXISTS "` + name + `_latin1" WITH (FORCE)`) })
	d, err := db.Open(context.Background(), latin, db.Options{})
	if err == nil {
		d.Close()
		t.Fatal("opened a LATIN1 database")
	}
	if !strings.Contains(err.Error(), "UTF8") {
		t.Errorf("refusal does not say why: %v", err)
	}
}

// openUnmigrated opens dsn as it is. On PostgreSQL every commit moves
// commit_version (DB.Version), so a handle that writes needs the schema:
// migrated.
func openUnmigrated(t *testing.T, dsn string) *db.DB {
	t.Helper()
	d, err := db.Open(context.Background(), dsn, db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// TestPostgresReplicasMigrateAtOnce: replicas started together on an empty
// database all come up at the schema's head; the migration lock makes
// them take turns instead of creating the same tables twice.
func TestPostgresReplicasMigrateAtOnce(t *testing.T) {
	dbtest.RequirePostgres(t)
	dsn := dbtest.Fresh(t)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		d := openUnmigrated(t, dsn)
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, errs[i] = d.MigrateUp(context.Background(), nil)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("replica %d: %v", i, err)
		}
	}
	d := migrated(t, dsn)
	st, err := d.MigrateStatus(context.Background())
	if err != nil || len(st) == 0 || !st[len(st)-1].Applied || st[len(st)-1].Version != db.KnownVersion() {
		t.Errorf("status after concurrent migrations: %+v, %v", st, err)
	}
}

// TestPostgresTimeIsTheServers: a replica whose clock is an hour ahead
// still reads, stamps and judges time by the database server's clock, so
// every replica agrees on when a lease or a token runs out.
func TestPostgresTimeIsTheServers(t *testing.T) {
	dbtest.RequirePostgres(t)
	dsn := dbtest.Fresh(t)
	t.Cleanup(func() { localClock = time.Now }) // after the handle below closes
	localClock = func() time.Time { return time.Now().Add(time.Hour) }
	d := migrated(t, dsn)
	if skew := time.Until(d.Now()); skew > 2*time.Second || skew < -2*time.Second {
		t.Fatalf("a replica an hour ahead reads a time %s off the server's", skew)
	}
	var stamped string
	if err := d.Write(context.Background(), func(tx *db.Tx) error {
		stamped = tx.NowText()
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if at, err := time.Parse(db.TimeFormat, stamped); err != nil || time.Since(at).Abs() > 2*time.Second {
		t.Errorf("a write was stamped %s (%v)", stamped, err)
	}
}

// TestPostgresListenerOutlivesIdleWaits: a listener that waited past its
// ping interval many times (checking its connection each time) still
// delivers the next commit's wake-up.
func TestPostgresListenerOutlivesIdleWaits(t *testing.T) {
	dbtest.RequirePostgres(t)
	t.Cleanup(func() { listenPing = 30 * time.Second }) // after the handles close
	listenPing = 20 * time.Millisecond
	dsn := dbtest.Fresh(t)
	a, b := migrated(t, dsn), migrated(t, dsn)
	woken := make(chan struct{}, 16)
	a.OnCommit(func() { woken <- struct{}{} })
	time.Sleep(300 * time.Millisecond) // many idle waits and pings
	select {
	case <-woken:
		t.Fatal("woken while idle: the listener lost its connection and reconnected")
	default:
	}
	if err := b.Write(context.Background(), func(tx *db.Tx) error {
		_, err := tx.Exec(`CREATE TABLE idle (x INTEGER)`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-woken:
	case <-time.After(10 * time.Second):
		t.Fatal("after idle waits, a commit on b never woke a")
	}
}

// TestPostgresWriteRoundTrips: a write that reads once and then makes
// several changes reaches the server in two round trips, from BEGIN (with
// the write lock) to COMMIT: the lock with the read, the changes with the
// commit; one that only writes in one; one that fails before reading in
// none.
func TestPostgresWriteRoundTrips(t *testing.T) {
	dbtest.RequirePostgres(t)
	d := migrated(t, dbtest.Fresh(t))
	ctx := context.Background()
	createKV(t, d)
	trips := func(fn func(tx *db.Tx) error) (int64, error) {
		before := d.RoundTrips()
		err := d.Write(ctx, fn)
		return d.RoundTrips() - before, err
	}
	n, err := trips(func(tx *db.Tx) error {
		var c int
		if err := tx.QueryRow(`SELECT count(*) FROM kv`).Scan(&c); err != nil {
			return err
		}
		for i := 0; i < 5; i++ {
			if _, err := tx.Exec(`INSERT INTO kv (k, v) VALUES (?, 'x')`, c+i); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil || n != 2 {
		t.Errorf("read then 5 inserts: %d round trips, %v; want 2", n, err)
	}
	if n, err = trips(func(tx *db.Tx) error {
		_, err := tx.Exec(`UPDATE kv SET v = 'y'`)
		return err
	}); err != nil || n != 1 {
		t.Errorf("an update alone: %d round trips, %v; want 1", n, err)
	}
	refused := errors.New("refused")
	if n, err = trips(func(tx *db.Tx) error { return refused }); !errors.Is(err, refused) || n != 0 {
		t.Errorf("a write refused before reading: %d round trips, %v; want 0", n, err)
	}
	var count int
	var v string
	if err := d.Reader(ctx).QueryRow(`SELECT count(*), min(v) FROM kv`).Scan(&count, &v); err != nil || count != 5 || v != "y" {
		t.Errorf("%d rows, v %q, %v; want 5 rows of y", count, v, err)
	}
	if commits, _, held, _ := d.LockStats(); commits < 3 || held <= 0 {
		t.Errorf("lock stats: %d commits held %v; want at least 3 commits and a hold time", commits, held)
	}
}

// TestPostgresBatchTakesInWritesQueuedWhileItRuns: a write queued while a
// batch runs joins that batch, after every write of it, and commits with
// it instead of waiting for the next commit (and the write lock again).
func TestPostgresBatchTakesInWritesQueuedWhileItRuns(t *testing.T) {
	dbtest.RequirePostgres(t)
	d := kvDB(t)
	ctx := context.Background()
	var commits atomic.Int64
	d.OnCommit(func() { commits.Add(1) })
	insert := func(k int) func(tx *db.Tx) error {
		return func(tx *db.Tx) error {
			var seen int
			if err := tx.QueryRow(`SELECT count(*) FROM kv WHERE k >= 0`).Scan(&seen); err != nil {
				return err
			}
			if seen != k {
				return fmt.Errorf("write %d saw %d earlier writes", k, seen)
			}
			_, err := tx.Exec(`INSERT INTO kv (k, v) VALUES (?, 'x')`, k)
			return err
		}
	}
	release, blocked := blockWriter(t, d)
	// Writes 0 and 1 queue behind the blocker and form the next batch;
	// write 0 holds it until write 2 has queued.
	running, gate := make(chan struct{}), make(chan struct{})
	results := make(chan error, 3)
	go func() {
		results <- d.Write(ctx, func(tx *db.Tx) error {
			close(running)
			<-gate
			return insert(0)(tx)
		})
	}()
	waitQueued(t, d, 1)
	go func() { results <- d.Write(ctx, insert(1)) }()
	waitQueued(t, d, 2)
	release()
	if err := <-blocked; err != nil {
		t.Fatal(err)
	}
	<-running
	go func() { results <- d.Write(ctx, insert(2)) }()
	waitQueued(t, d, 1)
	close(gate)
	for range 3 {
		if err := <-results; err != nil {
			t.Fatal(err)
		}
	}
	if n := commits.Load(); n != 2 {
		t.Errorf("%d commits, want 2: the blocker, then writes 0, 1 and 2 together", n)
	}
}

// TestPostgresCarriedStatementsFailTheirWriteAlone: a write's last
// statements travel with the next write's first round trip, or with the
// commit (commit.go). A duplicate key found there undoes its own write
// alone: the write that carried it goes on as if nothing happened, no
// write function runs twice, later writes do not see the undone one, and
// a batch without failures costs one round trip per write plus the lock's.
func TestPostgresCarriedStatementsFailTheirWriteAlone(t *testing.T) {
	dbtest.RequirePostgres(t)
	d := kvDB(t)
	ctx := context.Background()
	mustExec(t, d, `INSERT INTO kv (k, v) VALUES (100, 'taken')`)
	var runs [5]atomic.Int64
	// insert inserts write i's row, and a duplicate of 100 when dup.
	insert := func(tx *db.Tx, i int, dup bool) error {
		if _, err := tx.Exec(`INSERT INTO kv (k, v) VALUES (?, 'x')`, 10+i); err != nil {
			return err
		}
		if dup {
			_, err := tx.Exec(`INSERT INTO kv (k, v) VALUES (100, 'dup')`)
			return err
		}
		return nil
	}
	// readThenInsert reads how many of the batch's rows it sees first.
	readThenInsert := func(i, wantSeen int, dup bool) func(tx *db.Tx) error {
		return func(tx *db.Tx) error {
			runs[i].Add(1)
			var seen int
			if err := tx.QueryRow(`SELECT count(*) FROM kv WHERE k >= 10 AND k < 100`).Scan(&seen); err != nil {
				return err
			}
			if seen != wantSeen {
				return fmt.Errorf("write %d saw %d rows of the batch, want %d", i, seen, wantSeen)
			}
			return insert(tx, i, dup)
		}
	}
	insertOnly := func(i int, dup bool) func(tx *db.Tx) error {
		return func(tx *db.Tx) error {
			runs[i].Add(1)
			return insert(tx, i, dup)
		}
	}
	writes := []func(tx *db.Tx) error{
		readThenInsert(0, 0, false),
		readThenInsert(1, 1, true), // found by write 2's read
		readThenInsert(2, 1, false),
		insertOnly(3, true), // found with write 4's statements, at the commit
		insertOnly(4, false),
	}
	release, blocked := blockWriter(t, d)
	results := make([]error, len(writes))
	var wg sync.WaitGroup
	for i, fn := range writes {
		waitQueued(t, d, i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = d.Write(ctx, fn)
		}()
	}
	waitQueued(t, d, len(writes))
	release()
	if err := <-blocked; err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for i, err := range results {
		if failed := i == 1 || i == 3; (err != nil) != failed {
			t.Errorf("write %d: %v; want failed %v", i, err, failed)
		}
		if n := runs[i].Load(); n != 1 {
			t.Errorf("write %d ran %d times, want once", i, n)
		}
	}
	var kept string
	if err := d.Reader(ctx).QueryRow(`SELECT string_agg(k::text, ',' ORDER BY k) FROM kv WHERE k >= 10`).Scan(&kept); err != nil {
		t.Fatal(err)
	}
	if kept != "10,12,14,100" {
		t.Errorf("kept rows %s, want 10,12,14,100", kept)
	}

	// Without failures: the lock's round trip with the first read, one
	// per later write (its predecessor's statements with its read), and
	// the last write's statements with the commit.
	mustExec(t, d, `DELETE FROM kv WHERE k >= 10 AND k < 100`)
	release, blocked = blockWriterOn(t, d, func(tx *db.Tx) error {
		_, err := tx.Exec(`UPDATE kv SET v = 'blocker' WHERE k = -1`)
		return err
	})
	for i := range 3 {
		waitQueued(t, d, i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = d.Write(ctx, readThenInsert(i, i, false))
		}()
	}
	waitQueued(t, d, 3)
	before := d.RoundTrips()
	release()
	if err := <-blocked; err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for i := range 3 {
		if results[i] != nil {
			t.Errorf("write %d: %v", i, results[i])
		}
	}
	// The blocker: BEGIN to COMMIT in one round trip.
	if n := d.RoundTrips() - before - 1; n != 4 {
		t.Errorf("a batch of 3 writes that read then insert took %d round trips, want 4", n)
	}
}

// TestPostgresVersionSeesOtherReplicasCommits: a Version call that starts
// after a commit was acknowledged on another replica always reflects it,
// while other callers keep reads of the version in flight all along, so a
// call that shared a read sent before it began would be caught.
func TestPostgresVersionSeesOtherReplicasCommits(t *testing.T) {
	dbtest.RequirePostgres(t)
	dsn := dbtest.Fresh(t)
	a, b := migrated(t, dsn), migrated(t, dsn)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if _, err := a.Version(ctx); err != nil && ctx.Err() == nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	defer func() { cancel(); wg.Wait() }()
	last, err := a.Version(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		mustExec(t, b, `UPDATE event_retention SET pruned_through = pruned_through WHERE id = 1`)
		v, err := a.Version(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if v <= last {
			t.Fatalf("commit %d on b, acknowledged, then a's version is %d, as before it (%d)", i, v, last)
		}
		last = v
	}
}
