package db_test

import (
	"context"
	"testing"

	"github.com/planserver/planserver/internal/db"
	"github.com/planserver/planserver/internal/dbtest"
	"github.com/planserver/planserver/internal/plans"
	"github.com/planserver/planserver/internal/revision"
)

// TestPostgresPlanPutRoundTrips pins what the commonest write, a PUT of a
// plan's content, costs on PostgreSQL when it commits alone: BEGIN and the
// write lock with the read of the head (the content compared), then the
// changes and the event with the COMMIT. The answer is built from the head
// (plans.planAfter), not read back: 2 round trips in all (5 before reads
// rode in the pipeline's batches and the read back went).
func TestPostgresPlanPutRoundTrips(t *testing.T) {
	dbtest.RequirePostgres(t)
	ctx := context.Background()
	d := db.Migrated(t, dbtest.Fresh(t))
	st := plans.NewStore(d, plans.Config{})
	for i, content := range []string{"# one", "# two", "# two"} {
		before := d.RoundTrips()
		if _, _, err := st.Put(ctx, "p", plans.Change{Content: &content}, revision.Precondition{}); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			continue // the create
		}
		if n := d.RoundTrips() - before; n != 2 {
			t.Errorf("PUT %d of a plan's content took %d round trips, want 2", i, n)
		}
	}
}
