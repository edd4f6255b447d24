package db

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ExplainOpenError turns SQLite's "unable to open database file", which
// says nothing of why, into an error naming the cause it finds on the file
// system: a missing directory, a path component that is a file, a database
// path that is a directory, or a permission the process lacks. Any other
// error, or one whose cause it cannot find, is returned as it is. It only
// looks: it never creates anything but a probe file it removes at once.
func ExplainOpenError(path string, err error) error {
	if err == nil {
		return nil
	}
	var pathErr *fs.PathError
	if !errors.As(err, &pathErr) && !strings.Contains(err.Error(), "unable to open database file") {
		return err
	}
	if why := openCause(path); why != "" {
		return fmt.Errorf("cannot open database %s: %s", path, why)
	}
	return err
}

// openCause says why path cannot be opened for reading and writing, or ""
// when nothing on the file system explains it.
func openCause(path string) string {
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Sprintf("directory %s does not exist (create it first, e.g. mkdir -p %s)", dir, dir)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Sprintf("permission denied: this user may not enter %s or a directory above it", dir)
	case err != nil:
		return fmt.Sprintf("%s: %v", dir, err)
	case !st.IsDir():
		return fmt.Sprintf("%s is not a directory", dir)
	}
	st, err = os.Stat(path)
	switch {
	case err == nil && st.IsDir():
		return fmt.Sprintf("%s is a directory; name a file in it, e.g. %s", path, filepath.Join(path, "planserver.db"))
	case err == nil:
		f, openErr := os.OpenFile(path, os.O_RDWR, 0)
		if openErr == nil {
			f.Close()
			break
		}
		if errors.Is(openErr, fs.ErrPermission) {
			return fmt.Sprintf("permission denied: this user may not read and write %s (mode %v)", path, st.Mode().Perm())
		}
		return openErr.Error()
	case !errors.Is(err, fs.ErrNotExist):
		return err.Error()
	}
	// SQLite creates the file, its WAL and its shared-memory index next to
	// it, so the directory must be writable.
	probe, err := os.CreateTemp(dir, ".planserver-probe-*")
	if err != nil {
		if errors.Is(err, fs.ErrPermission) {
			return fmt.Sprintf("permission denied: this user may not create files in %s (the database, its -wal and -shm files live there)", dir)
		}
		return err.Error()
	}
	probe.Close()
	os.Remove(probe.Name())
	return ""
}
