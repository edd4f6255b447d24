package events

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/planserver/planserver/internal/apierr"
	"github.com/planserver/planserver/internal/db"
	"github.com/planserver/planserver/internal/validation"
)

// Page sizes of Read.
const (
	DefaultLimit = 100
	MaxLimit     = 1000
)

// Query selects events from the log. Filters combine with AND.
type Query struct {
	// After is the cursor: only events with a greater seq are read. A
	// negative After means no cursor: read from the oldest retained event.
	After int64 `json:"after"`
	// Limit bounds the page; DefaultLimit when 0.
	Limit int `json:"limit" validate:"gte=0,lte=1000"`
	// SessionID keeps the events of that session and of all its
	// descendants. It names the live session of that id, or when there is
	// none, the last one of that id the log knows (a deleted session's
	// history); never a mix of two sessions that had the same id.
	SessionID string `json:"session_id" validate:"omitempty,session_id"`
	// SessionPath, when set, is the path SessionID was resolved to
	// (Page.SessionPath): a reader that reads on, such as an event stream,
	// keeps following the session it found first, not a later one that
	// takes its id.
	SessionPath string `json:"-"`
	// Plan keeps the events of that shared plan.
	Plan string `json:"plan" validate:"omitempty,plan_name"`
	// Types keeps the events of these types; every type when empty.
	Types []string `json:"types"`
	// Scope, when set, keeps only the events of the session with that
	// path (events.Session.Path) and its descendants, and the events of no
	// session (shared plans): an agent token's view of the log. It is set
	// by access control, not by the client.
	Scope string `json:"-"`
	// Guard, when set, runs first in the snapshot every page is read from;
	// an error ends the read with it. The event stream re-checks its
	// caller's token with it, in the very snapshot the events come from,
	// so no event committed after a revocation is ever sent.
	Guard func(q db.Querier) error `json:"-"`
}

// Validate reports every invalid field of q as an invalid_argument error.
// Repeated types are dropped, so a filter never names more types than
// exist.
func (q *Query) Validate() error {
	if err := validation.Struct(q); err != nil {
		return err
	}
	var types []string
	for _, t := range q.Types {
		if !slices.Contains(Types, t) {
			return apierr.Invalid("types", "unknown event type %q; known types: %s", t, strings.Join(Types, ", "))
		}
		if !slices.Contains(types, t) {
			types = append(types, t)
		}
	}
	q.Types = types
	return nil
}

// Page is one read of the log.
type Page struct {
	// Events are in seq order.
	Events []Event
	// Next is the cursor to read on from. When the page is full it is the
	// last event's seq; otherwise it is the log's head at the time of the
	// read, since nothing between the last event and the head matched the
	// filters. A filtered reader thus moves past events it does not want
	// and its cursor does not age out of the retained log while it waits.
	Next int64
	// SessionPath is the path the query's SessionID named ("" when it
	// names nothing yet), to pin in the next query.
	SessionPath string
	// Encoded, when set (a page Tail.Take answered), holds each event's
	// JSON, json.Marshal(Events[i]), made once by the tail for every
	// stream that sends it; nil for a page read from the log.
	Encoded [][]byte
}

// bounds returns the log's head (the highest seq ever appended, even if
// pruned since) and the highest pruned seq, in one statement so both come
// from the same snapshot.
func bounds(q db.Querier) (head, prunedThrough int64, err error) {
	err = q.QueryRow(`
		SELECT coalesce((SELECT max(seq) FROM events), 0),
		       (SELECT pruned_through FROM event_retention WHERE id = 1)`).Scan(&head, &prunedThrough)
	if err != nil {
		return 0, 0, fmt.Errorf("read event log bounds: %w", err)
	}
	return max(head, prunedThrough), prunedThrough, nil
}

// Head returns the seq of the newest event ever appended (0 for an empty
// log). A client that reads a snapshot after taking Head and then reads
// the log after Head may see a change twice, but never misses one.
func Head(ctx context.Context, d *db.DB) (int64, error) {
	head, _, err := bounds(d.Reader(ctx))
	return head, err
}

// SubtreeRange returns the bounds of the session paths under path (path
// itself included): every path p with lo <= p < hi. Paths are "/1/5/",
// and "/" sorts just before "0", so the range is an index range on any
// engine that compares bytes.
func SubtreeRange(path string) (lo, hi string) {
	return path, path[:len(path)-1] + "0"
}

// deletedSessionPath reads the path of a session id's last deletion, a
// range of the events_deleted_session index read backwards. A deleted
// session's last event is its session.deleted (migration 00020 says why
// that one is enough), and the index's condition must appear here word for
// word for either engine to use it.
const deletedSessionPath = `SELECT session_path FROM events
	WHERE type = '` + SessionDeleted + `' AND session_id = ? AND session_path IS NOT NULL
	ORDER BY seq DESC LIMIT 1`

// sessionPath resolves the session_id filter to a path: the live
// session's, or that of the last session of that id deleted; "" when the
// id names nothing.
func sessionPath(q db.Querier, id string) (string, error) {
	var path string
	err := q.QueryRow(`SELECT ancestry || pk || '/' FROM sessions WHERE id = ?`, id).Scan(&path)
	if errors.Is(err, sql.ErrNoRows) {
		var p sql.NullString
		err = q.QueryRow(deletedSessionPath, id).Scan(&p)
		if errors.Is(err, sql.ErrNoRows) {
			return "", nil
		}
		path = p.String
	}
	if err != nil {
		return "", fmt.Errorf("find session %q: %w", id, err)
	}
	return path, nil
}

const eventColumns = `seq, type, time, actor, session_id, plan, revision, data, actor_person`

// Read returns the events after q.After that match q's filters, oldest
// first, from committed rows only. Errors: invalid_argument for a bad
// query; cursor_expired when events after the cursor were pruned (the
// reader has missed them and must re-read current state) or when the
// cursor is ahead of the log (it belongs to another database, or to this
// one before it was restored from a backup); whatever q.Guard returns.
func Read(ctx context.Context, d *db.DB, q Query) (Page, error) {
	if err := q.Validate(); err != nil {
		return Page{}, err
	}
	limit := q.Limit
	if limit == 0 {
		limit = DefaultLimit
	}
	var page Page
	err := d.Read(ctx, func(tx *db.Tx) error {
		if q.Guard != nil {
			if err := q.Guard(tx); err != nil {
				return err
			}
		}
		head, pruned, err := bounds(tx)
		if err != nil {
			return err
		}
		after := q.After
		switch {
		case after < 0:
			after = pruned
		case after < pruned:
			return apierr.New(apierr.CursorExpired,
				"events after %d were pruned (the log now starts after %d): re-read the current state and resume from its head seq", after, pruned)
		case after > head:
			return apierr.New(apierr.CursorExpired,
				"cursor %d is ahead of the log, whose head is %d: it belongs to another database or to this one before a restore; re-read the current state and resume from its head seq", after, head)
		}
		path := ""
		if q.SessionID != "" {
			if path = q.SessionPath; path == "" {
				if path, err = sessionPath(tx, q.SessionID); err != nil {
					return err
				}
			}
			if path == "" {
				page.Next = head // nothing of that id: an empty page
				return nil
			}
			page.SessionPath = path
		}
		for _, part := range readParts(q, after, head, path) {
			if len(page.Events) == limit {
				break
			}
			var found []Event
			for _, st := range readSQL(q, part, path, limit-len(page.Events)) {
				rows, err := readRows(tx, st, after)
				if err != nil {
					return err
				}
				found = mergeSeq(found, rows)
			}
			page.Events = append(page.Events, found[:min(len(found), limit-len(page.Events))]...)
		}
		page.Next = head
		if len(page.Events) == limit {
			page.Next = page.Events[len(page.Events)-1].Seq
		}
		return nil
	})
	return page, err
}

// readRows returns the events st reads.
func readRows(tx *db.Tx, st statement, after int64) ([]Event, error) {
	rows, err := tx.Query(st.query, st.args...)
	if err != nil {
		return nil, fmt.Errorf("read events after %d: %w", after, err)
	}
	defer rows.Close()
	var out []Event
	for rows.Next() {
		e, err := scanEvent(rows)
		if err != nil {
			return nil, fmt.Errorf("read events after %d: %w", after, err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read events after %d: %w", after, err)
	}
	return out, nil
}

// mergeSeq merges two lists of events in seq order into one in seq order.
// The statements of one part read disjoint sets of rows, so no seq is in
// both.
func mergeSeq(a, b []Event) []Event {
	if len(a) == 0 {
		return b
	}
	out := make([]Event, 0, len(a)+len(b))
	for len(a) > 0 && len(b) > 0 {
		if a[0].Seq < b[0].Seq {
			out, a = append(out, a[0]), a[1:]
		} else {
			out, b = append(out, b[0]), b[1:]
		}
	}
	return append(append(out, a...), b...)
}

// sessionWindow is how many seqs after the cursor a session-filtered or
// scoped read walks in log order before it turns to the indexes.
const sessionWindow = 4096

// part is one stretch of the log a page is read from: the seqs in
// (after, upTo] (upTo 0: no upper bound), walked in log order (walk) or
// found through the indexes of a session filter or a scope.
type part struct {
	after, upTo int64
	walk        bool
}

// readParts splits a read into the stretches it is read from, in seq
// order. A session filter or a scope (without a plan filter, whose index
// serves it) reads in two: first it walks the next sessionWindow seqs of
// the log, which finds a busy subtree's page at once; when that leaves the
// page short, the rest of the log is found through indexes: a session
// filter's subtree is a range of the events_session index; a scope's is
// that and the events of no session, a range of events_no_session (see
// readSQL). events_session's entries sort by path, not seq, so all of the
// subtree's entries past the window are sorted, which is few once the walk
// found fewer than a page in a window. Either alone grows with the log: a
// walk with a quiet session's events (it passes every other event), the
// index with a busy subtree's (it sorts them all to return a page).
// Together a page costs at most a window's walk plus the subtree's
// entries, which are sparse when it comes to that (team benchmark,
// docs/benchmarks.md).
func readParts(q Query, after, head int64, path string) []part {
	if (path == "" && q.Scope == "") || q.Plan != "" || head-after <= sessionWindow {
		return []part{{after: after, walk: true}}
	}
	return []part{{after: after, upTo: after + sessionWindow, walk: true}, {after: after + sessionWindow}}
}

// statement is one SQL query and its arguments.
type statement struct {
	query string
	args  []any
}

// readSQL builds the statements of one part of a page: the events in p's
// stretch of the log that match q's filters (path is the resolved session
// filter), in seq order, at most limit of them. It is one statement, or two
// that read disjoint rows, each in seq order, for Read to merge. A plan
// filter is a range of the events_plan index; a session filter is a range
// of events_session unless p walks the log, where paths are compared as
// expressions (coalesce) so that no engine picks an index for them; the
// rest walk the log from the cursor. A scope without a session filter,
// past the walk, is two statements: its subtree, a range of
// events_session, and the events of no session, a range of
// events_no_session; a walk or a session filter's range checks the scope
// on each row it reads.
func readSQL(q Query, p part, path string, limit int) []statement {
	var where db.Where
	where.Add("seq > ?", p.after)
	if p.upTo > 0 {
		where.Add("seq <= ?", p.upTo)
	}
	if path != "" {
		lo, hi := SubtreeRange(path)
		if p.walk {
			where.Add("coalesce(session_path, '') >= ? AND coalesce(session_path, '') < ?", lo, hi)
		} else {
			where.Add("session_path >= ? AND session_path < ?", lo, hi)
		}
	}
	where.Equal("plan", q.Plan)
	if len(q.Types) > 0 {
		types := make([]any, len(q.Types))
		for i, t := range q.Types {
			types[i] = t
		}
		where.Add("type IN (?"+strings.Repeat(", ?", len(q.Types)-1)+")", types...)
	}
	if q.Scope == "" {
		return []statement{selectEvents(where, limit)}
	}
	lo, hi := SubtreeRange(q.Scope)
	if p.walk || path != "" || q.Plan != "" {
		// A path that is not a range of '' sorts after '' (paths start
		// with "/"), so the coalesce is false exactly where the NULL
		// comparison is not true.
		where.Add("(session_id IS NULL OR (coalesce(session_path, '') >= ? AND coalesce(session_path, '') < ?))", lo, hi)
		return []statement{selectEvents(where, limit)}
	}
	// The scope's two halves, disjoint (session_id is NULL in one, not in
	// the other), each an index range in seq order.
	var subtree, none db.Where
	subtree.Add(where.SQL(), where.Args()...)
	none.Add(where.SQL(), where.Args()...)
	subtree.Add("session_path >= ? AND session_path < ? AND session_id IS NOT NULL", lo, hi)
	none.Add("session_id IS NULL")
	return []statement{selectEvents(subtree, limit), selectEvents(none, limit)}
}

// selectEvents is the statement that reads the first limit events that
// match where, in seq order.
func selectEvents(where db.Where, limit int) statement {
	return statement{`SELECT ` + eventColumns + ` FROM events WHERE ` + where.SQL() + ` ORDER BY seq LIMIT ?`, where.Args(limit)}
}

// matcher is the in-memory twin of readSQL's WHERE clause: it decides, for
// an event the tail (tail.go) holds, exactly what readSQL's conditions
// decide for its row, so a stream served from memory gets the page Read
// would give it. The two must change together; TestMatcherAgreesWithRead
// holds them to it on both engines. path is the resolved session filter
// ("" for none), as in readSQL.
type matcher struct {
	q              Query
	pathLo, pathHi string
	scopeLo        string
	scopeHi        string
}

func newMatcher(q Query, path string) matcher {
	m := matcher{q: q}
	if path != "" {
		m.pathLo, m.pathHi = SubtreeRange(path)
	}
	if q.Scope != "" {
		m.scopeLo, m.scopeHi = SubtreeRange(q.Scope)
	}
	return m
}

// match reports whether e passes the filters. A NULL session_path (the
// SQL comparisons are then NULL, not true) never matches a path range;
// a NULL session_id passes the scope, as the events of no session do.
func (m matcher) match(e *tailEvent) bool {
	if m.pathLo != "" && !(e.hasPath && e.path >= m.pathLo && e.path < m.pathHi) {
		return false
	}
	if m.scopeLo != "" && e.hasSession && !(e.hasPath && e.path >= m.scopeLo && e.path < m.scopeHi) {
		return false
	}
	if m.q.Plan != "" && e.Plan != m.q.Plan {
		return false
	}
	return len(m.q.Types) == 0 || slices.Contains(m.q.Types, e.Type)
}

// scanEvent reads a row of eventColumns, followed by any columns a reader
// selects besides them into extra.
func scanEvent(rows *sql.Rows, extra ...any) (Event, error) {
	var (
		e         Event
		sessionID sql.NullString
		plan      sql.NullString
		rev       sql.NullInt64
		data      string
		person    sql.NullString
	)
	if err := rows.Scan(append([]any{&e.Seq, &e.Type, &e.Time, &e.Actor, &sessionID, &plan, &rev, &data, &person}, extra...)...); err != nil {
		return Event{}, err
	}
	var err error
	if e.Person, err = UnmarshalPerson(person); err != nil {
		return Event{}, err
	}
	e.SessionID, e.Plan, e.Revision = sessionID.String, plan.String, rev.Int64
	e.Data = []byte(data)
	return e, nil
}
