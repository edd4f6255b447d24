package events_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/planserver/planserver/internal/apierr"
	"github.com/planserver/planserver/internal/db"
	"github.com/planserver/planserver/internal/dbtest"
	"github.com/planserver/planserver/internal/dbtest/migrated"
	"github.com/planserver/planserver/internal/events"
)

// appendPlanEvents appends n plan.updated events of plan in one
// transaction. Plan events need no session rows, which keeps these tests
// about the log alone.
func appendPlanEvents(t *testing.T, d *db.DB, plan string, n int) {
	t.Helper()
	err := d.Write(context.Background(), func(tx *db.Tx) error {
		for i := 0; i < n; i++ {
			if _, err := events.Append(tx, events.New{Type: events.PlanUpdated, Plan: plan, Revision: int64(i + 1)}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func seqs(p events.Page) []int64 {
	out := []int64{}
	for _, e := range p.Events {
		out = append(out, e.Seq)
	}
	return out
}

func read(t *testing.T, d *db.DB, q events.Query) events.Page {
	t.Helper()
	p, err := events.Read(context.Background(), d, q)
	if err != nil {
		t.Fatalf("read %+v: %v", q, err)
	}
	return p
}

func TestReadPagesAndFilters(t *testing.T) {
	db := migrated.Fresh(t)
	appendPlanEvents(t, db, "alpha", 3) // 1..3
	appendPlanEvents(t, db, "beta", 2)  // 4..5
	appendPlanEvents(t, db, "alpha", 1) // 6

	cases := []struct {
		name     string
		q        events.Query
		want     []int64
		wantNext int64
	}{
		{"no cursor reads from the start", events.Query{After: -1}, []int64{1, 2, 3, 4, 5, 6}, 6},
		{"after", events.Query{After: 4}, []int64{5, 6}, 6},
		{"full page ends at its last event", events.Query{After: 0, Limit: 2}, []int64{1, 2}, 2},
		{"plan filter", events.Query{After: 0, Plan: "alpha"}, []int64{1, 2, 3, 6}, 6},
		{"a filter that skips the tail still moves the cursor to the head", events.Query{After: 0, Plan: "beta"}, []int64{4, 5}, 6},
		{"a full filtered page", events.Query{After: 0, Plan: "alpha", Limit: 2}, []int64{1, 2}, 2},
		{"types", events.Query{After: 0, Types: []string{events.PlanCreated}}, []int64{}, 6},
		{"at the head", events.Query{After: 6}, []int64{}, 6},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := read(t, db, c.q)
			if !slices.Equal(seqs(p), c.want) || p.Next != c.wantNext {
				t.Errorf("got %v next %d, want %v next %d", seqs(p), p.Next, c.want, c.wantNext)
			}
		})
	}
	if h, err := events.Head(context.Background(), db); err != nil || h != 6 {
		t.Errorf("head = %d, %v", h, err)
	}
	// A cursor from another database (or from before a restore).
	if _, err := events.Read(context.Background(), db, events.Query{After: 7}); apierr.CodeOf(err) != apierr.CursorExpired {
		t.Errorf("cursor ahead of the head: %v", err)
	}
}

func TestQueryValidation(t *testing.T) {
	cases := []struct {
		q     events.Query
		field string
	}{
		{events.Query{Limit: 1001}, "limit"},
		{events.Query{Limit: -1}, "limit"},
		{events.Query{SessionID: "-x"}, "session_id"},
		{events.Query{Plan: "Upper"}, "plan"},
		{events.Query{Types: []string{"session.created", "session.exploded"}}, "types"},
		{events.Query{Types: []string{""}}, "types"},
	}
	for _, c := range cases {
		err := c.q.Validate()
		e, ok := apierr.As(err)
		if !ok || e.Code != apierr.InvalidArgument || len(e.Fields) == 0 || e.Fields[0].Field != c.field {
			t.Errorf("%+v: %v, want invalid_argument on %s", c.q, err, c.field)
		}
	}
	q := events.Query{Limit: 1000, SessionID: "s.1", Plan: "p-1", Types: append(append([]string{}, events.Types...), events.Types...)}
	if err := q.Validate(); err != nil {
		t.Errorf("valid query refused: %v", err)
	}
	if len(q.Types) != len(events.Types) {
		t.Errorf("repeated types kept: %d types after validation, want %d", len(q.Types), len(events.Types))
	}
}

func TestPruneByAgeAndRowsMakesOlderCursorsExpire(t *testing.T) {
	ctx := context.Background()
	db := migrated.Fresh(t)
	appendPlanEvents(t, db, "p", 10) // 1..10
	now := time.Now()

	// Nothing is old yet, and the cap is not reached.
	r := events.Retention{MaxAge: time.Hour, MaxRows: 100}
	if n, err := events.Prune(ctx, db, r, now); err != nil || n != 0 {
		t.Fatalf("prune of a young log: %d, %v", n, err)
	}
	// The row cap keeps the newest 7.
	r.MaxRows = 7
	if n, err := events.Prune(ctx, db, r, now); err != nil || n != 3 {
		t.Fatalf("prune to 7 rows: %d, %v", n, err)
	}
	if p := read(t, db, events.Query{After: -1}); !slices.Equal(seqs(p), []int64{4, 5, 6, 7, 8, 9, 10}) {
		t.Errorf("after the row cap: %v", seqs(p))
	}
	// Exactly at the pruned seq nothing was missed; one below, event 3 was.
	if p := read(t, db, events.Query{After: 3}); len(p.Events) != 7 {
		t.Errorf("cursor at the pruned seq: %v", seqs(p))
	}
	if _, err := events.Read(ctx, db, events.Query{After: 2}); apierr.CodeOf(err) != apierr.CursorExpired {
		t.Errorf("cursor before pruned events: %v, want cursor_expired", err)
	}
	// A filter does not save an expired cursor: the pruned events can no
	// longer be checked against it.
	if _, err := events.Read(ctx, db, events.Query{After: 0, Plan: "other"}); apierr.CodeOf(err) != apierr.CursorExpired {
		t.Errorf("filtered expired cursor: %v, want cursor_expired", err)
	}
	// Eight days later everything is older than the retention; the head
	// stays where it was, so X-Event-Seq never goes backwards.
	if n, err := events.Prune(ctx, db, r, now.Add(8*24*time.Hour)); err != nil || n != 7 {
		t.Fatalf("prune by age: %d, %v", n, err)
	}
	if h, err := events.Head(ctx, db); err != nil || h != 10 {
		t.Errorf("head after pruning everything = %d, %v; want 10", h, err)
	}
	if p := read(t, db, events.Query{After: -1}); len(p.Events) != 0 || p.Next != 10 {
		t.Errorf("empty log from no cursor: %v next %d", seqs(p), p.Next)
	}
	if p := read(t, db, events.Query{After: 10}); len(p.Events) != 0 || p.Next != 10 {
		t.Errorf("empty log at the head: %v next %d", seqs(p), p.Next)
	}
	appendPlanEvents(t, db, "p", 1)
	if p := read(t, db, events.Query{After: 10}); !slices.Equal(seqs(p), []int64{11}) {
		t.Errorf("seqs are never reused: %v", seqs(p))
	}
}

// TestPruneByAgeKeepsTheLogContiguous: age prunes the oldest events up to
// the first one young enough to keep; an older event after it (a clock
// stepped back) waits until that one ages out too, so the log is always
// one suffix and a cursor in it never skips a hole.
func TestPruneByAgeKeepsTheLogContiguous(t *testing.T) {
	ctx := context.Background()
	d := migrated.Fresh(t)
	appendPlanEvents(t, d, "p", 6) // 1..6
	now := time.Now()
	setTimes := func(at time.Time, seqs ...int64) {
		t.Helper()
		err := d.Write(ctx, func(tx *db.Tx) error {
			for _, s := range seqs {
				if _, err := tx.Exec(`UPDATE events SET time = ? WHERE seq = ?`, db.FormatTime(at), s); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	old := now.Add(-10 * 24 * time.Hour)
	setTimes(old, 1, 2, 4, 5)
	setTimes(now, 3, 6)
	r := events.Retention{MaxAge: 7 * 24 * time.Hour}
	if n, err := events.Prune(ctx, d, r, now); err != nil || n != 2 {
		t.Fatalf("prune up to the first young event: %d, %v; want 2", n, err)
	}
	if p := read(t, d, events.Query{After: -1}); !slices.Equal(seqs(p), []int64{3, 4, 5, 6}) {
		t.Errorf("after pruning by age: %v", seqs(p))
	}
	setTimes(old, 3)
	if n, err := events.Prune(ctx, d, r, now); err != nil || n != 3 {
		t.Fatalf("prune once the young one aged: %d, %v; want 3", n, err)
	}
	if p := read(t, d, events.Query{After: -1}); !slices.Equal(seqs(p), []int64{6}) {
		t.Errorf("after the second prune: %v", seqs(p))
	}
}

func TestPruneDeletesLargeBacklogsInBatches(t *testing.T) {
	ctx := context.Background()
	db := migrated.Fresh(t)
	defer events.SetPruneBatch(10)()
	appendPlanEvents(t, db, "p", 1_234)
	commits := 0
	db.OnCommit(func() { commits++ })
	n, err := events.Prune(ctx, db, events.Retention{MaxRows: 34}, time.Now())
	if err != nil || n != 1_200 {
		t.Fatalf("pruned %d, %v; want 1200", n, err)
	}
	if commits != 121 { // 120 full batches, then one that finds nothing
		t.Errorf("%d prune transactions, want 121", commits)
	}
	var count, lowest int64
	if err := db.Reader(context.Background()).QueryRow(`SELECT count(*), min(seq) FROM events`).Scan(&count, &lowest); err != nil {
		t.Fatal(err)
	}
	if count != 34 || lowest != 1_201 {
		t.Errorf("%d events left from %d; want 34 from 1201", count, lowest)
	}
	if _, err := events.Read(ctx, db, events.Query{After: 1_199}); apierr.CodeOf(err) != apierr.CursorExpired {
		t.Errorf("cursor 1199: %v", err)
	}
	if p := read(t, db, events.Query{After: 1_200}); len(p.Events) != 34 {
		t.Errorf("cursor 1200 read %d events", len(p.Events))
	}
}

func TestBrokerWakesWithoutBlocking(t *testing.T) {
	b := events.NewBroker()
	ch, unsubscribe := b.Subscribe()
	// Many commits while the subscriber is busy merge into one wake-up and
	// never block the notifier.
	for i := 0; i < 100; i++ {
		b.Notify()
	}
	<-ch
	select {
	case <-ch:
		t.Error("more than one pending wake-up")
	default:
	}
	if b.Subscribers() != 1 {
		t.Errorf("subscribers = %d", b.Subscribers())
	}
	unsubscribe()
	b.Notify()
	if b.Subscribers() != 0 {
		t.Errorf("subscribers after unsubscribe = %d", b.Subscribers())
	}
}

// TestHeadCacheFollowsCommits: the cached head moves with every commit made
// through db.Write, agrees with Head, and under concurrent readers and
// writers never runs ahead of the log.
func TestHeadCacheFollowsCommits(t *testing.T) {
	ctx := context.Background()
	db := migrated.Fresh(t)
	cache := events.NewHeadCache(db)
	check := func() {
		t.Helper()
		got, err := cache.Head(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want, err := events.Head(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("cached head %d, log head %d", got, want)
		}
	}
	check()
	appendPlanEvents(t, db, "p", 3)
	check()
	check() // served from memory, still right
	appendPlanEvents(t, db, "p", 1)
	check()

	var wg sync.WaitGroup
	stop := make(chan struct{})
	for r := 0; r < 4; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				got, err := cache.Head(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				if real, _ := events.Head(ctx, db); got > real {
					t.Errorf("cached head %d is ahead of the log's %d", got, real)
					return
				}
			}
		}()
	}
	appendPlanEvents(t, db, "q", 50)
	close(stop)
	wg.Wait()
	check()
}

// TestHeadCacheFollowsOtherReplicas: on PostgreSQL a commit made through
// another handle of the same database (another replica) invalidates the
// cached head too, through its commit notification.
func TestHeadCacheFollowsOtherReplicas(t *testing.T) {
	dbtest.RequirePostgres(t)
	ctx := context.Background()
	dsn := dbtest.Fresh(t)
	a := migrated.Open(t, dsn)
	b := migrated.Open(t, dsn)
	cache := events.NewHeadCache(a)
	if h, err := cache.Head(ctx); err != nil || h != 0 {
		t.Fatalf("head of an empty log: %d, %v", h, err)
	}
	appendPlanEvents(t, b, "p", 3)
	deadline := time.Now().Add(10 * time.Second)
	for {
		h, err := cache.Head(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if h == 3 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cached head stayed at %d after another replica committed 3 events", h)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestSessionFilterAcrossTheWindow reads a quiet subtree and a busy
// session page by page through a log longer than the stretch a session
// read walks before it turns to the events_session index: every event of
// each comes back once, in seq order, whichever part of the read found
// it.
func TestSessionFilterAcrossTheWindow(t *testing.T) {
	d := migrated.Fresh(t)
	quiet := &events.Session{ID: "quiet", PK: 1, Path: "/1/"}
	child := &events.Session{ID: "child", PK: 3, Path: "/1/3/"}
	busy := &events.Session{ID: "busy", PK: 2, Path: "/2/"}
	want := map[string][]int64{}
	err := d.Write(context.Background(), func(tx *db.Tx) error {
		for i := 0; i < 13000; i++ {
			s := busy
			switch {
			case i%997 == 5:
				s = quiet
			case i == 8200 || i == 12999:
				s = child
			case i%10 == 3:
				s = nil // a shared plan's event
			}
			e := events.New{Type: events.SessionUpdated, Session: s}
			if s == nil {
				e = events.New{Type: events.PlanUpdated, Plan: "p", Revision: int64(i + 1)}
			}
			seq, err := events.Append(tx, e)
			if err != nil {
				return err
			}
			if s == quiet || s == child {
				want["quiet"] = append(want["quiet"], seq)
			}
			if s == busy {
				want["busy"] = append(want["busy"], seq)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		id, path string
		limit    int
	}{{"quiet", "/1/", 3}, {"quiet", "/1/", 100}, {"busy", "/2/", 1000}} {
		var got []int64
		after := int64(0)
		for pages := 0; ; pages++ {
			p := read(t, d, events.Query{After: after, SessionID: c.id, SessionPath: c.path, Limit: c.limit})
			got = append(got, seqs(p)...)
			if p.Next <= after || pages > 1000 {
				t.Fatalf("%s: the cursor went from %d to %d", c.id, after, p.Next)
			}
			after = p.Next
			if len(p.Events) < c.limit {
				break
			}
		}
		if !slices.Equal(got, want[c.id]) {
			t.Errorf("%s, pages of %d: %d events read, %d appended; first read %v, first appended %v",
				c.id, c.limit, len(got), len(want[c.id]), got[:min(5, len(got))], want[c.id][:min(5, len(want[c.id]))])
		}
	}
}

// TestScopeAcrossTheWindow reads an agent token's feed (a scope: a quiet
// young subtree and the events of no session) page by page through a log
// longer than the stretch a scoped read walks before it turns to the
// indexes, where other sessions' events are most of the log: every event
// of the subtree and of no session comes back once, in seq order, as a
// filter of the whole log in Go gives them, whichever part of the read
// found it, alone and with a session filter or types inside the scope.
func TestScopeAcrossTheWindow(t *testing.T) {
	d := migrated.Fresh(t)
	quiet := &events.Session{ID: "quiet", PK: 1, Path: "/1/"}
	child := &events.Session{ID: "child", PK: 3, Path: "/1/3/"}
	busy := &events.Session{ID: "busy", PK: 2, Path: "/2/"}
	neighbour := &events.Session{ID: "neighbour", PK: 10, Path: "/10/"} // "/10/" sorts after "/1/" but is no descendant
	type row struct {
		seq  int64
		s    *events.Session
		typ  string
		plan bool
	}
	var log []row
	err := d.Write(context.Background(), func(tx *db.Tx) error {
		for i := 0; i < 14000; i++ {
			s := busy
			switch {
			case i%997 == 5 && i > 6000: // the subtree is young: none of it in the first window
				s = quiet
			case i == 8200 || i == 13999:
				s = child
			case i%331 == 7:
				s = neighbour
			case i%1500 == 3 || (i > 9000 && i%7 == 0):
				s = nil // a shared plan's event: sparse, then busy
			}
			e := events.New{Type: events.SessionUpdated, Session: s}
			if s == nil {
				e = events.New{Type: events.PlanUpdated, Plan: "p", Revision: int64(i + 1)}
			}
			if i >= 13998 {
				// No session here has a row: child and busy end deleted,
				// which is how a session_id filter still names them.
				e.Type = events.SessionDeleted
			}
			seq, err := events.Append(tx, e)
			if err != nil {
				return err
			}
			log = append(log, row{seq, s, e.Type, s == nil})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if log[13998].s != busy || log[13999].s != child {
		t.Fatal("the last two events are not busy's and child's")
	}
	inScope := func(r row) bool { return r.s == nil || r.s == quiet || r.s == child }
	for _, c := range []struct {
		name  string
		q     events.Query
		keep  func(row) bool
		limit int
	}{
		{"feed", events.Query{}, inScope, 3},
		{"feed", events.Query{}, inScope, 100},
		{"feed", events.Query{}, inScope, 1000},
		{"feed of session updates", events.Query{Types: []string{events.SessionUpdated}},
			func(r row) bool { return inScope(r) && r.typ == events.SessionUpdated }, 2},
		{"a session in the feed", events.Query{SessionID: "child"},
			func(r row) bool { return r.s == child }, 1},
		{"a session out of the feed", events.Query{SessionID: "busy"},
			func(row) bool { return false }, 10},
	} {
		var want []int64
		for _, r := range log {
			if c.keep(r) {
				want = append(want, r.seq)
			}
		}
		got := []int64{}
		after := int64(-1)
		for pages := 0; ; pages++ {
			q := c.q
			q.After, q.Limit, q.Scope = after, c.limit, quiet.Path
			p := read(t, d, q)
			got = append(got, seqs(p)...)
			if p.Next < after || (len(p.Events) > 0 && p.Next <= after) || pages > 10000 {
				t.Fatalf("%s: the cursor went from %d to %d", c.name, after, p.Next)
			}
			after = p.Next
			if len(p.Events) < c.limit {
				break
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s, pages of %d: %d events read, %d in scope; first read %v, first in scope %v",
				c.name, c.limit, len(got), len(want), got[:min(5, len(got))], want[:min(5, len(want))])
		}
	}
}
