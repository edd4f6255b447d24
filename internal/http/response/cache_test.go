package response

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/planserver/planserver/internal/db"
	"github.com/planserver/planserver/internal/dbtest"
	"github.com/planserver/planserver/internal/dbtest/migrated"
)

// TestAnswerCacheServesUntilACommitOrItsExpiry counts the reads an answer
// costs: none while nothing commits, one after every commit, one after the
// answer's own expiry; on PostgreSQL, also one after every commit of
// another replica.
func TestAnswerCacheServesUntilACommitOrItsExpiry(t *testing.T) {
	ctx := context.Background()
	dsn := dbtest.Fresh(t)
	d := migrated.Open(t, dsn)
	now := time.Date(2026, 1, 10, 9, 0, 0, 0, time.UTC)
	c := NewCache(d)
	c.Now = func() time.Time { return now }
	loads := 0
	var expires time.Time
	read := func() string {
		t.Helper()
		_, body, err := c.Answer(ctx, "k", func() (Loaded, error) {
			loads++
			return Loaded{Revision: int64(loads), Value: map[string]int{"load": loads}, Expires: expires}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return string(body)
	}
	commitOn := func(d *db.DB) {
		t.Helper()
		if err := d.Write(ctx, func(tx *db.Tx) error {
			_, err := tx.Exec(`INSERT INTO revision_floors (kind, key, revision) VALUES ('plan', ?, 1)`, time.Now().String())
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	commit := func() { t.Helper(); commitOn(d) }
	want := func(body string, n int) {
		t.Helper()
		if loads != n || body != `{"load":`+itoa(n)+"}\n" {
			t.Errorf("after %d loads: %q", loads, body)
		}
	}
	want(read(), 1)
	want(read(), 1) // nothing committed
	commit()
	want(read(), 2)
	want(read(), 2)
	expires = now.Add(time.Minute)
	commit()
	want(read(), 3)
	now = now.Add(59 * time.Second)
	want(read(), 3)
	now = now.Add(time.Second) // the answer's expiry: stale by time alone
	want(read(), 4)
	expires = time.Time{}
	commit()
	want(read(), 5)
	// A failed write commits nothing.
	if err := d.Write(ctx, func(tx *db.Tx) error { return context.Canceled }); err == nil {
		t.Fatal("a failed write succeeded")
	}
	want(read(), 5)
	if !dbtest.Postgres() {
		return
	}
	// Another replica's commit: the next read loads again.
	other := migrated.Open(t, dsn)
	commitOn(other)
	want(read(), 6)
	want(read(), 6)
}

func itoa(n int) string { return strconv.Itoa(n) }
