package events

import (
	"context"
	"strings"
	"testing"

	"github.com/planserver/planserver/internal/db"
	"github.com/planserver/planserver/internal/dbtest"
)

// TestPlanFilterIsOneIndexRange checks with EXPLAIN QUERY PLAN that a
// ?plan= read of the log (a backfill from a cursor) is a range of the
// events_plan index, not a walk of the whole log.
func TestPlanFilterIsOneIndexRange(t *testing.T) {
	ctx := context.Background()
	d, err := db.Open(ctx, dbtest.Fresh(t), db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, _, err := d.MigrateUp(ctx, nil); err != nil {
		t.Fatal(err)
	}
	for _, q := range []Query{{Plan: "release"}, {Plan: "release", Types: []string{PlanUpdated}}} {
		query, args := readSQL(q, 10, "", 100)
		if dbtest.Postgres() {
			err := d.Read(ctx, func(tx *db.Tx) error {
				text := dbtest.Explain(t, tx, query, args...)
				if !strings.Contains(text, "using events_plan") || strings.Contains(text, "Seq Scan") || strings.Contains(text, "Sort") {
					t.Errorf("%+v: %s, want one range of events_plan", q, text)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			continue
		}
		rows, err := d.Reader(ctx).Query(`EXPLAIN QUERY PLAN `+query, args...)
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, notused int
			var detail string
			if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		text := strings.Join(plan, " | ")
		if !strings.Contains(text, "USING INDEX events_plan (plan=? AND seq>?)") || strings.Contains(text, "TEMP B-TREE") {
			t.Errorf("%+v: %s, want one range of events_plan", q, text)
		}
	}
}
