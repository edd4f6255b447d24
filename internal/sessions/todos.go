package sessions

import (
	"crypto/rand"
	"fmt"
	"slices"
	"strings"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/apierr"
	"github.com/planserver/planserver/internal/validation"
)

// Todo statuses. At most one todo is in progress at a time: the todo_write
// discipline of working one step at a time.
const (
	TodoPending    = api.TodoPending
	TodoInProgress = api.TodoInProgress
	TodoCompleted  = api.TodoCompleted
)

// MaxTodos bounds a session's todo list.
const MaxTodos = 1000

// Todo is one item of a session's todo list.
type Todo = api.Todo

// TodoList is a session's todo list (todo_write). Revision 0 means no list
// was ever written.
type TodoList = api.TodoList

// NormalizeTodos validates a todo list write and returns the list to
// store, with ids generated for items without one. Errors name the item,
// e.g. todos[3].status for a second in_progress item.
func NormalizeTodos(in api.TodosWrite) ([]Todo, error) {
	if err := validation.Struct(in); err != nil {
		return nil, err
	}
	var fields []apierr.FieldError
	ids := map[string]int{}
	inProgress := -1
	for i, t := range in.Todos {
		if strings.TrimSpace(t.Content) == "" {
			fields = append(fields, apierr.FieldError{Field: fmt.Sprintf("todos[%d].content", i), Message: "must not be blank"})
		}
		if t.ID != "" {
			if strings.TrimSpace(t.ID) != t.ID {
				fields = append(fields, apierr.FieldError{Field: fmt.Sprintf("todos[%d].id", i), Message: "must not start or end with spaces"})
			} else if first, dup := ids[t.ID]; dup {
				fields = append(fields, apierr.FieldError{Field: fmt.Sprintf("todos[%d].id", i),
					Message: fmt.Sprintf("duplicates todos[%d].id %q", first, t.ID)})
			} else {
				ids[t.ID] = i
			}
		}
		if t.Status == TodoInProgress {
			if inProgress >= 0 {
				fields = append(fields, apierr.FieldError{Field: fmt.Sprintf("todos[%d].status", i),
					Message: fmt.Sprintf("only one todo may be in_progress at a time; todos[%d] already is", inProgress)})
			} else {
				inProgress = i
			}
		}
	}
	if len(fields) > 0 {
		return nil, apierr.InvalidFields(fields)
	}
	out := make([]Todo, len(in.Todos))
	for i, t := range in.Todos {
		id := t.ID
		for id == "" {
			id = newTodoID()
			if _, taken := ids[id]; taken {
				id = ""
			}
		}
		ids[id] = i
		out[i] = Todo{ID: id, Content: t.Content, Status: t.Status}
	}
	return out, nil
}

// newTodoID returns a random todo id: "todo_" and 40 random bits, plenty
// for ids unique within one list.
func newTodoID() string {
	b := make([]byte, 5)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return "todo_" + idEncoding.EncodeToString(b)
}

// sameTodos reports whether a write leaves the list as it is.
func sameTodos(a, b []Todo) bool { return slices.Equal(a, b) }
