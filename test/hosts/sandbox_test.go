package hosts

import (
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/planserver/planserver/internal/hosttest"
)

// shellHost is how one host is driven for TestPlanModeShellIsSandboxed:
// its shell tool's name and input, how its tool calls are numbered, and
// how it runs with planserver's hooks in a machine's HOME.
type shellHost struct {
	name string
	// tool and input make a shell call of command.
	tool  string
	input func(command string) map[string]any
	api   string // hosttest.CallID's api
	// run sets the host up against srv for session id (once) and runs
	// one prompt in m's project.
	setup func(t *testing.T, srv *server, m *machine, session string)
	// own are paths in the project the host writes itself, whatever its
	// model does (opencode keeps its project's id in .git/opencode).
	own []string
	run func(t *testing.T, m *machine, model *hosttest.Model, egress *hosttest.Egress, prompt string) string
}

var shellHosts = []shellHost{
	{
		name: "claude-code", tool: "Bash", api: "anthropic",
		input: func(c string) map[string]any { return map[string]any{"command": c, "description": "run"} },
		setup: func(t *testing.T, srv *server, m *machine, session string) {
			m.install(t, srv, "claude-code", "--session", session)
		},
		run: func(t *testing.T, m *machine, model *hosttest.Model, egress *hosttest.Egress, prompt string) string {
			out, err := claude(t, model, egress, m.dir, prompt, m.env())
			if err != nil {
				t.Fatalf("claude: %v\n%s", err, out)
			}
			return out
		},
	},
	{
		name: "opencode", tool: "bash", api: "chat", own: []string{".git", ".git/opencode"},
		input: func(c string) map[string]any { return map[string]any{"command": c, "description": "run"} },
		setup: func(t *testing.T, srv *server, m *machine, session string) {
			m.install(t, srv, "opencode", "--session", session, "--scope", "user")
		},
		run: func(t *testing.T, m *machine, model *hosttest.Model, egress *hosttest.Egress, prompt string) string {
			out, err := opencode(t, egress, m.dir, opencodeConfig(t, model, nil), prompt, m.env())
			if err != nil {
				t.Fatalf("opencode: %v\n%s", err, out)
			}
			return out
		},
	},
	{
		name: "gemini-cli", tool: "run_shell_command", api: "gemini",
		input: func(c string) map[string]any { return map[string]any{"command": c, "description": "run"} },
		setup: func(t *testing.T, srv *server, m *machine, session string) {
			settings := filepath.Join(m.home, ".gemini", "settings.json")
			if err := os.MkdirAll(filepath.Dir(settings), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(settings, []byte(`{"security": {"auth": {"selectedType": "gemini-api-key"}}, "privacy": {"usageStatisticsEnabled": false}}`), 0o644); err != nil {
				t.Fatal(err)
			}
			m.install(t, srv, "gemini-cli", "--session", session, "--scope", "user")
		},
		run: func(t *testing.T, m *machine, model *hosttest.Model, egress *hosttest.Egress, prompt string) string {
			out, err := run(t, egress, m.dir, 3*time.Minute, append(m.env(), "GEMINI_API_KEY=scripted", "GOOGLE_GEMINI_BASE_URL="+model.URL),
				host(t, "gemini"), "-p", prompt, "--yolo", "--skip-trust", "--model", "gemini-2.5-flash")
			if err != nil {
				t.Fatalf("gemini: %v\n%s", err, out)
			}
			return out
		},
	},
	{
		// Codex has no installer (it runs a hook only once the user trusts
		// it in Codex): its hooks are written by hand as docs/hosts.md
		// says, and trusted for the test with --dangerously-bypass-hook-trust.
		name: "codex", tool: "exec_command", api: "responses",
		input: func(c string) map[string]any { return map[string]any{"cmd": c} },
		setup: func(t *testing.T, srv *server, m *machine, session string) {},
		run: func(t *testing.T, m *machine, model *hosttest.Model, egress *hosttest.Egress, prompt string) string {
			codexHome := filepath.Join(m.home, ".codex")
			if err := os.MkdirAll(codexHome, 0o755); err != nil {
				t.Fatal(err)
			}
			hook := filepath.Join(filepath.Dir(binary), "planserver-hook") + " codex --server " + m.server + " --session " + m.session
			config := `model = "scripted"
model_provider = "scripted"

[model_providers.scripted]
name = "Scripted model"
base_url = "` + model.URL + `/v1"
wire_api = "responses"
env_key = "SCRIPTED_API_KEY"

[[hooks.PreToolUse]]
matcher = "*"
[[hooks.PreToolUse.hooks]]
type = "command"
command = "` + hook + ` || exit 2"
timeout = 10
`
			if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(config), 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := run(t, egress, m.dir, 3*time.Minute, append(m.env(), "CODEX_HOME="+codexHome, "SCRIPTED_API_KEY=scripted"),
				host(t, "codex"), "exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox",
				"--dangerously-bypass-hook-trust", prompt)
			if err != nil {
				t.Fatalf("codex: %v\n%s", err, out)
			}
			return out
		},
	},
}

// TestPlanModeShellIsSandboxed is issue 42's proof on every real host that
// installs here: in plan mode the host's shell tool runs each command
// inside planserver's sandbox. A read (git log) gives the model the same
// lines it gives outside; a write the classifier cannot call certain
// (Python opening a file) runs, fails with the kernel's permission error,
// and the model reads planserver's one line on why; the project is
// byte-for-byte unchanged.
func TestPlanModeShellIsSandboxed(t *testing.T) {
	for _, h := range shellHosts {
		t.Run(h.name, func(t *testing.T) {
			srv := startServer(t, "--auth", "none")
			srv.call("POST", "/v1/sessions", `{"id":"sb","title":"sandboxed shell","mode":"plan"}`, 201, nil)
			m := newMachine(t)
			m.server, m.session = srv.URL, "sb"
			gitInit(t, m.dir)
			want, err := exec.Command("git", "-C", m.dir, "log", "--format=%s").Output()
			if err != nil {
				t.Fatal(err)
			}
			h.setup(t, srv, m, "sb")
			before := dirState(t, m.dir)
			egress := hosttest.StartEgress(t)
			marker := "SANDBOX-" + strings.ToUpper(strings.ReplaceAll(h.name, "-", ""))
			model := hosttest.Start(t, hosttest.Script{Marker: marker, Turns: []hosttest.Turn{
				hosttest.Use(h.tool, h.input("git log --format=%s")),
				hosttest.Use(h.tool, h.input(`python3 -c "open('py.txt', 'w').write('x')"`)),
				hosttest.Say("done"),
			}})
			out := h.run(t, m, model, egress, marker+": look around")
			after := dirState(t, m.dir)
			for _, p := range h.own {
				delete(before, filepath.Join(m.dir, p))
				delete(after, filepath.Join(m.dir, p))
			}
			if diff := stateDiff(before, after); diff != "" {
				t.Errorf("plan mode changed the project:\n%s", diff)
			}
			result := func(turn int) string {
				t.Helper()
				r, ok := model.ToolResult(hosttest.CallID(h.api, 0, turn, 0))
				if !ok {
					t.Fatalf("no tool result for turn %d reached the model; %s said:\n%s", turn, h.name, out)
				}
				return r
			}
			// Each host frames a result its own way (Gemini CLI's is JSON):
			// every line git printed outside must be there.
			for _, line := range strings.Split(strings.TrimSpace(string(want)), "\n") {
				if r := result(0); !strings.Contains(r, line) {
					t.Errorf("git log in plan mode: the model got %q, want the lines %q as outside", r, want)
				}
			}
			if r := result(1); !strings.Contains(r, "PermissionError") || !strings.Contains(r, "read-only sandbox") {
				t.Errorf("a Python write in plan mode: the model got %q, want the kernel's PermissionError and planserver's line on why", r)
			}
			if got := egress.Targets(); len(got) > 0 {
				t.Logf("%s tried to reach, through the refusing proxy: %q", h.name, got)
			}
		})
	}
}

// dirState records each path under dir with its mode, size, times and
// content digest.
func dirState(t *testing.T, dir string) map[string]string {
	t.Helper()
	st := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		line := fmt.Sprintf("%v %d %d", info.Mode(), info.Size(), info.ModTime().UnixNano())
		if d.Type().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			line += fmt.Sprintf(" %x", sha256.Sum256(b))
		}
		st[p] = line
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// stateDiff says what differs between two dirStates, "" when nothing.
func stateDiff(before, after map[string]string) string {
	var b strings.Builder
	for p, v := range before {
		if a, ok := after[p]; !ok {
			fmt.Fprintf(&b, "removed %s\n", p)
		} else if a != v {
			fmt.Fprintf(&b, "changed %s: %s -> %s\n", p, v, a)
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			fmt.Fprintf(&b, "created %s\n", p)
		}
	}
	return b.String()
}

// gitInit makes dir a git repository of two commits.
func gitInit(t *testing.T, dir string) {
	t.Helper()
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-q", "-m", "first commit"},
		{"commit", "-q", "--allow-empty", "-m", "second commit"},
	} {
		c := exec.Command("git", args...)
		c.Dir = dir
		c.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t",
			"GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_NOSYSTEM=1", "HOME="+t.TempDir())
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
}
