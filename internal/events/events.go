// Package events owns the change log: the Event type, Append (called by
// every store inside the transaction that makes the change, so the log and
// the data never disagree), reading the log back, and a Broker that wakes
// subscribers after a commit. The broker only signals; subscribers always
// re-read committed rows from their cursor.
package events

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/planserver/planserver/internal/sqlite"
)

// Event types. Every type API.md lists is emitted by exactly one kind of
// change.
const (
	SessionCreated         = "session.created"
	SessionUpdated         = "session.updated"
	SessionModeChanged     = "session.mode_changed"
	SessionDeleted         = "session.deleted"
	SessionPlanUpdated     = "session_plan.updated"
	SessionReviewRequested = "session.review_requested"
	SessionReviewApproved  = "session.review_approved"
	SessionReviewRejected  = "session.review_rejected"
	TodosUpdated           = "todos.updated"
	ToolCallDenied         = "tool_call.denied"
	PlanCreated            = "plan.created"
	PlanUpdated            = "plan.updated"
	PlanStatusChanged      = "plan.status_changed"
	PlanDeleted            = "plan.deleted"
	StepUpdated            = "step.updated"
	StepClaimed            = "step.claimed"
	StepReportAdded        = "step.report_added"
)

// Types lists every event type, in API.md's order.
var Types = []string{
	SessionCreated, SessionUpdated, SessionModeChanged, SessionDeleted, SessionPlanUpdated,
	SessionReviewRequested, SessionReviewApproved, SessionReviewRejected, TodosUpdated,
	ToolCallDenied, PlanCreated, PlanUpdated, PlanStatusChanged, PlanDeleted,
	StepUpdated, StepClaimed, StepReportAdded,
}

// Event is one entry of the change log.
type Event struct {
	Seq       int64           `json:"seq"`
	Type      string          `json:"type"`
	Time      string          `json:"time"`
	Actor     string          `json:"actor"`
	SessionID string          `json:"session_id,omitempty"`
	Plan      string          `json:"plan,omitempty"`
	Revision  int64           `json:"revision,omitempty"`
	Data      json.RawMessage `json:"data"`
}

type actorKey struct{}

// WithActor returns a context whose changes are attributed to actor.
func WithActor(ctx context.Context, actor string) context.Context {
	return context.WithValue(ctx, actorKey{}, actor)
}

// ActorFrom returns the actor attributed to changes made with ctx, or
// "anonymous".
func ActorFrom(ctx context.Context) string {
	if a, ok := ctx.Value(actorKey{}).(string); ok && a != "" {
		return a
	}
	return "anonymous"
}

// Append records e in the log inside tx and returns its sequence number.
// Actor defaults to the context's actor and Time to now. data is marshalled
// to JSON (nil becomes {}). For a session event, the session's ancestry is
// recorded too, so subtree filters keep working after the session is gone;
// append before deleting.
func Append(ctx context.Context, tx *sql.Tx, typ string, sessionID, plan string, rev int64, data any) (int64, error) {
	raw := []byte("{}")
	if data != nil {
		var err error
		if raw, err = json.Marshal(data); err != nil {
			return 0, fmt.Errorf("append %s event: %w", typ, err)
		}
	}
	var path sql.NullString
	if sessionID != "" {
		p, err := sessionPath(ctx, tx, sessionID)
		if err != nil {
			return 0, fmt.Errorf("append %s event: %w", typ, err)
		}
		path = sql.NullString{String: p, Valid: true}
	}
	res, err := tx.ExecContext(ctx,
		`INSERT INTO events (type, time, actor, session_id, session_path, plan, revision, data)
		 VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		typ, sqlite.FormatTime(time.Now()), ActorFrom(ctx), nullString(sessionID), path,
		nullString(plan), nullInt(rev), string(raw))
	if err != nil {
		return 0, fmt.Errorf("append %s event: %w", typ, err)
	}
	return res.LastInsertId()
}

// sessionPath returns "/root/.../id/" for a session that exists in tx.
func sessionPath(ctx context.Context, tx *sql.Tx, id string) (string, error) {
	var path string
	err := tx.QueryRowContext(ctx, `
		WITH RECURSIVE chain(id, parent_id, depth) AS (
			SELECT id, parent_id, 0 FROM sessions WHERE id = ?
			UNION ALL
			SELECT s.id, s.parent_id, c.depth + 1 FROM sessions s JOIN chain c ON s.id = c.parent_id
		)
		SELECT coalesce('/' || group_concat(id, '/' ORDER BY depth DESC) || '/', '') FROM chain`, id).Scan(&path)
	if err != nil {
		return "", fmt.Errorf("session path of %q: %w", id, err)
	}
	if path == "" {
		// The session is not in tx (already deleted): record it alone.
		return "/" + id + "/", nil
	}
	return path, nil
}

func nullString(s string) sql.NullString { return sql.NullString{String: s, Valid: s != ""} }

func nullInt(n int64) sql.NullInt64 { return sql.NullInt64{Int64: n, Valid: n != 0} }
