package hosthook

import (
	"encoding/json"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

// scopedSession is a session in scoped build whose scope names
// src/app.go and docs/ (allows is the scope's rule, as scope.Scope.Allows
// has it for these two entries).
func scopedSession() Mode {
	allows := func(rel string) bool { return rel == "src/app.go" || strings.HasPrefix(rel, "docs/") }
	return Mode{Session: "kid", Scope: &Scope{Session: "root", Revision: 3, Allows: allows,
		Files: []string{"src/app.go", "docs/**"}, Connect: []string{"proxy.golang.org:443"},
		Summary: "files src/app.go, docs/**; commands go test ./...; network proxy.golang.org:443"}}
}

// TestDecideScoped: scoped build lets writes through inside the scope
// (with no decision, so the host's own permissions apply) and denies the
// rest against the scope, saying which and how to widen it; shell
// commands run in the sandbox limited to the scope.
func TestDecideScoped(t *testing.T) {
	write := func(tool, file string) Call {
		return Call{Host: ClaudeCode, Tool: tool, Kind: Write, Path: file, Project: "/work/p"}
	}
	bash := func(cmd string) Call {
		return Call{Host: ClaudeCode, Tool: "Bash", Kind: Shell, Command: cmd, CanRewrite: true, CommandField: "command",
			Project: "/work/p", Input: map[string]json.RawMessage{"command": json.RawMessage(`"x"`), "timeout": json.RawMessage(`5`)}}
	}
	noSandbox := policy()
	noSandbox.Sandbox = Sandbox{Why: "no Landlock"}
	for _, tc := range []struct {
		name    string
		call    Call
		p       Policy
		f       Facts
		want    Outcome
		outside bool
		path    string
	}{
		{"a write inside", write("Write", "/work/p/src/app.go"), policy(), Facts{}, None, false, ""},
		{"an edit inside a folder", write("Edit", "/work/p/docs/guide/a.md"), policy(), Facts{}, None, false, ""},
		{"a relative path inside", write("Write", "src/app.go"), policy(), Facts{}, None, false, ""},
		{"a write outside", write("Write", "/work/p/README.md"), policy(), Facts{}, Deny, true, "README.md"},
		{"a neighbour of the declared file", write("Edit", "/work/p/src/other.go"), policy(), Facts{}, Deny, true, "src/other.go"},
		{"climbing out with ..", write("Write", "/work/p/src/../../p2/src/app.go"), policy(), Facts{}, Deny, true, "/work/p/src/../../p2/src/app.go"},
		{"..  resolved inside", write("Write", "/work/p/docs/../src/app.go"), policy(), Facts{}, None, false, ""},
		{"outside the project", write("Write", "/etc/passwd"), policy(), Facts{}, Deny, true, "/etc/passwd"},
		{"a project prefix is not the project", write("Write", "/work/p2/src/app.go"), policy(), Facts{}, Deny, true, "/work/p2/src/app.go"},
		{"no path", write("Write", ""), policy(), Facts{}, Deny, true, ""},
		{"a read", Call{Host: ClaudeCode, Tool: "Read", Kind: Read, Path: "/etc/passwd"}, policy(), Facts{}, None, false, ""},
		{"a sub-agent", Call{Host: ClaudeCode, Tool: "Agent", Kind: Agent}, policy(), Facts{}, None, false, ""},
		{"an unknown tool", Call{Host: ClaudeCode, Tool: "Frobnicate"}, policy(), Facts{}, Deny, true, ""},
		{"a shell command runs scoped", bash("sed -i s/1/2/ README.md"), sandboxPolicy(), Facts{}, Rewrite, false, ""},
		{"a writer is not denied early", bash("rm -rf docs/old"), sandboxPolicy(), Facts{}, Rewrite, false, ""},
		{"no sandbox: a plain read", bash("cat README.md"), noSandbox, Facts{}, None, false, ""},
		{"no sandbox: a writer", bash("sed -i s/1/2/ src/app.go"), noSandbox, Facts{}, Deny, true, ""},
		{"no rewrite: a writer", Call{Host: Cursor, Tool: "Shell", Kind: Shell, Command: "touch x"}, sandboxPolicy(), Facts{}, Deny, true, ""},
		{"an MCP tool behind the gate", Call{Host: ClaudeCode, Tool: "mcp__gate:fs__write", Kind: MCP, MCPServer: "gate:fs", MCPTool: "write"},
			policy(), Facts{Gated: true}, Allow, false, ""},
		{"an MCP tool declared read-only", Call{Host: ClaudeCode, Tool: "mcp__fs__read", Kind: MCP, MCPServer: "fs", MCPTool: "read"},
			policy(), Facts{MCPReadOnly: true}, Allow, false, ""},
		{"another MCP tool", Call{Host: ClaudeCode, Tool: "mcp__fs__write", Kind: MCP, MCPServer: "fs", MCPTool: "write"},
			policy(), Facts{}, Deny, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(tc.call, scopedSession(), tc.p, tc.f)
			if d.Outcome != tc.want || d.OutOfScope != tc.outside || d.Path != tc.path {
				t.Fatalf("%v out_of_scope=%v path=%q (%s), want %v %v %q", d.Outcome, d.OutOfScope, d.Path, d.Reason, tc.want, tc.outside, tc.path)
			}
			if d.Outcome == Deny {
				for _, must := range []string{"scoped build", "revision 3", "files src/app.go", "```scope", `"root"`, "review"} {
					if !strings.Contains(d.Reason, must) {
						t.Errorf("the reason lacks %q: %s", must, d.Reason)
					}
				}
			}
			if d.Outcome == Rewrite {
				var got string
				if err := json.Unmarshal(d.Input["command"], &got); err != nil ||
					!strings.HasPrefix(got, "SCOPED[/work/p|src/app.go,docs/**|proxy.golang.org:443|") ||
					!strings.HasSuffix(got, tc.call.Command) || string(d.Input["timeout"]) != `5` {
					t.Fatalf("rewritten input %s", d.Input)
				}
				if !strings.Contains(got, "```scope") {
					t.Errorf("the sandbox's line does not say how to widen the scope: %s", got)
				}
			}
		})
	}
	// Full build, and plan mode, are as they were.
	if d := Decide(write("Write", "/etc/passwd"), Mode{Session: "b"}, policy(), Facts{}); d.Outcome != None {
		t.Errorf("full build: %v", d.Outcome)
	}
	plan := scopedSession()
	plan.Plan = true
	if d := Decide(write("Write", "/work/p/src/app.go"), plan, policy(), Facts{}); d.Outcome != Deny || d.OutOfScope {
		t.Errorf("plan mode with a scope on record: %v %v", d.Outcome, d.OutOfScope)
	}
}

// TestProjectPath: paths relative to the project, ".." resolved, and
// what lies outside it.
func TestProjectPath(t *testing.T) {
	for _, tc := range []struct {
		project, file, rel string
		inside             bool
	}{
		{"/p", "/p/a/b.go", "a/b.go", true},
		{"/p/", "/p/a/b.go", "a/b.go", true},
		{"/p", "/p/a/../b.go", "b.go", true},
		{"/p", "/p/../q/b.go", "", false},
		{"/p", "/pq/b.go", "", false},
		{"/p", "/p", "", true},
		{"/p", "a/./b.go", "a/b.go", true},
		{"/p", "../b.go", "", false},
		{"", "/p/a.go", "", false},
		{"", "a.go", "a.go", true},
		{"/p", "", "", false},
		{"relative", "/relative/a", "", false},
		{"/p", "/p/a\x00b", "", false},
	} {
		rel, inside := ProjectPath(tc.project, tc.file)
		if rel != tc.rel || inside != tc.inside {
			t.Errorf("ProjectPath(%q, %q) = %q %v, want %q %v", tc.project, tc.file, rel, inside, tc.rel, tc.inside)
		}
		if inside && rel != "" && path.Clean(rel) != rel {
			t.Errorf("%q is not clean", rel)
		}
	}
}

// TestParseProject: each host's input names the project a scope's paths
// are relative to.
func TestParseProject(t *testing.T) {
	for _, tc := range []struct {
		host      Host
		file, dir string
	}{
		{ClaudeCode, "write.json", "/home/user/my-project"},
		{GeminiCLI, "write_file.json", "/home/user/my-project"},
		{Cursor, "pre_tool_write.json", "/path/to/project"},
	} {
		raw, err := os.ReadFile(filepath.Join("..", "..", "testdata", "hooks", string(tc.host), tc.file))
		if err != nil {
			t.Fatal(err)
		}
		c, err := Parse(tc.host, raw)
		if err != nil || c.Project != tc.dir {
			t.Errorf("%s %s: project %q, %v", tc.host, tc.file, c.Project, err)
		}
	}
	c, err := Parse(OpenCode, []byte(`{"tool":"write","sessionID":"s","args":{"filePath":"/x/a"},"directory":"/x"}`))
	if err != nil || c.Project != "/x" {
		t.Errorf("opencode: %q %v", c.Project, err)
	}
}
