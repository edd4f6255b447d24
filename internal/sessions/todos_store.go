package sessions

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/db"
	"github.com/planserver/planserver/internal/events"
	"github.com/planserver/planserver/internal/revision"
	"github.com/planserver/planserver/internal/versioned"
)

// loadTodos reads the todo list of session id; revision 0 and no items
// when none was written.
func loadTodos(q db.Querier, id string) (*TodoList, error) {
	l := &TodoList{SessionID: id, Todos: []Todo{}}
	var (
		raw     string
		updated string
	)
	err := q.QueryRow(`SELECT todos, revision, updated_at FROM session_todos WHERE session_id = ?`, id).
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

// GetTodos returns the todo list of session id: an empty list at revision
// 0 when none was written yet. Errors: not_found.
func (st *Store) GetTodos(ctx context.Context, id string) (*TodoList, error) {
	var l *TodoList
	err := st.db.Read(ctx, func(tx *db.Tx) error {
		if err := mustExist(tx, id); err != nil {
			return err
		}
		var err error
		l, err = loadTodos(tx, id)
		return err
	})
	return l, err
}

// todosResource is the todo list of session id at revision rev (0: none
// written) as a versioned resource.
func todosResource(id string, rev int64) versioned.Resource {
	return versioned.Resource{Kind: versioned.Todos, Key: id, What: fmt.Sprintf("todo list of session %q", id), Revision: rev}
}

// PutTodos replaces the todo list of session id. The list counts as
// existing for preconditions once it has been written (If-None-Match: *
// succeeds only on the first write). Writing the list it already has is a
// success without a revision bump or event. Errors: not_found,
// invalid_argument, version_conflict, already_exists,
// precondition_required.
func (st *Store) PutTodos(ctx context.Context, id string, in api.TodosWrite, pre revision.Precondition) (*TodoList, error) {
	todos, err := NormalizeTodos(in)
	if err != nil {
		return nil, err
	}
	var out *TodoList
	err = st.db.Write(ctx, func(tx *db.Tx) error {
		s, err := load(tx, id)
		if err != nil {
			return err
		}
		cur, err := loadTodos(tx, id)
		if err != nil {
			return err
		}
		res := todosResource(id, cur.Revision)
		if err := res.Check(pre); err != nil {
			return err
		}
		if res.Exists() && sameTodos(cur.Todos, todos) {
			out = cur
			return nil
		}
		raw, err := json.Marshal(todos)
		if err != nil {
			return fmt.Errorf("encode todos of session %q: %w", id, err)
		}
		rev, err := res.Next(tx)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(`INSERT INTO session_todos (session_id, todos, revision, updated_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (session_id) DO UPDATE SET todos = excluded.todos, revision = excluded.revision, updated_at = excluded.updated_at`,
			id, string(raw), rev, tx.NowText()); err != nil {
			return fmt.Errorf("write todos of session %q: %w", id, err)
		}
		if out, err = loadTodos(tx, id); err != nil {
			return err
		}
		err = events.Record(tx, events.New{Type: events.TodosUpdated, Session: s.link().Ref(), Revision: rev, Data: out})
		return err
	})
	return out, err
}
