package plans

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planserver/planserver/internal/pagetoken"
	"github.com/planserver/planserver/internal/revision"
	"github.com/planserver/planserver/internal/sqlite"
)

func openDB(tb testing.TB) *sqlite.DB {
	tb.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(tb.TempDir(), "plans.db"), sqlite.DurabilityNormal)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	if _, _, err := db.MigrateUp(ctx, nil); err != nil {
		tb.Fatal(err)
	}
	return db
}

// TestListIsOneIndexRange checks with EXPLAIN QUERY PLAN that every filter
// combination of the list query is answered by an index range in name
// order: no table scan, no sort, so a page costs the same however many
// plans there are.
func TestListIsOneIndexRange(t *testing.T) {
	db := openDB(t)
	for _, q := range []ListQuery{{}, {Status: "active"}, {Author: "ann"}, {Status: "active", Author: "ann"}} {
		query, args := listSQL(q, "m", 50)
		rows, err := db.Reader.Query(`EXPLAIN QUERY PLAN `+query, args...)
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var (
				id, parent, notused int
				detail              string
			)
			if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		rows.Close()
		text := strings.Join(plan, " | ")
		t.Logf("%+v: %s", q, text)
		searched := false
		for _, step := range plan {
			switch {
			case strings.HasPrefix(step, "SEARCH plans USING ") && strings.Contains(step, "name>?"):
				searched = true
			case strings.HasPrefix(step, "SCAN plans"), strings.Contains(step, "TEMP B-TREE"):
				t.Errorf("%+v: %q in plan %s", q, step, text)
			}
		}
		if !searched {
			t.Errorf("%+v: no index range on name: %s", q, text)
		}
	}
}

// BenchmarkListPage reads the first page (50) of plans, and a page in the
// middle, with 100 and with 100,000 plans stored: the cost should not grow
// with the table.
func BenchmarkListPage(b *testing.B) {
	for _, n := range []int{100, 100_000} {
		b.Run(fmt.Sprintf("plans=%d", n), func(b *testing.B) {
			db := openDB(b)
			err := db.Write(context.Background(), func(tx *sql.Tx) error {
				stmt, err := tx.Prepare(`INSERT INTO plans (` + planColumns + `) VALUES (?, ?, ?, ?, 1, ?, ?, '[]', ?)`)
				if err != nil {
					return err
				}
				defer stmt.Close()
				body := strings.Repeat("plan body ", 20)
				for i := 0; i < n; i++ {
					now := "2026-01-01T00:00:00.000Z"
					if _, err := stmt.Exec(fmt.Sprintf("plan-%07d", i), "title", []string{"ann", "bob"}[i%2],
						[]string{"draft", "active", "done"}[i%3], now, now, body); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
			st := NewStore(db, Config{})
			ctx := context.Background()
			// Half the iterations resume in the middle of the list.
			middle := pagetoken.Encode("plans", pagetoken.Fingerprint("active", ""), fmt.Sprintf("plan-%07d", n/2))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				q := ListQuery{Status: "active"}
				if i%2 == 1 {
					q.PageToken = middle
				}
				page, err := st.List(ctx, q)
				if err != nil || len(page.Plans) == 0 {
					b.Fatalf("page: %v, %d plans", err, len(page.Plans))
				}
			}
		})
	}
}

// BenchmarkClaimAndReport measures one claim plus one report (two plan
// revisions) on a plan of 50 independent steps, with a small and with a
// 1 MiB Markdown content: every step change copies the replaced revision,
// content included, into the history.
func BenchmarkClaimAndReport(b *testing.B) {
	for _, size := range []int{1 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("content=%dKiB", size>>10), func(b *testing.B) {
			db := openDB(b)
			st := NewStore(db, Config{})
			ctx := context.Background()
			var raw []string
			for i := 0; i < 50; i++ {
				raw = append(raw, fmt.Sprintf(`{"id":"s%d","description":"d","owner":"o"}`, i))
			}
			steps, err := ParseSteps([]byte("[" + strings.Join(raw, ",") + "]"))
			if err != nil {
				b.Fatal(err)
			}
			content := strings.Repeat("x", size)
			reset := func() {
				if _, _, err := st.Put(ctx, "bench", Change{Content: &content, Steps: steps}, revision.Precondition{}); err != nil {
					b.Fatal(err)
				}
			}
			reset()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				res, err := st.Claim(ctx, "bench", ClaimRequest{Worker: "w"}, revision.Precondition{})
				if err != nil {
					b.Fatal(err)
				}
				if res == nil {
					b.StopTimer()
					reset()
					b.StartTimer()
					continue
				}
				w := "w"
				if _, err := st.AddReport(ctx, "bench", res.Step.ID, ReportInput{Outcome: OutcomeSuccess, Worker: &w}, revision.Precondition{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
