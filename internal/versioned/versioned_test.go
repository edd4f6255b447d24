package versioned

import (
	"context"
	"testing"

	"github.com/planserver/planserver/internal/db"
	"github.com/planserver/planserver/internal/dbtest/migrated"
	"github.com/planserver/planserver/internal/revision"
)

// TestFirstRevisionIsNext: the SQL of FirstRevision gives what Next
// gives for a resource that does not exist, with no floor, with the floor
// of a deleted resource, and beside floors of other kinds and keys.
func TestFirstRevisionIsNext(t *testing.T) {
	d := migrated.Fresh(t)
	ctx := context.Background()
	err := d.Write(ctx, func(tx *db.Tx) error {
		for _, r := range []Resource{
			{Kind: Session, Key: "gone", Revision: 7},
			{Kind: Plan, Key: "gone", Revision: 3},
			{Kind: Session, Key: "other", Revision: 40},
		} {
			if err := r.Deleted(tx); err != nil {
				return err
			}
		}
		for _, c := range []struct {
			r    Resource
			want int64
		}{
			{Resource{Kind: Session, Key: "new", What: "new"}, revision.Next(0, 0)},
			{Resource{Kind: Session, Key: "gone", What: "gone"}, revision.Next(0, 7)},
			{Resource{Kind: Plan, Key: "gone", What: "gone"}, revision.Next(0, 3)},
		} {
			next, err := c.r.Next(tx)
			if err != nil {
				return err
			}
			expr, args := c.r.FirstRevision()
			var first int64
			if err := tx.QueryRow(`SELECT `+expr, args...).Scan(&first); err != nil {
				return err
			}
			if first != c.want || next != c.want {
				t.Errorf("%s %q: FirstRevision %d, Next %d, want %d", c.r.Kind, c.r.Key, first, next, c.want)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
