package db

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/planserver/planserver/internal/dbtest"
	"github.com/planserver/planserver/internal/testfs"
)

// faultOf returns err's storage fault when err is one of kind.
func faultOf(err error, kind error) (*Fault, bool) {
	var f *Fault
	return f, errors.As(err, &f) && f.Kind == kind
}

func migrated(t *testing.T, path string) *DB {
	t.Helper()
	return migratedWith(t, path, Options{})
}

// migratedWith is migrated, opened with opt.
func migratedWith(t *testing.T, path string, opt Options) *DB {
	t.Helper()
	ctx := context.Background()
	db, err := Open(ctx, path, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, _, err := db.MigrateUp(ctx, nil); err != nil {
		t.Fatal(err)
	}
	return db
}

// TestDiskFullIsInsufficientStorageUntilFreed fills the disk under a
// database: writes fail with a disk-full fault (answered 507
// insufficient_storage with Retry-After: internal/apierr), the
// database reports itself unready, reads keep working, and once space is
// freed writes commit and readiness returns.
func TestDiskFullIsInsufficientStorageUntilFreed(t *testing.T) {
	dbtest.SkipOnPostgres(t, "a tmpfs under a SQLite file; TestPostgresDiskFullIsInsufficientStorage fills a tablespace")
	ctx := context.Background()
	dir := testfs.SmallDisk(t, "4m")
	db := migrated(t, filepath.Join(dir, "p.db"))
	if err := db.Ready(ctx); err != nil {
		t.Fatalf("ready before the disk filled: %v", err)
	}
	free := testfs.Fill(t, dir)
	big := strings.Repeat("x", 64<<10)
	err := db.Write(ctx, func(tx *Tx) error {
		_, err := tx.Exec(`INSERT INTO revision_floors (kind, key, revision) VALUES ('t', ?, 1)`, big)
		return err
	})
	if f, ok := faultOf(err, ErrDiskFull); !ok || f.Cause == nil {
		t.Fatalf("write on a full disk: %v, want a disk-full fault with its cause", err)
	}
	if err := db.Ready(ctx); !errors.Is(err, ErrDiskFull) {
		t.Errorf("ready on a full disk: %v, want disk full", err)
	}
	var n int
	if err := db.Reader(ctx).QueryRow(`SELECT count(*) FROM revision_floors`).Scan(&n); err != nil || n != 0 {
		t.Errorf("read on a full disk: %d rows, %v", n, err)
	}
	free()
	if err := db.Ready(ctx); err != nil {
		t.Errorf("ready after space was freed: %v", err)
	}
	if err := db.Write(ctx, func(tx *Tx) error {
		_, err := tx.Exec(`INSERT INTO revision_floors (kind, key, revision) VALUES ('t', ?, 1)`, big)
		return err
	}); err != nil {
		t.Errorf("write after space was freed: %v", err)
	}
}

// TestReadOnlyDatabaseIsUnavailable serves a database file this process
// may not write (0444, owned by another user): writes fail with
// unavailable naming the cause, not internal, and readiness says so. Run
// as root, the test re-runs itself as nobody, since root may write any
// file.
func TestReadOnlyDatabaseIsUnavailable(t *testing.T) {
	dbtest.SkipOnPostgres(t, "file permissions; TestPostgresReadOnlyIsUnavailable makes the server read-only")
	if path := os.Getenv("PLANSERVER_TEST_READONLY_DB"); path != "" {
		checkReadOnly(t, path)
		return
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "p.db")
	migrated(t, path).Close()
	if err := os.Chmod(path, 0o444); err != nil {
		t.Fatal(err)
	}
	if os.Getuid() != 0 {
		checkReadOnly(t, path)
		return
	}
	// nobody needs to reach the file and create the -wal and -shm files
	// beside it; only the database itself is read-only.
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	// The test binary lives in a directory only root may enter: copy it.
	bin, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	self := filepath.Join(dir, "db.test")
	if err := os.WriteFile(self, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, "-test.run=^TestReadOnlyDatabaseIsUnavailable$", "-test.v")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PLANSERVER_TEST_READONLY_DB="+path, "GOCOVERDIR="+dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	t.Logf("as nobody:\n%s", out)
	if err != nil {
		t.Fatalf("the check as nobody failed: %v", err)
	}
}

func checkReadOnly(t *testing.T, path string) {
	ctx := context.Background()
	db, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	defer db.Close()
	err = db.Write(ctx, func(tx *Tx) error {
		_, err := tx.Exec(`INSERT INTO revision_floors (kind, key, revision) VALUES ('t', 'k', 1)`)
		return err
	})
	if f, ok := faultOf(err, ErrUnavailable); !ok || f.Cause == nil || !strings.Contains(f.Detail, "read-only") {
		t.Fatalf("write to a read-only database: %v, want unavailable naming the cause", err)
	}
	t.Logf("answered: %v", err)
	if err := db.Ready(ctx); !errors.Is(err, ErrUnavailable) {
		t.Errorf("ready with a read-only database: %v", err)
	}
}

// TestCorruptFileFailsIntegrityCheck garbles the pages of a database
// behind its intact header: the check at start finds it.
func TestCorruptFileFailsIntegrityCheck(t *testing.T) {
	dbtest.SkipOnPostgres(t, "garbles a SQLite file; PostgreSQL checks its own pages")
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "p.db")
	db := migrated(t, path)
	if err := db.CheckIntegrity(ctx); err != nil {
		t.Fatalf("a fresh database fails the check: %v", err)
	}
	db.Close()
	testfs.Garble(t, path)
	os.Remove(path + "-wal")
	os.Remove(path + "-shm")
	d, err := Open(ctx, path, Options{})
	if err != nil {
		return // refused at open: as good
	}
	defer d.Close()
	if err := d.CheckIntegrity(ctx); err == nil {
		t.Fatal("a garbled database passed the integrity check")
	}
}

// TestDatabaseFilesArePrivate: the database and its WAL and shared-memory
// files are created 0600 whatever the umask, and so is a backup.
func TestDatabaseFilesArePrivate(t *testing.T) {
	dbtest.SkipOnPostgres(t, "SQLite's file modes; on PostgreSQL the server owns the files (and Backup refuses: TestPostgresBackupRefusesNamingTheTools)")
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	dir := t.TempDir()
	db := migrated(t, filepath.Join(dir, "p.db"))
	if err := db.Backup(context.Background(), filepath.Join(dir, "copy.db")); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"p.db", "p.db-wal", "p.db-shm", "copy.db"} {
		info, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if perm := info.Mode().Perm(); perm != 0o600 {
			t.Errorf("%s has mode %o, want 600", name, perm)
		}
	}
}
