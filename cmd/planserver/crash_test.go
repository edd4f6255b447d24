package main

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// crashCycles is how many times the crash test kills the server: a few in
// make test, many under make stress (PLANSERVER_STRESS set).
func crashCycles(t *testing.T) int {
	if v := os.Getenv("PLANSERVER_STRESS"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("PLANSERVER_STRESS=%q: %v", v, err)
		}
		return max(4, int(d/time.Second)) // about one cycle a second
	}
	return 4
}

type ackedWrite struct {
	plan    string
	rev     int64
	content string
}

// TestSIGKILLUnderConcurrentWritesLosesNothing kills the real binary with
// SIGKILL at random moments while clients do conditional writes, restarts
// it on the same database each time, and checks that the file is intact,
// every acknowledged write is there, revisions never went backwards, and
// the event log is gap-free and agrees with the plans' revisions.
func TestSIGKILLUnderConcurrentWritesLosesNothing(t *testing.T) {
	db := filepath.Join(t.TempDir(), "crash.db")
	plans := []string{"crash-a", "crash-b", "crash-c", "crash-d"}
	rng := rand.New(rand.NewPCG(1, 2))
	var acked []ackedWrite
	highest := map[string]int64{}
	for cycle := 0; cycle < crashCycles(t); cycle++ {
		p := start(t, db, "--plan-history", "1000000")
		checkAfterRestart(t, p, db, plans, acked, highest)

		var (
			mu   sync.Mutex
			wg   sync.WaitGroup
			stop = make(chan struct{})
		)
		for w := 0; w < 4; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					plan := plans[(w+i)%len(plans)]
					content := fmt.Sprintf("cycle %d writer %d write %d", cycle, w, i)
					rev, ok := conditionalWrite(p, plan, content)
					if ok {
						mu.Lock()
						acked = append(acked, ackedWrite{plan, rev, content})
						mu.Unlock()
					}
				}
			}()
		}
		time.Sleep(time.Duration(50+rng.IntN(300)) * time.Millisecond)
		if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		err := <-p.done
		p.done <- err
		close(stop)
		wg.Wait()
	}
	p := start(t, db, "--plan-history", "1000000")
	checkAfterRestart(t, p, db, plans, acked, highest)
	if len(acked) == 0 {
		t.Fatal("no write was acknowledged: the test checked nothing")
	}
	t.Logf("%d acknowledged writes survived %d kills", len(acked), crashCycles(t))
}

// conditionalWrite reads a plan's revision and writes it back with If-Match
// (If-None-Match: * when missing). ok reports an acknowledged write; any
// other outcome (412, a connection cut by the kill) is not one.
func conditionalWrite(p *proc, plan, content string) (int64, bool) {
	st, body, err := tryCall(p, "GET", "/v1/plans/"+plan, "")
	if err != nil {
		return 0, false
	}
	pre := []string{"If-None-Match", "*"}
	if st == 200 {
		var cur struct {
			Revision int64 `json:"revision"`
		}
		if json.Unmarshal(body, &cur) != nil {
			return 0, false
		}
		pre = []string{"If-Match", strconv.Quote(strconv.FormatInt(cur.Revision, 10))}
	}
	payload, _ := json.Marshal(map[string]string{"content": content})
	st, body, err = tryCall(p, "PUT", "/v1/plans/"+plan, string(payload), pre...)
	if err != nil || (st != 200 && st != 201) {
		return 0, false
	}
	var out struct {
		Revision int64 `json:"revision"`
	}
	if json.Unmarshal(body, &out) != nil {
		return 0, false
	}
	return out.Revision, true
}

func checkAfterRestart(t *testing.T, p *proc, db string, plans []string, acked []ackedWrite, highest map[string]int64) {
	t.Helper()
	sqldb, err := sql.Open("sqlite", "file:"+db+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer sqldb.Close()
	var check string
	if err := sqldb.QueryRow("PRAGMA integrity_check").Scan(&check); err != nil || check != "ok" {
		t.Fatalf("integrity_check = %q, %v", check, err)
	}
	// Every acknowledged write is in the history with its content.
	for _, a := range acked {
		st, body := p.call(t, "GET", fmt.Sprintf("/v1/plans/%s/revisions/%d", a.plan, a.rev), "")
		if st != 200 {
			st, body = p.call(t, "GET", "/v1/plans/"+a.plan, "")
		}
		var doc struct {
			Revision int64  `json:"revision"`
			Content  string `json:"content"`
		}
		_ = json.Unmarshal(body, &doc)
		if st != 200 || doc.Revision != a.rev || doc.Content != a.content {
			t.Fatalf("acknowledged write %s@%d %q lost: %d %s", a.plan, a.rev, a.content, st, body)
		}
	}
	// Revisions never go backwards, and the log agrees with them.
	for _, plan := range plans {
		st, body := p.call(t, "GET", "/v1/plans/"+plan, "")
		var cur struct {
			Revision int64 `json:"revision"`
		}
		if st == 200 {
			_ = json.Unmarshal(body, &cur)
		}
		if cur.Revision < highest[plan] {
			t.Fatalf("%s went back from revision %d to %d", plan, highest[plan], cur.Revision)
		}
		highest[plan] = cur.Revision
		rows, err := sqldb.Query(`SELECT revision FROM events WHERE plan = ? AND type IN ('plan.created', 'plan.updated') ORDER BY seq`, plan)
		if err != nil {
			t.Fatal(err)
		}
		var revs []string
		for rows.Next() {
			var r int64
			if err := rows.Scan(&r); err != nil {
				t.Fatal(err)
			}
			revs = append(revs, strconv.FormatInt(r, 10))
		}
		rows.Close()
		want := make([]string, cur.Revision)
		for i := range want {
			want[i] = strconv.Itoa(i + 1)
		}
		if strings.Join(revs, ",") != strings.Join(want, ",") {
			t.Fatalf("%s at revision %d has write events for revisions [%s]", plan, cur.Revision, strings.Join(revs, ","))
		}
	}
	var n, lo, hi int64
	if err := sqldb.QueryRow(`SELECT count(*), coalesce(min(seq), 0), coalesce(max(seq), 0) FROM events`).Scan(&n, &lo, &hi); err != nil {
		t.Fatal(err)
	}
	if n > 0 && hi-lo+1 != n {
		t.Fatalf("event log has gaps: %d events between seq %d and %d", n, lo, hi)
	}
}
