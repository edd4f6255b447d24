//go:build linux && (amd64 || arm64)

package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestWriteTargets: the rule of what --allow-write opens (WriteTargets),
// on a real tree, symbolic links that lead out included.
func TestWriteTargets(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	for _, f := range []string{"src/app.go", "src/sub/x.go", "README.md", "NOTES.md", "docs/a.md", "web/js/app.js", "lone/f"} {
		p := filepath.Join(root, filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{"out": outside, "src/etc": outside, "self": root, "docs/up": root,
		"top.md": filepath.Join(outside, "f.md")} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(outside, "f.md"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	real, _ := filepath.EvalSymlinks(root)
	at := func(rel ...string) []string {
		var out []string
		for _, r := range rel {
			out = append(out, filepath.Join(real, filepath.FromSlash(r)))
		}
		return out
	}
	for _, tc := range []struct {
		entries []string
		want    []string
	}{
		{[]string{"src/app.go"}, at("src")},      // a file: its folder, for sed -i
		{[]string{"src/new.go"}, at("src")},      // not there yet: its folder
		{[]string{"src/nowhere/new.go"}, nil},    // its folder not there: nothing
		{[]string{"README.md"}, at("README.md")}, // a file at the top: itself alone
		{[]string{"MISSING.md"}, nil},            // at the top, not there: nothing
		{[]string{"docs/"}, at("docs")},          // a folder
		{[]string{"docs"}, at("docs")},           // a folder named without /
		{[]string{"src/**/*.go"}, at("src")},     // a glob: its literal prefix
		{[]string{"web/*/app.js", "web/js/"}, at("web", "web/js")},
		{[]string{"*.md"}, at("NOTES.md", "README.md")},       // a glob at the top: the files it matches
		{[]string{"**/x.go"}, at("src/sub/x.go")},             // likewise, however deep
		{[]string{"gone/**"}, nil},                            // a prefix not there
		{[]string{"./src//app.go", "src/app.go"}, at("src")},  // once
		{[]string{"out/f"}, nil},                              // a link out of the project
		{[]string{"src/etc/x"}, nil},                          // a folder that is a link out
		{[]string{"self/README.md"}, at("README.md")},         // through a link back in
		{[]string{"docs/up/x"}, nil},                          // a link to the whole project
		{[]string{"top.md"}, nil},                             // a top file that is a link out
		{[]string{"lone/f", "src/app.go"}, at("lone", "src")}, // entry order
	} {
		got, err := WriteTargets(root, tc.entries)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%q: %q %v, want %q", tc.entries, got, err, tc.want)
		}
	}
	for _, bad := range []string{"../x", "src/../../x", ".", "./", "", "src/[", "a\x00b"} {
		if got, err := WriteTargets(root, []string{bad}); err == nil {
			t.Errorf("%q was accepted: %q", bad, got)
		}
	}
	// An absolute path opens itself, and must exist.
	if got, err := WriteTargets(root, []string{outside}); err != nil || !slices.Equal(got, []string{outside}) {
		t.Errorf("absolute: %q %v", got, err)
	}
	if _, err := WriteTargets(root, []string{filepath.Join(outside, "nope")}); err == nil {
		t.Errorf("a missing absolute path was accepted")
	}
	if _, err := WriteTargets(filepath.Join(root, "README.md"), []string{"x"}); err == nil {
		t.Errorf("a file as the project was accepted")
	}
}

// TestScopedBuild: the command line in scoped build, for every runner: a
// declared file's folder takes sed -i and new files, a file at the top
// takes writes in place only, and everything else stays read-only; the
// line on a failure names the scope.
func TestScopedBuild(t *testing.T) {
	for _, r := range runners(t) {
		t.Run(r.name, func(t *testing.T) {
			dir := r.project(t)
			c := run{dir: dir, flags: []string{"--project", dir, "--allow-write", "sub/s.go", "--allow-write", "m.go",
				"--allow-write", "docs/*.md", "--build-scope"}}
			read := func(name string) string {
				data, _ := os.ReadFile(filepath.Join(dir, name))
				return string(data)
			}
			for _, tc := range []struct {
				command string
				ok      bool
			}{
				{"sed -i s/X/Y/ sub/s.go", true},
				{"echo new > sub/new.txt", true},
				{"echo more >> m.go", true},
				{"sed -i s/hello/bye/ f", false},
				{"sed -i s/F/G/ m.go", false}, // a file at the top: in place only
				{"echo x > other", false},
				{"mkdir docs", false},
				{"echo x > .git/x", false},
				{"rm old", false},
			} {
				res := r.sandbox(t, c, "sh", "-c", tc.command)
				if (res.code == 0) != tc.ok {
					t.Errorf("%s: exit %d, want ok=%v: %s", tc.command, res.code, tc.ok, res.stderr)
				}
				if !tc.ok && !strings.Contains(res.stderr, "approved scope") {
					t.Errorf("%s: the failure does not name the scope: %s", tc.command, res.stderr)
				}
			}
			if !strings.Contains(read("sub/s.go"), "var Y") || read("sub/new.txt") != "new\n" || !strings.HasSuffix(read("m.go"), "more\n") {
				t.Errorf("the scope's writes did not land: %q %q %q", read("sub/s.go"), read("sub/new.txt"), read("m.go"))
			}
			if read("f") != "hello\nneedle one\nchanged\n" || read("old") != "old\n" || strings.Contains(read("m.go"), "G()") {
				t.Errorf("a write outside the scope landed")
			}
			for _, name := range []string{"other", "docs", ".git/x"} {
				if _, err := os.Lstat(filepath.Join(dir, name)); err == nil {
					t.Errorf("%s was made", name)
				}
			}
			// A bad entry is a usage error: the command never runs.
			bad := run{dir: dir, flags: []string{"--allow-write", "../x"}}
			if res := r.sandbox(t, bad, "sh", "-c", "echo ran"); res.code != ExitUnavailable || res.stdout != "" {
				t.Errorf("a bad --allow-write: %+v", res)
			}
		})
	}
}
