package main

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// teamStreams holds b.o.teamStreams event streams open across three
// PostgreSQL replicas of one database, commits sessions on the first
// replica one at a time, and measures, for every stream and every commit,
// the time from the commit's acknowledgement (the 201 of its POST: the
// commit is durable by then) to the event's arrival on the stream.
func (b *bench) teamStreams(ctx context.Context) error {
	n := b.o.teamStreams
	if err := raiseFDLimit(n + 512); err != nil {
		return err
	}
	pg, err := newPGBench(ctx, b.o.postgres)
	if err != nil {
		return err
	}
	defer pg.close()
	dsn, err := pg.database(ctx, "team_streams")
	if err != nil {
		return err
	}
	srvs, err := startReplicas(b.o, dsn, 3)
	if err != nil {
		return err
	}
	defer stopAll(srvs)
	b.note("%d event streams across 3 PostgreSQL replicas", n)
	streams := make([]*sseStream, n)
	defer func() {
		for _, s := range streams {
			if s != nil {
				s.conn.Close()
			}
		}
	}()
	if err := parallel(n, 32, func(i int) (err error) {
		streams[i], err = openSSE(strings.TrimPrefix(srvs[i%3].base, "http://"))
		return err
	}); err != nil {
		return fmt.Errorf("open %d streams: %w", n, err)
	}
	// Every stream is registered with its replica's broker before the
	// first commit, or its first event would count the time to subscribe.
	deadline := time.Now().Add(30 * time.Second)
	for {
		total := 0.0
		for _, s := range srvs {
			v, err := metric(b.c, s.base, "planserver_event_subscribers")
			if err != nil {
				return err
			}
			total += v
		}
		if total >= float64(n) {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("only %.0f of %d streams subscribed after 30 s", total, n)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// One commit at a time, a second apart, so that each one's fan-out is
	// measured on its own, not queued behind the one before.
	const commits, every = 20, time.Second
	type arrival struct {
		commit int
		at     time.Time
	}
	arrivals := make([]chan arrival, n)
	var wg sync.WaitGroup
	for i, s := range streams {
		arrivals[i] = make(chan arrival, commits)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(arrivals[i])
			_ = s.conn.SetReadDeadline(time.Now().Add(commits*every + 30*time.Second))
			got := 0
			for got < commits {
				line, err := s.r.ReadString('\n')
				if err != nil {
					return
				}
				now := time.Now()
				if !strings.HasPrefix(line, "data:") {
					continue
				}
				j := strings.Index(line, `"session_id":"stream-`)
				if j < 0 {
					continue
				}
				rest := line[j+len(`"session_id":"stream-`):]
				c, err := strconv.Atoi(rest[:strings.IndexByte(rest, '"')])
				if err != nil {
					continue
				}
				arrivals[i] <- arrival{c, now}
				got++
			}
		}()
	}
	acked := make([]time.Time, commits)
	for c := 0; c < commits; c++ {
		if err := expect(b.c, "POST", srvs[0].base+"/v1/sessions", strings.NewReader(`{"id":"stream-`+strconv.Itoa(c)+`"}`), jsonHeader, 201); err != nil {
			return err
		}
		acked[c] = time.Now()
		time.Sleep(every)
	}
	wg.Wait()
	var delays []time.Duration
	perReplica := make([][]time.Duration, 3)
	for i := range streams {
		seen := 0
		for a := range arrivals[i] {
			d := a.at.Sub(acked[a.commit])
			delays = append(delays, d)
			perReplica[i%3] = append(perReplica[i%3], d)
			seen++
		}
		if seen != commits {
			return fmt.Errorf("stream %d (replica %d) received %d of %d events", i, i%3+1, seen, commits)
		}
	}
	pct := func(ds []time.Duration, p float64) string {
		slices.Sort(ds)
		return fmtDur(ds[min(len(ds)-1, int(float64(len(ds))*p))])
	}
	line := fmt.Sprintf("team streams: %d event streams across 3 PostgreSQL replicas, %d commits on replica 1 one every %s, %d deliveries; from the commit's acknowledgement to the event on each stream: p50 %s p99 %s max %s (goal p99 ≤ 50 ms)",
		n, commits, every, len(delays), pct(delays, 0.5), pct(delays, 0.99), pct(delays, 1))
	for r, ds := range perReplica {
		line += fmt.Sprintf("; replica %d p50 %s p99 %s", r+1, pct(ds, 0.5), pct(ds, 0.99))
	}
	b.notes = append(b.notes, line)
	return nil
}

// metric reads one figure of a server's /metrics.
func metric(c *http.Client, base, name string) (float64, error) {
	_, body, err := call(c, "GET", base+"/metrics", nil, nil, 200)
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(body), "\n") {
		if k, v, ok := strings.Cut(l, " "); ok && k == name {
			return strconv.ParseFloat(v, 64)
		}
	}
	return 0, fmt.Errorf("%s/metrics has no %s", base, name)
}

// raiseFDLimit raises planbench's own RLIMIT_NOFILE to its hard limit and
// fails if that leaves fewer than need descriptors: every stream holds one.
func raiseFDLimit(need int) error {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return fmt.Errorf("read RLIMIT_NOFILE: %w", err)
	}
	if l.Cur < l.Max {
		l.Cur = l.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
			return fmt.Errorf("raise RLIMIT_NOFILE to %d: %w", l.Max, err)
		}
	}
	if l.Cur < uint64(need) {
		return fmt.Errorf("RLIMIT_NOFILE is %d (hard limit %d); %d streams need about %d: raise it (ulimit -n)", l.Cur, l.Max, need-512, need)
	}
	return nil
}
