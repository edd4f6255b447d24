package http_test

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/planserver/planserver/internal/apitest"
	"github.com/planserver/planserver/internal/auth"
)

// The event streams of one server share one read of the log per commit
// (events.Tail); these tests hold them to it through the real router and
// database, and to every promise a stream made when it read for itself.

const (
	tailReads   = `planserver_event_log_reads_total{reader="tail"}`
	streamReads = `planserver_event_log_reads_total{reader="stream"}`
)

// openStreams opens n streams with query and the bearer token, and waits
// until all of them are subscribed.
func openStreams(t *testing.T, env *apitest.Env, n int, query, token string) []*stream {
	t.Helper()
	before := metric(t, env, "planserver_event_subscribers")
	out := make([]*stream, n)
	for i := range out {
		out[i] = openStream(t, env, query, "Authorization", "Bearer "+token)
	}
	eventually(t, "streams subscribed", func() bool {
		return metric(t, env, "planserver_event_subscribers") == before+float64(n)
	})
	return out
}

// TestStreamsShareOneReadPerCommit: with 50 streams open on one token,
// each commit costs the server about one read of the log (the tail's) and
// none of the streams' own, and every stream still gets every event, in
// order.
func TestStreamsShareOneReadPerCommit(t *testing.T) {
	env := apitest.New(t, withTokens)
	as := env.As(env.Token(auth.Admin, "human", ""))
	viewer := env.Token(auth.Viewer, "watcher", "")
	putPlan(t, as, "warm", map[string]any{"content": "# warm"}, http.StatusCreated)
	start := headOf(t, as)
	const n, commits = 50, 20
	streams := openStreams(t, env, n, fmt.Sprintf("?after=%d", start), viewer)
	opened := metric(t, env, streamReads)
	if opened > n {
		t.Errorf("opening %d streams took %v reads of their own", n, opened)
	}

	// One commit that every stream sees from the tail.
	putPlan(t, as, "first", map[string]any{"content": "# 1"}, http.StatusCreated)
	for i, s := range streams {
		if e := mustEvent(t, s); e.Seq != start+1 {
			t.Fatalf("stream %d: first event %d, want %d", i, e.Seq, start+1)
		}
	}
	streamBefore, tailBefore := metric(t, env, streamReads), metric(t, env, tailReads)

	for i := 0; i < commits; i++ {
		putPlan(t, as, fmt.Sprintf("p%d", i), map[string]any{"content": "# p"}, http.StatusCreated)
	}
	want := rowsOf(getEvents(t, as, fmt.Sprintf("?after=%d", start+1)).Events)
	if len(want) != commits {
		t.Fatalf("the log has %d events after the first, want %d", len(want), commits)
	}
	var wg sync.WaitGroup
	for i, s := range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var got []logRow
			for range want {
				e, err := s.event()
				if err != nil {
					t.Errorf("stream %d: %v", i, err)
					return
				}
				got = append(got, logRow{e.Seq, e.Type, e.SessionID})
			}
			for j := range want {
				if got[j] != want[j] {
					t.Errorf("stream %d: event %d is %+v, want %+v", i, j, got[j], want[j])
					return
				}
			}
		}()
	}
	wg.Wait()
	if d := metric(t, env, streamReads) - streamBefore; d != 0 {
		t.Errorf("%d commits made the caught-up streams read the log %v times themselves, want 0", commits, d)
	}
	// One tail read per commit, fewer when commits come close enough to
	// share a wake-up, never one per stream.
	if d := metric(t, env, tailReads) - tailBefore; d < 1 || d > commits+2 {
		t.Errorf("%d commits made %v tail reads, want 1 to %d", commits, d, commits+2)
	}
}

// TestRevocationEndsStreamsSharingATailRead: 50 streams share one agent
// token and the tail's reads; when the token is revoked under a stream of
// writes, every stream ends with the 401 error event and none gets an
// event committed after the revocation.
func TestRevocationEndsStreamsSharingATailRead(t *testing.T) {
	env := apitest.New(t, withTokens)
	as := env.As(env.Token(auth.Admin, "human", ""))
	createSession(t, as, map[string]any{"id": "s1"})
	agent := env.Token(auth.Agent, "agent-1", "s1")
	const n = 50
	streams := openStreams(t, env, n, "?after=0", agent)
	outs := make([]chan streamOutcome, n)
	for i, s := range streams {
		outs[i] = make(chan streamOutcome, 1)
		go drain(t, s, outs[i])
	}
	stop := make(chan struct{})
	writer := keepWriting(t, as, stop)
	time.Sleep(200 * time.Millisecond) // the streams deliver for a while
	if r := as.Call("DELETE", "/v1/tokens/agent-1", nil); r.Status != 204 {
		t.Fatalf("revoke: %d %s", r.Status, r.Body)
	}
	revokedAt := headOf(t, as) // every event after this one came after the revocation
	time.Sleep(100 * time.Millisecond)
	close(stop)
	writer.Wait()
	for i, out := range outs {
		var o streamOutcome
		select {
		case o = <-out:
		case <-time.After(10 * time.Second):
			t.Fatalf("stream %d outlived its token", i)
		}
		if len(o.seqs) == 0 {
			t.Errorf("stream %d delivered nothing before the revocation", i)
		}
		for _, seq := range o.seqs {
			if seq > revokedAt {
				t.Errorf("stream %d: event %d reached it after the revocation (head %d)", i, seq, revokedAt)
			}
		}
		if o.problem["code"] != "unauthenticated" || o.problem["status"] != float64(401) {
			t.Errorf("stream %d: closing error event %v, want the 401 problem", i, o.problem)
		}
	}
	if metric(t, env, tailReads) == 0 {
		t.Error("the tail never read: the streams did not share its reads")
	}
}

// TestFilteredStreamsFromTheTail: streams with types, plan and session
// filters, opened with an agent token scoped to a subtree, get from the
// tail exactly what the log reader gives the same query (GET /v1/events
// as JSON), without reading the log themselves.
func TestFilteredStreamsFromTheTail(t *testing.T) {
	env := apitest.New(t, withTokens)
	as := env.As(env.Token(auth.Admin, "human", ""))
	createSession(t, as, map[string]any{"id": "s1"})
	createSession(t, as, map[string]any{"id": "c1", "parent_id": "s1"})
	createSession(t, as, map[string]any{"id": "c2", "parent_id": "s1"})
	createSession(t, as, map[string]any{"id": "s2"})
	agent := env.Token(auth.Agent, "agent-1", "s1")
	start := headOf(t, as)
	queries := []string{
		"",
		"&types=session_plan.updated,plan.created",
		"&types=plan.updated",
		"&plan=p1",
		"&session_id=c1",
		"&session_id=s1&types=session_plan.updated",
	}
	streams := make([]*stream, len(queries))
	for i, q := range queries {
		streams[i] = openStreams(t, env, 1, fmt.Sprintf("?after=%d%s", start, q), agent)[0]
	}
	opened := metric(t, env, streamReads)

	for i := 0; i < 3; i++ {
		for _, id := range []string{"s1", "c1", "c2", "s2"} {
			if r := as.Call("PUT", "/v1/sessions/"+id+"/plan", map[string]any{"content": fmt.Sprintf("# %s %d", id, i)}); r.Status >= 300 {
				t.Fatalf("PUT %s plan: %d %s", id, r.Status, r.Body)
			}
		}
		for _, p := range []string{"p1", "p2"} {
			want := http.StatusOK
			if i == 0 {
				want = http.StatusCreated
			}
			putPlan(t, as, p, map[string]any{"content": fmt.Sprintf("# %s %d", p, i)}, want)
		}
	}
	for i, q := range queries {
		want := getEvents(t, env, fmt.Sprintf("?after=%d%s", start, q), "Authorization", "Bearer "+agent).Events
		if len(want) == 0 {
			t.Fatalf("query %q matches nothing: the test proves nothing", q)
		}
		for j, w := range want {
			e := mustEvent(t, streams[i])
			if e.Seq != w.Seq || e.Type != w.Type || e.SessionID != w.SessionID || e.Plan != w.Plan || string(e.Data) != string(w.Data) {
				t.Fatalf("query %q: event %d is %d %s %q, want %d %s %q", q, j, e.Seq, e.Type, e.SessionID, w.Seq, w.Type, w.SessionID)
			}
		}
	}
	// A commit every stream sees ends each stream's check: nothing more
	// arrived in between than the reader gave.
	putPlan(t, as, "p1", map[string]any{"content": "# last"}, http.StatusOK)
	last := headOf(t, as)
	for i, q := range queries {
		want := getEvents(t, env, fmt.Sprintf("?after=%d%s", last-1, q), "Authorization", "Bearer "+agent).Events
		if len(want) == 1 {
			if e := mustEvent(t, streams[i]); e.Seq != last {
				t.Errorf("query %q: next event %d, want %d", q, e.Seq, last)
			}
		}
	}
	if d := metric(t, env, streamReads) - opened; d != 0 {
		t.Errorf("the filtered streams read the log %v times themselves, want 0", d)
	}
}
