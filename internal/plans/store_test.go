package plans

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/planserver/planserver/internal/db"
	"github.com/planserver/planserver/internal/dbtest"
	"github.com/planserver/planserver/internal/dbtest/migrated"
	"github.com/planserver/planserver/internal/pagetoken"
	"github.com/planserver/planserver/internal/revision"
)

// TestListIsOneIndexRange checks with EXPLAIN QUERY PLAN that every filter
// combination of the list query is answered by an index range in name
// order: no table scan, no sort, so a page costs the same however many
// plans there are.
func TestListIsOneIndexRange(t *testing.T) {
	d := migrated.Fresh(t)
	for _, q := range []ListQuery{{}, {Status: "active"}, {Author: "ann"}, {Status: "active", Author: "ann"}} {
		query, args := listSQL(q, "m", 50)
		if dbtest.Postgres() {
			err := d.Read(context.Background(), func(tx *db.Tx) error {
				text := dbtest.Explain(t, tx, query, args...)
				t.Logf("%+v: %s", q, text)
				if !strings.Contains(text, "Index") || !strings.Contains(text, "name >") ||
					strings.Contains(text, "Seq Scan") || strings.Contains(text, "Sort") {
					t.Errorf("%+v: want one index range on name, no scan, no sort: %s", q, text)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			continue
		}
		text := dbtest.ExplainQueryPlan(t, d.Reader(context.Background()), query, args...)
		plan := strings.Split(text, " | ")
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
			d := migrated.Fresh(b)
			err := d.Write(context.Background(), func(tx *db.Tx) error {
				body := strings.Repeat("plan body ", 20)
				for i := 0; i < n; i++ {
					now := "2026-01-01T00:00:00.000Z"
					name := fmt.Sprintf("plan-%07d", i)
					if _, err := tx.Exec(`INSERT INTO plans (name, title, author, status, revision, created_at, updated_at, steps, content_rev)
						VALUES (?, ?, ?, ?, 1, ?, ?, '[]', 1)`, name, "title", []string{"ann", "bob"}[i%2],
						[]string{"draft", "active", "done"}[i%3], now, now); err != nil {
						return err
					}
					if _, err := tx.Exec(`INSERT INTO plan_contents (name, content_rev, content) VALUES (?, 1, ?)`, name, body); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
			st := NewStore(d, Config{})
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
// 1 MiB Markdown content: a step change copies no content, so the two
// should cost about the same.
func BenchmarkClaimAndReport(b *testing.B) {
	for _, size := range []int{1 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("content=%dKiB", size>>10), func(b *testing.B) {
			db := migrated.Fresh(b)
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

// TestHistoryStoresContentOnce writes a plan with a large content, then
// changes its steps many times, renewing a lease between changes: the
// content is stored once, lease renewals stay out of the history, pruning
// keeps the window, and every kept revision still reads back whole.
func TestHistoryStoresContentOnce(t *testing.T) {
	ctx := context.Background()
	d := migrated.Fresh(t)
	st := NewStore(d, Config{History: 10})
	content := strings.Repeat("the plan ", 10000)
	steps, err := ParseSteps([]byte(`[{"id":"a","description":"d","owner":"o"},{"id":"b","description":"d","owner":"o"}]`))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.Put(ctx, "big", Change{Content: &content, Steps: steps}, revision.Precondition{}); err != nil {
		t.Fatal(err)
	}
	renewals := 0
	for i := 0; i < 30; i++ {
		owner := fmt.Sprintf("owner-%d", i)
		if _, err := st.UpdateStep(ctx, "big", "a", StepPatch{Owner: &owner}, revision.Precondition{}); err != nil {
			t.Fatal(err)
		}
		if i%3 == 0 {
			if _, err := st.ClaimStep(ctx, "big", "b", StepClaimRequest{Worker: "w"}, revision.Precondition{}); err != nil {
				t.Fatal(err)
			}
			if i > 0 {
				renewals++
			}
		}
	}
	var contents, kept int
	q := d.Reader(ctx)
	if err := q.QueryRow(`SELECT count(*) FROM plan_contents WHERE name = 'big'`).Scan(&contents); err != nil {
		t.Fatal(err)
	}
	if contents != 1 {
		t.Errorf("%d stored contents for one distinct content, want 1", contents)
	}
	revs, err := st.Revisions(ctx, "big")
	if err != nil {
		t.Fatal(err)
	}
	if err := q.QueryRow(`SELECT count(*) FROM plan_revisions WHERE name = 'big'`).Scan(&kept); err != nil {
		t.Fatal(err)
	}
	current := revs[0].Revision
	if want := 1 + 30 + 10; current != int64(want) {
		t.Errorf("at revision %d, want %d (create, 30 owner changes, 10 claims)", current, want)
	}
	if len(revs) > 10 || kept >= 10 {
		t.Errorf("history holds %d revisions (%d archived), want at most the window of 10", len(revs), kept)
	}
	for _, r := range revs {
		p, err := st.GetRevision(ctx, "big", r.Revision)
		if err != nil {
			t.Fatalf("revision %d: %v", r.Revision, err)
		}
		if p.Content != content {
			t.Errorf("revision %d reads back %d bytes of content, want %d", r.Revision, len(p.Content), len(content))
		}
	}
	// A renewal made a revision of its own, but it is not kept once
	// replaced: the history skips it.
	seen := map[int64]bool{}
	for _, r := range revs {
		seen[r.Revision] = true
	}
	if len(revs) == int(current-revs[len(revs)-1].Revision)+1 && renewals > 0 {
		t.Errorf("history %v has no gap, but %d lease renewals happened in it", seen, renewals)
	}
	// A new content is stored once more, and the old one goes when the
	// last revision naming it leaves the window.
	other := "a new plan"
	for i := 0; i < 12; i++ {
		if _, _, err := st.Put(ctx, "big", Change{Content: &other}, revision.Precondition{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := q.QueryRow(`SELECT count(*) FROM plan_contents WHERE name = 'big'`).Scan(&contents); err != nil {
		t.Fatal(err)
	}
	if contents != 1 {
		t.Errorf("%d stored contents once the old one left the window, want 1", contents)
	}
}

// TestPutAnswersWhatGetReads holds the plan a Put answers with, which it
// builds from the head it read instead of reading the plan back
// (planAfter), to what a read of the plan gives afterwards, at the same
// clock: on create and on re-create after a delete, and on updates that
// keep or replace each of title, status, steps (a claimed one included)
// and content, as the writer named or as the token's identity.
func TestPutAnswersWhatGetReads(t *testing.T) {
	ctx := context.Background()
	at := time.Date(2030, 1, 2, 3, 4, 5, 6_000_000, time.UTC)
	d := migrated.OpenWith(t, dbtest.Fresh(t), db.Options{Clock: func() time.Time { return at }})
	st := NewStore(d, Config{History: 3})
	str := func(s string) *string { return &s }
	steps := func(js string) Steps {
		s, err := ParseSteps([]byte(js))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	type put struct {
		what    string
		ch      Change
		created bool
		// before runs ahead of the Put.
		before func() error
	}
	ab := steps(`[{"id":"a","description":"first","owner":"o"},{"id":"b","description":"second","owner":"o","deps":["a"],"criteria":"it works","files":["x.go"],"commands":["go test"]}]`)
	puts := []put{
		{what: "create with everything", created: true, ch: Change{Content: str("# v1"), Title: str("One"), Status: str("draft"), Author: str("ann"), Steps: ab}},
		{what: "content only keeps title, status and steps", ch: Change{Content: str("# v2")}},
		{what: "the same content, a new title", ch: Change{Content: str("# v2"), Title: str("Two")}},
		{what: "a claimed step kept", ch: Change{Content: str("# v3")}, before: func() error {
			_, err := st.ClaimStep(ctx, "p", "a", StepClaimRequest{Worker: "w1"}, revision.Precondition{})
			return err
		}},
		{what: "steps replaced, status emptied", ch: Change{Content: str("# v4"), Status: str(""), Steps: steps(`[{"id":"c","description":"third","owner":"o"}]`)}},
		{what: "steps emptied", ch: Change{Content: str("# v5"), Title: str(""), Steps: Steps{}}},
		{what: "re-created after a delete", created: true, ch: Change{Content: str("# v6")}, before: func() error {
			return st.Delete(ctx, "p", revision.Precondition{})
		}},
		{what: "an import without content keeps it", ch: Change{contentOptional: true, Title: str("Imported"), Steps: ab}},
		{what: "an import without content creates it empty", created: true, ch: Change{contentOptional: true, Steps: ab}, before: func() error {
			return st.Delete(ctx, "p", revision.Precondition{})
		}},
	}
	for _, p := range puts {
		at = at.Add(time.Second)
		if p.before != nil {
			if err := p.before(); err != nil {
				t.Fatalf("%s: %v", p.what, err)
			}
		}
		out, created, err := st.Put(ctx, "p", p.ch, revision.Precondition{})
		if err != nil {
			t.Fatalf("%s: %v", p.what, err)
		}
		if created != p.created {
			t.Errorf("%s: created %v, want %v", p.what, created, p.created)
		}
		read, err := st.GetAt(ctx, "p", at)
		if err != nil {
			t.Fatalf("%s: %v", p.what, err)
		}
		if !reflect.DeepEqual(out, read) {
			t.Errorf("%s: Put answered\n%+v\nGet reads\n%+v", p.what, out, read)
		}
	}
}
