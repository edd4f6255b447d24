package drivertest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/planserver/planserver/internal/db"
)

// Keyed writes (DB.WriteKeyed, DB.WriteKeyedFirst).

// KeyedWritesGetTheirFirstRow: keyed writes that declare their first read
// (WriteKeyedFirst) and share a batch each get their own row, as of the
// batch's start, however the engine reads it (PostgreSQL sends them all
// with its BEGIN and locks). A write of a key an earlier write of the
// batch changed sees what the batch did before it; a write's later reads,
// of its first row again or of another, see its own changes. A write
// refused after its row came, or undone by a statement that fails with
// the commit, goes alone. A declared read that fails fails its write
// alone (on PostgreSQL the batch begins again without reads sent ahead).
func keyedWritesGetTheirFirstRow(t *testing.T, h Harness) {
	d := Open(t, h.Fresh(t), db.Options{KeyedWriters: 1})
	ctx := context.Background()
	CreateKV(t, d)
	MustExec(t, d, `INSERT INTO kv (k, v) VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd'), (6, 'f'), (100, 'taken')`)
	readV := `SELECT v FROM kv WHERE k = ?`
	// declaring is a keyed write of row k that declares read of row k as
	// its first statement.
	declaring := func(k int, read string, fn func(tx *db.Tx, first *db.Row) error) func() error {
		return func() error {
			return d.WriteKeyedFirst(ctx, db.Key{Kind: "kv", Name: fmt.Sprint(k)}, db.Query{SQL: read, Args: []any{k}}, fn)
		}
	}
	// value scans a row of readV ("(none)" when there is none); get reads
	// row k as declared; set sets it to v, inserting it when it is
	// missing.
	value := func(row *db.Row) (string, error) {
		var v string
		err := row.Scan(&v)
		if errors.Is(err, sql.ErrNoRows) {
			return "(none)", nil
		}
		return v, err
	}
	get := func(tx *db.Tx, k int) (string, error) { return value(tx.QueryRow(readV, k)) }
	set := func(tx *db.Tx, k int, v string) error {
		_, err := tx.Exec(`INSERT INTO kv (k, v) VALUES (?, ?) ON CONFLICT (k) DO UPDATE SET v = excluded.v`, k, v)
		return err
	}
	// rmw reads row k first, checks it reads want, and sets it to to.
	rmw := func(k int, want, to string) func() error {
		return declaring(k, readV, func(tx *db.Tx, first *db.Row) error {
			v, err := value(first)
			if err != nil {
				return err
			}
			if v != want {
				return fmt.Errorf("write of %d read %q, want %q", k, v, want)
			}
			return set(tx, k, to)
		})
	}

	t.Run("distinct keys", func(t *testing.T) {
		errs, _ := KeyedBatch(t, d, HeldKV, []func() error{
			rmw(1, "a", "a1"), rmw(2, "b", "b1"), rmw(3, "c", "c1"), rmw(4, "d", "d1"), rmw(5, "(none)", "e1"), rmw(6, "f", "f1"),
		})
		for i, err := range errs {
			if err != nil {
				t.Errorf("write %d: %v", i, err)
			}
		}
	})

	t.Run("reads of their own", func(t *testing.T) {
		refused := errors.New("refused")
		errs, _ := KeyedBatch(t, d, HeldKV, []func() error{
			rmw(1, "a1", "a2"),
			rmw(1, "a2", "a3"), // key 1 again: sees the write before it
			declaring(2, readV, func(tx *db.Tx, first *db.Row) error { // its first read again: sees its own change
				if v, err := value(first); err != nil || v != "b1" {
					return fmt.Errorf("read %q, %v first, want b1", v, err)
				}
				if err := set(tx, 2, "b2"); err != nil {
					return err
				}
				if v, err := get(tx, 2); err != nil || v != "b2" {
					return fmt.Errorf("read %q, %v after its own update, want b2", v, err)
				}
				return nil
			}),
			declaring(3, readV, func(tx *db.Tx, first *db.Row) error { // another read after the declared one
				if v, err := value(first); err != nil || v != "c1" {
					return fmt.Errorf("read %q, %v first, want c1", v, err)
				}
				var v string
				if err := tx.QueryRow(`SELECT v || '!' FROM kv WHERE k = ?`, 3).Scan(&v); err != nil || v != "c1!" {
					return fmt.Errorf("read %q, %v, want %q", v, err, "c1!")
				}
				return nil
			}),
			declaring(4, readV, func(tx *db.Tx, first *db.Row) error { // refused after its row came: undone alone
				if _, err := value(first); err != nil {
					return err
				}
				if err := set(tx, 4, "refused"); err != nil {
					return err
				}
				return refused
			}),
			declaring(5, readV, func(tx *db.Tx, first *db.Row) error { // a duplicate found with the commit: undone alone
				if _, err := value(first); err != nil {
					return err
				}
				if err := set(tx, 5, "undone"); err != nil {
					return err
				}
				_, err := tx.Exec(`INSERT INTO kv (k, v) VALUES (100, 'dup')`)
				return err
			}),
			rmw(6, "f1", "f2"),
		})
		for i, err := range errs {
			switch i {
			case 4:
				if !errors.Is(err, refused) {
					t.Errorf("write %d: %v, want its own error", i, err)
				}
			case 5:
				if err == nil {
					t.Errorf("write %d inserted a key already taken", i)
				}
			default:
				if err != nil {
					t.Errorf("write %d: %v", i, err)
				}
			}
		}
	})

	t.Run("a declared read that fails", func(t *testing.T) {
		bad := `SELECT v::int FROM kv WHERE k = ?` // 'f2' is no integer
		errs, _ := KeyedBatch(t, d, HeldKV, []func() error{
			rmw(1, "a3", "a4"),
			declaring(6, bad, func(tx *db.Tx, first *db.Row) error {
				var v int
				return first.Scan(&v)
			}),
			rmw(2, "b2", "b3"),
		})
		if errs[0] != nil || errs[2] != nil {
			t.Errorf("the other writes: %v, %v", errs[0], errs[2])
		}
		if errs[1] == nil {
			t.Error("a read of 'f2' as an integer succeeded")
		}
	})

	var kv string
	if err := d.Reader(ctx).QueryRow(`SELECT string_agg(k || '=' || v, ',' ORDER BY k) FROM kv WHERE k BETWEEN 1 AND 100`).Scan(&kv); err != nil {
		t.Fatal(err)
	}
	if want := "1=a4,2=b3,3=c1,4=d1,5=e1,6=f2,100=taken"; kv != want {
		t.Errorf("rows %s, want %s", kv, want)
	}
}

// UndoneKeyedWriteLeavesNoEvent: what a keyed write queued for the end
// of its batch (db.Tx.ExecAtEnd) goes with it when the write fails, by its
// own error or by a statement found failing after it ended (PostgreSQL's
// carried statements); the other writes of the batch keep their events,
// without a gap in the seqs.
func undoneKeyedWriteLeavesNoEvent(t *testing.T, h Harness) {
	d := Open(t, h.Fresh(t), db.Options{KeyedWriters: 1})
	ctx := context.Background()
	CreateKV(t, d)
	// Each write but the last reads first, which on PostgreSQL carries
	// the last statements of the write before it; the last write's go with
	// the commit.
	write := func(plan string, k int, fail error) func(tx *db.Tx) error {
		return func(tx *db.Tx) error {
			var one int
			if plan != "p6" {
				if err := tx.QueryRow(`SELECT 1`).Scan(&one); err != nil {
					return err
				}
			}
			if err := RecordEvent(tx, plan); err != nil {
				return err
			}
			if _, err := tx.Exec(`INSERT INTO kv (k, v) VALUES (?, ?)`, k, plan); err != nil {
				return err
			}
			return fail
		}
	}
	refused := errors.New("refused")
	writes := []struct {
		plan string
		k    int
		fail error
	}{
		{"p1", 1, nil},
		{"p2", 2, refused}, // fails by its own error
		{"p3", 1, nil},     // k 1 is taken: found by p4's read
		{"p4", 4, nil},
		{"p5", 4, nil}, // k 4 is taken: found with the commit
		{"p6", 6, nil},
	}
	// The one keyed writer is held, so the writes queued meanwhile share
	// the next batch.
	queued := make([]func() error, len(writes))
	for i, w := range writes {
		queued[i] = func() error { return d.WriteKeyed(ctx, db.Key{Kind: "plan", Name: w.plan}, write(w.plan, w.k, w.fail)) }
	}
	errs, _ := KeyedBatch(t, d, write("held", 0, nil), queued)
	for i, w := range writes {
		err := errs[i]
		switch w.plan {
		case "p2":
			if !errors.Is(err, refused) {
				t.Errorf("write %s: %v, want its own error", w.plan, err)
			}
		case "p3", "p5":
			if err == nil {
				t.Errorf("write %s took a key already taken", w.plan)
			}
		default:
			if err != nil {
				t.Errorf("write %s: %v", w.plan, err)
			}
		}
	}
	if got, want := EventPlans(t, d), []string{"held", "p1", "p4", "p6"}; !slices.Equal(got, want) {
		t.Fatalf("events in seq order: %v, want %v", got, want)
	}
}
