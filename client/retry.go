package client

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"
)

// DefaultAttempts is how many times RetryOnConflict runs its function when
// told 0.
const DefaultAttempts = 5

// Pauses between the attempts of RetryOnConflict: doubling from the first,
// at most the last, each with jitter, so that writers contending for one
// resource spread out instead of colliding again in step.
const (
	conflictPauseMin = 10 * time.Millisecond
	conflictPauseMax = time.Second
)

// RetryOnConflict is the optimistic-locking loop. fn reads the resource,
// modifies what it read, and writes it back with IfMatch (or
// LastKnownRevision) of the revision it read; when another writer got
// there first, the write fails with ErrVersionConflict and fn runs again on
// a fresh read. RetryOnConflict returns nil once fn succeeds, fn's error
// at once when it is anything but a version conflict, and the last
// conflict after attempts runs (DefaultAttempts when attempts < 1). A done
// ctx ends the loop with ctx's error.
func RetryOnConflict(ctx context.Context, attempts int, fn func(ctx context.Context) error) error {
	if attempts < 1 {
		attempts = DefaultAttempts
	}
	pause := conflictPauseMin
	for i := 1; ; i++ {
		err := fn(ctx)
		if err == nil || !errors.Is(err, ErrVersionConflict) || i >= attempts {
			return err
		}
		t := time.NewTimer(pause/2 + rand.N(pause/2+1))
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		pause = min(2*pause, conflictPauseMax)
	}
}
