package hosthookcmd

import (
	"strings"
	"testing"

	"github.com/planserver/planserver/internal/hosthook"
	"github.com/planserver/planserver/internal/sandbox"
)

// TestSandboxHereScoped: in scoped build the sandbox takes the scope's
// network, never planserver's own port, and its files relative to the
// project; in plan mode, the operator's list.
func TestSandboxHereScoped(t *testing.T) {
	if _, err := sandbox.Available(); err != nil {
		t.Skipf("no kernel sandbox here: %v", err)
	}
	sb := SandboxHere([]string{"docs.internal:443"}, "8080")
	if !sb.Available {
		t.Fatalf("unavailable: %s", sb.Why)
	}
	line, err := sb.Wrap("make", hosthook.Wrap{Scope: &hosthook.ScopeWrap{Project: "/p", Files: []string{"src/app.go"},
		Connect: []string{"proxy.golang.org:443", "127.0.0.1:8080", "localhost:8080"}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"--allow-connect 'proxy.golang.org:443'", "--project '/p'", "--allow-write 'src/app.go'", "--build-scope"} {
		if !strings.Contains(line, want) {
			t.Errorf("%s lacks %s", line, want)
		}
	}
	if strings.Contains(line, "8080") || strings.Contains(line, "docs.internal") {
		t.Errorf("scoped build reaches planserver's port or plan mode's list: %s", line)
	}
	line, _ = sb.Wrap("ls", hosthook.Wrap{})
	if !strings.Contains(line, "--allow-connect 'docs.internal:443'") || strings.Contains(line, "--allow-write") || strings.Contains(line, "--build-scope") {
		t.Errorf("plan mode: %s", line)
	}
}
