package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"sync"
	"time"
)

// webhooks measures what webhook subscriptions cost the API and how fast
// they deliver (docs/webhooks.md):
//
//   - the conditional PUT on a server with a subscription whose target
//     accepts connections and never answers, against the same PUT on a
//     server without one (the goal: within 5 %: deliveries never run in a
//     request, and a hung target holds only its own goroutine);
//   - the delivery lag (an event's commit to its arrival at a healthy
//     receiver) at 1,000 writes a second, p50 and p99, as a note.
func (b *bench) webhooks(ctx context.Context) error {
	// A target that accepts and never answers: every attempt times out.
	hang, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer hang.Close()
	var held []net.Conn
	var heldMu sync.Mutex
	go func() {
		for {
			c, err := hang.Accept()
			if err != nil {
				return
			}
			heldMu.Lock()
			held = append(held, c)
			heldMu.Unlock()
		}
	}()
	defer func() {
		heldMu.Lock()
		for _, c := range held {
			c.Close()
		}
		heldMu.Unlock()
	}()

	plain, err := startServer(b.o, filepath.Join(b.dir, "webhooks-none.db"), "normal")
	if err != nil {
		return err
	}
	defer plain.stop()
	hung, err := startServer(b.o, filepath.Join(b.dir, "webhooks-hung.db"), "normal", "--webhook-allow-hosts", "127.0.0.1")
	if err != nil {
		return err
	}
	defer hung.stop()
	if err := subscribe(b.c, hung.base, "http://"+hang.Addr().String()+"/hook"); err != nil {
		return err
	}
	with, err := b.conditionalPut(hung, []string{hung.base}, "")
	if err != nil {
		return err
	}
	without, err := b.conditionalPut(plain, []string{plain.base}, "")
	if err != nil {
		return err
	}
	with.name = "PUT If-Match 2 KiB, a webhook whose target never answers"
	without.name = "the same PUT, no webhook"
	b.compare(ctx, with, without)

	lags, err := b.deliveryLag(ctx, 1000, 5*time.Second)
	if err != nil {
		return err
	}
	b.notes = append(b.notes, lags)
	return nil
}

func subscribe(c *http.Client, base, target string) error {
	body, _ := json.Marshal(map[string]any{"url": target, "events": []string{"plan.changed"}})
	_, _, err := call(c, "POST", base+"/v1/webhooks", bytes.NewReader(body), jsonHeader, http.StatusCreated)
	return err
}

// deliveryLag writes rate plans a second for d through a server with one
// subscription to a receiver here, and reports the lag from each event's
// commit (its time in the body) to its arrival.
func (b *bench) deliveryLag(ctx context.Context, rate int, d time.Duration) (string, error) {
	var (
		mu   sync.Mutex
		lags []time.Duration
	)
	recv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		now := time.Now()
		var msg struct {
			Data struct {
				Time string `json:"time"`
			} `json:"data"`
		}
		raw, _ := io.ReadAll(r.Body)
		if json.Unmarshal(raw, &msg) == nil {
			if t, err := time.Parse(time.RFC3339Nano, msg.Data.Time); err == nil {
				mu.Lock()
				lags = append(lags, now.Sub(t))
				mu.Unlock()
			}
		}
		w.WriteHeader(http.StatusNoContent)
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	go func() { _ = recv.Serve(ln) }()
	defer recv.Close()
	srv, err := startServer(b.o, filepath.Join(b.dir, "webhooks-lag.db"), "normal", "--webhook-allow-hosts", "127.0.0.1")
	if err != nil {
		return "", err
	}
	defer srv.stop()
	if err := subscribe(b.c, srv.base, "http://"+ln.Addr().String()+"/hook"); err != nil {
		return "", err
	}
	// Paced writes: one every 1/rate s, each on its own goroutine so a slow
	// answer does not lower the rate.
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	end := time.Now().Add(d)
	var wg sync.WaitGroup
	sent := 0
	for time.Now().Before(end) {
		<-tick.C
		sent++
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			_, _, _ = call(b.c, "PUT", fmt.Sprintf("%s/v1/plans/lag-%d", srv.base, i%100), bytes.NewReader(planBody), jsonHeader, 0)
		}(sent)
	}
	wg.Wait()
	elapsed := d
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		n := len(lags)
		mu.Unlock()
		if n >= sent || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(lags) == 0 {
		return "", fmt.Errorf("no delivery arrived")
	}
	slices.Sort(lags)
	pct := func(p float64) time.Duration { return lags[min(len(lags)-1, int(p*float64(len(lags))))] }
	return fmt.Sprintf("webhook delivery lag at %d writes/s for %v (%d writes sent, %d delivered): p50 %v, p99 %v, max %v",
		rate, elapsed, sent, len(lags), pct(0.5).Round(time.Microsecond), pct(0.99).Round(time.Microsecond), lags[len(lags)-1].Round(time.Microsecond)), nil
}
