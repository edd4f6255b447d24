package events

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/planserver/planserver/internal/db"
)

// Retention bounds the log. The zero value keeps every event forever.
type Retention struct {
	// MaxAge prunes events older than this; 0 keeps events of any age.
	MaxAge time.Duration
	// MaxRows keeps at most this many of the newest events; 0 means no cap.
	MaxRows int64
}

// Default retention of `planserver serve`.
const (
	DefaultMaxAge  = 7 * 24 * time.Hour
	DefaultMaxRows = 1_000_000
)

// pruneBatch is how many events one prune transaction deletes at most, so
// that pruning a large backlog never holds the writer for long. A variable
// only so that tests can exercise batching on a small log.
var pruneBatch = 5000

// Prune deletes the events that r no longer retains as of now and returns
// how many it deleted. It always deletes a prefix of the log (every event
// at or below some seq) and records that seq, so a cursor is expired
// exactly when an event after it is gone. Age prunes the log's oldest
// events up to the first one within MaxAge: if a clock step gave an event
// a later time than the ones after it, those stay until it ages out too
// (the log stays one contiguous suffix). The row cap works on seqs: every event at or below
// head-MaxRows goes, so at most MaxRows remain (exactly MaxRows, since
// seqs are contiguous on every engine), without counting the table.
func Prune(ctx context.Context, d *db.DB, r Retention, now time.Time) (int64, error) {
	var through int64
	err := d.Read(ctx, func(tx *db.Tx) error {
		head, pruned, err := bounds(tx)
		if err != nil {
			return err
		}
		if r.MaxRows > 0 {
			through = head - r.MaxRows
		}
		if r.MaxAge > 0 {
			// The first event young enough to keep, walking from the
			// oldest: the walk reads what is about to be pruned and one
			// row more, and needs no index on time (none exists: it
			// would cost every write a page).
			var young sql.NullInt64
			err := tx.QueryRow(`SELECT seq FROM events WHERE time >= ? ORDER BY seq LIMIT 1`,
				db.FormatTime(now.Add(-r.MaxAge))).Scan(&young)
			switch {
			case errors.Is(err, sql.ErrNoRows):
				through = max(through, head) // every event is old
			case err != nil:
				return fmt.Errorf("find events older than %s: %w", r.MaxAge, err)
			default:
				through = max(through, young.Int64-1)
			}
		}
		if through <= pruned {
			through = 0 // nothing new to prune: leave the writer alone
		}
		return nil
	})
	if err != nil || through == 0 {
		return 0, err
	}
	var total int64
	for {
		var n int64
		err := d.Write(ctx, func(tx *db.Tx) error {
			var upper sql.NullInt64
			if err := tx.QueryRow(`SELECT max(seq) FROM
				(SELECT seq FROM events WHERE seq <= ? ORDER BY seq LIMIT ?) AS batch`, through, pruneBatch).Scan(&upper); err != nil {
				return fmt.Errorf("prune events through %d: %w", through, err)
			}
			if !upper.Valid {
				return nil
			}
			res, err := tx.Exec(`DELETE FROM events WHERE seq <= ?`, upper.Int64)
			if err != nil {
				return fmt.Errorf("prune events through %d: %w", upper.Int64, err)
			}
			if n, err = res.RowsAffected(); err != nil {
				return fmt.Errorf("prune events through %d: %w", upper.Int64, err)
			}
			if _, err := tx.Exec(`UPDATE event_retention SET pruned_through = ? WHERE id = 1 AND pruned_through < ?`,
				upper.Int64, upper.Int64); err != nil {
				return fmt.Errorf("record events pruned through %d: %w", upper.Int64, err)
			}
			return nil
		})
		total += n
		if err != nil {
			return total, err
		}
		if n < int64(pruneBatch) {
			return total, nil
		}
	}
}
