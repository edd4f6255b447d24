package sessions

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/planserver/planserver/internal/events"
	"github.com/planserver/planserver/internal/revision"
	"github.com/planserver/planserver/internal/sqlite"
)

// getTodos loads the todo list of session id; revision 0 and no items when
// none was written.
func getTodos(ctx context.Context, q querier, id string) (*TodoList, error) {
	l := &TodoList{SessionID: id, Todos: []Todo{}}
	var (
		raw     string
		updated string
	)
	err := q.QueryRowContext(ctx, `SELECT todos, revision, updated_at FROM session_todos WHERE session_id = ?`, id).
		Scan(&raw, &l.Revision, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return l, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get todos of session %q: %w", id, err)
	}
	if err := json.Unmarshal([]byte(raw), &l.Todos); err != nil {
		return nil, fmt.Errorf("decode todos of session %q: %w", id, err)
	}
	l.UpdatedAt = &updated
	return l, nil
}

func todosWhat(id string) string { return fmt.Sprintf("todo list of session %q", id) }

// GetTodos returns the todo list of session id: an empty list at revision
// 0 when none was written yet. Errors: not_found.
func (st *Store) GetTodos(ctx context.Context, id string) (*TodoList, error) {
	var l *TodoList
	err := st.db.Read(ctx, func(tx *sql.Tx) error {
		if err := mustExist(ctx, tx, id); err != nil {
			return err
		}
		var err error
		l, err = getTodos(ctx, tx, id)
		return err
	})
	return l, err
}

// PutTodos replaces the todo list of session id. The list counts as
// existing for preconditions once it has been written (If-None-Match: *
// succeeds only on the first write). Writing the list it already has is a
// success without a revision bump or event. Errors: not_found,
// invalid_argument, version_conflict, already_exists,
// precondition_required.
func (st *Store) PutTodos(ctx context.Context, id string, in TodosInput, pre revision.Precondition) (*TodoList, error) {
	todos, err := in.Normalize()
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(todos)
	if err != nil {
		return nil, fmt.Errorf("encode todos of session %q: %w", id, err)
	}
	var out *TodoList
	err = st.db.Write(ctx, func(tx *sql.Tx) error {
		if err := mustExist(ctx, tx, id); err != nil {
			return err
		}
		cur, err := getTodos(ctx, tx, id)
		if err != nil {
			return err
		}
		if err := pre.Check(todosWhat(id), cur.Revision > 0, cur.Revision); err != nil {
			return err
		}
		if old, _ := json.Marshal(cur.Todos); cur.Revision > 0 && string(old) == string(raw) {
			out = cur
			return nil
		}
		first, err := sqlite.FirstRevision(ctx, tx, sqlite.FloorTodos, id)
		if err != nil {
			return err
		}
		now := sqlite.FormatTime(time.Now())
		if _, err := tx.ExecContext(ctx, `INSERT INTO session_todos (session_id, todos, revision, updated_at)
			VALUES (?, ?, ?, ?)
			ON CONFLICT (session_id) DO UPDATE SET todos = excluded.todos, revision = revision + 1, updated_at = excluded.updated_at`,
			id, string(raw), first, now); err != nil {
			return fmt.Errorf("write todos of session %q: %w", id, err)
		}
		if out, err = getTodos(ctx, tx, id); err != nil {
			return err
		}
		_, err = events.Append(ctx, tx, events.TodosUpdated, id, "", out.Revision, out)
		return err
	})
	return out, err
}
