package http_test

import (
	"strings"
	"testing"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/apitest"
)

type todoList = api.TodoList

func TestTodos(t *testing.T) {
	env := apitest.New(t)
	createSession(t, env, map[string]any{"id": "s"})

	r := env.Call("GET", "/v1/sessions/s/todos", nil)
	var l todoList
	r.JSON(t, &l)
	if r.Status != 200 || l.Revision != 0 || len(l.Todos) != 0 || l.Todos == nil || l.UpdatedAt != nil || r.Header.Get("ETag") != "" {
		t.Errorf("todos before any write: %d %s etag %q", r.Status, r.Body, r.Header.Get("ETag"))
	}
	if r := env.Call("GET", "/v1/sessions/nobody/todos", nil); r.Status != 404 {
		t.Errorf("todos of a missing session: %d", r.Status)
	}
	if r := env.Call("PUT", "/v1/sessions/s/todos", map[string]any{"todos": []any{}}, "If-Match", "*"); r.Status != 412 {
		t.Errorf("If-Match * before the first write: %d", r.Status)
	}

	list := map[string]any{"todos": []any{
		map[string]any{"id": "read", "content": "Read the billing module", "status": "completed"},
		map[string]any{"content": "Write the plan", "status": "in_progress"},
		map[string]any{"content": "Ask for review", "status": "pending"},
	}}
	r = env.Call("PUT", "/v1/sessions/s/todos", list, "If-None-Match", "*")
	if r.Status != 200 || r.Header.Get("ETag") != `"1"` {
		t.Fatalf("first write: %d %s", r.Status, r.Body)
	}
	r.JSON(t, &l)
	if l.Revision != 1 || len(l.Todos) != 3 || l.Todos[0].ID != "read" || !strings.HasPrefix(l.Todos[1].ID, "todo_") ||
		l.Todos[1].ID == l.Todos[2].ID || l.Todos[1].Status != "in_progress" || l.UpdatedAt == nil {
		t.Errorf("written list: %+v", l)
	}
	if r := env.Call("PUT", "/v1/sessions/s/todos", list, "If-None-Match", "*"); r.Status != 412 || r.Code() != "already_exists" {
		t.Errorf("create-only again: %d %s", r.Status, r.Body)
	}
	if r := env.Call("GET", "/v1/sessions/s/todos", nil, "If-None-Match", `"1"`); r.Status != 304 {
		t.Errorf("If-None-Match current: %d", r.Status)
	}

	// Sending the stored list back, ids included, changes nothing.
	same := map[string]any{"todos": l.Todos}
	if r := env.Call("PUT", "/v1/sessions/s/todos", same); r.Header.Get("ETag") != `"1"` {
		t.Errorf("same list bumped to %s", r.Header.Get("ETag"))
	}
	if r := env.Call("PUT", "/v1/sessions/s/todos", list, "If-Match", `"9"`); r.Status != 412 || r.Map(t)["current_revision"] != float64(1) {
		t.Errorf("stale If-Match: %d %s", r.Status, r.Body)
	}
	r = env.Call("PUT", "/v1/sessions/s/todos", map[string]any{"todos": []any{}}, "If-Match", `"1"`)
	r.JSON(t, &l)
	if r.Status != 200 || l.Revision != 2 || len(l.Todos) != 0 {
		t.Errorf("cleared: %d %s", r.Status, r.Body)
	}
	events := eventData(t, env, "todos.updated", "s")
	if len(events) != 2 || len(events[0]["todos"].([]any)) != 3 || events[1]["revision"] != float64(2) {
		t.Errorf("todos.updated events: %v", events)
	}
}
