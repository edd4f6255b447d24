package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/planserver/planserver/internal/apitest"
	"github.com/planserver/planserver/internal/app"
	"github.com/planserver/planserver/internal/auth"
	"github.com/planserver/planserver/internal/db"
	"github.com/planserver/planserver/internal/dbtest"
	"github.com/planserver/planserver/internal/events"
	planhttp "github.com/planserver/planserver/internal/http"
)

func withTokenAuth(c *app.Config) { c.Auth = planhttp.AuthToken }

// copyFixture is what TestCopyBothWays writes through the API before the
// copy, and the secrets it needs after.
type copyFixture struct {
	admin, agent, revoked string
}

// buildCopyFixture writes one of everything a database holds through the
// API: a session tree with plan mode, a reviewed session plan, todos, a
// shared plan with history, steps, a claim and a report, a deleted plan
// (its revision floor), a deleted session (the highest pk, so only a
// copied counter keeps it from being reused), tokens of every kind, and a
// pruned event log.
func buildCopyFixture(t *testing.T, env *apitest.Env) copyFixture {
	t.Helper()
	f := copyFixture{admin: env.Token(auth.Admin, "root-admin", "")}
	as := env.As(f.admin)
	must := func(r *apitest.Response, want int) *apitest.Response {
		t.Helper()
		if r.Status != want {
			t.Fatalf("%d %s, want %d", r.Status, r.Body, want)
		}
		return r
	}
	must(as.Call("POST", "/v1/sessions", map[string]any{"id": "root", "title": "Root", "metadata": map[string]any{"k": "v"}}), 201)
	must(as.Call("POST", "/v1/sessions", map[string]any{"id": "child", "parent_id": "root", "mode": "plan"}), 201)
	must(as.Call("POST", "/v1/sessions", map[string]any{"id": "grandchild", "parent_id": "child"}), 201)
	must(as.Call("PUT", "/v1/sessions/child/plan", map[string]any{"content": "# plan v1"}), 201)
	must(as.Call("PUT", "/v1/sessions/child/plan", map[string]any{"content": "# plan v2"}, "If-Match", `"1"`), 200)
	must(as.Call("POST", "/v1/sessions/child/plan/review", map[string]any{"rationale": "ready"}), 200)
	must(as.Call("POST", "/v1/sessions/child/plan/approve", map[string]any{}, "If-Match", `"2"`), 200)
	must(as.Call("PUT", "/v1/sessions/grandchild/todos", map[string]any{"todos": []map[string]any{
		{"content": "write it", "status": "in_progress"}, {"content": "test it", "status": "pending"}}}), 200)
	must(as.Call("PUT", "/v1/plans/release", map[string]any{"title": "Release", "content": "# v1", "steps": []map[string]any{
		{"id": "a", "description": "build", "owner": "ci"},
		{"id": "b", "description": "ship", "owner": "ci", "deps": []string{"a"}}}}), 201)
	must(as.Call("PUT", "/v1/plans/release", map[string]any{"content": "# v2"}), 200)
	must(as.Call("PUT", "/v1/plans/release/status", map[string]any{"status": "active"}), 200)
	must(as.Call("POST", "/v1/plans/release/steps/claim", map[string]any{"worker": "w1", "lease_seconds": 600}), 200)
	must(as.Call("POST", "/v1/plans/release/steps/a/reports", map[string]any{"outcome": "success", "details": "built",
		"artifacts": []map[string]any{{"file": "bin/x", "status": "built"}}}), 201)
	must(as.Call("PUT", "/v1/plans/dropped", map[string]any{"content": "soon gone"}), 201)
	must(as.Call("PUT", "/v1/plans/dropped", map[string]any{"content": "going"}), 200)
	must(as.Call("DELETE", "/v1/plans/dropped", nil), 204)
	f.agent = env.Token(auth.Agent, "root-agent", "root")
	f.revoked = env.Token(auth.Viewer, "old-viewer", "")
	must(as.Call("DELETE", "/v1/tokens/old-viewer", nil), 204)
	must(as.Call("POST", "/v1/sessions", map[string]any{"id": "gone"}), 201)
	must(as.Call("DELETE", "/v1/sessions/gone", nil), 204)
	// The first two events are pruned: a cursor before them is expired.
	if n, err := events.Prune(context.Background(), env.DB, events.Retention{MaxRows: headSeq(t, as) - 2}, time.Now()); err != nil || n != 2 {
		t.Fatalf("prune: %d, %v", n, err)
	}
	return f
}

// headSeq is the log's head, from a read's X-Event-Seq.
func headSeq(t *testing.T, env *apitest.Env) int64 {
	t.Helper()
	var head int64
	if _, err := fmt.Sscan(env.Call("GET", "/v1/sessions", nil).Header.Get("X-Event-Seq"), &head); err != nil {
		t.Fatal(err)
	}
	return head
}

// copyPaths are the reads whose answers must be the same after a copy.
var copyPaths = []string{
	"/v1/sessions", "/v1/sessions/root", "/v1/sessions/child", "/v1/sessions/grandchild",
	"/v1/sessions/child/plan", "/v1/sessions/grandchild/todos",
	"/v1/sessions/child/plan/revisions", "/v1/sessions/child/plan/revisions/1", "/v1/sessions/child/reviews",
	"/v1/plans", "/v1/plans/release", "/v1/plans/release/revisions", "/v1/plans/release/revisions/1",
	"/v1/plans/release/steps", "/v1/plans/release/reports", "/v1/plans/release/status",
	"/v1/events?after=2&limit=1000", "/v1/events?after=2&session_id=root", "/v1/events?after=2&plan=release",
}

// answers reads every copyPath: status, ETag, X-Event-Seq and body.
func answers(t *testing.T, env *apitest.Env) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, p := range copyPaths {
		r := env.Call("GET", p, nil)
		out[p] = fmt.Sprintf("%d ETag=%s X-Event-Seq=%s\n%s", r.Status, r.Header.Get("ETag"), r.Header.Get("X-Event-Seq"), r.Body)
	}
	return out
}

func copyCmd(t *testing.T, from, to string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"copy", "--from", from, "--to", to}, noEnv, &out, &errOut)
	return out.String() + errOut.String(), err
}

// TestCopyBothWays moves a database written through the API from SQLite
// to the engine under test (PostgreSQL with make test-postgres) and back
// to a new SQLite file. Every read answers the same, ETags and event
// cursors held from before go on working, tokens keep their rights, and
// keys freed before the copy (a deleted session's pk, a deleted plan's
// revisions, pruned seqs) are not handed out again after it.
func TestCopyBothWays(t *testing.T) {
	src := filepath.Join(t.TempDir(), "source.db")
	env := apitest.Open(t, src, withTokenAuth)
	f := buildCopyFixture(t, env)
	before := answers(t, env.As(f.admin))
	env.Close()
	// The fixture reaches every table: the review history and the session
	// plan's earlier revisions too.
	if !strings.Contains(before["/v1/sessions/child/reviews"], `"approved"`) || !strings.Contains(before["/v1/sessions/child/plan/revisions/1"], "# plan v1") {
		t.Fatalf("fixture without review history:\n%s\n%s", before["/v1/sessions/child/reviews"], before["/v1/sessions/child/plan/revisions/1"])
	}

	mid := dbtest.Fresh(t)
	out, err := copyCmd(t, src, mid)
	if err != nil {
		t.Fatalf("copy to %s: %v\n%s", db.Redact(mid), err, out)
	}
	if !strings.Contains(out, "events") || !strings.Contains(out, "copied") {
		t.Errorf("copy says: %s", out)
	}
	if out, err := copyCmd(t, src, mid); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("second copy into the same database: %v\n%s", err, out)
	}

	env = apitest.Open(t, mid, withTokenAuth)
	as := env.As(f.admin)
	after := answers(t, as)
	for _, p := range copyPaths {
		if before[p] != after[p] {
			t.Errorf("GET %s after the copy:\n%s\nbefore:\n%s", p, after[p], before[p])
		}
	}
	checkCopyGoesOn(t, env, f)
	moved := answers(t, as)
	env.Close()

	back := filepath.Join(t.TempDir(), "back.db")
	if out, err := copyCmd(t, mid, back); err != nil {
		t.Fatalf("copy back: %v\n%s", err, out)
	}
	env = apitest.Open(t, back, withTokenAuth)
	for p, want := range moved {
		if got := answers(t, env.As(f.admin))[p]; got != want {
			t.Errorf("GET %s after copying back:\n%s\nbefore:\n%s", p, got, want)
		}
	}
	// ETags and cursors from before the copy back still work.
	back2 := env.As(f.admin)
	etag := back2.Call("GET", "/v1/plans/release", nil).Header.Get("ETag")
	if r := back2.Call("GET", "/v1/plans/release", nil, "If-None-Match", etag); r.Status != 304 {
		t.Errorf("If-None-Match after copying back: %d", r.Status)
	}
	head := headSeq(t, back2)
	s, err := openSSE(env.Server.URL, "", "Authorization", "Bearer "+f.admin, "Last-Event-ID", fmt.Sprint(head))
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	// A session created after both copies still gets a new identity.
	if r := env.As(f.admin).Call("DELETE", "/v1/sessions/gone", nil); r.Status != 204 {
		t.Fatalf("delete after copying back: %d %s", r.Status, r.Body)
	}
	if r := env.As(f.admin).Call("POST", "/v1/sessions", map[string]any{"id": "gone"}); r.Status != 201 {
		t.Fatalf("create after copying back: %d %s", r.Status, r.Body)
	}
	if p := eventsOf(t, env.As(f.admin), "?after=2&session_id=gone"); len(p) != 1 {
		t.Errorf("the third session named gone sees %d events, want its own 1: %v", len(p), p)
	}
	for want := head + 1; want <= head+2; want++ {
		if e, err := s.next(10 * time.Second); err != nil || e.Seq != want || e.SessionID != "gone" {
			t.Errorf("stream resumed after copying back: %+v, %v; want seq %d", e, err, want)
		}
	}
}

func eventsOf(t *testing.T, env *apitest.Env, query string) []sseEvent {
	t.Helper()
	var page struct {
		Events []sseEvent `json:"events"`
	}
	r := env.Call("GET", "/v1/events"+query, nil)
	if r.Status != 200 {
		t.Fatalf("events %s: %d %s", query, r.Status, r.Body)
	}
	r.JSON(t, &page)
	return page.Events
}

// checkCopyGoesOn uses the copy as clients holding state from before it
// would.
func checkCopyGoesOn(t *testing.T, env *apitest.Env, f copyFixture) {
	t.Helper()
	as := env.As(f.admin)
	head := headSeq(t, as)
	// ETags: unchanged resources are 304, conditional writes apply.
	if r := as.Call("GET", "/v1/plans/release", nil, "If-None-Match", `"5"`); r.Status != 304 {
		t.Errorf("If-None-Match with the ETag from before: %d", r.Status)
	}
	if r := as.Call("PUT", "/v1/plans/release", map[string]any{"content": "# v3"}, "If-Match", `"5"`); r.Status != 200 || r.Header.Get("ETag") != `"6"` {
		t.Errorf("If-Match with the ETag from before: %d %s", r.Status, r.Body)
	}
	if r := as.Call("PUT", "/v1/plans/release", map[string]any{"content": "# stale"}, "If-Match", `"5"`); r.Status != 412 {
		t.Errorf("a stale ETag after the copy: %d", r.Status)
	}
	// A plan re-created under a deleted name continues above its floor.
	if r := as.Call("PUT", "/v1/plans/dropped", map[string]any{"content": "back"}); r.Status != 201 || r.Header.Get("ETag") != `"3"` {
		t.Errorf("re-created plan: %d ETag %s, want revision 3", r.Status, r.Header.Get("ETag"))
	}
	// Event cursors: a pruned one is expired, one from before resumes
	// gap-free, and the new events follow the old head.
	if r := as.Call("GET", "/v1/events?after=1", nil); r.Status != 410 {
		t.Errorf("a cursor before the pruned events: %d %s", r.Status, r.Body)
	}
	s, err := openSSE(env.Server.URL, "", "Authorization", "Bearer "+f.admin, "Last-Event-ID", fmt.Sprint(head))
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	for want := head + 1; want <= head+2; want++ {
		e, err := s.next(10 * time.Second)
		if err != nil || e.Seq != want {
			t.Fatalf("resumed stream: %+v, %v; want seq %d", e, err, want)
		}
	}
	if r := as.Call("POST", "/v1/sessions", map[string]any{"id": "live"}); r.Status != 201 {
		t.Fatal(r.Status)
	}
	if e, err := s.next(10 * time.Second); err != nil || e.Seq != head+3 || e.SessionID != "live" {
		t.Errorf("live event after the copy: %+v, %v", e, err)
	}
	// A session under a deleted one's id is a new identity: it sees none
	// of the old one's events.
	if r := as.Call("POST", "/v1/sessions", map[string]any{"id": "gone"}); r.Status != 201 {
		t.Fatal(r.Status)
	}
	for _, id := range []string{"live", "gone"} {
		if got := eventsOf(t, as, "?after=2&session_id="+id); len(got) != 1 || got[0].Type != "session.created" || got[0].SessionID != id {
			t.Errorf("the new session %s sees %v, want only its own creation", id, got)
		}
	}
	// Tokens: the agent keeps its scope, the revoked one stays revoked.
	if r := env.As(f.agent).Call("GET", "/v1/sessions/grandchild", nil); r.Status != 200 {
		t.Errorf("agent token on its subtree: %d", r.Status)
	}
	if r := env.As(f.agent).Call("GET", "/v1/sessions/gone", nil); r.Status != 404 {
		t.Errorf("agent token outside its scope: %d", r.Status)
	}
	if r := env.As(f.revoked).Call("GET", "/v1/sessions", nil); r.Status != 401 {
		t.Errorf("revoked token: %d", r.Status)
	}
	var toks struct {
		Tokens []struct {
			Name      string  `json:"name"`
			RevokedAt *string `json:"revoked_at"`
		} `json:"tokens"`
	}
	as.Call("GET", "/v1/tokens", nil).JSON(t, &toks)
	if b, _ := json.Marshal(toks); !strings.Contains(string(b), `"old-viewer"`) || len(toks.Tokens) != 3 {
		t.Errorf("tokens after the copy: %s", b)
	}
}

// TestCopyRefuses: a source that does not exist, or is not a planserver
// database, and a target that holds data are refused before anything is
// written.
func TestCopyRefuses(t *testing.T) {
	dir := t.TempDir()
	if out, err := copyCmd(t, filepath.Join(dir, "missing.db"), filepath.Join(dir, "to.db")); err == nil {
		t.Errorf("copy from a missing file: %s", out)
	}
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"copy", "--from", "a.db"}, noEnv, &out, &errOut); err == nil || !strings.Contains(errOut.String(), "usage") {
		t.Errorf("copy without --to: %v %s", err, errOut.String())
	}
	src := filepath.Join(dir, "src.db")
	env := apitest.Open(t, src)
	env.Call("POST", "/v1/sessions", map[string]any{"id": "s"})
	env.Close()
	full := filepath.Join(dir, "full.db")
	env = apitest.Open(t, full)
	env.Call("PUT", "/v1/plans/p", map[string]any{"content": "x"})
	env.Close()
	if out, err := copyCmd(t, src, full); err == nil || !strings.Contains(err.Error(), "not empty") || !strings.Contains(err.Error(), "plans") {
		t.Errorf("copy into a database with a plan: %v %s", err, out)
	}
	old := filepath.Join(dir, "old.db")
	env = apitest.Open(t, old)
	env.Close()
	if err := run(context.Background(), []string{"migrate", "down", "--db", old}, noEnv, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	if out, err := copyCmd(t, old, filepath.Join(dir, "new.db")); err == nil || !strings.Contains(err.Error(), "migrate it first") {
		t.Errorf("copy from an older schema: %v %s", err, out)
	}
}
