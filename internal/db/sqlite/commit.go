package sqlite

import (
	"context"
	"fmt"
	"time"

	"github.com/planserver/planserver/internal/db"
)

// Commit runs a batch on SQLite's one writer: one transaction (BEGIN
// IMMEDIATE), each write in a savepoint of its own unless it is alone,
// one commit. A write that fails rolls back to its savepoint alone; a
// failure the engine answers by rolling back the whole transaction (a
// full disk, an I/O error) fails every write of the batch, none
// acknowledged.
func (e *engine) Commit(b *db.Batch) {
	// The batch's statements run under a context no client can cancel:
	// interrupting one would roll back every write of the batch.
	ctx := context.Background()
	sqlTx, err := e.writer.BeginTx(ctx, nil)
	if err != nil {
		err = b.Failed(fmt.Errorf("begin write: %w", db.Classify(err)))
		for _, w := range b.Writes {
			w.Err = err
		}
		return
	}
	alone := len(b.Writes) == 1
	changed := false
	for _, w := range b.Writes {
		if err := w.Context().Err(); err != nil {
			w.Err = err // gave up while queued; nothing of it ran
			continue
		}
		if !alone {
			if _, err := sqlTx.ExecContext(ctx, "SAVEPOINT w"); err != nil {
				abort(sqlTx, b, fmt.Errorf("savepoint: %w", db.Classify(err)))
				return
			}
		}
		if w.Err = w.Run(sqlTx); w.Err != nil {
			if alone {
				_ = sqlTx.Rollback()
				b.SawError(w.Err)
				return
			}
			// Undo this write alone. If that is impossible, the engine
			// has already rolled the whole transaction back (SQLite does
			// on a full disk or an I/O error): every write of the batch
			// is lost and none may be acknowledged.
			if _, err := sqlTx.ExecContext(ctx, "ROLLBACK TO w"); err != nil {
				abort(sqlTx, b, w.Err)
				return
			}
			if _, err := sqlTx.ExecContext(ctx, "RELEASE w"); err != nil {
				abort(sqlTx, b, w.Err)
				return
			}
			continue
		}
		if !alone {
			if _, err := sqlTx.ExecContext(ctx, "RELEASE w"); err != nil {
				abort(sqlTx, b, fmt.Errorf("release savepoint: %w", db.Classify(err)))
				return
			}
		}
		changed = true
	}
	if !changed {
		_ = sqlTx.Rollback()
		return
	}
	commitStart := time.Now()
	err = sqlTx.Commit()
	b.Trace([]db.Span{{Name: "db.commit", Start: commitStart, End: time.Now(), Owner: db.WholeBatch, Err: err}})
	// Moved whether or not the commit succeeded: a failed commit may still
	// have reached the disk, and nothing is acknowledged before this.
	e.generation.Add(1)
	if err != nil {
		err = b.Failed(fmt.Errorf("commit: %w", db.Classify(err)))
		for _, w := range b.Writes {
			if w.Err == nil {
				w.Err = err
			}
		}
		return
	}
	e.ckpt.committed()
	b.Committed()
}

// abort rolls back a batch that cannot go on and fails every write of it
// that had not failed already with cause.
func abort(sqlTx interface{ Rollback() error }, b *db.Batch, cause error) {
	_ = sqlTx.Rollback()
	cause = b.Failed(cause)
	for _, w := range b.Writes {
		if w.Err == nil {
			w.Err = cause
		}
	}
}
