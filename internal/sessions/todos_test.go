package sessions

import (
	"reflect"
	"strings"
	"testing"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/apierr"
)

func TestTodosNormalize(t *testing.T) {
	cases := []struct {
		name   string
		in     []api.TodoWrite
		fields []string
	}{
		{"empty list", []api.TodoWrite{}, nil},
		{"one of each", []api.TodoWrite{todo("a", "x", TodoPending), todo("", "y", TodoInProgress), todo("c", "z", TodoCompleted)}, nil},
		{"missing list", nil, []string{"todos"}},
		{"unknown status", []api.TodoWrite{todo("", "x", "done")}, []string{"todos[0].status"}},
		{"missing status", []api.TodoWrite{todo("", "x", "")}, []string{"todos[0].status"}},
		{"missing content", []api.TodoWrite{todo("", "", TodoPending)}, []string{"todos[0].content"}},
		{"blank content", []api.TodoWrite{todo("", " \n", TodoPending)}, []string{"todos[0].content"}},
		{"two in progress", []api.TodoWrite{todo("", "x", TodoInProgress), todo("", "y", TodoPending), todo("", "z", TodoInProgress)}, []string{"todos[2].status"}},
		{"duplicate ids", []api.TodoWrite{todo("a", "x", TodoPending), todo("a", "y", TodoPending)}, []string{"todos[1].id"}},
		{"padded id", []api.TodoWrite{todo(" a", "x", TodoPending)}, []string{"todos[0].id"}},
		{"long content", []api.TodoWrite{todo("", strings.Repeat("x", 4097), TodoPending)}, []string{"todos[0].content"}},
		{"too many", make([]api.TodoWrite, MaxTodos+1), []string{"todos"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := NormalizeTodos(api.TodosWrite{Todos: c.in})
			if c.fields == nil {
				if err != nil {
					t.Fatalf("unexpected %v", err)
				}
				if len(out) != len(c.in) {
					t.Fatalf("%d todos out of %d", len(out), len(c.in))
				}
				seen := map[string]bool{}
				for i, td := range out {
					if c.in[i].ID != "" && td.ID != c.in[i].ID || td.ID == "" || seen[td.ID] {
						t.Errorf("todo %d id %q (sent %q)", i, td.ID, c.in[i].ID)
					}
					seen[td.ID] = true
					if td.Content != c.in[i].Content || td.Status != c.in[i].Status {
						t.Errorf("todo %d = %+v", i, td)
					}
				}
				return
			}
			e, ok := apierr.As(err)
			if !ok || e.Code != apierr.InvalidArgument {
				t.Fatalf("got %v", err)
			}
			var got []string
			for _, f := range e.Fields {
				got = append(got, f.Field)
			}
			if c.name == "too many" {
				got = got[:1] // the empty items fail too; the list's size is what matters
			}
			if !reflect.DeepEqual(got, c.fields) {
				t.Errorf("fields %v, want %v (%v)", got, c.fields, err)
			}
		})
	}
}

func TestGeneratedTodoIDs(t *testing.T) {
	out, err := NormalizeTodos(api.TodosWrite{Todos: []api.TodoWrite{todo("", "x", TodoPending), todo("", "y", TodoPending)}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out[0].ID, "todo_") || out[0].ID == out[1].ID {
		t.Errorf("generated ids %q %q", out[0].ID, out[1].ID)
	}
}

func todo(id, content, status string) api.TodoWrite {
	return api.TodoWrite{ID: id, Content: content, Status: status}
}
