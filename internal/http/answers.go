package http

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/planserver/planserver/internal/db"
)

// answerCache keeps the encoded JSON answers of the two single-resource
// reads agents and consoles poll most, GET a session and GET a plan, and
// serves them again while nothing has committed since: profiles of those
// reads showed the database read and the decoding of its row as a third of
// the server's CPU per request (docs/benchmarks.md).
//
// Freshness rests on the database's commit generation (db.Generation),
// which moves after every commit of this process before any write of it is
// acknowledged. An answer is kept with the generation read before its
// database read and served only while the generation is still that one, so
// it never predates a write whose client was told it succeeded: reads stay
// linearizable. A plan's answer also expires at its next lease end, when
// the same row reads differently (plans.NextViewChange). Where other
// processes commit to the same database (PostgreSQL replicas) the
// generation proves nothing and every read goes to the database.
type answerCache struct {
	db *db.DB
	// now is the clock leases are judged by (the database's).
	now func() time.Time

	mu      sync.Mutex
	entries map[string]cachedAnswer
	size    int // bytes of every kept body
}

// cachedAnswer is one kept answer.
type cachedAnswer struct {
	generation uint64
	// expires, when not zero, is when the answer goes stale by time alone.
	expires  time.Time
	revision int64
	body     []byte
}

const (
	// maxCachedAnswer: larger answers (big plans) are encoded each time;
	// they would crowd out everything else for little gain.
	maxCachedAnswer = 64 << 10
	// maxCachedBytes bounds all kept answers together; past it the cache
	// starts over (every entry is rebuilt by the next read anyway).
	maxCachedBytes = 16 << 20
)

func newAnswerCache(d *db.DB) *answerCache {
	return &answerCache{db: d, now: d.Now, entries: map[string]cachedAnswer{}}
}

// loaded is what a read of the database gives the cache: the resource's
// revision, the value to encode, and when it goes stale by time alone
// (zero: never).
type loaded struct {
	revision int64
	value    any
	expires  time.Time
}

// answer returns the revision and encoded JSON answer for key, from the
// cache while it holds, else from load, which it then keeps.
func (c *answerCache) answer(key string, load func() (loaded, error)) (int64, []byte, error) {
	generation, exclusive := c.db.Generation()
	if exclusive {
		c.mu.Lock()
		a, ok := c.entries[key]
		c.mu.Unlock()
		if ok && a.generation == generation && (a.expires.IsZero() || c.now().Before(a.expires)) {
			return a.revision, a.body, nil
		}
	}
	l, err := load()
	if err != nil {
		return 0, nil, err
	}
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(l.value); err != nil {
		return 0, nil, err
	}
	body := buf.Bytes()
	if exclusive && len(body) <= maxCachedAnswer {
		c.keep(key, cachedAnswer{generation: generation, expires: l.expires, revision: l.revision, body: body})
	}
	return l.revision, body, nil
}

func (c *answerCache) keep(key string, a cachedAnswer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.entries[key]; ok {
		if old.generation > a.generation {
			return // a fresher read got here first
		}
		c.size -= len(old.body)
	}
	if c.size+len(a.body) > maxCachedBytes {
		clear(c.entries)
		c.size = 0
	}
	c.entries[key] = a
	c.size += len(a.body)
}

// writeJSONBody answers body, an encoded JSON document, with its length.
func writeJSONBody(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
