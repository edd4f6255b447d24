package drivertest

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/planserver/planserver/internal/db"
)

// Reads and the commit version.

// readIsOneSnapshot: every statement of a Read sees the same committed
// state, even when writes commit between them.
func readIsOneSnapshot(t *testing.T, h Harness) {
	d := kvDB(t, h)
	ctx := context.Background()
	err := d.Read(ctx, func(tx *db.Tx) error {
		before := 0
		if err := tx.QueryRow(`SELECT count(*) FROM kv`).Scan(&before); err != nil {
			return err
		}
		if err := d.Write(ctx, func(w *db.Tx) error {
			_, err := w.Exec(`INSERT INTO kv (k, v) VALUES (1, 'new')`)
			return err
		}); err != nil {
			return err
		}
		after := 0
		if err := tx.QueryRow(`SELECT count(*) FROM kv`).Scan(&after); err != nil {
			return err
		}
		if after != before {
			return fmt.Errorf("one read saw %d rows, then %d", before, after)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := count(t, d); n != 1 {
		t.Errorf("%d rows after the read, want the write's 1", n)
	}
}

// syntaxErrorsStillSurface: a statement the engine cannot parse fails,
// and the connection it ran on serves the next one.
func syntaxErrorsStillSurface(t *testing.T, h Harness) {
	d := h.open(t)
	ctx := context.Background()
	if rows, err := d.Reader(ctx).Query(`SELEKT 1`); err == nil {
		rows.Close()
		t.Fatal("a syntax error was swallowed")
	}
	var n int
	if err := d.Reader(ctx).QueryRow(`SELECT 1`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("after a syntax error: %d, %v", n, err)
	}
	if err := d.Write(ctx, func(tx *db.Tx) error {
		_, err := tx.Exec(`SELEKT 1`)
		return err
	}); err == nil {
		t.Fatal("a write's syntax error was swallowed")
	}
}

// versionMovesWithEveryCommit: the version stays while nothing
// commits, moves forward with a commit, and stays when a write fails.
func versionMovesWithEveryCommit(t *testing.T, h Harness) {
	d := kvDB(t, h)
	ctx := context.Background()
	version := func() uint64 {
		t.Helper()
		v, err := d.Version(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	v0 := version()
	if v := version(); v != v0 {
		t.Fatalf("the version moved from %d to %d with no commit", v0, v)
	}
	MustExec(t, d, `INSERT INTO kv (k, v) VALUES (1, 'a')`)
	v1 := version()
	if v1 <= v0 {
		t.Fatalf("after a commit the version is %d, before it %d", v1, v0)
	}
	if err := d.Write(ctx, func(tx *db.Tx) error { return errors.New("no") }); err == nil {
		t.Fatal("a failing write succeeded")
	}
	if v := version(); v != v1 {
		t.Errorf("a write that committed nothing moved the version from %d to %d", v1, v)
	}
}
