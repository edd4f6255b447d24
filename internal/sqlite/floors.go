package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// Kinds of versioned resources whose revisions survive deletion.
const (
	FloorSession     = "session"
	FloorSessionPlan = "session_plan"
	FloorTodos       = "todos"
	FloorPlan        = "plan"
)

// FirstRevision returns the revision a resource of kind named key starts
// at when it is created: 1, or one above the last revision of a deleted
// resource of the same name (see migrations/00007_revision_floors.sql).
func FirstRevision(ctx context.Context, tx *sql.Tx, kind, key string) (int64, error) {
	var floor int64
	err := tx.QueryRowContext(ctx, `SELECT revision FROM revision_floors WHERE kind = ? AND key = ?`, kind, key).Scan(&floor)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("revision floor of %s %q: %w", kind, key, err)
	}
	return floor + 1, nil
}

// RecordDeletion remembers that a resource of kind named key was deleted
// at revision rev, so a re-created one continues above it.
func RecordDeletion(ctx context.Context, tx *sql.Tx, kind, key string, rev int64) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO revision_floors (kind, key, revision) VALUES (?, ?, ?)
		ON CONFLICT (kind, key) DO UPDATE SET revision = max(revision, excluded.revision)`, kind, key, rev)
	if err != nil {
		return fmt.Errorf("record deletion of %s %q: %w", kind, key, err)
	}
	return nil
}
