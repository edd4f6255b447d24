package drivertest

import (
	"context"
	"errors"
	"testing"

	"github.com/planserver/planserver/internal/db"
)

// copyKeepsKeysAndCounters copies a database into a fresh one of the
// same engine (planserver copy): rows keep their keys, the counters that
// make keys never reused come along (the engine's HighWater and
// SetHighWater), so a key freed by a delete before the copy is not handed
// out again after it, and a second copy into the now full target is
// refused before it writes anything.
func copyKeepsKeysAndCounters(t *testing.T, h Harness) {
	from, to := h.open(t), h.open(t)
	ctx := context.Background()
	appendEvent := func(d *db.DB) int64 {
		t.Helper()
		var seq int64
		if err := d.Write(ctx, func(tx *db.Tx) error {
			return tx.QueryRow(`INSERT INTO events (type, time, actor) VALUES ('test', ?, 'test') RETURNING seq`, tx.NowText()).Scan(&seq)
		}); err != nil {
			t.Fatal(err)
		}
		return seq
	}
	for range 3 {
		appendEvent(from)
	}
	MustExec(t, from, `DELETE FROM events WHERE seq = 3`)
	stats, err := db.Copy(ctx, from, to, nil)
	if err != nil {
		t.Fatal(err)
	}
	if stats.Rows["events"] != 2 {
		t.Errorf("copied %d events, want 2", stats.Rows["events"])
	}
	if seqs := dbSeqs(t, to); len(seqs) != 2 || seqs[0] != 1 || seqs[1] != 2 {
		t.Errorf("events copied with seqs %v, want [1 2]", seqs)
	}
	if seq := appendEvent(to); seq != 4 {
		t.Errorf("the copy's next event took seq %d, want 4: seq 3 was handed out before the copy", seq)
	}
	if _, err := db.Copy(ctx, from, to, nil); !errors.Is(err, db.ErrTargetNotEmpty) {
		t.Errorf("a copy into a database with rows: %v, want ErrTargetNotEmpty", err)
	}
	if seqs := dbSeqs(t, to); len(seqs) != 3 {
		t.Errorf("after the refused copy the target holds events %v", seqs)
	}
}

// dbSeqs lists the seqs of d's events in order.
func dbSeqs(t *testing.T, d *db.DB) []int64 {
	t.Helper()
	rows, err := d.Reader(context.Background()).Query(`SELECT seq FROM events ORDER BY seq`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var seqs []int64
	for rows.Next() {
		var s int64
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return seqs
}
