package events

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"github.com/planserver/planserver/internal/apierr"
	"github.com/planserver/planserver/internal/sqlite"
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
	// descendants, including sessions deleted since.
	SessionID string `json:"session_id" validate:"omitempty,session_id"`
	// Plan keeps the events of that shared plan.
	Plan string `json:"plan" validate:"omitempty,plan_name"`
	// Types keeps the events of these types; every type when empty.
	Types []string `json:"types"`
	// Scope, when set, keeps only the events of that session and its
	// descendants and the events of no session (shared plans): an agent
	// token's view of the log. It is set by access control, not by the
	// client.
	Scope string `json:"-"`
}

// Validate reports every invalid field of q as an invalid_argument error.
func (q Query) Validate() error {
	if err := validation.Struct(q); err != nil {
		return err
	}
	for _, t := range q.Types {
		if !slices.Contains(Types, t) {
			return apierr.Invalid("types", "unknown event type %q; known types: %s", t, strings.Join(Types, ", "))
		}
	}
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
}

// querier is what both *sql.Tx and *sql.DB offer.
type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// bounds returns the log's head (the highest seq ever appended, even if
// pruned since) and the highest pruned seq, in one statement so both come
// from the same snapshot.
func bounds(ctx context.Context, q querier) (head, prunedThrough int64, err error) {
	err = q.QueryRowContext(ctx, `
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
func Head(ctx context.Context, db *sqlite.DB) (int64, error) {
	head, _, err := bounds(ctx, db.Reader)
	return head, err
}

const eventColumns = `seq, type, time, actor, session_id, plan, revision, data`

// Read returns the events after q.After that match q's filters, oldest
// first, from committed rows only. Errors: invalid_argument for a bad
// query; cursor_expired when events after the cursor were pruned (the
// reader has missed them and must re-read current state) or when the
// cursor is ahead of the log (it belongs to another database, or to this
// one before it was restored from a backup).
func Read(ctx context.Context, db *sqlite.DB, q Query) (Page, error) {
	if err := q.Validate(); err != nil {
		return Page{}, err
	}
	limit := q.Limit
	if limit == 0 {
		limit = DefaultLimit
	}
	var page Page
	err := db.Read(ctx, func(tx *sql.Tx) error {
		head, pruned, err := bounds(ctx, tx)
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
		where := []string{"seq > ?"}
		args := []any{after}
		if q.SessionID != "" {
			// session_path is "/root/.../self/" as it was at append time.
			where = append(where, "instr(session_path, '/' || ? || '/') > 0")
			args = append(args, q.SessionID)
		}
		if q.Scope != "" {
			where = append(where, "(session_id IS NULL OR instr(session_path, '/' || ? || '/') > 0)")
			args = append(args, q.Scope)
		}
		if q.Plan != "" {
			where = append(where, "plan = ?")
			args = append(args, q.Plan)
		}
		if len(q.Types) > 0 {
			where = append(where, "type IN (?"+strings.Repeat(", ?", len(q.Types)-1)+")")
			for _, t := range q.Types {
				args = append(args, t)
			}
		}
		args = append(args, limit)
		rows, err := tx.QueryContext(ctx, `SELECT `+eventColumns+` FROM events WHERE `+
			strings.Join(where, " AND ")+` ORDER BY seq LIMIT ?`, args...)
		if err != nil {
			return fmt.Errorf("read events after %d: %w", after, err)
		}
		defer rows.Close()
		for rows.Next() {
			e, err := scanEvent(rows)
			if err != nil {
				return fmt.Errorf("read events after %d: %w", after, err)
			}
			page.Events = append(page.Events, e)
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("read events after %d: %w", after, err)
		}
		page.Next = head
		if len(page.Events) == limit {
			page.Next = page.Events[len(page.Events)-1].Seq
		}
		return nil
	})
	return page, err
}

func scanEvent(rows *sql.Rows) (Event, error) {
	var (
		e         Event
		sessionID sql.NullString
		plan      sql.NullString
		rev       sql.NullInt64
		data      string
	)
	if err := rows.Scan(&e.Seq, &e.Type, &e.Time, &e.Actor, &sessionID, &plan, &rev, &data); err != nil {
		return Event{}, err
	}
	e.SessionID, e.Plan, e.Revision = sessionID.String, plan.String, rev.Int64
	e.Data = []byte(data)
	return e, nil
}
