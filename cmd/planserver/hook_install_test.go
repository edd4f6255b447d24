package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// hookInstallRun runs planserver hook install|uninstall in dir with HOME
// set to home, and returns stdout.
func hookInstallRun(t *testing.T, dir, home string, args ...string) string {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"hook"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+home)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("planserver hook %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func writeJSONFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

func readText(t *testing.T, path string) string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// TestHookInstallKeepsUserHooks installs into settings that already hold
// the user's own hooks and settings, and uninstalls again: the user's
// part is untouched, ours is there once, and uninstall restores the file.
func TestHookInstallKeepsUserHooks(t *testing.T) {
	dir, home := t.TempDir(), t.TempDir()
	claude := filepath.Join(dir, ".claude", "settings.json")
	userClaude := `{
  "model": "opus",
  "hooks": {
    "PreToolUse": [
      {"matcher": "Bash", "hooks": [{"type": "command", "command": "/usr/local/bin/lint-bash"}]}
    ],
    "PostToolUse": [
      {"matcher": "Write", "hooks": [{"type": "command", "command": "prettier --write"}]}
    ]
  },
  "permissions": {"allow": ["Bash(ls:*)"]}
}
`
	writeJSONFile(t, claude, userClaude)
	gemini := filepath.Join(home, ".gemini", "settings.json")
	userGemini := `{"theme": "dark", "hooks": {"BeforeTool": [{"matcher": "write_file", "hooks": [{"type": "command", "command": "./audit.sh"}]}]}}` + "\n"
	writeJSONFile(t, gemini, userGemini)
	cursor := filepath.Join(dir, ".cursor", "hooks.json")
	userCursor := `{"version": 1, "hooks": {"beforeShellExecution": [{"command": "./block-rm.sh"}], "afterFileEdit": [{"command": "./fmt.sh"}]}}` + "\n"
	writeJSONFile(t, cursor, userCursor)

	// --dry-run shows the change and writes nothing.
	out := hookInstallRun(t, dir, home, "install", "claude-code", "--session", "s1", "--dry-run")
	if !strings.Contains(out, "+") || !strings.Contains(out, "/planserver-hook claude-code --session s1") || readText(t, claude) != userClaude {
		t.Fatalf("dry run: %s", out)
	}
	hookInstallRun(t, dir, home, "install", "claude-code", "--session", "s1")
	hookInstallRun(t, dir, home, "install", "claude-code", "--session", "s2") // again: replaces ours
	hookInstallRun(t, dir, home, "install", "gemini-cli", "--scope", "user", "--parent", "p")
	hookInstallRun(t, dir, home, "install", "cursor")
	hookInstallRun(t, dir, home, "install", "opencode", "--session", "s1")

	var c struct {
		Model string
		Hooks struct {
			PreToolUse []struct {
				Matcher string
				Hooks   []struct {
					Type, Command string
					Timeout       int
				}
			}
			PostToolUse []any
		}
		Permissions map[string]any
	}
	if err := json.Unmarshal([]byte(readText(t, claude)), &c); err != nil {
		t.Fatal(err)
	}
	pre := c.Hooks.PreToolUse
	if c.Model != "opus" || len(c.Hooks.PostToolUse) != 1 || c.Permissions == nil || len(pre) != 2 ||
		pre[0].Hooks[0].Command != "/usr/local/bin/lint-bash" || pre[1].Matcher != "*" ||
		pre[1].Hooks[0].Command != hookBinary+" claude-code --session s2" || pre[1].Hooks[0].Timeout < 6 {
		t.Errorf("claude settings after install: %s", readText(t, claude))
	}
	if text := readText(t, claude); strings.Index(text, `"model"`) > strings.Index(text, `"hooks"`) ||
		strings.Index(text, `"hooks"`) > strings.Index(text, `"permissions"`) {
		t.Errorf("member order changed: %s", text)
	}
	if g := readText(t, gemini); !strings.Contains(g, "./audit.sh") || !strings.Contains(g, "planserver-hook gemini-cli --parent p") || !strings.Contains(g, `"theme": "dark"`) {
		t.Errorf("gemini settings: %s", g)
	}
	cur := readText(t, cursor)
	for _, ev := range []string{"beforeShellExecution", "beforeMCPExecution", "beforeReadFile", "preToolUse"} {
		if !strings.Contains(cur, ev) {
			t.Errorf("cursor hooks lack %s: %s", ev, cur)
		}
	}
	if strings.Count(cur, "planserver-hook cursor") != 4 || !strings.Contains(cur, "./block-rm.sh") || !strings.Contains(cur, "./fmt.sh") {
		t.Errorf("cursor hooks: %s", cur)
	}
	plugin := readText(t, filepath.Join(dir, ".opencode", "plugin", "planserver.js"))
	if !strings.Contains(plugin, `const SESSION = "s1"`) || !strings.Contains(plugin, "tool.execute.before") {
		t.Errorf("opencode plugin: %.200s", plugin)
	}

	hookInstallRun(t, dir, home, "uninstall", "claude-code")
	hookInstallRun(t, dir, home, "uninstall", "gemini-cli", "--scope", "user")
	hookInstallRun(t, dir, home, "uninstall", "cursor")
	hookInstallRun(t, dir, home, "uninstall", "opencode")
	for path, user := range map[string]string{claude: userClaude, gemini: userGemini, cursor: userCursor} {
		var a, b any
		_ = json.Unmarshal([]byte(readText(t, path)), &a)
		_ = json.Unmarshal([]byte(user), &b)
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		if string(ja) != string(jb) {
			t.Errorf("%s after uninstall:\n%s\nwant the user's own:\n%s", path, readText(t, path), user)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, ".opencode", "plugin", "planserver.js")); !os.IsNotExist(err) {
		t.Errorf("opencode plugin still there: %v", err)
	}

	// Into no settings at all, and out again: the file goes.
	fresh := t.TempDir()
	hookInstallRun(t, fresh, home, "install", "claude-code")
	if !strings.Contains(readText(t, filepath.Join(fresh, ".claude", "settings.json")), "planserver-hook claude-code") {
		t.Error("no settings written")
	}
	hookInstallRun(t, fresh, home, "uninstall", "claude-code")
	if _, err := os.Stat(filepath.Join(fresh, ".claude", "settings.json")); !os.IsNotExist(err) {
		t.Errorf("settings left after uninstall: %v", err)
	}
	// A settings file that is not JSON is left alone, with an error.
	writeJSONFile(t, filepath.Join(fresh, ".claude", "settings.json"), "{oops")
	cmd := exec.Command(binary, "hook", "install", "claude-code")
	cmd.Dir = fresh
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "not a JSON object") ||
		readText(t, filepath.Join(fresh, ".claude", "settings.json")) != "{oops" {
		t.Errorf("broken settings: %v %s", err, out)
	}
}

// TestHookInstallWithoutLeanBinary: a planserver with no planserver-hook
// beside it writes planserver hook HOST; installing again from one that
// has it replaces that entry with the lean form, and uninstall finds
// either.
func TestHookInstallWithoutLeanBinary(t *testing.T) {
	alone := filepath.Join(t.TempDir(), "planserver")
	if err := os.Link(binary, alone); err != nil {
		raw, err := os.ReadFile(binary)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(alone, raw, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	dir, home := t.TempDir(), t.TempDir()
	settings := filepath.Join(dir, ".claude", "settings.json")
	install := func(bin string, args ...string) {
		t.Helper()
		cmd := exec.Command(bin, append([]string{"hook"}, args...)...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "HOME="+home)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s hook %v: %v\n%s", bin, args, err, out)
		}
	}
	install(alone, "install", "claude-code", "--session", "s1")
	if text := readText(t, settings); !strings.Contains(text, alone+" hook claude-code --session s1") {
		t.Fatalf("without planserver-hook beside it: %s", text)
	}
	install(binary, "install", "claude-code", "--session", "s1")
	text := readText(t, settings)
	if strings.Contains(text, alone) || strings.Count(text, hookBinary+" claude-code --session s1") != 1 {
		t.Fatalf("the lean form did not replace the old entry: %s", text)
	}
	install(alone, "uninstall", "claude-code")
	if _, err := os.Stat(settings); !os.IsNotExist(err) {
		t.Errorf("uninstall left the lean entry: %v", err)
	}
}
