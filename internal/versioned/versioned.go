// Package versioned is the one path every write to a versioned resource
// (session, session plan, todo list, shared plan) takes inside its write
// transaction: check the client's precondition against the current
// revision, take the next revision, and, on delete, remember the last one,
// so a resource re-created under the same name continues above it (the
// revision floor, a domain rule: see revision.Next). It is also the one
// path a diff of two kept revisions of a plan takes, shared or of a
// session (Compare), and holds the history length both kinds keep by
// default.
package versioned

import (
	"database/sql"
	"errors"
	"fmt"

	"github.com/planserver/planserver/internal/db"
	"github.com/planserver/planserver/internal/revision"
)

// Kind names a family of versioned resources whose revisions survive
// deletion.
type Kind string

// The versioned resources.
const (
	Session     Kind = "session"
	SessionPlan Kind = "session_plan"
	Todos       Kind = "todos"
	Plan        Kind = "plan"
)

// Resource is one versioned resource as a write transaction found it.
type Resource struct {
	Kind Kind
	// Key names it within its kind: a session id, a plan name.
	Key string
	// What names it in messages, e.g. `plan "release"`.
	What string
	// Revision is its current revision; 0 when it does not exist.
	Revision int64
}

// Exists reports whether the resource exists.
func (r Resource) Exists() bool { return r.Revision > 0 }

// Check evaluates the client's precondition against the resource (412,
// 409, 428; see revision.Precondition.Check).
func (r Resource) Check(pre revision.Precondition) error {
	return pre.Check(r.What, r.Exists(), r.Revision)
}

// Next returns the revision a write of the resource stores.
func (r Resource) Next(tx *db.Tx) (int64, error) {
	if r.Exists() {
		return revision.Next(r.Revision, 0), nil
	}
	var floor int64
	err := tx.QueryRow(`SELECT revision FROM revision_floors WHERE kind = ? AND key = ?`, string(r.Kind), r.Key).Scan(&floor)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("revision floor of %s: %w", r.What, err)
	}
	return revision.Next(0, floor), nil
}

// FirstRevision is Next of a resource that does not exist, for a write
// that inserts it and takes its revision in one statement: a SQL
// expression and its arguments, the floor its deleted namesake left plus
// one (revision.Next(0, floor)). On SQLite that is one statement fewer in
// the one writer; on PostgreSQL one round trip fewer under the write lock.
// TestFirstRevisionIsNext holds it to revision.Next.
func (r Resource) FirstRevision() (expr string, args []any) {
	return `(coalesce((SELECT revision FROM revision_floors WHERE kind = ? AND key = ?), 0) + 1)`,
		[]any{string(r.Kind), r.Key}
}

// Write is Check, then Next: the revision a write that changes the
// resource stores, once the precondition holds.
func (r Resource) Write(tx *db.Tx, pre revision.Precondition) (int64, error) {
	if err := r.Check(pre); err != nil {
		return 0, err
	}
	return r.Next(tx)
}

// Deleted records that the resource is deleted at its current revision.
func (r Resource) Deleted(tx *db.Tx) error {
	if !r.Exists() {
		return nil
	}
	_, err := tx.Exec(`INSERT INTO revision_floors (kind, key, revision) VALUES (?, ?, ?)
		ON CONFLICT (kind, key) DO UPDATE SET revision = excluded.revision
		WHERE revision_floors.revision < excluded.revision`, string(r.Kind), r.Key, r.Revision)
	if err != nil {
		return fmt.Errorf("record deletion of %s: %w", r.What, err)
	}
	return nil
}
