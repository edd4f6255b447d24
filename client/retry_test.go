package client_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/planserver/planserver/client"
)

// increment is the read → modify → conditional write of a counter kept as
// a plan's content. between, when set, runs between the read and the write.
func increment(c *client.Client, attempts *atomic.Int64, between func()) func(context.Context) error {
	return func(ctx context.Context) error {
		attempts.Add(1)
		cur, err := c.GetPlanContent(ctx, "counter")
		if err != nil {
			return err
		}
		n, err := strconv.Atoi(cur.Body)
		if err != nil {
			return err
		}
		if between != nil {
			between()
		}
		_, err = c.PutPlanContent(ctx, "counter", strconv.Itoa(n+1), client.IfMatch(cur.Revision))
		return err
	}
}

func counter(t *testing.T, c *client.Client) int {
	t.Helper()
	cur, err := c.GetPlanContent(t.Context(), "counter")
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(cur.Body)
	return n
}

// TestRetryOnConflictLosesNoUpdate: writers increment one counter at once
// through the loop; every increment lands exactly once, whatever the
// interleaving.
func TestRetryOnConflictLosesNoUpdate(t *testing.T) {
	_, c := newTest(t)
	if _, err := c.PutPlanContent(t.Context(), "counter", "0"); err != nil {
		t.Fatal(err)
	}
	const writers, each = 6, 8
	var attempts atomic.Int64
	var wg sync.WaitGroup
	for range writers {
		wg.Go(func() {
			for range each {
				if err := client.RetryOnConflict(t.Context(), 100, increment(c, &attempts, nil)); err != nil {
					t.Errorf("increment: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	if n := counter(t, c); n != writers*each {
		t.Errorf("counter = %d after %d increments", n, writers*each)
	}
	t.Logf("%d increments took %d attempts", writers*each, attempts.Load())
}

// TestRetryOnConflictRereads: a real writer gets in between the read and
// the write of the first attempt; the loop reads again and applies its
// change on top, so both changes are kept.
func TestRetryOnConflictRereads(t *testing.T) {
	_, c := newTest(t)
	if _, err := c.PutPlanContent(t.Context(), "counter", "0"); err != nil {
		t.Fatal(err)
	}
	other := checkedClient(t, c.BaseURL())
	var attempts, sink atomic.Int64
	interfered := false
	err := client.RetryOnConflict(t.Context(), 3, increment(c, &attempts, func() {
		if !interfered {
			interfered = true
			if err := increment(other, &sink, nil)(t.Context()); err != nil {
				t.Fatal(err)
			}
		}
	}))
	if err != nil || attempts.Load() != 2 || counter(t, c) != 2 {
		t.Errorf("err %v after %d attempts, counter %d", err, attempts.Load(), counter(t, c))
	}
}

// TestRetryOnConflictIsBounded: a writer that always gets in between
// wins; the loop gives up after its attempts with the conflict.
func TestRetryOnConflictIsBounded(t *testing.T) {
	_, c := newTest(t)
	if _, err := c.PutPlanContent(t.Context(), "counter", "0"); err != nil {
		t.Fatal(err)
	}
	var attempts, sink atomic.Int64
	err := client.RetryOnConflict(t.Context(), 3, increment(c, &attempts, func() {
		if err := increment(c, &sink, nil)(t.Context()); err != nil {
			t.Fatal(err)
		}
	}))
	var e *client.Error
	if !errors.Is(err, client.ErrVersionConflict) || !errors.As(err, &e) || attempts.Load() != 3 || *e.CurrentRevision != 4 {
		t.Errorf("err %v after %d attempts", err, attempts.Load())
	}
	// Zero attempts means the default.
	attempts.Store(0)
	_ = client.RetryOnConflict(t.Context(), 0, increment(c, &attempts, func() { _ = increment(c, &sink, nil)(t.Context()) }))
	if attempts.Load() != client.DefaultAttempts {
		t.Errorf("%d attempts by default", attempts.Load())
	}
}

// TestRetryOnConflictStops: other errors are returned at once, and a done
// context ends the wait between attempts.
func TestRetryOnConflictStops(t *testing.T) {
	_, c := newTest(t)
	var attempts atomic.Int64
	if err := client.RetryOnConflict(t.Context(), 5, increment(c, &attempts, nil)); !errors.Is(err, client.ErrNotFound) || attempts.Load() != 1 {
		t.Errorf("missing plan: %v after %d attempts", err, attempts.Load())
	}
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	calls := 0
	err := client.RetryOnConflict(ctx, 1000, func(context.Context) error {
		calls++
		return &client.Error{Code: "version_conflict"}
	})
	if !errors.Is(err, context.DeadlineExceeded) || calls >= 1000 {
		t.Errorf("cancelled loop: %v after %d calls", err, calls)
	}
}
