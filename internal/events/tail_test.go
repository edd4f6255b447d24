package events_test

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/planserver/planserver/internal/apierr"
	"github.com/planserver/planserver/internal/db"
	"github.com/planserver/planserver/internal/dbtest/migrated"
	"github.com/planserver/planserver/internal/events"
)

// tailSessions are the sessions of the agreement log: nested subtrees,
// an id deleted and created again (a, pk 1 then pk 5), and pks whose
// decimal prefixes collide (/1/ against /10/ and /11/).
var tailSessions = []events.Session{
	{ID: "a", PK: 1, Path: "/1/"},
	{ID: "b", PK: 2, Path: "/1/2/"},
	{ID: "c", PK: 3, Path: "/1/2/3/"},
	{ID: "d", PK: 4, Path: "/4/"},
	{ID: "a", PK: 5, Path: "/5/"},
	{ID: "e", PK: 6, Path: "/5/6/"},
	{ID: "f", PK: 10, Path: "/10/"},
	{ID: "g", PK: 11, Path: "/1/11/"},
}

var tailTypes = []string{events.SessionCreated, events.SessionUpdated, events.PlanUpdated, events.StepClaimed, events.TodosUpdated}

// appendMixed appends n events of random sessions, plans and types, in
// transactions of random size. The recreated session a (pk 5) only
// appears in the second half, so that a's path changes along the log. No
// session has a row: each half ends with a session.deleted of every
// session it named, which is where the reader finds the path of an id
// that names no live session.
func appendMixed(t *testing.T, d *db.DB, rng *rand.Rand, n int, late bool) {
	t.Helper()
	named := map[int64]bool{}
	defer func() {
		err := d.Write(context.Background(), func(tx *db.Tx) error {
			for _, s := range tailSessions {
				if named[s.PK] {
					if _, err := events.Append(tx, events.New{Type: events.SessionDeleted, Session: &s}); err != nil {
						return err
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}()
	for n > 0 {
		batch := min(n, 1+rng.Intn(20))
		n -= batch
		err := d.Write(context.Background(), func(tx *db.Tx) error {
			for i := 0; i < batch; i++ {
				e := events.New{Type: tailTypes[rng.Intn(len(tailTypes))], Data: map[string]int{"i": i}}
				switch rng.Intn(4) {
				case 0:
					e.Plan = []string{"p1", "p2"}[rng.Intn(2)]
				case 1:
					// no session, no plan
				default:
					s := tailSessions[rng.Intn(len(tailSessions))]
					if s.PK == 5 || s.PK == 6 {
						if !late {
							s = tailSessions[0]
						}
					} else if s.PK == 1 && late {
						s = tailSessions[4]
					}
					e.Session = &s
					named[s.PK] = true
					if rng.Intn(3) == 0 {
						e.Plan = "p1"
					}
				}
				if _, err := events.Append(tx, e); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// randomQuery is a query with random filters and cursor.
func randomQuery(rng *rand.Rand, head int64) events.Query {
	q := events.Query{After: rng.Int63n(head + 1), Limit: []int{0, 1, 3, 7, 50}[rng.Intn(5)]}
	for _, ty := range tailTypes {
		if rng.Intn(4) == 0 {
			q.Types = append(q.Types, ty)
		}
	}
	if rng.Intn(3) == 0 {
		q.Plan = []string{"p1", "p2", "p3"}[rng.Intn(3)]
	}
	if rng.Intn(2) == 0 {
		q.SessionID = []string{"a", "b", "c", "d", "e", "f", "g", "zz"}[rng.Intn(8)]
	}
	if rng.Intn(3) == 0 {
		q.Scope = []string{"/1/", "/1/2/", "/5/", "/10/", "/99/"}[rng.Intn(5)]
	}
	return q
}

// waitGeneration waits until tail has read the log up to head.
func waitGeneration(t *testing.T, tail *events.Tail, wake <-chan struct{}, head int64) {
	t.Helper()
	waitChecked(t, tail, wake, head)
}

// waitChecked waits until tail's newest generation is at head and holds
// the re-check of every key.
func waitChecked(t *testing.T, tail *events.Tail, wake <-chan struct{}, head int64, keys ...string) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for events.TailHead(tail) != head || !events.TailChecked(tail, keys...) {
		select {
		case <-wake:
		case <-deadline:
			t.Fatalf("tail head %d, want %d with keys %q re-checked", events.TailHead(tail), head, keys)
		}
	}
}

// TestMatcherAgreesWithRead holds the in-memory filters (the tail's Take)
// to the SQL reader's: for many random queries over a log of nested,
// deleted and recreated sessions, plans and types, Take gives exactly the
// page Read gives, or declines.
func TestMatcherAgreesWithRead(t *testing.T) {
	d := migrated.Fresh(t)
	rng := rand.New(rand.NewSource(27))
	appendMixed(t, d, rng, 300, false)

	tail := events.NewTail(d, events.TailOptions{Backfill: 1000})
	d.OnCommit(tail.Notify)
	wake, stop := tail.Subscribe("k", func(db.Querier) error { return nil })
	defer stop()
	head, err := events.Head(context.Background(), d)
	if err != nil {
		t.Fatal(err)
	}
	waitGeneration(t, tail, wake, head)
	// More events, read by the tail from its cursor on (not its first
	// read), including the recreated session a.
	appendMixed(t, d, rng, 300, true)
	if head, err = events.Head(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	waitGeneration(t, tail, wake, head)

	compared, declined := 0, 0
	for i := 0; i < 3000; i++ {
		q := randomQuery(rng, head)
		want := read(t, d, q)
		if q.SessionID != "" {
			if want.SessionPath == "" {
				// The id names nothing: a stream pins no path, and the
				// tail leaves such a query to Read.
				if _, ok, _ := tail.Take(q, "k"); ok {
					t.Fatalf("%+v: the tail answered a query whose session it cannot resolve", q)
				}
				declined++
				continue
			}
			q.SessionPath = want.SessionPath
			if rng.Intn(4) == 0 && q.SessionID == "a" {
				// A stream that pinned the first a keeps following it.
				q.SessionPath = "/1/"
				want = read(t, d, q)
			}
		}
		got, ok, err := tail.Take(q, "k")
		if err != nil || !ok {
			t.Fatalf("%+v: take: ok %v, %v", q, ok, err)
		}
		if len(got.Encoded) != len(got.Events) {
			t.Fatalf("%+v: %d events, %d encodings", q, len(got.Events), len(got.Encoded))
		}
		for i, e := range got.Events {
			if b, _ := json.Marshal(e); !bytes.Equal(b, got.Encoded[i]) {
				t.Fatalf("event %d encoded as %s, want %s", e.Seq, got.Encoded[i], b)
			}
		}
		got.Encoded = nil
		if len(got.Events) == 0 {
			got.Events = nil
		}
		if len(want.Events) == 0 {
			want.Events = nil
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%+v:\n take %v next %d path %q\n read %v next %d path %q", q, seqs(got), got.Next, got.SessionPath,
				seqs(want), want.Next, want.SessionPath)
		}
		compared++
	}
	if compared < 2000 {
		t.Errorf("only %d of 3000 queries compared (%d declined)", compared, declined)
	}
	// A key registered after the last generation was read is not vouched
	// for by it: Take declines.
	_, stop2 := tail.Subscribe("later", func(db.Querier) error { return nil })
	defer stop2()
	if _, ok, _ := tail.Take(events.Query{After: head}, "later"); ok {
		t.Error("Take answered for a key the generation did not re-check")
	}
}

// TestTailRingAndChecks: a cursor behind the ring is declined (the stream
// reads for itself), one within it is answered; a key whose re-check
// fails gets the failure and no events.
func TestTailRingAndChecks(t *testing.T) {
	d := migrated.Fresh(t)
	appendPlanEvents(t, d, "alpha", 30)
	tail := events.NewTail(d, events.TailOptions{Ring: 10, Backfill: 100})
	d.OnCommit(tail.Notify)
	revoked := apierr.New(apierr.Unauthenticated, "token x was revoked")
	wake, stop := tail.Subscribe("ok", func(db.Querier) error { return nil })
	defer stop()
	_, stopBad := tail.Subscribe("bad", func(db.Querier) error { return revoked })
	defer stopBad()
	// The first Subscribe starts the tail, which may read its first
	// generation before "bad" subscribes; such a generation does not vouch
	// for "bad" (Take declines, as for "later" above). A read asked for now
	// re-checks both keys.
	tail.Notify()
	waitChecked(t, tail, wake, 30, "ok", "bad")
	if from := events.TailFrom(tail); from != 20 {
		t.Fatalf("ring starts after %d, want 20", from)
	}
	if _, ok, _ := tail.Take(events.Query{After: 19}, "ok"); ok {
		t.Error("answered a cursor behind the ring")
	}
	p, ok, err := tail.Take(events.Query{After: 20}, "ok")
	if !ok || err != nil || !slices.Equal(seqs(p), []int64{21, 22, 23, 24, 25, 26, 27, 28, 29, 30}) || p.Next != 30 {
		t.Errorf("within the ring: %v next %d, ok %v, %v", seqs(p), p.Next, ok, err)
	}
	if p, ok, err := tail.Take(events.Query{After: 25}, "bad"); !ok || err != revoked || len(p.Events) != 0 {
		t.Errorf("failed re-check: %v, ok %v, %v", seqs(p), ok, err)
	}
	if _, ok, _ := tail.Take(events.Query{After: 31}, "ok"); ok {
		t.Error("answered a cursor ahead of the generation")
	}
	// The ring slides as the log grows.
	appendPlanEvents(t, d, "beta", 5)
	waitGeneration(t, tail, wake, 35)
	p, ok, _ = tail.Take(events.Query{After: 25, Plan: "beta"}, "ok")
	if !ok || !slices.Equal(seqs(p), []int64{31, 32, 33, 34, 35}) || events.TailFrom(tail) != 25 {
		t.Errorf("after sliding: %v ok %v from %d", seqs(p), ok, events.TailFrom(tail))
	}
}

// TestTailRestartsWithItsSubscribers: the tail forgets its generation
// when its last subscriber leaves (nothing answers from a stale one), and
// reads afresh, from the log's head, when the next one comes.
func TestTailRestartsWithItsSubscribers(t *testing.T) {
	d := migrated.Fresh(t)
	appendPlanEvents(t, d, "alpha", 3)
	tail := events.NewTail(d, events.TailOptions{})
	d.OnCommit(tail.Notify)
	wake, stop := tail.Subscribe("k", func(db.Querier) error { return nil })
	waitGeneration(t, tail, wake, 3)
	stop()
	stop() // twice is once
	if h := events.TailHead(tail); h != -1 || tail.Subscribers() != 0 {
		t.Fatalf("after the last subscriber left: head %d, %d subscribers", h, tail.Subscribers())
	}
	if _, ok, _ := tail.Take(events.Query{After: 3}, "k"); ok {
		t.Error("Take answered with no subscriber")
	}
	appendPlanEvents(t, d, "beta", 2)
	wake, stop = tail.Subscribe("k", func(db.Querier) error { return nil })
	defer stop()
	waitGeneration(t, tail, wake, 5)
	p, ok, err := tail.Take(events.Query{After: 3}, "k")
	if !ok || err != nil || !slices.Equal(seqs(p), []int64{4, 5}) {
		t.Errorf("after the restart: %v, ok %v, %v", seqs(p), ok, err)
	}
}
