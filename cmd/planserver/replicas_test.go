package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/planserver/planserver/internal/apitest"
	"github.com/planserver/planserver/internal/db"
	"github.com/planserver/planserver/internal/dbtest"
	"github.com/planserver/planserver/migrations"
)

// The tests in this file run several planserver processes on one
// PostgreSQL database, as a deployment with replicas behind a load
// balancer does, and check that clients spread over them get the
// guarantees of one server. They need PLANSERVER_TEST_POSTGRES
// (make test-postgres); make stress runs them at length.

// startReplicas starts n planserver processes on one fresh PostgreSQL
// database.
func startReplicas(t *testing.T, n int, extra ...string) (string, []*proc) {
	t.Helper()
	dbtest.RequirePostgres(t)
	dsn := dbtest.Fresh(t)
	procs := make([]*proc, n)
	for i := range procs {
		procs[i] = start(t, dsn, extra...)
	}
	return dsn, procs
}

// kill ends p with SIGKILL and waits for it.
func kill(t *testing.T, p *proc) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err := <-p.done
	p.done <- err // for the cleanup
}

// registerOp performs one operation of the register model on p.
func registerOp(p *proc, in apitest.RegInput) (apitest.RegOutput, error) {
	path := "/v1/plans/" + in.Plan
	if in.Kind == apitest.OpGet {
		st, body, err := tryCall(p, "GET", path, "")
		if err != nil {
			return apitest.RegOutput{}, err
		}
		switch st {
		case http.StatusOK:
			var doc struct {
				Revision int64  `json:"revision"`
				Content  string `json:"content"`
			}
			if err := json.Unmarshal(body, &doc); err != nil {
				return apitest.RegOutput{}, err
			}
			return apitest.RegOutput{OK: true, Rev: doc.Revision, Content: doc.Content}, nil
		case http.StatusNotFound:
			return apitest.RegOutput{}, nil
		}
		return apitest.RegOutput{}, fmt.Errorf("GET %s: %d %s", path, st, body)
	}
	var header []string
	switch in.Kind {
	case apitest.OpCreate:
		header = []string{"If-None-Match", "*"}
	case apitest.OpCAS:
		header = []string{"If-Match", strconv.Quote(strconv.FormatInt(in.Expect, 10))}
	}
	payload, _ := json.Marshal(map[string]string{"content": in.Content})
	st, body, err := tryCall(p, "PUT", path, string(payload), header...)
	if err != nil {
		return apitest.RegOutput{}, err
	}
	switch st {
	case http.StatusOK, http.StatusCreated:
		var doc struct {
			Revision int64 `json:"revision"`
		}
		if err := json.Unmarshal(body, &doc); err != nil {
			return apitest.RegOutput{}, err
		}
		return apitest.RegOutput{OK: true, Rev: doc.Revision}, nil
	case http.StatusPreconditionFailed:
		return apitest.RegOutput{}, nil
	}
	return apitest.RegOutput{}, fmt.Errorf("PUT %s: %d %s", path, st, body)
}

// TestReplicasAreLinearizable: clients create, conditionally write,
// blindly write and read a few plans, each operation through a replica
// picked at random, and the history is checked against the register
// model. Under make stress it runs for PLANSERVER_STRESS and at least
// 10,000 operations.
func TestReplicasAreLinearizable(t *testing.T) {
	_, reps := startReplicas(t, 3)
	duration := apitest.StressDuration(t, 2*time.Second)
	minOps := int64(0)
	if os.Getenv("PLANSERVER_STRESS") != "" {
		minOps = 10_000
	}
	history := apitest.RegisterClients(t, 9, 11, []string{"lin-a", "lin-b", "lin-c"}, duration, minOps,
		func(rng *rand.Rand, in apitest.RegInput) (apitest.RegOutput, error) {
			return registerOp(reps[rng.IntN(len(reps))], in)
		})
	apitest.CheckLinearizable(t, history)
	t.Logf("%d operations through 3 replicas linearizable", len(history))
}

// TestReplicasReadTheirWritesAtOnce: a plan and a session read again and
// again through replica B, so that B serves them from its answer cache,
// are written through replica A; the first read through B after A
// acknowledged each write shows it. No wait for a notification: B checks
// the commit version before it serves a kept answer.
func TestReplicasReadTheirWritesAtOnce(t *testing.T) {
	_, reps := startReplicas(t, 2)
	a, b := reps[0], reps[1]
	if st, body := a.call(t, "POST", "/v1/sessions", `{"id":"ryw"}`); st != http.StatusCreated {
		t.Fatalf("create session: %d %s", st, body)
	}
	for i := 1; i <= 50; i++ {
		content := fmt.Sprintf("# revision %d", i)
		if st, body := a.call(t, "PUT", "/v1/plans/ryw", `{"content":"`+content+`"}`); st != http.StatusOK && st != http.StatusCreated {
			t.Fatalf("PUT %d on A: %d %s", i, st, body)
		}
		title := fmt.Sprintf("title %d", i)
		if st, body := a.call(t, "PATCH", "/v1/sessions/ryw", `{"title":"`+title+`"}`, "Content-Type", "application/merge-patch+json"); st != http.StatusOK {
			t.Fatalf("PATCH %d on A: %d %s", i, st, body)
		}
		for range 3 { // the first read may load; the others are served kept
			st, body := b.call(t, "GET", "/v1/plans/ryw", "")
			var plan struct {
				Revision int64  `json:"revision"`
				Content  string `json:"content"`
			}
			if st != http.StatusOK || json.Unmarshal(body, &plan) != nil || plan.Content != content {
				t.Fatalf("GET plan on B after PUT %d on A was acknowledged: %d %s", i, st, body)
			}
			st, body = b.call(t, "GET", "/v1/sessions/ryw", "")
			var session struct {
				Title string `json:"title"`
			}
			if st != http.StatusOK || json.Unmarshal(body, &session) != nil || session.Title != title {
				t.Fatalf("GET session on B after PATCH %d on A was acknowledged: %d %s", i, st, body)
			}
		}
	}
}

// TestReplicasNeverShareAClaim: 50 workers claim the steps of three plans
// through different replicas, each reporting its step done before it
// claims the next. No step is held by two workers at once, and since a
// done step is never ready again, no step is claimed twice at all. Step
// moves of different plans run at once on PostgreSQL (keyed writes), and
// the event log stays gap-free with one event per revision of each plan.
func TestReplicasNeverShareAClaim(t *testing.T) {
	_, reps := startReplicas(t, 3)
	const stepsPerPlan, workers = 50, 50
	plans := []string{"work-0", "work-1", "work-2"}
	var list []map[string]any
	for i := 0; i < stepsPerPlan; i++ {
		list = append(list, map[string]any{"id": fmt.Sprintf("s%03d", i), "description": "work", "owner": "pool"})
	}
	body, _ := json.Marshal(map[string]any{"content": "# work", "steps": list})
	for _, plan := range plans {
		if st, b := reps[0].call(t, "PUT", "/v1/plans/"+plan, string(body)); st != 201 {
			t.Fatalf("create %s: %d %s", plan, st, b)
		}
	}
	var (
		mu     sync.Mutex
		held   = map[string]string{} // step → worker holding it
		claims = map[string]int{}
		wg     sync.WaitGroup
	)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			worker, plan := fmt.Sprintf("w%02d", w), plans[w%len(plans)]
			for k := 0; ; k++ {
				p := reps[(w+k)%len(reps)]
				st, b, err := tryCall(p, "POST", "/v1/plans/"+plan+"/steps/claim", `{"worker":"`+worker+`","lease_seconds":600}`)
				if err != nil || (st != 200 && st != 204) {
					t.Errorf("%s claim: %d %s %v", worker, st, b, err)
					return
				}
				if st == 204 {
					return // nothing ready: all claimed
				}
				var c struct {
					Step struct {
						ID        string `json:"id"`
						ClaimedBy string `json:"claimed_by"`
					} `json:"step"`
				}
				if err := json.Unmarshal(b, &c); err != nil || c.Step.ClaimedBy != worker {
					t.Errorf("%s claim answered %s (%v)", worker, b, err)
					return
				}
				step := plan + "/" + c.Step.ID
				mu.Lock()
				if other, ok := held[step]; ok {
					t.Errorf("%s claimed %s while %s held it", worker, step, other)
				}
				held[step] = worker
				claims[step]++
				mu.Unlock()
				// Report it done through another replica.
				q := reps[(w+k+1)%len(reps)]
				st, b, err = tryCall(q, "POST", "/v1/plans/"+plan+"/steps/"+c.Step.ID+"/reports", `{"outcome":"success","details":"done by `+worker+`"}`)
				mu.Lock()
				delete(held, step)
				mu.Unlock()
				if err != nil || st != 201 {
					t.Errorf("%s report %s: %d %s %v", worker, c.Step.ID, st, b, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	for id, n := range claims {
		if n != 1 {
			t.Errorf("step %s was claimed %d times", id, n)
		}
	}
	if len(claims) != stepsPerPlan*len(plans) {
		t.Errorf("%d steps claimed, want all %d", len(claims), stepsPerPlan*len(plans))
	}
	for _, plan := range plans {
		_, b := reps[2].call(t, "GET", "/v1/plans/"+plan+"/steps?status=complete", "")
		var done struct {
			Steps []json.RawMessage `json:"steps"`
		}
		if err := json.Unmarshal(b, &done); err != nil || len(done.Steps) != stepsPerPlan {
			t.Errorf("%s: %d steps complete, want %d (%v)", plan, len(done.Steps), stepsPerPlan, err)
		}
	}
	checkLog(t, reps[1], plans, nil)
}

// TestReplicaSIGKILLLosesNothing kills one of three replicas with SIGKILL
// while clients write through all of them. Clients carry on through the
// others, and afterwards every acknowledged write is there, revisions never
// went backwards, and the event log is gap-free and agrees with the plans'
// revisions. Under make stress it kills a replica (and starts it again)
// about once a second for PLANSERVER_STRESS.
func TestReplicaSIGKILLLosesNothing(t *testing.T) {
	dsn, reps := startReplicas(t, 3, "--plan-history", "1000000")
	plans := []string{"kill-a", "kill-b", "kill-c", "kill-d"}
	var (
		mu        sync.Mutex // acked
		repsMu    sync.RWMutex
		acked     []ackedWrite
		afterKill atomic.Int64
		killed    atomic.Bool
		stop      = make(chan struct{})
		wg        sync.WaitGroup
	)
	replica := func(i int) *proc {
		repsMu.RLock()
		defer repsMu.RUnlock()
		return reps[i%len(reps)]
	}
	for w := 0; w < 6; w++ {
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
				content := fmt.Sprintf("writer %d write %d", w, i)
				rev, ok := conditionalWrite(replica(w+i), plan, content)
				if !ok {
					continue // a 412, or the dead replica: try the next one
				}
				mu.Lock()
				acked = append(acked, ackedWrite{plan, rev, content})
				mu.Unlock()
				if killed.Load() {
					afterKill.Add(1)
				}
			}
		}()
	}
	cycles := 1
	if os.Getenv("PLANSERVER_STRESS") != "" {
		cycles = crashCycles(t)
	}
	for c := 0; c < cycles; c++ {
		time.Sleep(time.Duration(300+rand.IntN(300)) * time.Millisecond)
		kill(t, replica(c))
		killed.Store(true)
		time.Sleep(time.Duration(300+rand.IntN(300)) * time.Millisecond)
		if c < cycles-1 {
			p := start(t, dsn, "--plan-history", "1000000")
			repsMu.Lock()
			reps[c%len(reps)] = p
			repsMu.Unlock()
		}
	}
	time.Sleep(time.Second)
	close(stop)
	wg.Wait()
	if afterKill.Load() == 0 {
		t.Fatal("no write was acknowledged after the kill: clients did not carry on")
	}
	checkLog(t, replica((cycles-1)+1), plans, acked)
	t.Logf("%d acknowledged writes (%d after the first kill) survived %d kills", len(acked), afterKill.Load(), cycles)
}

// checkLog checks through p that every acknowledged write is in its plan's
// history, and that the event log is gap-free and holds one write event
// (of the plan or of one of its steps) per revision of each plan.
func checkLog(t *testing.T, p *proc, plans []string, acked []ackedWrite) {
	t.Helper()
	for _, a := range acked {
		checkAcked(t, p, a)
	}
	writes := map[string][]int64{}
	var after int64
	for {
		st, body := p.call(t, "GET", fmt.Sprintf("/v1/events?after=%d&limit=1000", after), "")
		var page struct {
			Events []sseEvent `json:"events"`
			Next   int64      `json:"next_after"`
		}
		if err := json.Unmarshal(body, &page); st != 200 || err != nil {
			t.Fatalf("events after %d: %d %s", after, st, body)
		}
		for _, e := range page.Events {
			if e.Seq != after+1 {
				t.Fatalf("event log has a gap: %d follows %d", e.Seq, after)
			}
			after = e.Seq
			switch e.Type {
			case "plan.created", "plan.updated", "step.claimed", "step.updated", "step.report_added":
				writes[e.Plan] = append(writes[e.Plan], e.Revision)
			}
		}
		if len(page.Events) < 1000 {
			break
		}
	}
	for _, plan := range plans {
		st, body := p.call(t, "GET", "/v1/plans/"+plan, "")
		var cur struct {
			Revision int64 `json:"revision"`
		}
		if st == 200 {
			_ = json.Unmarshal(body, &cur)
		}
		want := make([]int64, cur.Revision)
		for i := range want {
			want[i] = int64(i + 1)
		}
		if !slices.Equal(writes[plan], want) {
			t.Fatalf("%s at revision %d has write events for revisions %v", plan, cur.Revision, writes[plan])
		}
	}
}

// TestReplicasStreamResumesOnAnother: a client streams events from one
// replica while others take the writes (so every event reaches it through
// the commit notifications), the replica dies, and the client resumes on
// another with Last-Event-ID: it gets every event exactly once, in order.
func TestReplicasStreamResumesOnAnother(t *testing.T) {
	_, reps := startReplicas(t, 3)
	const total = 120
	written := make(chan error, 1)
	go func() {
		for i := 0; i < total; i++ {
			p := reps[1+i%2]
			st, b, err := tryCall(p, "POST", "/v1/sessions", fmt.Sprintf(`{"id":"s%03d"}`, i))
			if err != nil || st != 201 {
				written <- fmt.Errorf("create s%03d: %d %s %v", i, st, b, err)
				return
			}
			time.Sleep(2 * time.Millisecond)
		}
		written <- nil
	}()
	s, err := openSSE("http://"+reps[0].addr, "?after=0")
	if err != nil {
		t.Fatal(err)
	}
	var got []sseEvent
	for len(got) < total/2 {
		e, err := s.next(10 * time.Second)
		if err != nil {
			t.Fatalf("stream on the first replica after %d events: %v", len(got), err)
		}
		got = append(got, e)
	}
	kill(t, reps[0])
	// The stream ends with the replica; whatever it had sent is kept.
	for {
		e, err := s.next(5 * time.Second)
		if err != nil {
			break
		}
		got = append(got, e)
	}
	s.close()
	last := got[len(got)-1].Seq
	s, err = openSSE("http://"+reps[2].addr, "", "Last-Event-ID", strconv.FormatInt(last, 10))
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	for len(got) < total {
		e, err := s.next(10 * time.Second)
		if err != nil {
			t.Fatalf("stream on another replica after %d events: %v", len(got), err)
		}
		got = append(got, e)
	}
	if err := <-written; err != nil {
		t.Fatal(err)
	}
	for i, e := range got {
		if e.Seq != int64(i+1) || e.Type != "session.created" || e.SessionID != fmt.Sprintf("s%03d", i) {
			t.Fatalf("event %d is %+v: want seq %d creating s%03d", i, e, i+1, i)
		}
	}
}

// TestPostgresMigrateCommands: planserver migrate up, status and down on
// PostgreSQL; down refuses, since the schema begins at the baseline.
func TestPostgresMigrateCommands(t *testing.T) {
	dbtest.RequirePostgres(t)
	dsn := dbtest.Fresh(t)
	runCmd := func(args ...string) (string, error) {
		var out, errOut bytes.Buffer
		err := run(context.Background(), args, noEnv, &out, &errOut)
		return out.String() + errOut.String(), err
	}
	if out, err := runCmd("migrate", "status", "--db", dsn); err != nil || !strings.Contains(out, "pending") {
		t.Errorf("status before up: %v\n%s", err, out)
	}
	head := db.KnownVersion()
	if out, err := runCmd("migrate", "up", "--db", dsn); err != nil || !strings.Contains(out, fmt.Sprintf("migrated from version 0 to %d", head)) {
		t.Errorf("up: %v\n%s", err, out)
	}
	if out, err := runCmd("migrate", "status", "--db", dsn); err != nil || strings.Contains(out, "pending") || !strings.Contains(out, "applied") {
		t.Errorf("status after up: %v\n%s", err, out)
	}
	if out, err := runCmd("migrate", "up", "--db", dsn); err != nil || !strings.Contains(out, fmt.Sprintf("already at version %d", head)) {
		t.Errorf("second up: %v\n%s", err, out)
	}
	// Down works above the baseline (nothing is lost on an empty
	// database) and refuses at it.
	for _, v := range postgresVersionsAbove(t, 8) {
		if out, err := runCmd("migrate", "down", "--db", dsn); err != nil || !strings.Contains(out, fmt.Sprintf("rolled back migration %d", v)) {
			t.Errorf("down from %d: %v\n%s", v, err, out)
		}
	}
	if out, err := runCmd("migrate", "down", "--db", dsn); err == nil || !strings.Contains(err.Error(), "refusing to roll back") {
		t.Errorf("down at the baseline: %v\n%s", err, out)
	}
	if out, err := runCmd("migrate", "status", "--db", dsn); err != nil || !regexp.MustCompile(`00008_baseline.sql +applied`).MatchString(out) {
		t.Errorf("status after the refused down: %v\n%s", err, out)
	}
}

// postgresVersionsAbove lists the PostgreSQL migration versions above
// floor, newest first. Versions may have gaps (each branch of a round
// takes its own number).
func postgresVersionsAbove(t *testing.T, floor int64) []int64 {
	t.Helper()
	names, err := fs.Glob(migrations.Postgres, "*.sql")
	if err != nil {
		t.Fatal(err)
	}
	var out []int64
	for _, name := range names {
		digits, _, _ := strings.Cut(name, "_")
		v, err := strconv.ParseInt(digits, 10, 64)
		if err != nil {
			t.Fatalf("migration %s: %v", name, err)
		}
		if v > floor {
			out = append(out, v)
		}
	}
	slices.Sort(out)
	slices.Reverse(out)
	return out
}

// TestPostgresServeRefusesANewerSchema: a replica older than the schema
// does not serve it.
func TestPostgresServeRefusesANewerSchema(t *testing.T) {
	dbtest.RequirePostgres(t)
	dsn := dbtest.Fresh(t)
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"migrate", "up", "--db", dsn}, noEnv, &out, &errOut); err != nil {
		t.Fatalf("migrate up: %v\n%s", err, errOut.String())
	}
	conn, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Exec(`INSERT INTO goose_db_version (version_id, is_applied) VALUES (999, true)`); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary, "serve", "--addr", freeAddr(t), "--db", dsn)
	msg, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatal("serve started on a database from the future")
	}
	if !strings.Contains(string(msg), "newer than this binary") || !strings.Contains(string(msg), "999") {
		t.Errorf("refusal does not explain itself: %s", msg)
	}
}

// TestReplicasRevocationIsImmediate: a token revoked through one replica
// is refused by every other at once, and a stream it holds on a third
// replica ends with an error event instead of delivering what comes after.
func TestReplicasRevocationIsImmediate(t *testing.T) {
	dsn, reps := startReplicas(t, 3, "--auth", "token", "--sse-heartbeat", "1s")
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"token", "create", "--role", "admin", "--name", "boss", "--db", dsn}, noEnv, &out, &errOut); err != nil {
		t.Fatalf("token create: %v\n%s", err, errOut.String())
	}
	admin := []string{"Authorization", "Bearer " + strings.TrimSpace(out.String())}
	st, b := reps[0].call(t, "POST", "/v1/tokens", `{"role":"viewer","name":"watcher"}`, admin...)
	var created struct {
		Token string `json:"token"`
	}
	if err := json.Unmarshal(b, &created); st != 201 || err != nil || created.Token == "" {
		t.Fatalf("create viewer: %d %s", st, b)
	}
	viewer := []string{"Authorization", "Bearer " + created.Token}
	if st, b := reps[1].call(t, "GET", "/v1/sessions", "", viewer...); st != 200 {
		t.Fatalf("viewer before the revocation: %d %s", st, b)
	}
	s, err := openSSE("http://"+reps[2].addr, "?after=0", viewer...)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	if st, b := reps[0].call(t, "DELETE", "/v1/tokens/watcher", "", admin...); st != 204 {
		t.Fatalf("revoke: %d %s", st, b)
	}
	for _, p := range reps[1:] {
		if st, b := p.call(t, "GET", "/v1/sessions", "", viewer...); st != 401 {
			t.Errorf("revoked token on another replica: %d %s", st, b)
		}
	}
	if st, b := reps[1].call(t, "POST", "/v1/sessions", `{"id":"after-revocation"}`, admin...); st != 201 {
		t.Fatalf("create: %d %s", st, b)
	}
	for {
		e, err := s.next(10 * time.Second)
		if err != nil {
			if !strings.Contains(err.Error(), "error event") || !strings.Contains(err.Error(), "unauthenticated") {
				t.Errorf("the revoked stream ended with %v, want an unauthenticated error event", err)
			}
			break
		}
		if e.SessionID == "after-revocation" {
			t.Fatalf("a stream delivered an event committed after its token was revoked: %+v", e)
		}
	}
}
