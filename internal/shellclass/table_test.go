package shellclass

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLimits(t *testing.T) {
	for name, tc := range map[string]struct{ command, reason string }{
		"empty":     {"", "empty"},
		"comment":   {"# ls", "empty"},
		"NUL":       {"ls\x00rm x", "NUL"},
		"too long":  {"ls " + strings.Repeat("a", MaxCommandBytes), "longer than"},
		"too deep":  {strings.Repeat("(", maxDepth+1) + "ls" + strings.Repeat(")", maxDepth+1), "nests deeper"},
		"deep subs": {strings.Repeat("$(", maxDepth+1) + "ls" + strings.Repeat(")", maxDepth+1), "nests deeper"},
		"huge deep": {strings.Repeat("{ ", 30000) + "ls" + strings.Repeat("; }", 30000), "longer than"},
		"no parse":  {"ls (", "does not parse"},
	} {
		v := Strict(tc.command, nil)
		if v.Allowed || !strings.Contains(v.Reason, tc.reason) {
			t.Errorf("%s: %+v, want a refusal with %q", name, v, tc.reason)
		}
		if writes, why := Writes(tc.command); writes || why != "" {
			t.Errorf("%s: Writes says %v %q", name, writes, why)
		}
	}
	// Just inside the limits, a long pipeline of plain commands is allowed.
	if v := Strict(strings.Repeat("ls | ", 2000)+"ls", nil); !v.Allowed {
		t.Errorf("a pipeline of 2001 ls: %+v", v)
	}
	// A command string nested deeper than Writes follows is not judged.
	inner := "rm x"
	for range maxInner + 2 {
		inner = "bash -c " + shellQuote(inner)
	}
	if writes, _ := Writes(inner); writes {
		t.Errorf("Writes followed %d nested bash -c", maxInner+2)
	}
	if writes, _ := Writes("bash -c 'bash -c \"rm x\"'"); !writes {
		t.Error("Writes does not follow two nested bash -c")
	}
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// TestWritersAreNeverStrict: no command Writes or the strict table's
// refusals name can be on the default table.
func TestWritersAreNeverStrict(t *testing.T) {
	table := DefaultTable()
	for _, name := range table.Commands() {
		if _, ok := writers[name]; ok {
			t.Errorf("%s writes and is on the strict table", name)
		}
		if _, ok := neverStrict[name]; ok {
			t.Errorf("%s can never be strict and is on the table", name)
		}
		if isNetworkClient[name] {
			t.Errorf("%s talks to the network and is on the table", name)
		}
		if _, ok := wrappers[name]; ok {
			t.Errorf("%s runs another command and is on the table", name)
		}
	}
	for name := range writeChecks {
		if _, ok := table.cmds[name]; ok && name != "sort" && name != "find" {
			t.Errorf("%s may write and is on the strict table", name)
		}
	}
}

func TestExtend(t *testing.T) {
	table := DefaultTable()
	if v := Strict("kubectl get pods", table); v.Allowed {
		t.Fatalf("kubectl is allowed before the extension: %+v", v)
	}
	if err := table.Extend(
		Entry{Command: "kubectl get"},
		Entry{Command: "kubectl logs", DenyFlags: []string{"-f", "--follow"}},
		Entry{Command: "mytool", DenyFlags: []string{"-o", "--output"}},
		Entry{Command: "yourtool"},
	); err != nil {
		t.Fatal(err)
	}
	for command, allowed := range map[string]bool{
		"kubectl get pods -A":    true,
		"kubectl logs web":       true,
		"kubectl logs -f web":    false,
		"kubectl logs --fol web": false,
		"kubectl logs -- -f":     true,
		"kubectl delete pod web": false,
		"kubectl":                false,
		"kubectl get *.yaml":     true,
		"mytool x":               true,
		"mytool -vo x":           false,
		"mytool --output=x":      false,
		"mytool --out x":         false,
		"mytool *.txt":           false,
		"mytool $x":              false,
		"yourtool *.txt":         true,
		"yourtool -o x":          true,
		"kubectl get pods > f":   false,
	} {
		if v := Strict(command, table); v.Allowed != allowed {
			t.Errorf("%q: %+v, want allowed=%v", command, v, allowed)
		}
	}
	if v := Strict("kubectl get pods", DefaultTable()); v.Allowed {
		t.Errorf("extending one table changed DefaultTable: %+v", v)
	}
	for _, bad := range []Entry{
		{Command: "curl"}, {Command: "bash"}, {Command: "eval"}, {Command: "git"}, {Command: "git log"}, {Command: "go version"},
		{Command: "xargs"}, {Command: "env"}, {Command: "sed"}, {Command: "awk"}, {Command: "less"}, {Command: "man"},
		{Command: "tar"}, {Command: "make"}, {Command: "npm"}, {Command: "rm"}, {Command: "tee"}, {Command: "dd"},
		{Command: "getent"}, {Command: "python3"}, {Command: "ls"}, {Command: "sort"}, {Command: "cat x"},
		{Command: ""}, {Command: "a b c"}, {Command: "./x"}, {Command: "~x"},
		{Command: "x", DenyFlags: []string{"o"}}, {Command: "y", DenyFlags: []string{"--a=b"}},
		{Command: "y", DenyFlags: []string{"-delete"}}, {Command: "y", DenyFlags: []string{"--"}},
	} {
		if err := DefaultTable().Extend(bad); err == nil {
			t.Errorf("Extend(%+v) was accepted", bad)
		}
	}
}

func TestLoadFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.yaml", `shell_read_only:
  commands:
    - command: kubectl get
    - command: mytool
      deny_flags: [-o]
  variables: [MY_TOOL_HOME]
  remove: [find, tree]
`)
	table, err := LoadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	for command, allowed := range map[string]bool{
		"kubectl get pods":       true,
		"mytool -o x":            false,
		"MY_TOOL_HOME=/x ls":     true,
		"find .":                 false,
		"tree":                   false,
		"ls":                     true,
		"MY_OTHER_HOME=/x ls":    false,
		"PATH=/x MY_TOOL_HOME=1": false,
	} {
		if v := Strict(command, table); v.Allowed != allowed {
			t.Errorf("%q: %+v, want allowed=%v", command, v, allowed)
		}
	}
	if table, err := LoadFile(""); err != nil || table == nil {
		t.Errorf("LoadFile(\"\"): %v", err)
	}
	for name, body := range map[string]string{
		"network.yaml":   "shell_read_only:\n  commands:\n    - command: wget\n",
		"runner.yaml":    "shell_read_only:\n  commands:\n    - command: xargs\n",
		"git.yaml":       "shell_read_only:\n  commands:\n    - command: git log\n",
		"unknown.yaml":   "shell_read_only:\n  comands: []\n",
		"nosection.yaml": "other: 1\n",
		"path.yaml":      "shell_read_only:\n  variables: [PATH]\n",
		"gitvar.yaml":    "shell_read_only:\n  variables: [GIT_DIR]\n",
		"pager.yaml":     "shell_read_only:\n  variables: [MANPAGER]\n",
		"ld.yaml":        "shell_read_only:\n  variables: [LD_PRELOAD]\n",
		"badvar.yaml":    "shell_read_only:\n  variables: [1X]\n",
		"remove.yaml":    "shell_read_only:\n  remove: [nosuch]\n",
		"syntax.yaml":    "shell_read_only: [\n",
	} {
		if _, err := LoadFile(write(name, body)); err == nil {
			t.Errorf("%s was accepted", name)
		}
	}
	if _, err := LoadFile(filepath.Join(dir, "missing.yaml")); err == nil {
		t.Error("a missing file was accepted")
	}
}
