package http_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/apitest"
	"github.com/planserver/planserver/internal/app"
)

// reviewed is a session with its review, and the note of an approval.
type reviewed struct {
	session
	Note *string `json:"note"`
}

type sessionPlan = api.SessionPlan

func writeSessionPlan(t *testing.T, env *apitest.Env, id string, body any, wantStatus int, header ...string) sessionPlan {
	t.Helper()
	r := env.Call("PUT", "/v1/sessions/"+id+"/plan", body, header...)
	if r.Status != wantStatus {
		t.Fatalf("put plan of %s: %d %s, want %d", id, r.Status, r.Body, wantStatus)
	}
	var p sessionPlan
	r.JSON(t, &p)
	if r.Header.Get("ETag") != fmt.Sprintf(`"%d"`, p.Revision) {
		t.Errorf("plan ETag %s for revision %d", r.Header.Get("ETag"), p.Revision)
	}
	return p
}

// act posts a review action and checks its status.
func act(t *testing.T, env *apitest.Env, id, action string, body any, wantStatus int, header ...string) (*apitest.Response, reviewed) {
	t.Helper()
	r := env.Call("POST", "/v1/sessions/"+id+"/plan/"+action, body, header...)
	if r.Status != wantStatus {
		t.Fatalf("%s %s: %d %s, want %d", action, id, r.Status, r.Body, wantStatus)
	}
	var s reviewed
	if r.Status == 200 {
		r.JSON(t, &s)
	}
	return r, s
}

func getReviewed(t *testing.T, env *apitest.Env, id string) reviewed {
	t.Helper()
	var s reviewed
	env.Call("GET", "/v1/sessions/"+id, nil).JSON(t, &s)
	return s
}

type filterResult = api.FilterResult

// turnTools is a host's toolset for one turn, in the MCP shape.
var turnTools = map[string]any{"tools": []any{
	map[string]any{"name": "read_file", "annotations": map[string]any{"readOnlyHint": true}},
	map[string]any{"name": "write_file", "annotations": map[string]any{"readOnlyHint": false, "destructiveHint": true}},
	map[string]any{"name": "shell", "description": "run a command", "inputSchema": map[string]any{"type": "object"}},
	map[string]any{"name": "write_session_plan"},
	map[string]any{"name": "exit_plan_mode"},
}}

func filter(t *testing.T, env *apitest.Env, id string) filterResult {
	t.Helper()
	r := env.Call("POST", "/v1/sessions/"+id+"/tools/filter", turnTools)
	if r.Status != 200 {
		t.Fatalf("filter %s: %d %s", id, r.Status, r.Body)
	}
	var f filterResult
	r.JSON(t, &f)
	return f
}

// eventData returns the data of every event of a type for a session, oldest
// first.
func eventData(t *testing.T, env *apitest.Env, typ, sessionID string) []map[string]any {
	t.Helper()
	rows, err := env.DB.Reader(context.Background()).Query(`SELECT data FROM events WHERE type = ? AND session_id = ? ORDER BY seq`, typ, sessionID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []map[string]any
	for rows.Next() {
		var raw string
		if err := rows.Scan(&raw); err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(raw), &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestPlanModeLoop walks the whole loop of the README through the real
// router: plan mode, gated tools (for a sub-session too), the plan, a
// review, a rejection with feedback, a new revision, a stale approval
// refused, the approval, and tools no longer gated.
func TestPlanModeLoop(t *testing.T) {
	env := apitest.New(t)
	createSession(t, env, map[string]any{"id": "main", "mode": "plan"})
	createSession(t, env, map[string]any{"id": "main.worker", "parent_id": "main"})

	for _, id := range []string{"main", "main.worker"} {
		f := filter(t, env, id)
		if f.EffectiveMode != "plan" || strings.Join(f.Allowed, ",") != "read_file,write_session_plan,exit_plan_mode" ||
			strings.Join(f.Removed, ",") != "write_file,shell" || f.Reminder == nil {
			t.Fatalf("filter %s in plan mode: %+v", id, f)
		}
		if !strings.HasPrefix(*f.Reminder, "<system-reminder>") || !strings.Contains(*f.Reminder, "write_session_plan") ||
			!strings.Contains(*f.Reminder, "exit_plan_mode") {
			t.Errorf("reminder of %s: %s", id, *f.Reminder)
		}
	}
	if f := filter(t, env, "main.worker"); !strings.Contains(*f.Reminder, `ancestor session "main"`) {
		t.Errorf("sub-session reminder does not say who put it in plan mode: %s", *f.Reminder)
	}

	if r := env.Call("GET", "/v1/sessions/main/plan", nil); r.Status != 404 || r.Code() != "not_found" {
		t.Errorf("plan before any: %d %s", r.Status, r.Body)
	}
	if r, _ := act(t, env, "main", "review", nil, 409); r.Code() != "plan_missing" {
		t.Errorf("review without a plan: %s", r.Body)
	}

	r := env.Call("PUT", "/v1/sessions/main/plan", map[string]any{"content": "# Plan\n1. rewrite billing", "author": "planner"})
	if r.Status != 201 || r.Header.Get("Location") != "/v1/sessions/main/plan" || r.Header.Get("ETag") != `"1"` {
		t.Fatalf("first plan: %d %v %s", r.Status, r.Header, r.Body)
	}
	md := env.Call("GET", "/v1/sessions/main/plan", nil, "Accept", "text/markdown")
	if md.Status != 200 || string(md.Body) != "# Plan\n1. rewrite billing" ||
		!strings.HasPrefix(md.Header.Get("Content-Type"), "text/markdown") || md.Header.Get("ETag") != `"1"` {
		t.Errorf("markdown plan: %d %q %v", md.Status, md.Body, md.Header)
	}

	_, s := act(t, env, "main", "review", map[string]any{"rationale": "investigated; ready"}, 200)
	if s.Review.State != "pending" || *s.Review.PlanRevision != 1 || *s.Review.Rationale != "investigated; ready" ||
		s.Review.RequestedAt == nil || s.Mode != "plan" {
		t.Errorf("after review request: %+v", s)
	}
	_, s = act(t, env, "main", "reject", map[string]any{"feedback": "add a rollback step"}, 200)
	if s.Review.State != "rejected" || *s.Review.Feedback != "add a rollback step" || *s.Review.DecidedBy != "anonymous" ||
		s.Review.DecidedAt == nil || s.Mode != "plan" || s.EffectiveMode != "plan" {
		t.Errorf("after rejection: %+v", s)
	}
	if r, _ := act(t, env, "main", "approve", nil, 409, "If-Match", `"1"`); r.Code() != "review_not_pending" {
		t.Errorf("approve a rejected review: %s", r.Body)
	}
	if r, _ := act(t, env, "main", "reject", nil, 409); r.Code() != "review_not_pending" {
		t.Errorf("reject twice: %s", r.Body)
	}

	p := writeSessionPlan(t, env, "main", "# Plan\n1. rewrite billing\n2. roll back on failure", 200, "Content-Type", "text/markdown")
	// Written without an author: the writer's (anonymous under --auth
	// none), not the previous revision's "planner".
	if p.Revision != 2 || p.Author != "anonymous" {
		t.Errorf("second revision: %+v", p)
	}
	_, s = act(t, env, "main", "review", nil, 200)
	if s.Review.State != "pending" || *s.Review.PlanRevision != 2 || s.Review.Feedback != nil || s.Review.DecidedAt != nil {
		t.Errorf("second review request: %+v", s.Review)
	}

	// The human read revision 1: refused, and nothing changes.
	before := getReviewed(t, env, "main")
	r, _ = act(t, env, "main", "approve", nil, 412, "If-Match", `"1"`)
	if r.Code() != "version_conflict" || r.Map(t)["current_revision"] != float64(2) {
		t.Errorf("stale approval: %s", r.Body)
	}
	if after := getReviewed(t, env, "main"); after.Mode != "plan" || after.Review.State != "pending" || after.Revision != before.Revision {
		t.Errorf("stale approval changed the session: %+v", after)
	}
	if r := env.Bad("POST", "/v1/sessions/main/plan/approve", nil); r.Status != 428 || r.Code() != "precondition_required" {
		t.Errorf("approval without If-Match: %d %s", r.Status, r.Body)
	}
	for _, im := range []string{"*", `"1", "2"`} {
		if r, _ := act(t, env, "main", "approve", nil, 400, "If-Match", im); !strings.Contains(string(r.Body), `"field":"If-Match"`) {
			t.Errorf("approval with If-Match %s: %s", im, r.Body)
		}
	}

	_, s = act(t, env, "main", "approve", nil, 200, "If-Match", `"2"`)
	if s.Review.State != "approved" || *s.Review.PlanRevision != 2 || *s.Review.DecidedBy != "anonymous" ||
		s.Mode != "build" || s.EffectiveMode != "build" || s.ModeSource != nil || s.Note != nil {
		t.Errorf("approved: %+v note %v", s, s.Note)
	}
	if s.Revision != before.Revision+1 {
		t.Errorf("approval bumped the session from %d to %d, want one revision", before.Revision, s.Revision)
	}
	for _, id := range []string{"main", "main.worker"} {
		if f := filter(t, env, id); f.EffectiveMode != "build" || len(f.Removed) != 0 || len(f.Allowed) != 5 || f.Reminder != nil {
			t.Errorf("filter %s after approval: %+v", id, f)
		}
	}
	if w := getSession(t, env, "main.worker"); w.EffectiveMode != "build" {
		t.Errorf("worker after approval: %+v", w)
	}
	if r, _ := act(t, env, "main", "approve", nil, 409, "If-Match", `"2"`); r.Code() != "review_not_pending" {
		t.Errorf("approve twice: %s", r.Body)
	}

	for typ, want := range map[string]int{
		"session_plan.updated": 2, "session.review_requested": 2, "session.review_rejected": 1, "session.review_approved": 1,
	} {
		if n := countRows(t, env, "events", "type = ? AND session_id = 'main'", typ); n != want {
			t.Errorf("%s events = %d, want %d", typ, n, want)
		}
	}
	approved := eventData(t, env, "session.review_approved", "main")[0]
	if approved["review"].(map[string]any)["plan_revision"] != float64(2) || approved["mode"] != "build" {
		t.Errorf("approval event: %v", approved)
	}
	updated := eventData(t, env, "session_plan.updated", "main")
	if updated[0]["content"] != "# Plan\n1. rewrite billing" || updated[0]["created"] != true || updated[1]["revision"] != float64(2) {
		t.Errorf("plan events: %v", updated)
	}
	if n := countRows(t, env, "events", "type = 'session.mode_changed' AND session_id = 'main.worker'"); n != 1 {
		t.Errorf("worker mode_changed events = %d, want 1 (from the approval)", n)
	}
}

// TestApprovingAChildUnderAPlanAncestor: the child's own mode becomes
// build, but its effective mode stays plan, the answer says why, and its
// tools stay gated.
func TestApprovingAChildUnderAPlanAncestor(t *testing.T) {
	env := apitest.New(t)
	createSession(t, env, map[string]any{"id": "root", "mode": "plan"})
	createSession(t, env, map[string]any{"id": "kid", "parent_id": "root", "mode": "plan"})
	p := writeSessionPlan(t, env, "kid", map[string]any{"content": "kid plan"}, 201)
	act(t, env, "kid", "review", nil, 200)
	_, s := act(t, env, "kid", "approve", nil, 200, "If-Match", fmt.Sprint(p.Revision))
	if s.Review.State != "approved" || s.Mode != "build" || s.EffectiveMode != "plan" || s.ModeSource == nil || *s.ModeSource != "root" {
		t.Fatalf("approved child: %+v", s)
	}
	if s.Note == nil || !strings.Contains(*s.Note, `"root"`) || !strings.Contains(*s.Note, "effective mode stays plan") {
		t.Errorf("note: %v", s.Note)
	}
	if f := filter(t, env, "kid"); f.EffectiveMode != "plan" || len(f.Removed) != 2 {
		t.Errorf("approved child is no longer gated: %+v", f)
	}
	// A child whose own mode was already build: approval changes only the
	// review, in one revision.
	createSession(t, env, map[string]any{"id": "kid2", "parent_id": "root"})
	writeSessionPlan(t, env, "kid2", map[string]any{"content": "kid2 plan"}, 201)
	_, s = act(t, env, "kid2", "review", nil, 200)
	rev := s.Revision
	_, s = act(t, env, "kid2", "approve", nil, 200, "If-Match", "1")
	if s.Review.State != "approved" || s.Mode != "build" || s.EffectiveMode != "plan" || s.Note == nil || s.Revision != rev+1 {
		t.Errorf("approved build child: %+v", s)
	}
	if n := countRows(t, env, "events", "type = 'session.mode_changed' AND session_id = 'kid2'"); n != 0 {
		t.Errorf("approval of a build child changed its mode: %d events", n)
	}
}

// TestPlanRewriteWithdrawsThePendingReview documents the rule: a new plan
// revision withdraws a pending review, so the human can only approve what
// the agent submitted.
func TestPlanRewriteWithdrawsThePendingReview(t *testing.T) {
	env := apitest.New(t)
	createSession(t, env, map[string]any{"id": "s", "mode": "plan"})
	writeSessionPlan(t, env, "s", map[string]any{"content": "v1"}, 201)
	_, s := act(t, env, "s", "review", map[string]any{"rationale": "r1"}, 200)

	// The same content again is a no-op and keeps the review.
	events := countRows(t, env, "events", "")
	if p := writeSessionPlan(t, env, "s", map[string]any{"content": "v1"}, 200); p.Revision != 1 {
		t.Errorf("same content bumped the plan to %d", p.Revision)
	}
	if n := countRows(t, env, "events", ""); n != events {
		t.Errorf("same content appended %d events", n-events)
	}
	// Asking again for the same revision with the same rationale is a no-op.
	if _, again := act(t, env, "s", "review", map[string]any{"rationale": "r1"}, 200); again.Revision != s.Revision {
		t.Errorf("repeated review request bumped the session")
	}

	writeSessionPlan(t, env, "s", map[string]any{"content": "v2"}, 200)
	after := getReviewed(t, env, "s")
	if after.Review.State != "none" || after.Review.PlanRevision != nil || after.Revision != s.Revision+1 || after.Mode != "plan" {
		t.Errorf("after rewrite: %+v", after)
	}
	data := eventData(t, env, "session_plan.updated", "s")
	w, ok := data[len(data)-1]["review_withdrawn"].(map[string]any)
	if !ok || w["plan_revision"] != float64(1) || w["rationale"] != "r1" || w["session_revision"] != float64(after.Revision) {
		t.Errorf("withdrawal not recorded: %v", data[len(data)-1])
	}
	if _, ok := data[0]["review_withdrawn"]; ok {
		t.Errorf("first write records a withdrawal: %v", data[0])
	}
	// Even with the new revision's ETag there is nothing to approve.
	if r, _ := act(t, env, "s", "approve", nil, 409, "If-Match", `"2"`); r.Code() != "review_not_pending" {
		t.Errorf("approve after withdrawal: %s", r.Body)
	}
	// A rejected review is not withdrawn by a rewrite: it names its revision.
	act(t, env, "s", "review", nil, 200)
	act(t, env, "s", "reject", map[string]any{"feedback": "no"}, 200)
	writeSessionPlan(t, env, "s", map[string]any{"content": "v3"}, 200)
	if r := getReviewed(t, env, "s").Review; r.State != "rejected" || *r.PlanRevision != 2 || *r.Feedback != "no" {
		t.Errorf("rejected review after rewrite: %+v", r)
	}
}

// TestLeavingPlanModeDirectlyCancelsThePendingReview documents the rule
// for PATCH …/mode.
func TestLeavingPlanModeDirectlyCancelsThePendingReview(t *testing.T) {
	env := apitest.New(t)
	createSession(t, env, map[string]any{"id": "s", "mode": "plan"})
	writeSessionPlan(t, env, "s", map[string]any{"content": "v1"}, 201)
	_, s := act(t, env, "s", "review", nil, 200)
	resp := setMode(t, env, "s", "build", 200)
	var after reviewed
	resp.JSON(t, &after)
	if after.Review.State != "none" || after.Mode != "build" || after.Revision != s.Revision+1 {
		t.Errorf("after leaving plan mode: %+v", after)
	}
	changed := eventData(t, env, "session.mode_changed", "s")
	c, ok := changed[len(changed)-1]["review_cancelled"].(map[string]any)
	if !ok || c["plan_revision"] != float64(1) || c["session_revision"] != float64(after.Revision) {
		t.Errorf("cancellation not recorded: %v", changed[len(changed)-1])
	}
	if r, _ := act(t, env, "s", "approve", nil, 409, "If-Match", "1"); r.Code() != "review_not_pending" {
		t.Errorf("approve a cancelled review: %s", r.Body)
	}
	// Entering plan mode keeps a pending review.
	act(t, env, "s", "review", nil, 200)
	setMode(t, env, "s", "plan", 200)
	if r := getReviewed(t, env, "s").Review; r.State != "pending" {
		t.Errorf("entering plan mode touched the review: %+v", r)
	}
}

// TestConcurrentRewriteNeverApprovesAnUnreadRevision races an agent that
// keeps rewriting its plan and asking for review against a human who reads
// the plan and approves what they read. Whatever the interleaving, an
// approval only ever succeeds for the revision the human read, with the
// content they read, and a refused approval leaves the session in plan
// mode. Run it with -race and a high -count to shake out interleavings.
func TestConcurrentRewriteNeverApprovesAnUnreadRevision(t *testing.T) {
	env := apitest.New(t)
	const iterations, rewrites = 25, 4
	for it := 0; it < iterations; it++ {
		id := fmt.Sprintf("race-%d", it)
		createSession(t, env, map[string]any{"id": id, "mode": "plan"})
		writeSessionPlan(t, env, id, map[string]any{"content": "v1"}, 201)
		act(t, env, id, "review", nil, 200)

		var (
			wg       sync.WaitGroup
			approved *reviewed
			read     sessionPlan
		)
		done := make(chan struct{})
		wg.Add(2)
		go func() { // the agent
			defer wg.Done()
			defer close(done)
			for k := 2; k <= rewrites; k++ {
				env.Call("PUT", "/v1/sessions/"+id+"/plan", map[string]any{"content": fmt.Sprintf("v%d", k)})
				env.Call("POST", "/v1/sessions/"+id+"/plan/review", nil)
			}
		}()
		go func() { // the human
			defer wg.Done()
			for {
				var p sessionPlan
				env.Call("GET", "/v1/sessions/"+id+"/plan", nil).JSON(t, &p)
				r := env.Call("POST", "/v1/sessions/"+id+"/plan/approve", nil, "If-Match", fmt.Sprint(p.Revision))
				switch r.Status {
				case 200:
					var s reviewed
					r.JSON(t, &s)
					approved, read = &s, p
					return
				case 409, 412:
				default:
					t.Errorf("approve: %d %s", r.Status, r.Body)
					return
				}
				select {
				case <-done:
					// The agent is finished and asked for review of its
					// last revision: one more round must succeed.
					var last sessionPlan
					env.Call("GET", "/v1/sessions/"+id+"/plan", nil).JSON(t, &last)
					r := env.Call("POST", "/v1/sessions/"+id+"/plan/approve", nil, "If-Match", fmt.Sprint(last.Revision))
					if r.Status != 200 {
						t.Errorf("approve after the agent stopped: %d %s", r.Status, r.Body)
						return
					}
					var s reviewed
					r.JSON(t, &s)
					approved, read = &s, last
					return
				default:
				}
			}
		}()
		wg.Wait()
		if approved == nil {
			t.Fatalf("%s: never approved", id)
		}
		if *approved.Review.PlanRevision != read.Revision || approved.Review.State != "approved" || approved.Mode != "build" {
			t.Errorf("%s: approved %+v after reading revision %d", id, approved.Review, read.Revision)
		}
		// The revision recorded as approved had the content the human read.
		var data string
		if err := env.DB.Reader(context.Background()).QueryRow(`SELECT data FROM events
			WHERE type = 'session_plan.updated' AND session_id = ? AND revision = ?`, id, read.Revision).Scan(&data); err != nil {
			t.Fatal(err)
		}
		var content string
		if err := json.Unmarshal([]byte(data), &struct {
			Content *string `json:"content"`
		}{&content}); err != nil {
			t.Fatal(err)
		}
		if content != read.Content {
			t.Errorf("%s: approved revision %d holds %q, the human read %q", id, read.Revision, content, read.Content)
		}
		for _, d := range eventData(t, env, "session.review_approved", id) {
			if d["review"].(map[string]any)["plan_revision"] != float64(read.Revision) {
				t.Errorf("%s: approval event for revision %v, read %d", id, d["review"].(map[string]any)["plan_revision"], read.Revision)
			}
		}
		if n := countRows(t, env, "events", "type = 'session.review_approved' AND session_id = ?", id); n != 1 {
			t.Errorf("%s: %d approvals", id, n)
		}
	}
}

func TestSessionPlanPreconditionsAndLimits(t *testing.T) {
	env := apitest.New(t, func(c *app.Config) { c.MaxPlanBytes = 100 })
	createSession(t, env, map[string]any{"id": "s"})
	writeSessionPlan(t, env, "s", map[string]any{"content": "v1"}, 201, "If-None-Match", "*")
	if r := env.Call("PUT", "/v1/sessions/s/plan", map[string]any{"content": "v2"}, "If-None-Match", "*"); r.Status != 412 || r.Code() != "already_exists" {
		t.Errorf("create-only on an existing plan: %d %s", r.Status, r.Body)
	}
	if r := env.Call("PUT", "/v1/sessions/s/plan", map[string]any{"content": "v2"}, "If-Match", `"7"`); r.Status != 412 || r.Map(t)["current_revision"] != float64(1) {
		t.Errorf("stale If-Match: %d %s", r.Status, r.Body)
	}
	writeSessionPlan(t, env, "s", map[string]any{"content": "v2"}, 200, "If-Match", `"1"`)
	if r := env.Call("GET", "/v1/sessions/s/plan", nil, "If-None-Match", `"2"`); r.Status != 304 || r.Header.Get("ETag") != `"2"` {
		t.Errorf("If-None-Match current: %d", r.Status)
	}
	var p sessionPlan
	r := env.Call("GET", "/v1/sessions/s/plan", nil, "Accept", "application/json, text/markdown;q=0.5")
	r.JSON(t, &p)
	if p.Content != "v2" || p.Revision != 2 || p.SessionID != "s" || p.Author != "anonymous" {
		t.Errorf("plan: %+v", p)
	}
	if r := env.Call("GET", "/v1/sessions/s/plan", nil, "Accept", "text/*"); string(r.Body) != "v2" {
		t.Errorf("Accept text/*: %q", r.Body)
	}
	if r := env.Call("GET", "/v1/sessions/s/plan", nil, "Accept", "image/png"); r.Status != 406 || r.Code() != "not_acceptable" {
		t.Errorf("Accept image/png: %d %s", r.Status, r.Body)
	}
	if r := env.Call("GET", "/v1/sessions/nobody/plan", nil); r.Status != 404 {
		t.Errorf("plan of a missing session: %d", r.Status)
	}

	// The content limit, raw and JSON; a JSON-escaped plan at the limit fits.
	atLimit := strings.Repeat(`"`, 100)
	writeSessionPlan(t, env, "s", map[string]any{"content": atLimit}, 200)
	for name, req := range map[string][]any{
		"json": {map[string]any{"content": atLimit + "x"}},
		"raw":  {atLimit + "x", "Content-Type", "text/markdown"},
		"huge": {strings.Repeat("x", 300<<10), "Content-Type", "text/markdown"},
	} {
		var hdr []string
		for _, h := range req[1:] {
			hdr = append(hdr, h.(string))
		}
		if r := env.Call("PUT", "/v1/sessions/s/plan", req[0], hdr...); r.Status != 413 || r.Code() != "payload_too_large" {
			t.Errorf("%s over the limit: %d %s", name, r.Status, r.Body)
		}
	}

	strict := apitest.New(t, func(c *app.Config) { c.RequirePreconditions = true })
	createSession(t, strict, map[string]any{"id": "s"})
	writeSessionPlan(t, strict, "s", map[string]any{"content": "v1"}, 201)
	if r := strict.Call("PUT", "/v1/sessions/s/plan", map[string]any{"content": "v2"}); r.Status != 428 {
		t.Errorf("unconditional plan update under --require-preconditions: %d", r.Status)
	}
	if r := strict.Call("POST", "/v1/sessions/s/plan/review", nil); r.Status != 428 {
		t.Errorf("unconditional review request under --require-preconditions: %d", r.Status)
	}
	if r := strict.Call("POST", "/v1/sessions/s/plan/review", nil, "If-Match", "1"); r.Status != 200 {
		t.Errorf("conditional review request: %d %s", r.Status, r.Body)
	}
	// A review request naming a stale plan revision is refused.
	writeSessionPlan(t, strict, "s", map[string]any{"content": "v2"}, 200, "If-Match", "1")
	if r := strict.Call("POST", "/v1/sessions/s/plan/review", nil, "If-Match", "1"); r.Status != 412 {
		t.Errorf("review of a stale revision: %d %s", r.Status, r.Body)
	}
}

func TestDeletingASessionDeletesItsPlanAndTodos(t *testing.T) {
	env := apitest.New(t)
	createSession(t, env, map[string]any{"id": "p"})
	createSession(t, env, map[string]any{"id": "k", "parent_id": "p"})
	createSession(t, env, map[string]any{"id": "other"})
	for _, id := range []string{"p", "k", "other"} {
		writeSessionPlan(t, env, id, map[string]any{"content": "plan of " + id}, 201)
		if r := env.Call("PUT", "/v1/sessions/"+id+"/todos", map[string]any{"todos": []any{map[string]any{"content": "x", "status": "pending"}}}); r.Status != 200 {
			t.Fatalf("todos: %d %s", r.Status, r.Body)
		}
	}
	if r := env.Call("DELETE", "/v1/sessions/p", nil); r.Status != 204 {
		t.Fatalf("delete: %d", r.Status)
	}
	for _, table := range []string{"session_plans", "session_todos"} {
		if n := countRows(t, env, table, "session_id IN ('p', 'k')"); n != 0 {
			t.Errorf("%s rows of deleted sessions: %d", table, n)
		}
		if n := countRows(t, env, table, "session_id = 'other'"); n != 1 {
			t.Errorf("%s rows of the other session: %d", table, n)
		}
	}
	if r := env.Call("GET", "/v1/sessions/k/plan", nil); r.Status != 404 {
		t.Errorf("plan of a deleted child: %d", r.Status)
	}
}

// TestReviewAnswersAsStored: the mode and review transitions, and the
// plan writes between them, answer with what they stored, without reading
// it back; each answer must be exactly what a GET then reads.
func TestReviewAnswersAsStored(t *testing.T) {
	env := apitest.New(t)
	createSession(t, env, map[string]any{"id": "r", "metadata": map[string]any{"k": "v"}})
	createSession(t, env, map[string]any{"id": "r.c", "parent_id": "r"})
	same := func(what, id string, resp *apitest.Response) {
		t.Helper()
		answersAsGet(t, env, what, "/v1/sessions/"+id, resp)
	}
	mode := func(id, m string) *apitest.Response { return setMode(t, env, id, m, 200) }
	putPlan := func(id, content string) {
		t.Helper()
		r := env.Call("PUT", "/v1/sessions/"+id+"/plan", map[string]any{"content": content})
		if r.Status/100 != 2 {
			t.Fatalf("plan of %s: %d %s", id, r.Status, r.Body)
		}
		// The first write, a rewrite (withdrawing a pending review or
		// not) and an unchanged one all answer the plan as stored.
		answersAsGet(t, env, "the plan write "+content, "/v1/sessions/"+id+"/plan", r)
	}
	review := func(id string) *apitest.Response {
		r, _ := act(t, env, id, "review", map[string]any{"rationale": "ready"}, 200)
		return r
	}

	same("plan mode", "r", mode("r", "plan"))
	putPlan("r", "# one\n2\n3")
	same("a review request", "r", review("r"))
	r, _ := act(t, env, "r", "reject", map[string]any{"feedback": "no", "comments": []map[string]any{{"line": 2, "body": "why?"}}}, 200)
	same("a rejection with comments", "r", r)
	putPlan("r", "# two")
	same("a second request", "r", review("r"))
	same("build mode, cancelling the review", "r", mode("r", "build"))
	same("plan mode again", "r", mode("r", "plan"))
	putPlan("r", "# three")
	review("r")
	putPlan("r", "# three, rewritten") // withdraws the pending review
	putPlan("r", "# three, rewritten") // changes nothing
	review("r")
	r, _ = act(t, env, "r", "approve", map[string]any{"feedback": "go"}, 200, "If-Match", `"4"`)
	same("an approval that leaves plan mode", "r", r)
	// A sub-session in build under a plan-mode parent: its approval
	// changes the review alone.
	mode("r", "plan")
	putPlan("r.c", "# child")
	same("a child's request", "r.c", review("r.c"))
	r, _ = act(t, env, "r.c", "approve", map[string]any{"comments": []map[string]any{{"line": 1, "body": "ok"}}}, 200, "If-Match", `"1"`)
	same("a child's approval in build", "r.c", r)
	same("the parent back in build, the child following", "r", mode("r", "build"))
}
