package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"
)

// result is what one scenario measured.
type result struct {
	requests int
	errors   int
	elapsed  time.Duration
	latency  []time.Duration // sorted
	firstErr error
}

func (r result) rps() float64 {
	if r.elapsed <= 0 {
		return 0
	}
	return float64(r.requests) / r.elapsed.Seconds()
}

// percentile returns the p-th percentile latency (0 < p <= 1).
func (r result) percentile(p float64) time.Duration {
	if len(r.latency) == 0 {
		return 0
	}
	i := int(float64(len(r.latency))*p+0.5) - 1
	return r.latency[max(0, min(i, len(r.latency)-1))]
}

// driveFor runs op from workers goroutines for d. op receives the worker
// number and the worker's request counter.
func driveFor(ctx context.Context, workers int, d time.Duration, op func(ctx context.Context, worker, i int) error) result {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var (
		mu  sync.Mutex
		all result
		wg  sync.WaitGroup
	)
	start := time.Now()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var (
				lat      = make([]time.Duration, 0, 4096)
				errs     int
				firstErr error
			)
			for i := 0; ctx.Err() == nil; i++ {
				t0 := time.Now()
				err := op(ctx, w, i)
				if ctx.Err() != nil {
					break // cut off by the deadline: not a measurement
				}
				lat = append(lat, time.Since(t0))
				if err != nil {
					errs++
					if firstErr == nil {
						firstErr = err
					}
				}
			}
			mu.Lock()
			all.requests += len(lat)
			all.errors += errs
			all.latency = append(all.latency, lat...)
			if all.firstErr == nil {
				all.firstErr = firstErr
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	all.elapsed = time.Since(start)
	slices.Sort(all.latency)
	return all
}

// newClient returns one keep-alive client able to hold n connections to a
// host, shared by every scenario and baseline.
func newClient(n int) *http.Client {
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        4 * n,
		MaxIdleConnsPerHost: 2 * n,
		MaxConnsPerHost:     n,
		IdleConnTimeout:     90 * time.Second,
	}
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

var jsonHeader = map[string]string{"Content-Type": "application/json"}

// expect sends one request and reports an error unless the status is want.
// The body is drained so the connection is reused.
func expect(c *http.Client, method, url string, body io.Reader, header map[string]string, want int) error {
	_, _, err := call(c, method, url, body, header, want)
	return err
}

// call sends one request and returns its headers and body.
func call(c *http.Client, method, url string, body io.Reader, header map[string]string, want int) (http.Header, []byte, error) {
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		return nil, nil, err
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, err
	}
	if resp.StatusCode != want {
		return resp.Header, b, fmt.Errorf("%s %s: %d, want %d: %.200s", method, url, resp.StatusCode, want, b)
	}
	return resp.Header, b, nil
}
