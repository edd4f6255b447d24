package events

import (
	"context"
	"strings"
	"testing"

	"github.com/planserver/planserver/internal/db"
	"github.com/planserver/planserver/internal/dbtest"
	"github.com/planserver/planserver/internal/dbtest/migrated"
)

// TestPlanFilterIsOneIndexRange checks with EXPLAIN QUERY PLAN that a
// ?plan= read of the log (a backfill from a cursor) is a range of the
// events_plan index, not a walk of the whole log.
func TestPlanFilterIsOneIndexRange(t *testing.T) {
	ctx := context.Background()
	d := migrated.Fresh(t)
	for _, q := range []Query{{Plan: "release"}, {Plan: "release", Types: []string{PlanUpdated}}} {
		sts := readSQL(q, part{after: 10, walk: true}, "", 100)
		if len(sts) != 1 {
			t.Fatalf("%+v: %d statements, want 1", q, len(sts))
		}
		query, args := sts[0].query, sts[0].args
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
		text := dbtest.ExplainQueryPlan(t, d.Reader(ctx), query, args...)
		if !strings.Contains(text, "USING INDEX events_plan (plan=? AND seq>?)") || strings.Contains(text, "TEMP B-TREE") {
			t.Errorf("%+v: %s, want one range of events_plan", q, text)
		}
	}
}

// explainedLog is a database, migrated, whose log holds 20,000 events,
// analyzed: one in 1,000 of the subtree /1/ (session s1), one in 100 of
// no session (plan p), the rest of /2/ (s2), and four of the id "gone",
// which has no row: two sessions of that id, /8/ and later /9/, each with
// an update and its deletion (deleted sessions' history). PostgreSQL picks its
// plans by its statistics (dbtest.Explain's priced-out sort would hide an
// index part that sorts), so the plans this file checks are those of a
// long log.
func explainedLog(t *testing.T) *db.DB {
	t.Helper()
	ctx := context.Background()
	d := migrated.Fresh(t)
	series := `generate_series(1, 20000) AS g`
	if !dbtest.Postgres() {
		series = `(WITH RECURSIVE n(g) AS (SELECT 1 UNION ALL SELECT g + 1 FROM n WHERE g < 20000) SELECT g FROM n)`
	}
	err := d.Write(ctx, func(tx *db.Tx) error {
		if _, err := tx.Exec(`INSERT INTO events (seq, type, time, actor, session_id, session_path, plan, data)
			SELECT g, CASE WHEN g IN (5002, 9002) THEN 'session.deleted' ELSE 'session.updated' END, '2026-01-01T00:00:00Z', 'test',
			       CASE WHEN g % 1000 = 0 THEN 's1' WHEN g % 100 = 7 THEN NULL WHEN g IN (5001, 5002, 9001, 9002) THEN 'gone' ELSE 's2' END,
			       CASE WHEN g % 1000 = 0 THEN '/1/' WHEN g % 100 = 7 THEN NULL WHEN g IN (5001, 5002) THEN '/8/'
			            WHEN g IN (9001, 9002) THEN '/9/' ELSE '/2/' END,
			       CASE WHEN g % 100 = 7 THEN 'p' END, '{}'
			FROM ` + series); err != nil {
			return err
		}
		if !dbtest.Postgres() {
			return nil // no server analyzes SQLite: its plans are those without statistics
		}
		_, err := tx.Exec(`ANALYZE events`)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// explain returns the engine's plan of query: EXPLAIN QUERY PLAN's
// details on SQLite, EXPLAIN's lines on PostgreSQL, joined with " | ".
func explain(t *testing.T, d *db.DB, query string, args ...any) string {
	t.Helper()
	if !dbtest.Postgres() {
		return dbtest.ExplainQueryPlan(t, d.Reader(context.Background()), query, args...)
	}
	rows, err := d.Reader(context.Background()).Query(`EXPLAIN `+query, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, strings.TrimSpace(line))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(plan, " | ")
}

// TestSessionFilterPartsUseTheirAccessPaths checks with EXPLAIN that a
// ?session_id= read walks the log (its primary key) for the stretch after
// the cursor, then finds the rest as a range of events_session: neither
// part passes over every event of the log.
func TestSessionFilterPartsUseTheirAccessPaths(t *testing.T) {
	d := explainedLog(t)
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
	// An agent token reading ?session_id= in its subtree: the session
	// filter's range drives; the scope is checked on its rows.
	for _, q := range []Query{{SessionID: "s"}, {SessionID: "s", Scope: "/1/"}} {
		for i, want := range []string{"PRIMARY KEY", "events_session"} {
			sts := readSQL(q, parts[i], "/1/", 100)
			if len(sts) != 1 {
				t.Fatalf("%+v part %d: %d statements, want 1", q, i, len(sts))
			}
			text := explain(t, d, sts[0].query, sts[0].args...)
			if dbtest.Postgres() && want == "PRIMARY KEY" {
				want = "events_pkey"
			}
			if !strings.Contains(text, want+" ") || strings.Contains(text, "Seq Scan") {
				t.Errorf("%+v part %d: %s, want %s", q, i, text, want)
			}
		}
	}
}

// TestScopePartsUseTheirAccessPaths checks with EXPLAIN that an agent
// token's feed (a scope, no session filter) walks the log for the stretch
// after the cursor, then reads the rest as two index ranges: its subtree
// in events_session and the events of no session in events_no_session,
// each in seq order, which Read merges. No statement passes over every
// event of the log.
func TestScopePartsUseTheirAccessPaths(t *testing.T) {
	d := explainedLog(t)
	for _, q := range []Query{{Scope: "/1/"}, {Scope: "/1/", Types: []string{SessionUpdated, PlanUpdated}}} {
		parts := readParts(q, 10, 10+3*sessionWindow, "")
		if len(parts) != 2 || !parts[0].walk || parts[0].upTo != 10+sessionWindow || parts[1].walk || parts[1].after != 10+sessionWindow {
			t.Fatalf("%+v: parts far from the head: %+v", q, parts)
		}
		if p := readParts(q, 10, 10+sessionWindow, ""); len(p) != 1 || !p[0].walk {
			t.Errorf("%+v: parts near the head: %+v, want one walk to the head", q, p)
		}
		walk := readSQL(q, parts[0], "", 100)
		if len(walk) != 1 {
			t.Fatalf("%+v: the walk is %d statements, want 1", q, len(walk))
		}
		want := map[bool]string{false: "USING INTEGER PRIMARY KEY (rowid>? AND rowid<?)", true: "Index Scan using events_pkey"}[dbtest.Postgres()]
		if text := explain(t, d, walk[0].query, walk[0].args...); !strings.Contains(text, want) || strings.Contains(text, "Seq Scan") {
			t.Errorf("%+v: the walk: %s, want %s", q, text, want)
		}
		rest := readSQL(q, parts[1], "", 100)
		if len(rest) != 2 {
			t.Fatalf("%+v: the rest is %d statements, want 2", q, len(rest))
		}
		wants := []string{"USING INDEX events_session (session_path>? AND session_path<?)", "USING INDEX events_no_session (seq>?)"}
		if dbtest.Postgres() {
			wants = []string{"using events_session on events", "Index Scan using events_no_session on events"}
		}
		for i, st := range rest {
			text := explain(t, d, st.query, st.args...)
			if !strings.Contains(text, wants[i]) || strings.Contains(text, "Seq Scan") {
				t.Errorf("%+v: statement %d of the rest: %s, want %s", q, i, text, wants[i])
			}
			// The events of no session come in seq order from the index:
			// never sorted, however many there are.
			if i == 1 && (strings.Contains(text, "Sort") || strings.Contains(text, "TEMP B-TREE")) {
				t.Errorf("%+v: the events of no session are sorted: %s", q, text)
			}
		}
	}
}

// TestDeletedSessionLookupUsesAnIndex checks with EXPLAIN that resolving
// a ?session_id= that names no live session (the path of the last session
// of that id deleted) is a range of events_deleted_session, not a walk of
// the log from its newest event.
func TestDeletedSessionLookupUsesAnIndex(t *testing.T) {
	d := explainedLog(t)
	text := explain(t, d, deletedSessionPath, "gone")
	want := "USING INDEX events_deleted_session (session_id=?)"
	if dbtest.Postgres() {
		want = "using events_deleted_session on events"
	}
	if !strings.Contains(text, want) || strings.Contains(text, "Seq Scan") || strings.Contains(text, "Sort") || strings.Contains(text, "TEMP B-TREE") {
		t.Errorf("%s, want a range of events_deleted_session in seq order", text)
	}
	err := d.Read(context.Background(), func(tx *db.Tx) error {
		path, err := sessionPath(tx, "gone")
		if err != nil || path != "/9/" {
			t.Errorf("the path of a deleted session: %q, %v, want /9/", path, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
