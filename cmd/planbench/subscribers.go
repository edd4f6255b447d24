package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Idle subscribers: what an open event stream costs the server while
// nothing happens, measured on the server process alone (planbench holds
// the other ends): connect n streams, read the server's live memory and
// goroutines, deliver one change to all of them, disconnect, and check
// that the server gives back what they held.

// serverFigures is what the server reports about itself on /metrics, with
// its resident set from /proc.
type serverFigures struct {
	heap, stack, rss float64 // bytes
	goroutines       float64
	subscribers      float64
}

// The heap is read after a collection, so that it counts what is live,
// not the garbage that GOGC lets pile up between collections.
func (b *bench) figures(srv *process) (serverFigures, error) {
	if _, _, err := call(b.c, "GET", srv.pprof+"/heap?gc=1", nil, nil, 200); err != nil {
		return serverFigures{}, fmt.Errorf("collect garbage: %w", err)
	}
	_, body, err := call(b.c, "GET", srv.base+"/metrics", nil, nil, 200)
	if err != nil {
		return serverFigures{}, err
	}
	values := map[string]float64{}
	for _, line := range strings.Split(string(body), "\n") {
		name, value, ok := strings.Cut(line, " ")
		if ok && !strings.HasPrefix(name, "#") {
			values[name], _ = strconv.ParseFloat(value, 64)
		}
	}
	rss, err := procStatus(srv.cmd.Process.Pid, "VmRSS")
	if err != nil {
		return serverFigures{}, err
	}
	return serverFigures{
		heap: values["go_memstats_heap_inuse_bytes"], stack: values["go_memstats_stack_inuse_bytes"],
		rss: float64(rss) * 1024, goroutines: values["go_goroutines"], subscribers: values["planserver_event_subscribers"],
	}, nil
}

// sseStream is one raw event-stream connection.
type sseStream struct {
	conn net.Conn
	r    *bufio.Reader
}

func openSSE(addr string) (*sseStream, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	s := &sseStream{conn: c, r: bufio.NewReaderSize(c, 4096)}
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := fmt.Fprintf(c, "GET /v1/events HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\n\r\n", addr); err != nil {
		c.Close()
		return nil, err
	}
	resp, err := http.ReadResponse(s.r, nil)
	if err == nil && resp.StatusCode != 200 {
		err = fmt.Errorf("GET /v1/events: %d", resp.StatusCode)
	}
	if err != nil {
		c.Close()
		return nil, err
	}
	_ = c.SetDeadline(time.Time{})
	return s, nil
}

// waitFor reads the stream until a line equal to want, within d.
func (s *sseStream) waitFor(want string, d time.Duration) error {
	_ = s.conn.SetReadDeadline(time.Now().Add(d))
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			return err
		}
		if strings.TrimRight(line, "\r\n") == want {
			return nil
		}
	}
}

func (b *bench) idleSubscribers(ctx context.Context, n int) error {
	b.note("%d idle event streams", n)
	srv, err := startServer(b.o, filepath.Join(b.dir, "subscribers.db"), "normal")
	if err != nil {
		return err
	}
	defer srv.stop()
	addr := strings.TrimPrefix(srv.base, "http://")
	before, err := b.figures(srv)
	if err != nil {
		return err
	}

	streams := make([]*sseStream, n)
	defer func() {
		for _, s := range streams {
			if s != nil {
				s.conn.Close()
			}
		}
	}()
	if err := parallel(n, 16, func(i int) (err error) {
		streams[i], err = openSSE(addr)
		return err
	}); err != nil {
		return fmt.Errorf("open %d streams: %w", n, err)
	}
	connected, err := b.waitFigures(srv, func(f serverFigures) bool { return f.subscribers == float64(n) })
	if err != nil {
		return fmt.Errorf("%d streams open: %w", n, err)
	}

	// One change reaches every stream.
	start := time.Now()
	if err := expect(b.c, "POST", srv.base+"/v1/sessions", strings.NewReader(`{"id":"hello"}`), jsonHeader, 201); err != nil {
		return err
	}
	if err := parallel(n, 64, func(i int) error {
		return streams[i].waitFor("event: session.created", 10*time.Second)
	}); err != nil {
		return fmt.Errorf("deliver one event to %d streams: %w", n, err)
	}
	delivered := time.Since(start)

	for i, s := range streams {
		s.conn.Close()
		streams[i] = nil
	}
	after, err := b.waitFigures(srv, func(f serverFigures) bool {
		return f.subscribers == 0 && f.goroutines <= before.goroutines+2
	})
	if err != nil {
		return fmt.Errorf("after %d streams closed, the server still holds them: %w", n, err)
	}
	mib := func(x float64) string { return fmt.Sprintf("%.1f MiB", x/(1<<20)) }
	line := func(label string, f serverFigures) string {
		return fmt.Sprintf("  %-10s heap in use %9s, stacks %8s, RSS %9s, %5.0f goroutines", label, mib(f.heap), mib(f.stack), mib(f.rss), f.goroutines)
	}
	b.notes = append(b.notes,
		fmt.Sprintf("%d idle event streams, the server alone (planbench holds the other ends):", n),
		line("before", before), line("connected", connected), line("after", after),
		fmt.Sprintf("  per stream: %.1f KiB heap and stack, %.1f goroutines; one event reached all %d in %s",
			(connected.heap+connected.stack-before.heap-before.stack)/float64(n)/1024, (connected.goroutines-before.goroutines)/float64(n), n, fmtDur(delivered)))
	return nil
}

// waitFigures polls the server's figures until ok holds (10 s at most).
func (b *bench) waitFigures(srv *process, ok func(serverFigures) bool) (serverFigures, error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		f, err := b.figures(srv)
		if err != nil {
			return f, err
		}
		if ok(f) {
			return f, nil
		}
		if time.Now().After(deadline) {
			return f, fmt.Errorf("%.0f subscribers, %.0f goroutines", f.subscribers, f.goroutines)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// parallel runs fn(0..n-1) from workers goroutines and returns the first
// error.
func parallel(n, workers int, fn func(i int) error) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		next  = make(chan int)
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := fn(i); err != nil {
					mu.Lock()
					if first == nil {
						first = fmt.Errorf("%d: %w", i, err)
					}
					mu.Unlock()
				}
			}
		}()
	}
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	return first
}
