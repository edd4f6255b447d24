package http_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/planserver/planserver/internal/apitest"
	"github.com/planserver/planserver/internal/app"
	"github.com/planserver/planserver/internal/auth"
)

// streamOutcome is what a stream delivered until it ended: the seqs of
// its events, and the problem of its closing error event, if any.
type streamOutcome struct {
	seqs    []int64
	problem map[string]any
}

// drain reads s until it ends, recording every event and the problem of
// an error event.
func drain(t *testing.T, s *stream, out chan<- streamOutcome) {
	t.Helper()
	var o streamOutcome
	for {
		b, err := s.block()
		if err != nil {
			break
		}
		if b.Event == "error" {
			_ = json.Unmarshal([]byte(b.Data), &o.problem)
			continue
		}
		if b.Data == "" {
			continue
		}
		e, err := decodeBlock(b)
		if err != nil {
			t.Errorf("bad block: %v", err)
			break
		}
		o.seqs = append(o.seqs, e.Seq)
	}
	out <- o
}

// keepWriting writes plan events as admin until stop is closed.
func keepWriting(t *testing.T, as *apitest.Env, stop <-chan struct{}) *sync.WaitGroup {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if r := as.Call("PUT", "/v1/plans/busy", map[string]any{"content": fmt.Sprintf("# v%d", i)}); r.Status >= 300 {
				t.Errorf("writer: %d %s", r.Status, r.Body)
				return
			}
		}
	}()
	return &wg
}

// TestStreamEndsWithItsToken opens event streams for agent tokens while a
// writer keeps writing, then takes each token's right away — revoked,
// expired, its session deleted — and checks that the stream ends with an
// error event carrying the problem and that not one event committed after
// the right went reached it.
func TestStreamEndsWithItsToken(t *testing.T) {
	env := apitest.New(t, withTokens)
	adminTok := env.Token(auth.Admin, "human", "")
	as := env.As(adminTok)
	for _, id := range []string{"s1", "s2", "s3"} {
		createSession(t, as, map[string]any{"id": id})
	}
	cases := []struct {
		name   string
		token  string
		revoke func()
	}{
		{"revoked", env.Token(auth.Agent, "agent-1", "s1"), func() {
			if r := as.Call("DELETE", "/v1/tokens/agent-1", nil); r.Status != 204 {
				t.Fatalf("revoke: %d %s", r.Status, r.Body)
			}
		}},
		{"session deleted", env.Token(auth.Agent, "agent-3", "s3"), func() {
			if r := as.Call("DELETE", "/v1/sessions/s3", nil); r.Status != 204 {
				t.Fatalf("delete: %d %s", r.Status, r.Body)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := openStream(t, env, "?after=0", "Authorization", "Bearer "+c.token)
			out := make(chan streamOutcome, 1)
			go drain(t, s, out)
			stop := make(chan struct{})
			writer := keepWriting(t, as, stop)
			time.Sleep(100 * time.Millisecond) // the stream delivers for a while
			c.revoke()
			revokedAt := headOf(t, as) // every event after this one came after the revocation
			time.Sleep(100 * time.Millisecond)
			close(stop)
			writer.Wait()
			var o streamOutcome
			select {
			case o = <-out:
			case <-time.After(10 * time.Second):
				t.Fatal("the stream outlived its right to read")
			}
			if len(o.seqs) == 0 {
				t.Fatal("the stream delivered nothing before the revocation")
			}
			for _, seq := range o.seqs {
				if seq > revokedAt {
					t.Errorf("event %d reached the stream after the revocation (head %d)", seq, revokedAt)
				}
			}
			if o.problem["code"] != "unauthenticated" || o.problem["status"] != float64(401) {
				t.Errorf("closing error event %v, want the 401 problem", o.problem)
			}
		})
	}

	// Expiry: nothing is written when a token expires, so the stream
	// notices at its next read or heartbeat.
	t.Run("expired", func(t *testing.T) {
		now := time.Now()
		var shift atomic.Int64
		env.DB.SetClock(func() time.Time { return now.Add(time.Duration(shift.Load())) })
		defer env.DB.SetClock(time.Now)
		secret, _, err := auth.NewStore(env.DB).Create(t.Context(), auth.CreateInput{Role: "agent", Name: "agent-2", SessionID: "s2", TTL: "1h"})
		if err != nil {
			t.Fatal(err)
		}
		s := openStream(t, env, "?after=0", "Authorization", "Bearer "+secret)
		out := make(chan streamOutcome, 1)
		go drain(t, s, out)
		shift.Store(int64(2 * time.Hour))
		putPlan(t, as, "after-expiry", map[string]any{"content": "# late"}, http.StatusCreated)
		expiredAt := headOf(t, as)
		o := <-out
		for _, seq := range o.seqs {
			if seq >= expiredAt {
				t.Errorf("event %d reached the stream after its token expired", seq)
			}
		}
		if o.problem["code"] != "unauthenticated" || !strings.Contains(fmt.Sprint(o.problem["detail"]), "expired") {
			t.Errorf("closing error event %v, want the 401 problem saying the token expired", o.problem)
		}
	})
}

// TestHeartbeatRechecksTheToken revokes the token of an idle stream: with
// nothing written, the next heartbeat ends it.
func TestHeartbeatRechecksTheToken(t *testing.T) {
	env := apitest.New(t, withTokens, func(c *app.Config) { c.SSEHeartbeat = 50 * time.Millisecond })
	adminTok := env.Token(auth.Admin, "human", "")
	createSession(t, env.As(adminTok), map[string]any{"id": "s"})
	agent := env.Token(auth.Agent, "agent", "s")
	s := openStream(t, env, "", "Authorization", "Bearer "+agent)
	out := make(chan streamOutcome, 1)
	go drain(t, s, out)
	if _, err := auth.NewStore(env.DB).Revoke(t.Context(), "agent"); err != nil {
		t.Fatal(err)
	}
	select {
	case o := <-out:
		if o.problem["code"] != "unauthenticated" {
			t.Errorf("closing error event %v", o.problem)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("an idle stream outlived its revoked token")
	}
}

// TestReusedIDIsAnotherSession: tenant A's tree is deleted and a root
// with one of its ids is made for tenant B. B's agent sees none of A's
// events — through SSE, JSON pages and ?after=0 — and A's token is dead.
func TestReusedIDIsAnotherSession(t *testing.T) {
	env := apitest.New(t, withTokens)
	as := env.As(env.Token(auth.Admin, "human", ""))
	createSession(t, as, map[string]any{"id": "team"})
	createSession(t, as, map[string]any{"id": "team.a", "parent_id": "team"})
	tenantA := env.Token(auth.Agent, "tenant-a", "team")
	asA := env.As(tenantA)
	writeSessionPlan(t, asA, "team.a", map[string]any{"content": "# A's secret plan"}, http.StatusCreated)
	asA.Call("PUT", "/v1/sessions/team/todos", map[string]any{"todos": []map[string]any{{"content": "A's secret todo", "status": "pending"}}})
	if r := as.Call("DELETE", "/v1/sessions/team", nil); r.Status != 204 {
		t.Fatal(r.Status)
	}
	createSession(t, as, map[string]any{"id": "team"})
	createSession(t, as, map[string]any{"id": "team.a", "parent_id": "team"})
	tenantB := env.Token(auth.Agent, "tenant-b", "team")
	asB := env.As(tenantB)
	writeSessionPlan(t, asB, "team.a", map[string]any{"content": "# B's plan"}, http.StatusCreated)

	check := func(how string, body []byte) {
		t.Helper()
		if strings.Contains(string(body), "secret") {
			t.Errorf("%s: tenant B reads tenant A's events: %s", how, body)
		}
	}
	for _, q := range []string{"?after=0&limit=1000", "?limit=1000", "?session_id=team&after=0", "?session_id=team.a&after=0"} {
		r := asB.Call("GET", "/v1/events"+q, nil)
		if r.Status != 200 {
			t.Fatalf("%s: %d %s", q, r.Status, r.Body)
		}
		check("JSON "+q, r.Body)
		var page eventPage
		r.JSON(t, &page)
		if len(page.Events) == 0 {
			t.Errorf("JSON %s: B sees no events at all, not even its own", q)
		}
	}
	// B's plan write is the newest event: a stream is caught up once it
	// has delivered it.
	head := headOf(t, as)
	for _, q := range []string{"?after=0", "?session_id=team&after=0"} {
		s := openStream(t, env, q, "Authorization", "Bearer "+tenantB)
		for {
			b, err := s.block()
			if err != nil {
				t.Fatal(err)
			}
			check("SSE "+q, []byte(b.Data))
			if e, err := decodeBlock(b); err == nil && e.Seq >= head {
				break
			}
		}
		s.close()
	}
	if r := asA.Call("GET", "/v1/sessions/team", nil); r.Status != 401 {
		t.Errorf("tenant A's token after its tree was deleted: %d %s", r.Status, r.Body)
	}
}

// TestAgentsDoNotNameSessions: an agent may not choose a new session's id,
// whether or not it is taken, so it learns nothing about ids outside its
// tree; without one it gets a generated id, whose revision starts at 1.
func TestAgentsDoNotNameSessions(t *testing.T) {
	env := apitest.New(t, withTokens)
	as := env.As(env.Token(auth.Admin, "human", ""))
	createSession(t, as, map[string]any{"id": "mine"})
	createSession(t, as, map[string]any{"id": "elsewhere"})
	createSession(t, as, map[string]any{"id": "gone"})
	as.Call("DELETE", "/v1/sessions/gone", nil)
	agent := env.As(env.Token(auth.Agent, "agent", "mine"))
	var first *apitest.Response
	for _, id := range []string{"elsewhere", "gone", "never-used"} {
		r := agent.Call("POST", "/v1/sessions", map[string]any{"id": id, "parent_id": "mine"})
		if r.Status != 403 || r.Code() != "permission_denied" {
			t.Errorf("agent naming %q: %d %s", id, r.Status, r.Body)
		}
		if first == nil {
			first = r
		} else if detail(t, r) != detail(t, first) {
			t.Errorf("naming %q answers differently: %s vs %s", id, r.Body, first.Body)
		}
	}
	r := agent.Call("POST", "/v1/sessions", map[string]any{"parent_id": "mine"})
	if r.Status != 201 {
		t.Fatalf("agent child: %d %s", r.Status, r.Body)
	}
	var s session
	r.JSON(t, &s)
	if !strings.HasPrefix(s.ID, "ses_") || s.Revision != 1 {
		t.Errorf("agent child %s at revision %d, want a generated id at revision 1", s.ID, s.Revision)
	}
}

func detail(t *testing.T, r *apitest.Response) string {
	t.Helper()
	var p map[string]any
	r.JSON(t, &p)
	return fmt.Sprint(p["detail"])
}

// TestHostileRequestShapes: every JSON route refuses a member named twice
// (at any depth), anything after the one JSON value, and a request with two
// Authorization headers.
func TestHostileRequestShapes(t *testing.T) {
	env := apitest.New(t)
	createSession(t, env, map[string]any{"id": "s"})
	cases := []struct {
		method, path, body, field string
	}{
		{"PATCH", "/v1/sessions/s/mode", `{"mode":"plan","mode":"build"}`, "mode"},
		{"POST", "/v1/sessions", `{"id":"a","title":"t","id":"b"}`, "id"},
		{"PUT", "/v1/plans/p", `{"content":"x","steps":[{"id":"a","description":"d","owner":"o","id":"b"}]}`, "steps[0].id"},
		{"POST", "/v1/sessions/s/tools/filter", `{"tools":[{"name":"x","annotations":{"readOnlyHint":false,"readOnlyHint":true}}]}`,
			"tools[0].annotations.readOnlyHint"},
		{"PUT", "/v1/sessions/s/todos", `{"todos":[{"content":"a","status":"pending","status":"in_progress"}]}`, "todos[0].status"},
	}
	for _, c := range cases {
		r := env.Bad(c.method, c.path, c.body)
		if r.Status != 400 || !strings.Contains(string(r.Body), `"field":"`+c.field+`"`) {
			t.Errorf("%s %s with %s repeated: %d %s", c.method, c.path, c.field, r.Status, r.Body)
		}
	}
	// A stray closing bracket after the object is not one JSON value
	// either (json.Decoder.More says false before it).
	for _, body := range []string{`{"mode":"plan"} }`, `{"mode":"plan"}]`, `{"mode":"plan"} {}`} {
		if r := env.Bad("PATCH", "/v1/sessions/s/mode", body); r.Status != 400 || !strings.Contains(string(r.Body), "more than one JSON value") {
			t.Errorf("PATCH mode with %s: %d %s", body, r.Status, r.Body)
		}
	}
	if n := countRows(t, env, "plans", ""); n != 0 {
		t.Errorf("a refused write stored %d plans", n)
	}
	if getSession(t, env, "s").Mode != "build" {
		t.Error("a refused mode change took effect")
	}

	req, _ := http.NewRequest("GET", env.Server.URL+"/v1/sessions/s", nil)
	req.Header.Add("Authorization", "Bearer a")
	req.Header.Add("Authorization", "Bearer b")
	resp, err := env.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || !strings.Contains(string(body), `"field":"Authorization"`) {
		t.Errorf("two Authorization headers: %d %s", resp.StatusCode, body)
	}
}

// TestApprovalNamesExactlyOneRevision: approve's If-Match is one strong
// tag, "7" or 7; a list, *, a weak tag, leading zeros or trailing garbage
// is 400 and changes nothing.
func TestApprovalNamesExactlyOneRevision(t *testing.T) {
	env := apitest.New(t)
	createSession(t, env, map[string]any{"id": "s", "mode": "plan"})
	writeSessionPlan(t, env, "s", map[string]any{"content": "# plan"}, http.StatusCreated)
	act(t, env, "s", "review", nil, 200)
	for _, im := range []string{"*", `"1", "2"`, `W/"1"`, `"01"`, "01", `"1"x`, "1x", `""`, "0", `"1`} {
		r := env.Bad("POST", "/v1/sessions/s/plan/approve", nil, "If-Match", im)
		if r.Status != 400 || !strings.Contains(string(r.Body), `"field":"If-Match"`) {
			t.Errorf("approve with If-Match %s: %d %s", im, r.Status, r.Body)
		}
	}
	if s := getSession(t, env, "s"); s.Mode != "plan" || s.Review.State != "pending" {
		t.Fatalf("a refused approval changed the session: %+v", s)
	}
	act(t, env, "s", "approve", nil, 200, "If-Match", "1")
}

// TestEmptyIDIsInvalid: an id given but empty is invalid, not "generate
// one".
func TestEmptyIDIsInvalid(t *testing.T) {
	env := apitest.New(t)
	r := env.Bad("POST", "/v1/sessions", map[string]any{"id": ""})
	if r.Status != 400 || !strings.Contains(string(r.Body), `"field":"id"`) {
		t.Errorf(`"id": "": %d %s`, r.Status, r.Body)
	}
	if n := countRows(t, env, "sessions", ""); n != 0 {
		t.Errorf("%d sessions after a refused create", n)
	}
}

// TestEventTypeFilterIsBounded: ?types= may name each type once; repeats
// are dropped, and more names than there are types is refused.
func TestEventTypeFilterIsBounded(t *testing.T) {
	env := apitest.New(t)
	createSession(t, env, map[string]any{"id": "s"})
	repeated := strings.TrimSuffix(strings.Repeat("session.created,", 5), ",")
	if p := getEvents(t, env, "?after=0&types="+repeated); len(p.Events) != 1 {
		t.Errorf("repeated type: %d events", len(p.Events))
	}
	many := strings.TrimSuffix(strings.Repeat("session.created,", 1000), ",")
	if r := env.Bad("GET", "/v1/events?types="+many, nil); r.Status != 400 || r.Code() != "invalid_argument" {
		t.Errorf("a thousand types: %d %s", r.Status, r.Body)
	}
}

// TestBodyWithoutMediaTypeIsRefused: a web page can POST a body without a
// Content-Type to any origin without asking (fetch with mode "no-cors"
// and a Blob); such a body is never taken as JSON, so the page cannot
// reject a review or create sessions. Requests without a body still need
// no Content-Type.
func TestBodyWithoutMediaTypeIsRefused(t *testing.T) {
	env := apitest.New(t)
	createSession(t, env, map[string]any{"id": "victim", "mode": "plan"})
	writeSessionPlan(t, env, "victim", map[string]any{"content": "# plan"}, http.StatusCreated)
	for _, c := range []struct{ path, body string }{
		{"/v1/sessions/victim/plan/reject", `{"feedback":"from a web page"}`},
		{"/v1/sessions", `{"id":"planted"}`},
	} {
		req, _ := http.NewRequest("POST", env.Server.URL+c.path, strings.NewReader(c.body))
		resp, err := env.Client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 415 || !strings.Contains(string(body), "unsupported_media_type") {
			t.Errorf("POST %s without Content-Type: %d %s", c.path, resp.StatusCode, body)
		}
	}
	// Asking for review has no body, and needs no Content-Type.
	req, _ := http.NewRequest("POST", env.Server.URL+"/v1/sessions/victim/plan/review", nil)
	resp, err := env.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("review without a body: %d", resp.StatusCode)
	}
	if s := getSession(t, env, "victim"); s.Review.State != "pending" {
		t.Errorf("review state %s, want pending: the refused reject took effect?", s.Review.State)
	}
	if n := countRows(t, env, "sessions", "id = 'planted'"); n != 0 {
		t.Error("a body without Content-Type created a session")
	}
}
