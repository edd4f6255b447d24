package db

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// FileLock is the advisory lock that keeps planserver processes that must
// not overlap on one database apart: serve holds it for as long as it
// serves, migrate up and down for their change, so a schema change never
// runs under a live server (and two servers never share one file, whose
// event wake-ups and caches are per process). It is an exclusive flock(2)
// on DB.lock next to the database, which records the holder's command and
// pid for the refusal message. The kernel drops it when the process dies,
// however it dies, so a stale file never blocks anyone; the file itself
// stays. Commands that only read or add rows (token, backup, migrate
// status) do not take it.
type FileLock struct {
	f *os.File
}

// ErrLocked is returned, wrapped in a message naming the holder, when
// another process holds the database's lock.
var ErrLocked = errors.New("database is locked by another planserver")

// LockPath is the lock file of the database at path.
func LockPath(path string) string { return path + ".lock" }

// Lock takes the database's lock for holder (a command such as "serve" or
// "migrate up"), without waiting: when another process holds it, the
// error names that process's command and pid.
//
// A database that is no file (PostgreSQL's: IsFile) has nothing to lock,
// and replicas share it by design: Lock takes nothing there (migrations
// take turns under a lock of their own: Migrations.Lock).
func Lock(path, holder string) (*FileLock, error) {
	if !IsFile(path) {
		return &FileLock{}, nil
	}
	f, err := os.OpenFile(LockPath(path), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, ExplainOpenError(path, fmt.Errorf("lock %s: %w", path, err))
	}
	held, err := tryLock(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", LockPath(path), err)
	}
	if !held {
		other, _ := os.ReadFile(LockPath(path))
		f.Close()
		return nil, fmt.Errorf("%w: %s; stop it first", ErrLocked, describeHolder(path, string(other)))
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(fmt.Sprintf("%s\n%d\n", holder, os.Getpid())), 0)
	}
	return &FileLock{f: f}, nil
}

// describeHolder reads a lock file's "command\npid\n".
func describeHolder(path, content string) string {
	cmd, pid, _ := strings.Cut(strings.TrimSpace(content), "\n")
	if _, err := strconv.Atoi(pid); err != nil || cmd == "" {
		return fmt.Sprintf("another planserver holds %s", path)
	}
	return fmt.Sprintf("a planserver %s (pid %s) holds %s", cmd, pid, path)
}

// Release gives the lock up.
func (l *FileLock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close() // closing the last descriptor drops the flock
	l.f = nil
	return err
}
