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

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/db"
)

// Event types: see api.
const (
	SessionCreated         = api.EventSessionCreated
	SessionUpdated         = api.EventSessionUpdated
	SessionModeChanged     = api.EventSessionModeChanged
	SessionDeleted         = api.EventSessionDeleted
	SessionPlanUpdated     = api.EventSessionPlanUpdated
	SessionReviewRequested = api.EventSessionReviewRequested
	SessionReviewApproved  = api.EventSessionReviewApproved
	SessionReviewRejected  = api.EventSessionReviewRejected
	TodosUpdated           = api.EventTodosUpdated
	ToolCallDenied         = api.EventToolCallDenied
	ToolCallUnjudged       = api.EventToolCallUnjudged
	PlanCreated            = api.EventPlanCreated
	PlanUpdated            = api.EventPlanUpdated
	PlanStatusChanged      = api.EventPlanStatusChanged
	PlanDeleted            = api.EventPlanDeleted
	StepUpdated            = api.EventStepUpdated
	StepClaimed            = api.EventStepClaimed
	StepReportAdded        = api.EventStepReportAdded
	StepClaimExpired       = api.EventStepClaimExpired
	SessionScopeChanged    = api.EventSessionScopeChanged
	ToolCallOutOfScope     = api.EventToolCallOutOfScope
)

// Types lists every event type, in the contract's order (api.EventTypes).
var Types = api.EventTypes

// Event is one entry of the change log.
type Event = api.Event

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

// Session names the session an event is about by its identity: ID is its
// name, PK its identity (never reused), Path its chain of identities,
// "/<ancestor pks>/<pk>/". Scopes and subtree filters match Path, so an
// event is never shown to a principal granted a later session of the same
// name.
type Session struct {
	ID   string
	PK   int64
	Path string
}

// New is an event to append: what changed, about which session (nil for
// none) or plan (""), the revision it made (0 for none), and its data.
type New struct {
	Type     string
	Session  *Session
	Plan     string
	Revision int64
	Data     any
	// Actor, when set, is the event's actor instead of the transaction's
	// caller (and no person is recorded): for what nobody did, such as a
	// lease running out (SystemActor), whichever write notices it.
	Actor string
}

// SystemActor is the actor of events planserver records by itself, for
// what the clock did rather than a caller (a lease running out).
const SystemActor = "planserver"

// Append records e in the log inside tx and returns its sequence number.
// The actor is tx's context's, and so is the person behind it when a
// signed-in human made the change; the time is tx's clock. Data is marshalled
// to JSON (nil becomes {}).
func Append(tx *db.Tx, e New) (int64, error) {
	args, err := eventArgs(tx, e)
	if err != nil {
		return 0, err
	}
	var seq int64
	if err := tx.QueryRow(insertEvent+` RETURNING seq`, args...).Scan(&seq); err != nil {
		return 0, fmt.Errorf("append %s event: %w", e.Type, db.Classify(err))
	}
	return seq, nil
}

// Record is Append for a write that does not need the seq: on PostgreSQL
// the insert then travels with the write's other changes (internal/db's
// pipeline) instead of costing a round trip of its own, and a keyed
// write's goes at the end of its batch (db.Tx.ExecAtEnd). The seq is the
// same either way: taken from the counter inside the transaction.
func Record(tx *db.Tx, e New) error {
	args, err := eventArgs(tx, e)
	if err != nil {
		return err
	}
	if err := tx.ExecAtEnd(insertEvent, args...); err != nil {
		return fmt.Errorf("append %s event: %w", e.Type, db.Classify(err))
	}
	return nil
}

const insertEvent = `INSERT INTO events (type, time, actor, session_id, session_pk, session_path, plan, revision, data, actor_person)
		 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

// eventArgs are the values of insertEvent for e.
func eventArgs(tx *db.Tx, e New) ([]any, error) {
	raw := []byte("{}")
	if e.Data != nil {
		var err error
		if raw, err = json.Marshal(e.Data); err != nil {
			return nil, fmt.Errorf("append %s event: %w", e.Type, err)
		}
	}
	var (
		sessionID, path sql.NullString
		pk              sql.NullInt64
	)
	if s := e.Session; s != nil {
		sessionID = sql.NullString{String: s.ID, Valid: true}
		pk = sql.NullInt64{Int64: s.PK, Valid: true}
		path = sql.NullString{String: s.Path, Valid: true}
	}
	actor, person := ActorFrom(tx.Context()), PersonFrom(tx.Context())
	if e.Actor != "" {
		actor, person = e.Actor, nil
	}
	return []any{e.Type, tx.NowText(), actor, sessionID, pk, path,
		nullString(e.Plan), nullInt(e.Revision), string(raw), MarshalPerson(person)}, nil
}

func nullString(s string) sql.NullString { return sql.NullString{String: s, Valid: s != ""} }

func nullInt(n int64) sql.NullInt64 { return sql.NullInt64{Int64: n, Valid: n != 0} }

// ActorIn returns the actor ctx names, and false when it names none
// (a change made on the host, not by a caller).
func ActorIn(ctx context.Context) (string, bool) {
	a, ok := ctx.Value(actorKey{}).(string)
	return a, ok && a != ""
}

type personKey struct{}

// WithPerson returns a context whose changes are attributed to person p
// (a signed-in human) besides its actor name. Tokens have none.
func WithPerson(ctx context.Context, p *api.Person) context.Context {
	return context.WithValue(ctx, personKey{}, p)
}

// PersonFrom returns the person attributed to changes made with ctx, or
// nil when a token (or the anonymous caller) makes them.
func PersonFrom(ctx context.Context) *api.Person {
	p, _ := ctx.Value(personKey{}).(*api.Person)
	return p
}

// MarshalPerson is a person as the database stores them beside an actor
// name: JSON, or NULL for none.
func MarshalPerson(p *api.Person) sql.NullString {
	if p == nil {
		return sql.NullString{}
	}
	b, _ := json.Marshal(p) // three strings always marshal
	return sql.NullString{String: string(b), Valid: true}
}

// UnmarshalPerson reads what MarshalPerson wrote.
func UnmarshalPerson(v sql.NullString) (*api.Person, error) {
	if !v.Valid {
		return nil, nil
	}
	var p api.Person
	if err := json.Unmarshal([]byte(v.String), &p); err != nil {
		return nil, fmt.Errorf("stored person %q: %w", v.String, err)
	}
	return &p, nil
}
