package db

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/planserver/planserver/internal/dbtest"
)

// TestVersionMovesWithEveryCommit: the version stays while nothing
// commits, moves forward with a commit, and stays when a write fails.
func TestVersionMovesWithEveryCommit(t *testing.T) {
	d := kvDB(t)
	ctx := context.Background()
	version := func() uint64 {
		t.Helper()
		v, err := d.Version(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	v0 := version()
	if v := version(); v != v0 {
		t.Fatalf("the version moved from %d to %d with no commit", v0, v)
	}
	mustExec(t, d, `INSERT INTO kv (k, v) VALUES (1, 'a')`)
	v1 := version()
	if v1 <= v0 {
		t.Fatalf("after a commit the version is %d, before it %d", v1, v0)
	}
	if err := d.Write(ctx, func(tx *Tx) error { return errors.New("no") }); err == nil {
		t.Fatal("a failing write succeeded")
	}
	if v := version(); v != v1 {
		t.Errorf("a write that committed nothing moved the version from %d to %d", v1, v)
	}
}

// TestPostgresVersionSeesOtherReplicasCommits: a Version call that starts
// after a commit was acknowledged on another replica always reflects it,
// while other callers keep reads of the version in flight all along, so a
// call that shared a read sent before it began would be caught.
func TestPostgresVersionSeesOtherReplicasCommits(t *testing.T) {
	dbtest.RequirePostgres(t)
	dsn := dbtest.Fresh(t)
	a, b := migrated(t, dsn), migrated(t, dsn)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if _, err := a.Version(ctx); err != nil && ctx.Err() == nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	defer func() { cancel(); wg.Wait() }()
	last, err := a.Version(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		mustExec(t, b, `UPDATE event_retention SET pruned_through = pruned_through WHERE id = 1`)
		v, err := a.Version(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if v <= last {
			t.Fatalf("commit %d on b, acknowledged, then a's version is %d, as before it (%d)", i, v, last)
		}
		last = v
	}
}
