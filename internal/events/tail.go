package events

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/planserver/planserver/internal/apierr"
	"github.com/planserver/planserver/internal/db"
)

// DefaultTailRing is how many recent events a Tail keeps in memory when
// TailOptions names no other size. A stream whose cursor is older than the
// ring reads the log itself, so the ring's size trades memory (about the
// size of these events' data, at most twice over while the ring slides)
// against how far behind a stream may fall and still be served from it.
const DefaultTailRing = 4096

// DefaultTailBackfill is how many of the newest events a tail's first read
// loads when TailOptions names no other number. The tail runs while
// streams are open and starts again with the next one, so this is read on
// every start: enough for streams that resume a little behind, not a
// whole ring's worth for a lone client that reconnects.
const DefaultTailBackfill = 256

// tailPage is how many events a tail read asks for at a time.
const tailPage = 1000

// tailReadTimeout bounds one read of the log by the tail.
const tailReadTimeout = 30 * time.Second

// TailOptions configures a Tail.
type TailOptions struct {
	// Ring is how many recent events the tail keeps; DefaultTailRing when 0.
	Ring int
	// Backfill is how many of the newest events the tail's first read
	// loads (at most Ring); DefaultTailBackfill when 0.
	Backfill int
	// OnRead, when set, is called once per read of the log the tail makes
	// (for a metric).
	OnRead func()
}

// Tail reads the log once per commit for every stream that is caught up,
// instead of once per stream: after each wake-up of its broker, one
// goroutine reads, in one snapshot, the log's bounds, the events after the
// tail's cursor, and the re-check of every distinct principal its
// subscribers registered (Subscribe's key and check). It publishes that as
// a generation and wakes its subscribers, which take the events after
// their own cursors from it in memory (Take), filtered by the very rules
// Read applies (matcher). Whatever the tail cannot answer exactly, Take
// declines, and the stream reads the log itself with Read, so correctness
// never depends on the tail.
//
// The tail only publishes; streams pull when they can. A slow stream
// never holds up the tail or another stream: it falls behind the ring and
// reads for itself. The tail's goroutine runs only while it has
// subscribers.
type Tail struct {
	db       *db.DB
	in       *Broker // commits
	out      *Broker // wakes subscribers after each generation
	ring     int
	backfill int
	onRead   func()

	mu   sync.Mutex
	keys map[string]*tailKey
	subs int
	run  *tailRun // nil while nobody subscribes

	gen atomic.Pointer[generation]
}

type tailKey struct {
	refs  int
	check func(db.Querier) error
}

// tailRun is one life of the tail's goroutine, from the first subscriber
// to the last.
type tailRun struct{ stop chan struct{} }

// generation is one read of the log by the tail. It is never changed once
// published.
type generation struct {
	run *tailRun
	// events are every event with a seq in (from, head], in seq order.
	events        []tailEvent
	from, head    int64
	prunedThrough int64
	// checks is each registered key's re-check result in this snapshot:
	// nil, or the problem that ends its streams.
	checks map[string]error
}

// tailEvent is an event with the columns the filters compare that Event
// does not carry.
type tailEvent struct {
	Event
	path       string
	hasPath    bool // session_path is not NULL
	hasSession bool // session_id is not NULL
	// json is json.Marshal(Event): one encoding for all the streams that
	// send the event, instead of one per stream.
	json []byte
}

// NewTail returns a tail of d's log, woken by commits. Wake it with
// d.OnCommit(tail.Notify) (HTTP does: server.go).
func NewTail(d *db.DB, o TailOptions) *Tail {
	if o.Ring <= 0 {
		o.Ring = DefaultTailRing
	}
	if o.Backfill <= 0 {
		o.Backfill = DefaultTailBackfill
	}
	return &Tail{db: d, in: NewBroker(), out: NewBroker(), ring: o.Ring, backfill: min(o.Backfill, o.Ring),
		onRead: o.OnRead, keys: make(map[string]*tailKey)}
}

// Notify tells the tail that something committed.
func (t *Tail) Notify() { t.in.Notify() }

// Subscribers reports how many subscribers are connected.
func (t *Tail) Subscribers() int { return t.out.Subscribers() }

// Subscribe returns a channel that receives a value after each generation
// the tail publishes (after commits), and a function that unsubscribes.
// key names the subscriber's principal and check re-checks it within a
// snapshot; the tail runs check once per distinct key and generation, so
// subscribers with the same key must pass the same check.
func (t *Tail) Subscribe(key string, check func(db.Querier) error) (<-chan struct{}, func()) {
	wake, unsubscribe := t.out.Subscribe()
	t.mu.Lock()
	k := t.keys[key]
	if k == nil {
		k = &tailKey{check: check}
		t.keys[key] = k
	}
	k.refs++
	t.subs++
	if t.run == nil {
		r := &tailRun{stop: make(chan struct{})}
		t.run = r
		go t.loop(r)
	}
	t.mu.Unlock()
	var once sync.Once
	return wake, func() {
		once.Do(func() {
			unsubscribe()
			t.mu.Lock()
			defer t.mu.Unlock()
			if k.refs--; k.refs == 0 {
				delete(t.keys, key)
			}
			if t.subs--; t.subs == 0 {
				close(t.run.stop)
				t.run = nil
				t.gen.Store(nil)
			}
		})
	}
}

// loop reads a generation at once and after every commit, until r stops.
func (t *Tail) loop(r *tailRun) {
	wake, unsubscribe := t.in.Subscribe()
	defer unsubscribe()
	for {
		t.refresh(r)
		select {
		case <-r.stop:
			return
		case <-wake:
		}
	}
}

// refresh reads the next generation and publishes it, or, when the read
// fails, withdraws the current one so that every stream reads for itself
// (and meets the failure, as it would have without the tail). Either way
// it wakes the subscribers.
func (t *Tail) refresh(r *tailRun) {
	t.mu.Lock()
	checks := make(map[string]func(db.Querier) error, len(t.keys))
	for key, k := range t.keys {
		checks[key] = k.check
	}
	t.mu.Unlock()
	prev := t.gen.Load()
	if prev != nil && prev.run != r {
		prev = nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), tailReadTimeout)
	defer cancel()
	g, err := t.read(ctx, r, prev, checks)
	if t.onRead != nil {
		t.onRead()
	}
	t.mu.Lock()
	if t.run == r {
		if err != nil {
			g = nil
		}
		t.gen.Store(g)
	}
	t.mu.Unlock()
	t.out.Notify()
}

// read reads a generation in one snapshot: checks, bounds and the events
// after prev's head (or, with no usable prev, the last backfill's worth).
func (t *Tail) read(ctx context.Context, r *tailRun, prev *generation, checks map[string]func(db.Querier) error) (*generation, error) {
	g := &generation{run: r, checks: make(map[string]error, len(checks))}
	err := t.db.Read(ctx, func(tx *db.Tx) error {
		for key, check := range checks {
			err := check(tx)
			if _, ok := apierr.As(err); err != nil && !ok {
				return err // not a verdict on the principal: no generation
			}
			g.checks[key] = err
		}
		var err error
		if g.head, g.prunedThrough, err = bounds(tx); err != nil {
			return err
		}
		after := max(g.prunedThrough, g.head-int64(t.backfill))
		if prev != nil && prev.head <= g.head && prev.head >= g.head-int64(t.ring) {
			// Read on from where the last generation ended.
			after, g.from, g.events = prev.head, prev.from, prev.events
		} else {
			g.from = after // the first read, or the log moved too far
		}
		for {
			n := len(g.events)
			if err := readTail(tx, &g.events, after, g.head); err != nil {
				return err
			}
			if len(g.events)-n < tailPage {
				break
			}
			after = g.events[len(g.events)-1].Seq
		}
		if extra := len(g.events) - t.ring; extra > 0 {
			// Slide the ring. Appending to it later reallocates, which
			// lets the dropped events go.
			g.from = g.events[extra-1].Seq
			g.events = g.events[extra:]
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return g, nil
}

// readTail appends the events in (after, head] to events, a page at most.
// It appends past the end of a slice an older generation may share, which
// that generation never reads.
func readTail(tx *db.Tx, events *[]tailEvent, after, head int64) error {
	rows, err := tx.Query(`SELECT `+eventColumns+`, session_path, session_id IS NOT NULL FROM events WHERE seq > ? AND seq <= ? ORDER BY seq LIMIT ?`,
		after, head, tailPage)
	if err != nil {
		return fmt.Errorf("read events after %d: %w", after, err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			e    tailEvent
			path sql.NullString
		)
		if e.Event, err = scanEvent(rows, &path, &e.hasSession); err != nil {
			return fmt.Errorf("read events after %d: %w", after, err)
		}
		e.path, e.hasPath = path.String, path.Valid
		if e.json, err = json.Marshal(e.Event); err != nil {
			return fmt.Errorf("encode event %d: %w", e.Seq, err)
		}
		*events = append(*events, e)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read events after %d: %w", after, err)
	}
	return nil
}

// Take returns the page Read(q) would return, from the tail's newest
// generation, and true; or false when the tail cannot answer exactly, and
// the caller must Read the log itself. It cannot when it has no
// generation, when q's cursor is outside what the generation holds
// (behind the ring, pruned, or ahead of its head), when q names a session
// whose path is not pinned yet (q.SessionPath), or when key was not
// registered before the generation's snapshot. A generation in which
// key's re-check failed answers that failure (and no events): the stream
// ends as Read's Guard would end it. q must be valid (Query.Validate).
func (t *Tail) Take(q Query, key string) (Page, bool, error) {
	g := t.gen.Load()
	if g == nil || q.After < g.from || q.After < g.prunedThrough || q.After > g.head ||
		(q.SessionID != "" && q.SessionPath == "") || q.Limit < 0 || q.Limit > MaxLimit {
		return Page{}, false, nil
	}
	checked, ok := g.checks[key]
	if !ok {
		return Page{}, false, nil
	}
	if checked != nil {
		return Page{}, true, checked
	}
	limit := q.Limit
	if limit == 0 {
		limit = DefaultLimit
	}
	path := ""
	if q.SessionID != "" {
		path = q.SessionPath
	}
	m := newMatcher(q, path)
	page := Page{SessionPath: path, Next: g.head}
	i := sort.Search(len(g.events), func(i int) bool { return g.events[i].Seq > q.After })
	for ; i < len(g.events); i++ {
		if e := &g.events[i]; m.match(e) {
			page.Events = append(page.Events, e.Event)
			page.Encoded = append(page.Encoded, e.json)
			if len(page.Events) == limit {
				page.Next = e.Seq
				break
			}
		}
	}
	return page, true, nil
}
