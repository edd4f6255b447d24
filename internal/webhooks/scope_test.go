package webhooks

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/planserver/planserver/api"
)

// TestScopeSentences: the Slack lines of scoped build's events say what
// was refused against which revision's scope, and who granted or lifted a
// scope.
func TestScopeSentences(t *testing.T) {
	denied, _ := json.Marshal(map[string]any{"tool": "Write", "path": "README.md", "scope_revision": 3, "host": "claude-code"})
	got := Sentence(api.EventToolCallOutOfScope, "https://ps.example", api.Event{Type: api.EventToolCallOutOfScope, SessionID: "s1", Data: denied})
	for _, want := range []string{"*Write*", "README.md", "*s1*", "plan revision 3", "<https://ps.example/ui/sessions/s1>"} {
		if !strings.Contains(got, want) {
			t.Errorf("out of scope: %q lacks %q", got, want)
		}
	}
	for reason, want := range map[string]string{"approved": "was granted by alice", "lifted": "was lifted by alice", "inherited": "changed with its parent's"} {
		data, _ := json.Marshal(map[string]any{"reason": reason})
		got := Sentence(api.EventSessionScopeChanged, "", api.Event{Type: api.EventSessionScopeChanged, SessionID: "s1", Actor: "alice", Data: data})
		if !strings.Contains(got, want) || !strings.Contains(got, "*s1*") {
			t.Errorf("%s: %q", reason, got)
		}
	}
	if _, ok := typeNamed(api.EventToolCallOutOfScope); !ok {
		t.Errorf("tool_call.out_of_scope is not a webhook type")
	}
}
