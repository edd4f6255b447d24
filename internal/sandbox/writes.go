package sandbox

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// MaxWriteTargets bounds the paths one set of --allow-write entries may
// open: a glob at the top of a project opens each file it matches, and a
// project can hold many.
const MaxWriteTargets = 1000

// WriteTargets is the rule of what --allow-write opens for writing, the
// one place it is decided (docs/sandbox.md, "Scoped build"). Landlock
// grants by file and directory, not by pattern, so each entry opens:
//
//   - an absolute path: itself (a file, or a directory and all beneath);
//   - a relative path without glob characters, relative to project:
//     a directory opens itself; a file (or a name that does not exist yet)
//     opens the directory it is in, so that editors that write a temporary
//     file and rename it over the old one (sed -i) work — except a file at
//     the top of the project, which opens only itself, and only when it
//     exists (in-place writes); a folder that does not exist opens nothing;
//   - a glob ("src/**/*.go", "docs/" meaning "docs/**"): its literal
//     directory prefix ("src"), when that exists; a glob whose literal
//     prefix is the project itself opens nothing but the existing files it
//     matches, each alone.
//
// Every path opened must lie inside the project once symbolic links are
// resolved: an entry that leads out of it (a link "src" to /etc) opens
// nothing. Relative entries must not climb out with "..". The result is
// absolute, deduplicated, in entry order; more than MaxWriteTargets is an
// error.
func WriteTargets(project string, entries []string) ([]string, error) {
	if len(entries) == 0 {
		return nil, nil
	}
	root, err := filepath.Abs(project)
	if err != nil {
		return nil, fmt.Errorf("--project %q: %w", project, err)
	}
	if root, err = filepath.EvalSymlinks(root); err != nil {
		return nil, fmt.Errorf("--project: %w", err)
	}
	if fi, err := os.Stat(root); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("--project %q is not a directory", project)
	}
	var out []string
	add := func(p string) error {
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			return nil // gone, or a dangling link: nothing to open
		}
		if real == root || !inside(root, real) {
			return nil // the whole project, or out of it: never opened
		}
		if !slices.Contains(out, real) {
			if len(out) == MaxWriteTargets {
				return fmt.Errorf("--allow-write opens more than %d paths; name folders instead of files", MaxWriteTargets)
			}
			out = append(out, real)
		}
		return nil
	}
	for _, e := range entries {
		if strings.IndexByte(e, 0) >= 0 || strings.TrimSpace(e) == "" {
			return nil, fmt.Errorf("--allow-write %q: not a path", e)
		}
		if filepath.IsAbs(e) {
			if _, err := os.Stat(e); err != nil {
				return nil, fmt.Errorf("--allow-write: %w", err)
			}
			abs := filepath.Clean(e)
			if !slices.Contains(out, abs) {
				out = append(out, abs)
			}
			continue
		}
		rel, err := cleanEntry(e)
		if err != nil {
			return nil, err
		}
		if err := openEntry(root, rel, add); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// cleanEntry is a relative entry in slash form, "./" and repeated slashes
// gone, a trailing "/" read as the folder and everything beneath it.
func cleanEntry(e string) (string, error) {
	for _, seg := range strings.Split(e, "/") {
		if seg == ".." {
			return "", fmt.Errorf("--allow-write %q climbs out with ..: name paths inside the project", e)
		}
	}
	folder := strings.HasSuffix(e, "/")
	c := path.Clean("/" + e)[1:]
	if c == "" {
		return "", fmt.Errorf("--allow-write %q names the whole project", e)
	}
	if folder {
		c += "/**"
	}
	if !doublestar.ValidatePattern(c) {
		return "", fmt.Errorf("--allow-write %q is not a valid glob", e)
	}
	return c, nil
}

// openEntry applies the rule to one cleaned relative entry.
func openEntry(root, rel string, add func(string) error) error {
	segs := strings.Split(rel, "/")
	lit := 0
	for lit < len(segs) && !strings.ContainsAny(segs[lit], "*?[{\\") {
		lit++
	}
	if lit == len(segs) {
		// A plain path.
		p := filepath.Join(root, filepath.FromSlash(rel))
		fi, err := os.Stat(p)
		switch {
		case err == nil && fi.IsDir():
			return add(p)
		case len(segs) == 1:
			if err == nil {
				return add(p) // a file at the top: itself alone
			}
			return nil
		}
		dir := filepath.Dir(p)
		if real, err := filepath.EvalSymlinks(dir); err == nil && real == root {
			// Its folder is the project itself, through a link: a file
			// at the top after all.
			if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
				return add(p)
			}
			return nil
		}
		if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
			return add(dir)
		}
		return nil
	}
	if lit > 0 {
		prefix := filepath.Join(root, filepath.FromSlash(strings.Join(segs[:lit], "/")))
		if fi, err := os.Stat(prefix); err == nil && fi.IsDir() {
			return add(prefix)
		}
		return nil
	}
	// A glob at the top: the existing files it matches, each alone.
	// Unreadable folders are passed over: what cannot be read cannot be
	// matched.
	matches, err := doublestar.Glob(os.DirFS(root), rel, doublestar.WithFilesOnly(), doublestar.WithNoFollow())
	if err != nil {
		return fmt.Errorf("--allow-write %q: %w", rel, err)
	}
	for _, m := range matches {
		if err := add(filepath.Join(root, filepath.FromSlash(m))); err != nil {
			return err
		}
	}
	return nil
}

// inside reports whether p is root or lies beneath it.
func inside(root, p string) bool {
	if p == root {
		return true
	}
	return strings.HasPrefix(p, strings.TrimSuffix(root, string(filepath.Separator))+string(filepath.Separator))
}
