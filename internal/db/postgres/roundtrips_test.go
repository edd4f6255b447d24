package postgres_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/apierr"
	"github.com/planserver/planserver/internal/db"
	"github.com/planserver/planserver/internal/db/drivertest"
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
	d := drivertest.Open(t, dbtest.Fresh(t), db.Options{})
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

// TestPostgresPlanWriteBatchRoundTrips: writes of different plans that
// queue together share a batch of the keyed writer, which sends every
// plan's head read with its BEGIN and locks (ahead.go), so the batch
// costs 2 round trips however many writes it holds: PUTs, status changes
// and deletes alike (one per write and one more before reads went ahead).
func TestPostgresPlanWriteBatchRoundTrips(t *testing.T) {
	dbtest.RequirePostgres(t)
	ctx := context.Background()
	d := drivertest.Open(t, dbtest.Fresh(t), db.Options{KeyedWriters: 1})
	st := plans.NewStore(d, plans.Config{})
	put := func(name, content string) error {
		_, _, err := st.Put(ctx, name, plans.Change{Content: &content}, revision.Precondition{})
		return err
	}
	// Each write, and what a read of its plan must find after the batch.
	type planWrite struct {
		name  string
		write func(name string) error
		after func(p *plans.Plan, err error) bool
	}
	var writes []planWrite
	for i := range 2 {
		writes = append(writes,
			planWrite{fmt.Sprintf("put-%d", i),
				func(name string) error { return put(name, "# two of "+name) },
				func(p *plans.Plan, err error) bool {
					return err == nil && p.Content == "# two of "+p.Name && p.Revision == 2
				}},
			planWrite{fmt.Sprintf("status-%d", i),
				func(name string) error {
					_, err := st.SetStatus(ctx, name, "done", revision.Precondition{})
					return err
				},
				func(p *plans.Plan, err error) bool { return err == nil && p.Status == "done" && p.Revision == 2 }},
			planWrite{fmt.Sprintf("delete-%d", i),
				func(name string) error { return st.Delete(ctx, name, revision.Precondition{}) },
				func(p *plans.Plan, err error) bool { return apierr.CodeOf(err) == apierr.NotFound }})
	}
	for _, w := range writes {
		if err := put(w.name, "# one"); err != nil {
			t.Fatal(err)
		}
	}
	// A keyed write holds the one keyed writer while the writes queue.
	queued := make([]func() error, len(writes))
	for i, w := range writes {
		queued[i] = func() error { return w.write(w.name) }
	}
	errs, trips := drivertest.KeyedBatch(t, d, func(*db.Tx) error { return nil }, queued)
	for i, err := range errs {
		if err != nil {
			t.Fatalf("%s: %v", writes[i].name, err)
		}
	}
	// The held write's one (BEGIN, its locks and COMMIT), then the
	// batch's two.
	if trips != 3 {
		t.Errorf("the held write and a batch of %d plan writes took %d round trips, want 1 + 2", len(writes), trips)
	}
	for _, w := range writes {
		if p, err := st.Get(ctx, w.name); !w.after(p, err) {
			t.Errorf("%s after the batch: %+v, %v", w.name, p, err)
		}
	}
}

// TestPostgresSessionWriteRoundTrips pins what the writes of an agent's
// plan-mode loop cost on PostgreSQL when each commits alone, the first
// round trip carrying BEGIN and the write lock, the last the event and
// the COMMIT:
//   - a create: the insert, which takes the revision above a deleted
//     namesake's floor in the same statement (versioned.Resource.
//     FirstRevision), then the commit: 2 (3 while the floor was a read of
//     its own);
//   - a plan's first write: the session, its plan, the plan's floor, then
//     the commit: 4; a rewrite, with no floor to read: 3. Each answers the
//     plan it stored and sends its event with the commit (6 and 5 while it
//     read the plan back and appended the event in a round trip of its
//     own);
//   - a review request: the session, its plan, then the commit: 3 (4).
func TestPostgresSessionWriteRoundTrips(t *testing.T) {
	dbtest.RequirePostgres(t)
	ctx := context.Background()
	d := drivertest.Open(t, dbtest.Fresh(t), db.Options{})
	st := sessions.NewStore(d, sessions.Config{})
	var none revision.Precondition
	trips := func(what string, want int64, write func() error) {
		t.Helper()
		before := d.RoundTrips()
		if err := write(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if n := d.RoundTrips() - before; n != want {
			t.Errorf("%s took %d round trips, want %d", what, n, want)
		}
	}
	id := "s"
	for i := range 2 {
		var s *sessions.Session
		trips("a create", 2, func() (err error) {
			s, err = st.Create(ctx, api.SessionCreate{ID: &id})
			return err
		})
		if want := int64(i) + 1; s.Revision != want {
			t.Errorf("create %d: revision %d, want %d (above the floor of the one deleted)", i, s.Revision, want)
		}
		if i == 0 {
			if err := st.Delete(ctx, id, none); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, w := range []struct {
		what    string
		content string
		want    int64
	}{{"a plan's first write", "# one", 4}, {"a rewrite", "# two", 3}} {
		trips(w.what, w.want, func() error {
			_, _, err := st.PutSessionPlan(ctx, id, api.SessionPlanWrite{Content: w.content}, 1<<20, none)
			return err
		})
	}
	trips("a review request", 3, func() error {
		_, err := st.RequestReview(ctx, id, api.ReviewRequest{}, none)
		return err
	})
}
