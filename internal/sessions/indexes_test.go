package sessions

import (
	"context"
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
		var text string
		want := c.sqlite
		if dbtest.Postgres() {
			want = c.postgres
			err := d.Write(context.Background(), func(tx *db.Tx) error {
				// EXPLAIN runs nothing, DELETE and UPDATE included; the
				// write is rolled back all the same.
				text = dbtest.Explain(t, tx, c.query, c.args...)
				return errRollback
			})
			if err != errRollback {
				t.Fatal(err)
			}
		} else {
			text = dbtest.ExplainQueryPlan(t, d.Reader(context.Background()), c.query, c.args...)
		}
		t.Logf("%s: %s", c.name, text)
		for _, w := range want {
			if !strings.Contains(text, w) {
				t.Errorf("%s: plan %s, want %q", c.name, text, w)
			}
		}
		for _, bad := range []string{"SCAN sessions", "TEMP B-TREE", "Seq Scan on sessions", "Sort"} {
			if strings.Contains(text, bad) {
				t.Errorf("%s: plan %s has %q", c.name, text, bad)
			}
		}
	}
}

// errRollback ends a write that must leave nothing behind.
var errRollback = rollback{}

type rollback struct{}

func (rollback) Error() string { return "rolled back on purpose" }
