package http

import (
	"testing"
	"time"
)

func TestLimiterBucketsAndSweep(t *testing.T) {
	if l := newLimiter(0, 100); l != nil {
		t.Fatal("rate 0 must turn the limiter off")
	}
	var off *limiter
	if ok, _ := off.allow("k", time.Now(), 1); !ok {
		t.Fatal("a nil limiter refused")
	}
	l := newLimiter(1, 2)
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 2 {
		if ok, _ := l.allow("a", t0, 1); !ok {
			t.Fatalf("request %d within the burst refused", i)
		}
	}
	ok, wait := l.allow("a", t0, 1)
	if ok || wait != time.Second || retryAfter(wait) != 1 {
		t.Fatalf("third request: %v, wait %v", ok, wait)
	}
	// A refusal takes nothing: after the wait, exactly one more.
	if ok, _ := l.allow("a", t0.Add(time.Second), 1); !ok {
		t.Error("refused after the wait")
	}
	if ok, _ := l.allow("b", t0, 1); !ok {
		t.Error("another key shares a's bucket")
	}
	// A minute on, both buckets are full again and are dropped; the new
	// key's bucket is the only one left.
	l.allow("c", t0.Add(2*time.Minute), 1)
	if len(l.buckets) != 1 {
		t.Errorf("%d buckets after the sweep, want 1", len(l.buckets))
	}
	if retryAfter(1500*time.Millisecond) != 2 || retryAfter(time.Millisecond) != 1 {
		t.Error("retryAfter rounds up to whole seconds, at least 1")
	}
}
