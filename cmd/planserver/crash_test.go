package main

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
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

// checkAcked fails t unless the acknowledged write a can be read back
// through p: its revision in the plan's history (or as the current plan,
// when it is the newest) with its content.
func checkAcked(t *testing.T, p *proc, a ackedWrite) {
	t.Helper()
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

// TestSIGKILLUnderConcurrentWritesLosesNothing kills the real binary with
// SIGKILL at random moments while clients do conditional writes, restarts
// it on the same database each time, and checks that the file is intact,
// every acknowledged write is there, revisions never went backwards, and
// the event log is gap-free and agrees with the plans' revisions.
func TestSIGKILLUnderConcurrentWritesLosesNothing(t *testing.T) {
	db := filepath.Join(t.TempDir(), "crash.db")
	plans := []string{"crash-a", "crash-b", "crash-c", "crash-d"}
	rng := rand.New(rand.NewPCG(1, 2))
	check := newCrashChecker(db, plans)
	for cycle := 0; cycle < crashCycles(t); cycle++ {
		p := start(t, db, "--plan-history", "1000000")
		check.afterRestart(t, p, false)

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
						check.acked = append(check.acked, ackedWrite{plan, rev, content})
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
	check.afterRestart(t, p, true)
	if len(check.acked) == 0 {
		t.Fatal("no write was acknowledged: the test checked nothing")
	}
	t.Logf("%d acknowledged writes survived %d kills", len(check.acked), crashCycles(t))
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

// crashChecker checks the database after each restart in time that grows
// linearly with the writes of the whole test, however many kills there
// are (re-reading everything after every kill made make stress grow with
// its square):
//
//   - every acknowledged write is read back once after the restart that
//     follows it, a bounded random sample of older ones after every
//     restart, and all of them once more after the final restart;
//   - the event log is checked from where the last check stopped (gap-free,
//     each plan's write events numbering its revisions 1, 2, 3, …), and
//     whole after the final restart;
//   - integrity_check, which reads the whole file, runs after restarts 1,
//     2, 4, 8, … and the final one: a doubling schedule costs at most
//     twice one check of the final file, and damage, which stays, is still
//     found.
type crashChecker struct {
	db    string
	plans []string
	rng   *rand.Rand

	acked    []ackedWrite
	checked  int // acked[:checked] were read back after some restart
	highest  map[string]int64
	restarts int
	// logSeq is the seq up to which the event log was checked, and
	// logRev each plan's last revision seen in it.
	logSeq int64
	logRev map[string]int64
}

// sampleOlder is how many earlier acknowledged writes each restart reads
// back again.
const sampleOlder = 32

func newCrashChecker(db string, plans []string) *crashChecker {
	return &crashChecker{db: db, plans: plans, rng: rand.New(rand.NewPCG(3, 4)),
		highest: map[string]int64{}, logRev: map[string]int64{}}
}

func (c *crashChecker) afterRestart(t *testing.T, p *proc, final bool) {
	t.Helper()
	c.restarts++
	sqldb, err := sql.Open("sqlite", "file:"+c.db+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer sqldb.Close()
	if final || c.restarts&(c.restarts-1) == 0 {
		var check string
		if err := sqldb.QueryRow("PRAGMA integrity_check").Scan(&check); err != nil || check != "ok" {
			t.Fatalf("integrity_check after restart %d = %q, %v", c.restarts, check, err)
		}
	}
	// Every acknowledged write is in the history with its content.
	verify := c.acked[c.checked:]
	if final {
		verify = c.acked
	} else if c.checked > 0 {
		for range min(sampleOlder, c.checked) {
			verify = append(verify[:len(verify):len(verify)], c.acked[c.rng.IntN(c.checked)])
		}
	}
	for _, a := range verify {
		checkAcked(t, p, a)
	}
	c.checked = len(c.acked)
	// The log, from where the last check stopped (from the start when
	// final): gap-free, and each plan's write events number its revisions.
	if final {
		c.logSeq, c.logRev = 0, map[string]int64{}
	}
	rows, err := sqldb.Query(`SELECT seq, plan, revision FROM events WHERE seq > ?
		AND type IN ('plan.created', 'plan.updated') ORDER BY seq`, c.logSeq)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var (
			seq, rev int64
			plan     string
		)
		if err := rows.Scan(&seq, &plan, &rev); err != nil {
			t.Fatal(err)
		}
		if rev != c.logRev[plan]+1 {
			t.Fatalf("event %d: %s write at revision %d after revision %d", seq, plan, rev, c.logRev[plan])
		}
		c.logRev[plan] = rev
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	var n, hi int64
	if err := sqldb.QueryRow(`SELECT count(*), coalesce(max(seq), 0) FROM events WHERE seq > ?`, c.logSeq).Scan(&n, &hi); err != nil {
		t.Fatal(err)
	}
	if n > 0 && hi-c.logSeq != n {
		t.Fatalf("event log has gaps: %d events between seq %d and %d", n, c.logSeq+1, hi)
	}
	c.logSeq = max(c.logSeq, hi)
	// Revisions never go backwards, and the log agrees with them.
	for _, plan := range c.plans {
		st, body := p.call(t, "GET", "/v1/plans/"+plan, "")
		var cur struct {
			Revision int64 `json:"revision"`
		}
		if st == 200 {
			_ = json.Unmarshal(body, &cur)
		}
		if cur.Revision < c.highest[plan] {
			t.Fatalf("%s went back from revision %d to %d", plan, c.highest[plan], cur.Revision)
		}
		c.highest[plan] = cur.Revision
		if c.logRev[plan] != cur.Revision {
			t.Fatalf("%s is at revision %d, its last write event at %d", plan, cur.Revision, c.logRev[plan])
		}
	}
}
