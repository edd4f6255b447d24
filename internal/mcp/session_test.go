package mcp_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/apitest"
)

type reviewOut struct {
	SessionID     string     `json:"session_id"`
	Mode          api.Mode   `json:"mode"`
	EffectiveMode api.Mode   `json:"effective_mode"`
	Review        api.Review `json:"review"`
	ReviewURL     string     `json:"review_url"`
	PlanURL       string     `json:"plan_url"`
	Message       string     `json:"message"`
}

func getSession(t *testing.T, env *apitest.Env, id string) api.Session {
	t.Helper()
	var s api.Session
	resp := env.Call("GET", "/v1/sessions/"+id, nil)
	mustStatus(t, resp, http.StatusOK)
	resp.JSON(t, &s)
	return s
}

// TestSessionPlanLoop is the plan-mode loop through the tools: the model
// enters plan mode, writes its plan, asks for review and gets the review
// page's URL; a human rejects with feedback, which read_session_plan
// shows; the model revises and asks again; only the human's approval (over
// HTTP) ends plan mode.
func TestSessionPlanLoop(t *testing.T) {
	env := apitest.New(t)
	session(t, env, map[string]any{"id": "s"})
	c := connect(t, env, clientOpts{session: "s"})

	var s api.Session
	c.ok("plan_enter", map[string]any{}, &s)
	if s.Mode != api.ModePlan || getSession(t, env, "s").EffectiveMode != api.ModePlan {
		t.Fatalf("plan_enter left mode %s", s.Mode)
	}
	var p api.SessionPlan
	c.ok("plan_write", map[string]any{"content": "# Plan\n1. Read\n"}, &p)
	if p.Revision != 1 || p.SessionID != "s" {
		t.Fatalf("plan_write = %+v", p)
	}
	c.ok("write_session_plan", map[string]any{"content": "# Plan\n1. Read\n2. Change\n"}, &p)
	if p.Revision != 2 {
		t.Fatalf("write_session_plan = %+v (the same plan as plan_write)", p)
	}
	c.ok("read_session_plan", map[string]any{}, &p)
	if p.Content != "# Plan\n1. Read\n2. Change\n" || p.Review == nil || p.Review.State != api.ReviewNone {
		t.Fatalf("read_session_plan = %+v", p)
	}

	var r reviewOut
	c.ok("exit_plan_mode", map[string]any{"rationale": "read the code"}, &r)
	base := env.Server.URL
	if r.Review.State != api.ReviewPending || *r.Review.PlanRevision != 2 || r.EffectiveMode != api.ModePlan ||
		r.ReviewURL != base+"/ui/sessions/s/review?revision=2" || r.PlanURL != base+"/v1/sessions/s/plan" ||
		!strings.Contains(r.Message, r.ReviewURL) {
		t.Fatalf("exit_plan_mode = %+v", r)
	}
	// Asking is all it does: the session is still in plan mode.
	if got := getSession(t, env, "s"); got.Mode != api.ModePlan || got.Review.State != api.ReviewPending {
		t.Fatalf("after exit_plan_mode the session is %s, review %s", got.Mode, got.Review.State)
	}
	// The review page exists where the URL points.
	page, err := env.Client.Get(r.ReviewURL)
	if err != nil || page.StatusCode != http.StatusOK || !strings.HasPrefix(page.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("GET %s: %v %v", r.ReviewURL, page, err)
	}
	page.Body.Close()

	// The human rejects with feedback; the model reads it.
	mustStatus(t, env.Call("POST", "/v1/sessions/s/plan/reject", map[string]any{
		"feedback": "Run the tests too.", "comments": []map[string]any{{"line": 3, "body": "which files?"}}}), http.StatusOK)
	c.ok("read_session_plan", map[string]any{}, &p)
	if p.Review.State != api.ReviewRejected || p.Review.Feedback == nil || *p.Review.Feedback != "Run the tests too." ||
		len(p.Review.Comments) != 1 || p.Review.Comments[0].Body != "which files?" {
		t.Fatalf("read_session_plan after rejection = %+v", p.Review)
	}

	c.ok("plan_write", map[string]any{"content": "# Plan\n1. Read\n2. Change\n3. Test\n"}, &p)
	c.ok("plan_exit", map[string]any{"rationale": "tests added"}, &r)
	if r.Review.State != api.ReviewPending || *r.Review.PlanRevision != 3 || r.Mode != api.ModePlan {
		t.Fatalf("plan_exit = %+v", r)
	}
	mustStatus(t, env.Call("POST", "/v1/sessions/s/plan/approve", nil, "If-Match", `"3"`), http.StatusOK)
	if got := getSession(t, env, "s"); got.EffectiveMode != api.ModeBuild {
		t.Fatalf("after approval the session is in %s", got.EffectiveMode)
	}
	c.ok("read_session_plan", map[string]any{}, &p)
	if p.Review.State != api.ReviewApproved {
		t.Fatalf("read_session_plan after approval: %s", p.Review.State)
	}

	var todos api.TodoList
	c.ok("todo_write", map[string]any{"todos": []map[string]any{
		{"content": "change", "status": "in_progress"}, {"content": "test", "status": "pending"}}}, &todos)
	if len(todos.Todos) != 2 || todos.Todos[0].ID == "" || todos.Revision != 1 {
		t.Fatalf("todo_write = %+v", todos)
	}
	var viaHTTP api.TodoList
	env.Call("GET", "/v1/sessions/s/todos", nil).JSON(t, &viaHTTP)
	if len(viaHTTP.Todos) != 2 || viaHTTP.Todos[0].Status != "in_progress" {
		t.Fatalf("GET todos = %+v", viaHTTP)
	}
	for _, typ := range []string{"session.mode_changed", "session_plan.updated", "session.review_requested", "todos.updated"} {
		if len(events(t, env, 0, typ)) == 0 {
			t.Errorf("no %s event", typ)
		}
	}
	// plan_write before any plan is there; exit_plan_mode without a plan
	// is the route's plan_missing.
	session(t, env, map[string]any{"id": "empty"})
	connect(t, env, clientOpts{session: "empty"}).fails("exit_plan_mode", map[string]any{}, "plan_missing", "write one first")
}

// TestReviewURLElicitation: a client that declares URL-mode elicitation is
// asked to open the review page for its user, in URL mode (never form
// mode, whose answer would come back through the agent's host); one that
// does not, or that speaks the 2025-11-25 revision (a stateless server
// cannot send it a request), just gets the URL in the result.
func TestReviewURLElicitation(t *testing.T) {
	env := apitest.New(t)
	session(t, env, map[string]any{"id": "s"})

	var (
		mu    sync.Mutex
		asked []*sdk.ElicitParams
	)
	handler := func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
		mu.Lock()
		asked = append(asked, req.Params)
		mu.Unlock()
		return &sdk.ElicitResult{Action: "accept"}, nil
	}
	urlCaps := &sdk.ClientCapabilities{Elicitation: &sdk.ElicitationCapabilities{URL: &sdk.URLElicitationCapabilities{}}}
	formCaps := &sdk.ClientCapabilities{Elicitation: &sdk.ElicitationCapabilities{Form: &sdk.FormElicitationCapabilities{}}}

	c := connect(t, env, clientOpts{session: "s", sdk: &sdk.ClientOptions{ElicitationHandler: handler, Capabilities: urlCaps}})
	c.ok("write_session_plan", map[string]any{"content": "# Plan"}, nil)
	var r reviewOut
	c.ok("exit_plan_mode", map[string]any{}, &r)
	if len(asked) != 1 {
		t.Fatalf("the client was asked %d times, want once", len(asked))
	}
	if a := asked[0]; a.Mode != "url" || a.URL != r.ReviewURL || a.RequestedSchema != nil || !strings.Contains(a.URL, "/ui/sessions/s/review?revision=1") {
		t.Fatalf("elicitation = %+v, want URL mode with %s", a, r.ReviewURL)
	}
	if r.Review.State != api.ReviewPending {
		t.Fatalf("exit_plan_mode after the elicitation = %+v", r)
	}
	if n := len(events(t, env, 0, "session.review_requested")); n != 1 {
		t.Fatalf("%d review requests recorded, want 1 (the retry must not ask again)", n)
	}

	asked = nil
	connect(t, env, clientOpts{session: "s", sdk: &sdk.ClientOptions{ElicitationHandler: handler, Capabilities: formCaps}}).
		ok("plan_exit", map[string]any{}, &r)
	connect(t, env, clientOpts{session: "s", version: "2025-11-25", sdk: &sdk.ClientOptions{ElicitationHandler: handler, Capabilities: urlCaps}}).
		ok("plan_exit", map[string]any{}, &r)
	if len(asked) != 0 {
		t.Fatalf("asked %+v of a client without URL elicitation or on the old revision", asked[0])
	}
	if r.ReviewURL == "" || r.Review.State != api.ReviewPending {
		t.Fatalf("plan_exit = %+v", r)
	}
}

// TestStepTools drives the step tools: the ready filter, claiming the next
// ready step or a named one, reports.
func TestStepTools(t *testing.T) {
	env := apitest.New(t)
	session(t, env, map[string]any{"id": "s"})
	c := connect(t, env, clientOpts{session: "s"})
	c.ok("write_plan", map[string]any{"name": "p", "content": "# P", "steps": []map[string]any{
		{"id": "a", "description": "A", "owner": "dev"},
		{"id": "b", "description": "B", "owner": "dev", "deps": []string{"a"}},
		{"id": "c", "description": "C", "owner": "qa"},
	}}, nil)

	var list api.StepList
	c.ok("list_steps", map[string]any{"name": "p", "ready": true}, &list)
	if ids(list.Steps) != "a,c" {
		t.Fatalf("ready steps = %s", ids(list.Steps))
	}
	c.ok("list_steps", map[string]any{"name": "p", "owner": "dev"}, &list)
	if ids(list.Steps) != "a,b" {
		t.Fatalf("dev's steps = %s", ids(list.Steps))
	}

	var claim struct {
		Claimed  bool          `json:"claimed"`
		Step     *api.StepView `json:"step"`
		Revision int64         `json:"revision"`
	}
	c.ok("claim_step", map[string]any{"name": "p", "worker": "w1", "lease_seconds": 60}, &claim)
	if !claim.Claimed || claim.Step.ID != "a" || claim.Step.Status != "in_progress" || *claim.Step.ClaimedBy != "w1" {
		t.Fatalf("claim_step = %+v", claim)
	}
	c.fails("claim_step", map[string]any{"name": "p", "step_id": "b", "worker": "w2"}, "deps_incomplete", `"a"`)
	// Without a worker, the bound session holds the claim.
	c.ok("claim_step", map[string]any{"name": "p", "owner": "qa"}, &claim)
	if claim.Step.ID != "c" || *claim.Step.ClaimedBy != "s" {
		t.Fatalf("claim_step owner qa = %+v", claim.Step)
	}
	c.ok("claim_step", map[string]any{"name": "p"}, &claim)
	if claim.Claimed || claim.Step != nil {
		t.Fatalf("claim_step with nothing ready = %+v", claim)
	}

	var rep api.Report
	c.ok("report_step", map[string]any{"name": "p", "step_id": "a", "outcome": "success", "details": "done",
		"worker": "w1", "artifacts": []map[string]any{{"test": "go test", "result": "ok"}}}, &rep)
	if rep.StepID != "a" || rep.Outcome != "success" || len(rep.Artifacts) != 1 {
		t.Fatalf("report_step = %+v", rep)
	}
	c.ok("list_steps", map[string]any{"name": "p", "ready": true}, &list)
	if ids(list.Steps) != "b" {
		t.Fatalf("ready after a's report = %s", ids(list.Steps))
	}
	c.ok("claim_step", map[string]any{"name": "p", "step_id": "b", "worker": "w2"}, &claim)
	if !claim.Claimed || claim.Step.ID != "b" {
		t.Fatalf("claim_step b = %+v", claim)
	}
	for _, typ := range []string{"step.claimed", "step.report_added"} {
		if len(events(t, env, 0, typ)) == 0 {
			t.Errorf("no %s event", typ)
		}
	}
}

func ids(steps []api.StepView) string {
	var out []string
	for _, s := range steps {
		out = append(out, s.ID)
	}
	return strings.Join(out, ",")
}
