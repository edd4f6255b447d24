package sqlite

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/planserver/planserver/internal/db"
	"github.com/planserver/planserver/internal/disktest"
)

// faultOf returns err's storage fault when err is one of kind.
func faultOf(err error, kind error) (*db.Fault, bool) {
	var f *db.Fault
	return f, errors.As(err, &f) && f.Kind == kind
}

func migrated(t *testing.T, path string) *db.DB {
	t.Helper()
	return migratedWith(t, path, db.Options{})
}

// migratedWith is migrated, opened with opt.
func migratedWith(t *testing.T, path string, opt db.Options) *db.DB {
	t.Helper()
	ctx := context.Background()
	d, err := db.Open(ctx, path, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	if _, _, err := d.MigrateUp(ctx, nil); err != nil {
		t.Fatal(err)
	}
	return d
}

// TestDiskFullIsInsufficientStorageUntilFreed fills the disk under a
// database: writes fail with a disk-full fault (answered 507
// insufficient_storage with Retry-After: internal/apierr), the
// database reports itself unready, reads keep working, and once space is
// freed writes commit and readiness returns.
func TestDiskFullIsInsufficientStorageUntilFreed(t *testing.T) {
	ctx := context.Background()
	dir := disktest.SmallDisk(t, "4m")
	d := migrated(t, filepath.Join(dir, "p.db"))
	if err := d.Ready(ctx); err != nil {
		t.Fatalf("ready before the disk filled: %v", err)
	}
	free := disktest.Fill(t, dir)
	big := strings.Repeat("x", 64<<10)
	err := d.Write(ctx, func(tx *db.Tx) error {
		_, err := tx.Exec(`INSERT INTO revision_floors (kind, key, revision) VALUES ('t', ?, 1)`, big)
		return err
	})
	if f, ok := faultOf(err, db.ErrDiskFull); !ok || f.Cause == nil {
		t.Fatalf("write on a full disk: %v, want a disk-full fault with its cause", err)
	}
	if err := d.Ready(ctx); !errors.Is(err, db.ErrDiskFull) {
		t.Errorf("ready on a full disk: %v, want disk full", err)
	}
	var n int
	if err := d.Reader(ctx).QueryRow(`SELECT count(*) FROM revision_floors`).Scan(&n); err != nil || n != 0 {
		t.Errorf("read on a full disk: %d rows, %v", n, err)
	}
	free()
	if err := d.Ready(ctx); err != nil {
		t.Errorf("ready after space was freed: %v", err)
	}
	if err := d.Write(ctx, func(tx *db.Tx) error {
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
	d, err := db.Open(ctx, path, db.Options{})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	defer d.Close()
	err = d.Write(ctx, func(tx *db.Tx) error {
		_, err := tx.Exec(`INSERT INTO revision_floors (kind, key, revision) VALUES ('t', 'k', 1)`)
		return err
	})
	if f, ok := faultOf(err, db.ErrUnavailable); !ok || f.Cause == nil || !strings.Contains(f.Detail, "read-only") {
		t.Fatalf("write to a read-only database: %v, want unavailable naming the cause", err)
	}
	t.Logf("answered: %v", err)
	if err := d.Ready(ctx); !errors.Is(err, db.ErrUnavailable) {
		t.Errorf("ready with a read-only database: %v", err)
	}
}

// TestCorruptFileFailsIntegrityCheck garbles the pages of a database
// behind its intact header: the check at start finds it.
func TestCorruptFileFailsIntegrityCheck(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "p.db")
	d := migrated(t, path)
	if err := d.CheckIntegrity(ctx); err != nil {
		t.Fatalf("a fresh database fails the check: %v", err)
	}
	d.Close()
	disktest.Garble(t, path)
	os.Remove(path + "-wal")
	os.Remove(path + "-shm")
	d, err := db.Open(ctx, path, db.Options{})
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
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	dir := t.TempDir()
	d := migrated(t, filepath.Join(dir, "p.db"))
	if err := d.Backup(context.Background(), filepath.Join(dir, "copy.db")); err != nil {
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
