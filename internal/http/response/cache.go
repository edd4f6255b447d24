package response

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/planserver/planserver/internal/db"
)

// Cache keeps the encoded JSON answers of the two single-resource
// reads agents and consoles poll most, GET a session and GET a plan, and
// serves them again while nothing has committed since: profiles of those
// reads showed the database read and the decoding of its row as a third of
// the server's CPU per request (docs/benchmarks.md).
//
// Freshness rests on the database's commit version (db.DB.Version), which
// moves with every commit of any process writing to the database before
// that commit's writes are acknowledged. An answer is kept with the
// version read before its database read and served only while a version
// read after the request began is still that one, so it never predates a
// write whose client was told it succeeded, on this replica or another:
// reads stay linearizable. On SQLite that version costs nothing; on
// PostgreSQL it is one round trip that every request queued behind it
// shares. A plan's answer also expires at its next lease end, when the
// same row reads differently (plans.NextViewChange).
type Cache struct {
	db *db.DB
	// Now is the clock leases are judged by (the database's).
	Now func() time.Time

	mu      sync.Mutex
	entries map[string]cachedAnswer
	size    int // bytes of every kept body
}

// cachedAnswer is one kept answer.
type cachedAnswer struct {
	version uint64
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

// NewCache keeps the answers read from d.
func NewCache(d *db.DB) *Cache {
	return &Cache{db: d, Now: d.Now, entries: map[string]cachedAnswer{}}
}

// Loaded is what a read of the database gives the cache: the resource's
// revision, the value to encode, and when it goes stale by time alone
// (zero: never).
type Loaded struct {
	Revision int64
	Value    any
	Expires  time.Time
}

// Answer returns the revision and encoded JSON answer for key, from the
// cache while it holds, else from load, which it then keeps.
func (c *Cache) Answer(ctx context.Context, key string, load func() (Loaded, error)) (int64, []byte, error) {
	version, verr := c.db.Version(ctx)
	if verr == nil {
		c.mu.Lock()
		a, ok := c.entries[key]
		c.mu.Unlock()
		if ok && a.version == version && (a.expires.IsZero() || c.Now().Before(a.expires)) {
			return a.revision, a.body, nil
		}
	}
	l, err := load()
	if err != nil {
		return 0, nil, err
	}
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(l.Value); err != nil {
		return 0, nil, err
	}
	body := buf.Bytes()
	// Without a version (the database did not answer, the request ended)
	// the answer is not kept; load said what it could.
	if verr == nil && len(body) <= maxCachedAnswer {
		c.keep(key, cachedAnswer{version: version, expires: l.Expires, revision: l.Revision, body: body})
	}
	return l.Revision, body, nil
}

func (c *Cache) keep(key string, a cachedAnswer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.entries[key]; ok {
		if old.version > a.version {
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
