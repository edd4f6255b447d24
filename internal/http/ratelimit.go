package http

import (
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// limiter is a token bucket per caller: per token name, and per client IP
// for failed authentications. A nil limiter lets everything through.
type limiter struct {
	rate  rate.Limit
	burst int

	mu      sync.Mutex
	buckets map[string]*rate.Limiter
	swept   time.Time
}

// sweepEvery is how often idle buckets are dropped, so that a stream of
// distinct client IPs cannot grow the map without bound.
const sweepEvery = time.Minute

// newLimiter returns a limiter of rps requests a second with bursts of
// burst, or nil when rps is not positive (rate limiting off).
func newLimiter(rps float64, burst int) *limiter {
	if rps <= 0 {
		return nil
	}
	return &limiter{rate: rate.Limit(rps), burst: max(burst, 1), buckets: map[string]*rate.Limiter{}}
}

// allow takes n requests from key's bucket (n is more than one for a
// JSON-RPC batch, which is n calls). When the bucket holds fewer it takes
// nothing and reports how long until they would be allowed (forever when
// n is above the burst).
func (l *limiter) allow(key string, now time.Time, n int) (bool, time.Duration) {
	if l == nil {
		return true, 0
	}
	l.mu.Lock()
	if now.Sub(l.swept) >= sweepEvery {
		l.sweep(now)
	}
	b, ok := l.buckets[key]
	if !ok {
		b = rate.NewLimiter(l.rate, l.burst)
		l.buckets[key] = b
	}
	l.mu.Unlock()
	res := b.ReserveN(now, n)
	if !res.OK() {
		return false, time.Duration(math.MaxInt64)
	}
	if delay := res.DelayFrom(now); delay > 0 {
		res.CancelAt(now)
		return false, delay
	}
	return true, 0
}

// sweep drops full buckets. A full bucket is exactly what a new one would
// be, so dropping it forgets nothing. Callers hold l.mu.
func (l *limiter) sweep(now time.Time) {
	for key, b := range l.buckets {
		if b.TokensAt(now) >= float64(l.burst) {
			delete(l.buckets, key)
		}
	}
	l.swept = now
}

// retryAfter is a Retry-After value in whole seconds, at least 1.
func retryAfter(d time.Duration) int {
	return max(1, int(math.Ceil(d.Seconds())))
}
