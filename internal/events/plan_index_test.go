package events

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planserver/planserver/internal/db"
)

// TestPlanFilterIsOneIndexRange checks with EXPLAIN QUERY PLAN that a
// ?plan= read of the log (a backfill from a cursor) is a range of the
// events_plan index, not a walk of the whole log.
func TestPlanFilterIsOneIndexRange(t *testing.T) {
	ctx := context.Background()
	d, err := db.Open(ctx, filepath.Join(t.TempDir(), "e.db"), db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, _, err := d.MigrateUp(ctx, nil); err != nil {
		t.Fatal(err)
	}
	for _, q := range []Query{{Plan: "release"}, {Plan: "release", Types: []string{PlanUpdated}}} {
		query, args := readSQL(q, 10, "", 100)
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
