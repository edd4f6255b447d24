package db_test

import (
	"context"
	"testing"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/db"
	"github.com/planserver/planserver/internal/dbtest"
	"github.com/planserver/planserver/internal/plans"
	"github.com/planserver/planserver/internal/revision"
	"github.com/planserver/planserver/internal/sessions"
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

// TestPostgresSessionCreateRoundTrips pins a session create's cost on
// PostgreSQL when it commits alone: BEGIN and the write lock with the
// insert, which takes the revision above a deleted namesake's floor in the
// same statement (versioned.Resource.FirstRevision); then the event with
// the COMMIT. 2 round trips (3 while the floor was a read of its own),
// whether or not the id had a floor.
func TestPostgresSessionCreateRoundTrips(t *testing.T) {
	dbtest.RequirePostgres(t)
	ctx := context.Background()
	d := db.Migrated(t, dbtest.Fresh(t))
	st := sessions.NewStore(d, sessions.Config{})
	id := "s"
	for i := range 2 {
		before := d.RoundTrips()
		s, err := st.Create(ctx, api.SessionCreate{ID: &id})
		if err != nil {
			t.Fatal(err)
		}
		if n := d.RoundTrips() - before; n != 2 {
			t.Errorf("create %d of a root session took %d round trips, want 2", i, n)
		}
		if want := int64(i) + 1; s.Revision != want {
			t.Errorf("create %d: revision %d, want %d (above the floor of the one deleted)", i, s.Revision, want)
		}
		if err := st.Delete(ctx, id, revision.Precondition{}); err != nil {
			t.Fatal(err)
		}
	}
}
