package drivertest

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"testing"

	"github.com/planserver/planserver/internal/db"
	"github.com/planserver/planserver/internal/disktest"
)

// diskFullIsAFaultUntilFreed fills the storage under a database: a write
// that needs new room fails with a disk-full fault carrying the engine's
// error (answered 507 insufficient_storage: internal/apierr), reads go
// on, and once space is freed writes commit again and the database is
// ready. (Whether readiness stays down meanwhile depends on whether the
// engine can see its disk: SQLite's test of its own says so.)
func diskFullIsAFaultUntilFreed(t *testing.T, h Harness) {
	dsn, dir := h.OnSmallDisk(t, "4m")
	d := Open(t, dsn, db.Options{})
	ctx := context.Background()
	big := make([]byte, 1<<20)
	_, _ = rand.Read(big)
	bigText := base64.StdEncoding.EncodeToString(big) // incompressible: it must take pages
	write := func() error {
		return d.Write(ctx, func(tx *db.Tx) error {
			_, err := tx.Exec(`INSERT INTO events (type, time, actor, data) VALUES ('t', '', 'test', ?)`, bigText)
			return err
		})
	}
	if err := write(); err != nil {
		t.Fatalf("write before the disk filled: %v", err)
	}
	free := disktest.Fill(t, dir)
	err := write()
	if f, ok := faultOf(err, db.ErrDiskFull); !ok || f.Cause == nil {
		free()
		t.Fatalf("write on a full disk: %v, want a disk-full fault with its cause", err)
	}
	var n int
	if err := d.Reader(ctx).QueryRow(`SELECT count(*) FROM events`).Scan(&n); err != nil || n != 1 {
		t.Errorf("read on a full disk: %d events, %v", n, err)
	}
	free()
	if err := write(); err != nil {
		t.Errorf("write after space was freed: %v", err)
	}
	if err := d.Ready(ctx); err != nil {
		t.Errorf("ready after space was freed: %v", err)
	}
}
