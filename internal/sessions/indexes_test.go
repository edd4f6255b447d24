package sessions

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/planserver/planserver/internal/db"
	"github.com/planserver/planserver/internal/dbtest"
	"github.com/planserver/planserver/internal/dbtest/migrated"
	"github.com/planserver/planserver/internal/events"
)

// TestSessionQueriesUseTheirIndexes checks with the engines' planners that
// every query served by a partial index of sessions (migration 00021) is
// a range of it, so that leaving new roots out of those indexes costs no
// lookup a walk of the table: a list of a session's children, the review
// inbox, a session's descendants, the revocation of their tokens, and the
// cascade of a delete to a session's children.
func TestSessionQueriesUseTheirIndexes(t *testing.T) {
	d := migrated.Fresh(t)
	lo, hi := events.SubtreeRange("/1/")
	children, childArgs := listSQL(ListQuery{ParentID: "p"}, 0, 51)
	inbox, inboxArgs := listSQL(ListQuery{ReviewState: ReviewPending}, 0, 51)
	decided, decidedArgs := listSQL(ListQuery{ReviewState: ReviewApproved, Mode: "plan"}, 0, 51)
	// Delete's own statement: SQLite's plan shows its foreign keys'
	// cascades. PostgreSQL's does not, so there it is the statement its
	// ON DELETE CASCADE runs for each deleted session.
	cascade, cascadeArgs := `DELETE FROM sessions WHERE pk = ?`, []any{1}
	if dbtest.Postgres() {
		cascade, cascadeArgs = `DELETE FROM ONLY sessions WHERE $1::text OPERATOR(pg_catalog.=) parent_id`, []any{"p"}
	}
	for _, c := range []struct {
		name, query string
		args        []any
		// sqlite and postgres are what the plan must say, in each
		// engine's words.
		sqlite, postgres []string
	}{
		{"children", children, childArgs,
			[]string{"sessions_parent (parent_id=? AND pk>?)"},
			[]string{"using sessions_parent"}},
		{"inbox", inbox, inboxArgs,
			[]string{"sessions_review_state (review_state=? AND pk>?)"},
			[]string{"using sessions_review_state"}},
		{"decided reviews in plan mode", decided, decidedArgs,
			[]string{"USING INDEX sessions_"},
			[]string{"using sessions_"}},
		{"descendants", subtreeSQL, []any{lo, hi},
			[]string{"sessions_ancestry (ancestry>? AND ancestry<?)"},
			[]string{"using sessions_ancestry"}},
		{"their tokens", revokeSubtreeTokensSQL, []any{"2026-01-01T00:00:00.000Z", 1, lo, hi},
			[]string{"sessions_ancestry (ancestry>? AND ancestry<?)", "USING INTEGER PRIMARY KEY (rowid=?)"},
			// PostgreSQL walks the few tokens and looks each session up.
			[]string{"Index Scan using sessions_"}},
		{"the cascade to children", cascade, cascadeArgs,
			[]string{"USING INTEGER PRIMARY KEY (rowid=?)", "sessions_parent (parent_id=?)"},
			[]string{"using sessions_parent"}},
	} {
		plans := map[string]string{}
		want := c.sqlite
		if dbtest.Postgres() {
			want = c.postgres
			plans["custom"], plans["generic"] = explainBoth(t, d, c.query, c.args)
		} else {
			plans["plan"] = dbtest.ExplainQueryPlan(t, d.Reader(context.Background()), c.query, c.args...)
		}
		for kind, text := range plans {
			t.Logf("%s (%s): %s", c.name, kind, text)
			for _, w := range want {
				if !strings.Contains(text, w) {
					t.Errorf("%s: %s plan %s, want %q", c.name, kind, text, w)
				}
			}
			for _, bad := range []string{"SCAN sessions", "TEMP B-TREE", "Seq Scan on sessions", "Sort"} {
				if strings.Contains(text, bad) {
					t.Errorf("%s: %s plan %s has %q", c.name, kind, text, bad)
				}
			}
		}
	}
}

// explainBoth returns PostgreSQL's plans of query (dbtest.Explain): the
// custom plan, made for args, and the generic plan a prepared statement
// (pgx's statement cache) may settle on, made for any arguments.
func explainBoth(t *testing.T, d *db.DB, query string, args []any) (custom, generic string) {
	t.Helper()
	// A read: EXPLAIN runs nothing, DELETE and UPDATE included.
	err := d.Read(context.Background(), func(tx *db.Tx) error {
		custom = dbtest.Explain(t, tx, query, args...)
		for _, stmt := range []string{`SET LOCAL plan_cache_mode = force_generic_plan`, `PREPARE explained AS ` + query} {
			if _, err := tx.Exec(stmt); err != nil {
				return err
			}
		}
		// EXECUTE takes no parameters of its own: the arguments go as
		// literals, which the generic plan does not look at.
		literals := make([]string, len(args))
		for i, a := range args {
			switch v := a.(type) {
			case string:
				literals[i] = `'` + strings.ReplaceAll(v, `'`, `''`) + `'`
			default:
				literals[i] = fmt.Sprint(v)
			}
		}
		generic = dbtest.Explain(t, tx, `EXECUTE explained (`+strings.Join(literals, ", ")+`)`)
		// A prepared statement outlives the transaction.
		_, err := tx.Exec(`DEALLOCATE explained`)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return custom, generic
}
