package shellclass

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLimits(t *testing.T) {
	for name, tc := range map[string]struct{ command, reason string }{
		"NUL":       {"ls\x00rm x", "NUL"},
		"too long":  {"ls " + strings.Repeat("a", MaxCommandBytes), "longer than"},
		"too deep":  {strings.Repeat("(", maxDepth+1) + "ls" + strings.Repeat(")", maxDepth+1), "nests deeper"},
		"deep subs": {strings.Repeat("$(", maxDepth+1) + "ls" + strings.Repeat(")", maxDepth+1), "nests deeper"},
		"huge deep": {strings.Repeat("{ ", 30000) + "ls" + strings.Repeat("; }", 30000), "longer than"},
	} {
		v := Classify(tc.command, nil)
		if v.ReadOnly || !strings.Contains(v.Reason, tc.reason) {
			t.Errorf("%s: %+v, want a reason with %q", name, v, tc.reason)
		}
	}
	// Just inside the limits, a read-only command stays read-only.
	if v := Classify(strings.Repeat("( ", 20)+"ls"+strings.Repeat(" )", 20), nil); !v.ReadOnly {
		t.Errorf("20 nested subshells of ls: %+v", v)
	}
}

func TestExtend(t *testing.T) {
	table := DefaultTable()
	if v := Classify("kubectl get pods", table); v.ReadOnly {
		t.Fatalf("kubectl is read-only before the extension: %+v", v)
	}
	if err := table.Extend(
		Entry{Command: "kubectl get"},
		Entry{Command: "kubectl logs", DenyFlags: []string{"-f", "--follow"}},
		Entry{Command: "git cherry-pick-dry"},
		Entry{Command: "mytool", DenyFlags: []string{"-o", "--output", "-dump"}},
	); err != nil {
		t.Fatal(err)
	}
	for command, readOnly := range map[string]bool{
		"kubectl get pods -A":       true,
		"kubectl logs web":          true,
		"kubectl logs -f web":       false,
		"kubectl logs --fol web":    false,
		"kubectl delete pod web":    false,
		"kubectl":                   false,
		"git cherry-pick-dry":       true,
		"mytool x":                  true,
		"mytool -vo x":              false,
		"mytool --output=x":         false,
		"mytool -dump":              false,
		"mytool $x":                 false,
		"kubectl get pods > f":      false,
		"DefaultTable is untouched": true,
	} {
		if command == "DefaultTable is untouched" {
			if v := Classify("kubectl get pods", DefaultTable()); v.ReadOnly {
				t.Errorf("extending one table changed DefaultTable: %+v", v)
			}
			continue
		}
		if v := Classify(command, table); v.ReadOnly != readOnly {
			t.Errorf("%q: %+v, want read-only=%v", command, v, readOnly)
		}
	}
	for _, bad := range []Entry{
		{Command: "curl"}, {Command: "bash"}, {Command: "eval"}, {Command: "git push"}, {Command: "ls"},
		{Command: "git log"}, {Command: "cat x"}, {Command: ""}, {Command: "a b c"}, {Command: "./x"},
		{Command: "x", DenyFlags: []string{"o"}}, {Command: "y", DenyFlags: []string{"--a=b"}},
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
  remove: [find, git blame]
`)
	table, err := LoadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	for command, readOnly := range map[string]bool{
		"kubectl get pods":       true,
		"mytool -o x":            false,
		"MY_TOOL_HOME=/x ls":     true,
		"find .":                 false,
		"git blame f":            false,
		"git log":                true,
		"MY_OTHER_HOME=/x ls":    false,
		"PATH=/x MY_TOOL_HOME=1": false,
	} {
		if v := Classify(command, table); v.ReadOnly != readOnly {
			t.Errorf("%q: %+v, want read-only=%v", command, v, readOnly)
		}
	}
	if table, err := LoadFile(""); err != nil || table == nil {
		t.Errorf("LoadFile(\"\"): %v", err)
	}
	for name, body := range map[string]string{
		"network.yaml":   "shell_read_only:\n  commands:\n    - command: wget\n",
		"unknown.yaml":   "shell_read_only:\n  comands: []\n",
		"nosection.yaml": "other: 1\n",
		"path.yaml":      "shell_read_only:\n  variables: [PATH]\n",
		"git.yaml":       "shell_read_only:\n  variables: [GIT_DIR]\n",
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
