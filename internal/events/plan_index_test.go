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
		query, args := readSQL(q, part{after: 10, walk: true}, "", 100)
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

// TestSessionFilterPartsUseTheirAccessPaths checks with EXPLAIN that a
// ?session_id= read walks the log (its primary key) for the stretch after
// the cursor, then finds the rest as a range of events_session: neither
// part passes over every event of the log.
func TestSessionFilterPartsUseTheirAccessPaths(t *testing.T) {
	ctx := context.Background()
	d, err := db.Open(ctx, dbtest.Fresh(t), db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, _, err := d.MigrateUp(ctx, nil); err != nil {
		t.Fatal(err)
	}
	parts := readParts(Query{SessionID: "s"}, 10, 10+3*sessionWindow, "/1/")
	if len(parts) != 2 || !parts[0].walk || parts[0].upTo != 10+sessionWindow || parts[1].walk || parts[1].after != 10+sessionWindow {
		t.Fatalf("parts of a session read far from the head: %+v", parts)
	}
	if p := readParts(Query{SessionID: "s"}, 10, 10+sessionWindow, "/1/"); len(p) != 1 || !p[0].walk || p[0].upTo != 0 {
		t.Errorf("parts of a session read near the head: %+v, want one walk to the head", p)
	}
	if p := readParts(Query{SessionID: "s", Plan: "p"}, 10, 10+3*sessionWindow, "/1/"); len(p) != 1 {
		t.Errorf("parts of a session and plan read: %+v, want one (events_plan serves it)", p)
	}
	for i, want := range []string{"PRIMARY KEY", "events_session"} {
		query, args := readSQL(Query{SessionID: "s"}, parts[i], "/1/", 100)
		var text string
		if dbtest.Postgres() {
			// PostgreSQL picks by its statistics (dbtest.Explain's priced-
			// out sort would hide the index part, which sorts): a log of
			// 20,000 events, one in 1,000 of the subtree, analyzed.
			if i == 0 {
				err = d.Write(ctx, func(tx *db.Tx) error {
					if _, err := tx.Exec(`INSERT INTO events (seq, type, time, actor, session_path, data)
						SELECT g, 'session.updated', '2026-01-01T00:00:00Z', 'test',
						       CASE WHEN g % 1000 = 0 THEN '/1/' ELSE '/2/' END, '{}'
						FROM generate_series(1, 20000) AS g`); err != nil {
						return err
					}
					_, err := tx.Exec(`ANALYZE events`)
					return err
				})
				if err != nil {
					t.Fatal(err)
				}
			}
			rows, err := d.Reader(ctx).Query(`EXPLAIN `+query, args...)
			if err != nil {
				t.Fatal(err)
			}
			var plan []string
			for rows.Next() {
				var line string
				if err := rows.Scan(&line); err != nil {
					t.Fatal(err)
				}
				plan = append(plan, strings.TrimSpace(line))
			}
			rows.Close()
			text = strings.Join(plan, " | ")
			if want == "PRIMARY KEY" {
				want = "events_pkey"
			}
			if !strings.Contains(text, want) || strings.Contains(text, "Seq Scan") {
				t.Errorf("part %d: %s, want %s", i, text, want)
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
		text = strings.Join(plan, " | ")
		if !strings.Contains(text, want) {
			t.Errorf("part %d: %s, want %s", i, text, want)
		}
	}
}
