package hookinstall

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/planserver/planserver/internal/hosthook"
)

// TestCommandRoundTrip: what install writes, doctor and uninstall read
// back, however odd the paths and names; a command of the user's is never
// taken for one of ours.
func TestCommandRoundTrip(t *testing.T) {
	for _, c := range []command{
		{bin: "/home/ann/.local/share/planserver/bin/planserver-hook", host: hosthook.ClaudeCode, server: "http://127.0.0.1:8080", session: "s1", mcp: "planserver"},
		{bin: "/home/o'brien/my tools/planserver-hook", host: hosthook.GeminiCLI, server: "https://ps.example:9443/base", parent: "team x", tokenFile: "/tmp/a b/t.token", mcp: "planserver"},
		{bin: "/opt/planserver", host: hosthook.Cursor, server: "http://[::1]:8080", session: "s$(rm -rf)"},
	} {
		for _, text := range []string{c.before(), c.after(), c.plain()} {
			got, ok := parseCommand(text, c.host)
			if !ok || got != c {
				t.Errorf("%q read back as %+v (%v), want %+v", text, got, ok, c)
			}
			if _, ok := parseCommand(text, hosthook.OpenCode); ok {
				t.Errorf("%q taken for another host's", text)
			}
		}
		// The shell sees the same words.
		out, err := exec.Command("/bin/sh", "-c", "for w in "+strings.TrimPrefix(c.plain(), "")+"; do printf '%s\\n' \"$w\"; done").Output()
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n"); strings.Join(got, "\x00") != strings.Join(c.argv(), "\x00") {
			t.Errorf("the shell reads %q as %q, want %q", c.plain(), got, c.argv())
		}
	}
	for _, user := range []string{"/usr/local/bin/lint-bash", "prettier --write", "planserver-hook-wrapper claude-code", "echo planserver hook claude-code",
		"'unbalanced", ""} {
		if _, ok := parseCommand(user, hosthook.ClaudeCode); ok {
			t.Errorf("%q taken for planserver's", user)
		}
	}
}

// TestEditMCPKeepsTheUsers: install adds planserver's server, or keeps a
// server of the same name it did not write; uninstall takes out only what
// install wrote, and only while it is unchanged.
func TestEditMCPKeepsTheUsers(t *testing.T) {
	parse := func(s string) *object {
		o := &object{}
		if err := json.Unmarshal([]byte(s), o); err != nil {
			t.Fatal(err)
		}
		return o
	}
	entry := map[string]any{"httpUrl": "http://127.0.0.1:8080/mcp"}
	root := parse(`{"theme":"dark","mcpServers":{"github":{"httpUrl":"https://x"}}}`)
	wrote, note, err := editMCP(root, []string{"mcpServers"}, MCPName, true, entry, nil)
	if err != nil || note != "" || wrote == nil {
		t.Fatalf("install: %s %q %v", wrote, note, err)
	}
	if _, note, _ := editMCP(root, []string{"mcpServers"}, MCPName, false, nil, json.RawMessage(`{"httpUrl":"http://other/mcp"}`)); note == "" {
		t.Error("uninstall removed a server install did not write as it is")
	}
	if _, _, err := editMCP(root, []string{"mcpServers"}, MCPName, false, nil, wrote); err != nil {
		t.Fatal(err)
	}
	if raw, _ := root.MarshalJSON(); !sameJSON(raw, []byte(`{"theme":"dark","mcpServers":{"github":{"httpUrl":"https://x"}}}`)) {
		t.Errorf("after uninstall: %s", raw)
	}
	users := parse(`{"mcpServers":{"planserver":{"url":"http://10.0.0.1/mcp"}}}`)
	if wrote, note, _ := editMCP(users, []string{"mcpServers"}, MCPName, true, entry, nil); wrote != nil || !strings.Contains(note, "kept") {
		t.Errorf("install over the user's own: %s %q", wrote, note)
	}
	// A nested table (Claude Code's projects[dir].mcpServers) is made and
	// taken away again.
	state := parse(`{"numStartups":1}`)
	wrote, _, _ = editMCP(state, []string{"projects", "/p", "mcpServers"}, MCPName, true, entry, nil)
	_, _, _ = editMCP(state, []string{"projects", "/p", "mcpServers"}, MCPName, false, nil, wrote)
	if raw, _ := state.MarshalJSON(); string(raw) != `{"numStartups":1}` {
		t.Errorf("nested: %s", raw)
	}
}
