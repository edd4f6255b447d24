package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/webhooks"
	"github.com/planserver/planserver/internal/webhooks/deliver"
)

// TestWebhookReplicasUnderSIGKILL: three replicas on one PostgreSQL
// database deliver one subscription while writes go through all of them
// and replicas are killed with SIGKILL and restarted. The lease hands the
// subscription over: afterwards every event was delivered, in order, none
// lost; repeats (an attempt a killed replica made but never recorded) are
// counted, carry their webhook-id, and are at most one per kill.
func TestWebhookReplicasUnderSIGKILL(t *testing.T) {
	var (
		mu   sync.Mutex
		got  []int64
		ids  = map[int64]string{}
		bad  atomic.Int64
		secr atomic.Value
	)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		secret, _ := secr.Load().(string)
		ts, _ := strconv.ParseInt(r.Header.Get("webhook-timestamp"), 10, 64)
		want, _ := webhooks.Sign([]string{secret}, r.Header.Get("webhook-id"), ts, body)
		var msg struct {
			Data api.Event `json:"data"`
		}
		if secret == "" || r.Header.Get("webhook-signature") != want || json.Unmarshal(body, &msg) != nil {
			bad.Add(1)
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		mu.Lock()
		got = append(got, msg.Data.Seq)
		if id, ok := ids[msg.Data.Seq]; ok && id != r.Header.Get("webhook-id") {
			t.Errorf("event %d repeated with another webhook-id", msg.Data.Seq)
		}
		ids[msg.Data.Seq] = r.Header.Get("webhook-id")
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close() })

	args := []string{"--webhook-allow-hosts", "127.0.0.1", "--webhook-lease", "2s"}
	dsn, reps := startReplicas(t, 3, args...)
	var wh api.WebhookCreated
	st, body, err := tryCall(reps[0], "POST", "/v1/webhooks",
		fmt.Sprintf(`{"url": "http://%s/hook", "events": ["plan.changed"]}`, ln.Addr()))
	if err != nil || st != http.StatusCreated || json.Unmarshal(body, &wh) != nil {
		t.Fatalf("create: %d %s %v", st, body, err)
	}
	secr.Store(wh.Secret)

	// Writes through every live replica; a replica is killed and restarted
	// every 1.5 s.
	var (
		repMu   sync.Mutex
		stop    = make(chan struct{})
		writers sync.WaitGroup
		acked   atomic.Int64
	)
	pick := func() *proc {
		repMu.Lock()
		defer repMu.Unlock()
		return reps[rand.IntN(len(reps))]
	}
	for w := 0; w < 4; w++ {
		writers.Add(1)
		go func(w int) {
			defer writers.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				st, _, err := tryCall(pick(), "PUT", fmt.Sprintf("/v1/plans/w%d-%d", w, i%20), `{"content": "x"}`)
				if err == nil && st < 300 {
					acked.Add(1)
				}
			}
		}(w)
	}
	kills := 0
	for round := 0; round < 4; round++ {
		time.Sleep(1500 * time.Millisecond)
		repMu.Lock()
		i := round % len(reps)
		victim := reps[i]
		repMu.Unlock()
		kill(t, victim)
		kills++
		fresh := start(t, dsn, args...)
		repMu.Lock()
		reps[i] = fresh
		repMu.Unlock()
	}
	time.Sleep(time.Second)
	close(stop)
	writers.Wait()

	// Every plan event after the subscription, from the log itself.
	var want []int64
	after := wh.Cursor
	for {
		st, body, err := tryCall(reps[0], "GET", fmt.Sprintf("/v1/events?after=%d&limit=1000&types=plan.created,plan.updated", after), "",
			"Accept", "application/json")
		var page api.EventPage
		if err != nil || st != http.StatusOK || json.Unmarshal(body, &page) != nil {
			t.Fatalf("events: %d %s %v", st, body, err)
		}
		for _, e := range page.Events {
			want = append(want, e.Seq)
		}
		if len(page.Events) < 1000 {
			break
		}
		after = page.Events[len(page.Events)-1].Seq
	}
	if int64(len(want)) < acked.Load() || len(want) == 0 {
		t.Fatalf("%d events in the log, %d writes acknowledged", len(want), acked.Load())
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		mu.Lock()
		n := len(ids)
		mu.Unlock()
		if n >= len(want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 60 s %d of %d events delivered", n, len(want))
		}
		time.Sleep(50 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	var order []int64
	seen := map[int64]bool{}
	dups := 0
	for _, s := range got {
		if seen[s] {
			dups++
			continue
		}
		seen[s] = true
		order = append(order, s)
	}
	if !slices.Equal(order, want) {
		t.Fatalf("delivered out of order or with a gap:\n got %v\nwant %v", order, want)
	}
	if bad.Load() != 0 {
		t.Fatalf("%d deliveries failed verification", bad.Load())
	}
	t.Logf("%d events (%d acknowledged writes) delivered by 3 replicas under %d SIGKILLs: 0 lost, %d delivered twice", len(want), acked.Load(), kills, dups)
	if dups > kills*deliver.MaxUnrecorded {
		t.Errorf("%d repeats for %d kills: more than the %d deliveries a killed replica can have left unrecorded",
			dups, kills, deliver.MaxUnrecorded)
	}
}
