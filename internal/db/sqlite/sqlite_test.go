package sqlite

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/planserver/planserver/internal/db"
)

// openTest opens a fresh SQLite file, not migrated, and returns it with
// its engine.
func openTest(t *testing.T) (*db.DB, *engine) {
	t.Helper()
	d, err := db.Open(context.Background(), filepath.Join(t.TempDir(), "planserver.db"), db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d, d.Engine().(*engine)
}

// TestStatementCacheReusesAndNests runs the same query over and over, and
// the same query again while a result set of it is still open: the cache
// must serve the repeats and fall back to a fresh statement for the nested
// one, with right answers throughout.
func TestStatementCacheReusesAndNests(t *testing.T) {
	ctx := context.Background()
	d, e := openTest(t)
	err := d.Write(ctx, func(tx *db.Tx) error {
		if _, err := tx.Exec(`CREATE TABLE kv (k INTEGER PRIMARY KEY, v TEXT)`); err != nil {
			return err
		}
		for i := 0; i < 10; i++ {
			if _, err := tx.Exec(`INSERT INTO kv (k, v) VALUES (?, ?)`, i, string(rune('a'+i))); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	const q = `SELECT k, v FROM kv WHERE k >= ? ORDER BY k`
	err = d.Read(ctx, func(tx *db.Tx) error {
		outer, err := tx.Query(q, 5)
		if err != nil {
			return err
		}
		defer outer.Close()
		var got []string
		for outer.Next() {
			var k int
			var v string
			if err := outer.Scan(&k, &v); err != nil {
				return err
			}
			// The same statement while outer is open.
			var inner string
			if err := tx.QueryRow(q, k).Scan(new(int), &inner); err != nil {
				return err
			}
			if inner != v {
				t.Errorf("nested query at %d = %q, want %q", k, inner, v)
			}
			got = append(got, v)
		}
		if err := outer.Err(); err != nil {
			return err
		}
		if len(got) != 5 || got[0] != "f" || got[4] != "j" {
			t.Errorf("outer rows = %v", got)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 50; i++ {
		var v string
		if err := d.Reader(ctx).QueryRow(`SELECT v FROM kv WHERE k = ?`, i%10).Scan(&v); err != nil {
			t.Fatal(err)
		}
		if v != string(rune('a'+i%10)) {
			t.Fatalf("k=%d: %q", i%10, v)
		}
	}
	// The writer has one connection: its cache holds the statements used.
	conn, err := e.writer.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	err = conn.Raw(func(dc any) error {
		c := dc.(*cachingConn)
		if _, ok := c.stmts[`INSERT INTO kv (k, v) VALUES (?, ?)`]; !ok {
			t.Errorf("the insert was not cached; cache holds %d statements", len(c.stmts))
		}
		for q, s := range c.stmts {
			if s.busy {
				t.Errorf("statement %q still marked busy", q)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestSyntaxErrorsStillSurface: a statement that cannot be prepared, and
// so is not cached, fails through the uncached path, and the connection
// serves the next one.
func TestSyntaxErrorsStillSurface(t *testing.T) {
	_, e := openTest(t)
	if _, err := e.reader.Exec(`SELEKT 1`); err == nil {
		t.Fatal("a syntax error was swallowed")
	}
	var n int
	if err := e.reader.QueryRow(`SELECT 1`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("after a syntax error: %d, %v", n, err)
	}
}

// TestStatementCacheEvictsLeastRecentlyUsed makes more distinct statements
// than the cache holds: the cache stays bounded and keeps caching (the
// newest statements are cached, the oldest evicted), so no client can
// fill it and turn it off.
func TestStatementCacheEvictsLeastRecentlyUsed(t *testing.T) {
	ctx := context.Background()
	_, e := openTest(t)
	conn, err := e.writer.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	query := func(i int) string { return fmt.Sprintf("SELECT %d", i) }
	for i := 0; i < maxCachedStatements+50; i++ {
		var n int
		if err := conn.QueryRowContext(ctx, query(i)).Scan(&n); err != nil || n != i {
			t.Fatalf("%s = %d, %v", query(i), n, err)
		}
	}
	err = conn.Raw(func(dc any) error {
		c := dc.(*cachingConn)
		if len(c.stmts) != maxCachedStatements || c.lru.Len() != maxCachedStatements {
			t.Errorf("cache holds %d statements (%d in the LRU list), want %d", len(c.stmts), c.lru.Len(), maxCachedStatements)
		}
		if _, ok := c.stmts[query(maxCachedStatements+49)]; !ok {
			t.Error("the newest statement is not cached: the full cache stopped caching")
		}
		if _, ok := c.stmts[query(0)]; ok {
			t.Error("the least recently used statement is still cached")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestCheckpointsOffTheWritePath: the writer's own checkpoint threshold is
// only a backstop, and what a commit adds to the WAL reaches the database
// file soon after it by the background checkpoint, though it is far below
// the 1,000 pages at which SQLite would checkpoint inside a commit.
func TestCheckpointsOffTheWritePath(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ckpt.db")
	d, err := db.Open(ctx, path, db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var threshold int
	if err := d.Engine().(*engine).writer.QueryRowContext(ctx, `PRAGMA wal_autocheckpoint`).Scan(&threshold); err != nil || threshold != writerAutocheckpoint {
		t.Fatalf("the writer's wal_autocheckpoint: %d %v, want %d", threshold, err, writerAutocheckpoint)
	}
	fileSize := func() int64 {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	before := fileSize()
	const blob = 256 << 10 // 64 pages
	err = d.Write(ctx, func(tx *db.Tx) error {
		if _, err := tx.Exec(`CREATE TABLE b (v BLOB)`); err != nil {
			return err
		}
		_, err := tx.Exec(`INSERT INTO b (v) VALUES (?)`, make([]byte, blob))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for fileSize() < before+blob {
		if time.Now().After(deadline) {
			t.Fatalf("the database file is %d bytes 10 s after the commit (%d before): no checkpoint ran", fileSize(), before)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
