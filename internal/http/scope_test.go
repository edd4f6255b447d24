package http_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/apitest"
	"github.com/planserver/planserver/internal/auth"
	"github.com/planserver/planserver/internal/dbtest"
)

// scopedPlan is a plan that declares src/app.go and one connection.
const scopedPlan = "# Bump the version\n\n1. Change src/app.go\n\n```scope\nfiles: [src/app.go]\ncommands: [go test ./...]\nconnect: ['proxy.golang.org:443']\n```\n"

// widerPlan is scopedPlan's next revision: README.md too, no network.
const widerPlan = "# Bump the version\n\n1. Change src/app.go\n2. Say so in README.md\n\n```scope\nfiles: [src/app.go, README.md]\ncommands: [go test ./...]\n```\n"

// pendingWith puts session id in plan mode with content as its plan and a
// pending review, and returns the plan's revision.
func pendingWith(t *testing.T, env *apitest.Env, id, content string) int64 {
	t.Helper()
	var p api.SessionPlan
	r := env.Call("PUT", "/v1/sessions/"+id+"/plan", map[string]any{"content": content})
	if r.Status/100 != 2 {
		t.Fatalf("plan of %s: %d %s", id, r.Status, r.Body)
	}
	r.JSON(t, &p)
	act(t, env, id, "review", nil, http.StatusOK)
	return p.Revision
}

func sessionOf(t *testing.T, env *apitest.Env, id string) api.Session {
	t.Helper()
	var s api.Session
	r := env.Call("GET", "/v1/sessions/"+id, nil)
	if r.Status != 200 {
		t.Fatalf("get %s: %d %s", id, r.Status, r.Body)
	}
	r.JSON(t, &s)
	return s
}

func eventsOf(t *testing.T, env *apitest.Env, id, types string) []api.Event {
	t.Helper()
	var page api.EventPage
	env.Call("GET", "/v1/events?session_id="+id+"&types="+types, nil).JSON(t, &page)
	return page.Events
}

// TestScopeBlockValidated: a plan revision whose scope block cannot be
// enforced is refused, every problem named, and nothing is stored; a
// human never reviews such a scope.
func TestScopeBlockValidated(t *testing.T) {
	env := apitest.New(t)
	createSession(t, env, map[string]any{"id": "s", "mode": "plan"})
	for _, tc := range []struct{ block, field, msg string }{
		{"files: [/etc/passwd]", "scope.files[0]", "absolute"},
		{"files: [src/../../x]", "scope.files[0]", "climbs out"},
		{"files: ['**']", "scope.files[0]", "matches everything"},
		{"files: [a.go]\npaths: [x]", "scope.paths", "not a field"},
		{"connect: ['example.com']", "scope.connect[0]", "host:port"},
		{"connect: ['example.com:99999']", "scope.connect[0]", "65535"},
		{"files: [ok.go, '']", "scope.files[1]", "blank"},
	} {
		content := "# plan\n\n```scope\n" + tc.block + "\n```\n"
		r := env.Call("PUT", "/v1/sessions/s/plan", map[string]any{"content": content})
		if r.Status != 400 || r.Code() != "invalid_argument" {
			t.Fatalf("%q: %d %s", tc.block, r.Status, r.Body)
		}
		var p api.Problem
		r.JSON(t, &p)
		found := false
		for _, e := range p.Errors {
			found = found || e.Field == tc.field && strings.Contains(e.Message, tc.msg)
		}
		if !found {
			t.Errorf("%q: want %s …%s…, got %+v", tc.block, tc.field, tc.msg, p.Errors)
		}
		// The raw Markdown form is judged the same.
		if r := env.Call("PUT", "/v1/sessions/s/plan", content, "Content-Type", "text/markdown"); r.Status != 400 {
			t.Errorf("%q as text/markdown: %d", tc.block, r.Status)
		}
	}
	if r := env.Call("GET", "/v1/sessions/s/plan", nil); r.Status != 404 {
		t.Errorf("a refused plan was stored: %d %s", r.Status, r.Body)
	}
	// A good one is stored, and shows what it declares.
	var p api.SessionPlan
	r := env.Call("PUT", "/v1/sessions/s/plan", map[string]any{"content": scopedPlan})
	r.JSON(t, &p)
	if r.Status != 201 || p.Scope == nil || len(p.Scope.Files) != 1 || p.Scope.Files[0] != "src/app.go" ||
		p.Scope.Connect[0] != "proxy.golang.org:443" {
		t.Fatalf("a plan with a scope: %d %s", r.Status, r.Body)
	}
	// A later bad revision loses nothing: revision 1 stays.
	if r := env.Call("PUT", "/v1/sessions/s/plan", map[string]any{"content": "```scope\nfiles: ['*']\n```\n"}); r.Status != 400 {
		t.Errorf("a bad revision: %d", r.Status)
	}
	env.Call("GET", "/v1/sessions/s/plan", nil).JSON(t, &p)
	if p.Revision != 1 || p.Content != scopedPlan {
		t.Errorf("after a refused revision: %+v", p)
	}
	// A plan without a block declares no scope.
	env.Call("PUT", "/v1/sessions/s/plan", map[string]any{"content": "# no scope"}).JSON(t, &p)
	if p.Scope != nil {
		t.Errorf("no block, scope %+v", p.Scope)
	}
}

// TestApproveWithScope: approving a revision that declares a scope limits
// the session's build to it by default, shows where it comes from, is
// inherited by sub-sessions, and is recorded; a revision that declares
// none builds in full, and asking for its scope is 400.
func TestApproveWithScope(t *testing.T) {
	env := apitest.New(t)
	createSession(t, env, map[string]any{"id": "root", "mode": "plan"})
	createSession(t, env, map[string]any{"id": "kid", "parent_id": "root"})
	rev := pendingWith(t, env, "root", scopedPlan)

	_, _ = act(t, env, "root", "approve", nil, 200, "If-Match", `"1"`)
	s := sessionOf(t, env, "root")
	b := s.BuildScope
	if s.EffectiveMode != api.ModeBuild || b == nil || b.SessionID != "root" || b.PlanRevision != rev ||
		strings.Join(b.Files, ",") != "src/app.go" || b.GrantedBy != "anonymous" || b.GrantedAt == "" ||
		len(b.AlsoLimitedBy) != 0 || s.Review.Scope == nil || *s.Review.Scope != "plan" {
		t.Fatalf("after a default approval: %+v", s)
	}
	kid := sessionOf(t, env, "kid")
	if kid.BuildScope == nil || kid.BuildScope.SessionID != "root" {
		t.Fatalf("the child does not inherit the scope: %+v", kid.BuildScope)
	}
	// The grant and its inheritance are events; the approval's answer
	// says what it granted.
	ev := eventsOf(t, env, "root", "session.scope_changed")
	var reasons []string
	for _, e := range ev {
		var d struct {
			Reason    string `json:"reason"`
			ChangedBy string `json:"changed_by"`
		}
		_ = json.Unmarshal(e.Data, &d)
		reasons = append(reasons, e.SessionID+":"+d.Reason+":"+d.ChangedBy)
	}
	if strings.Join(reasons, " ") != "root:approved: kid:inherited:root" {
		t.Errorf("scope events: %v", reasons)
	}
	var h api.ReviewHistory
	env.Call("GET", "/v1/sessions/root/reviews", nil).JSON(t, &h)
	if len(h.Reviews) != 1 || h.Reviews[0].Scope == nil || *h.Reviews[0].Scope != "plan" {
		t.Errorf("the history does not keep what was granted: %+v", h.Reviews)
	}

	// The child's own approved scope narrows it further: both limit it.
	setMode(t, env, "kid", "plan", 200)
	pendingWith(t, env, "kid", "# child\n```scope\nfiles: [src/app.go, docs/]\n```\n")
	r, _ := act(t, env, "kid", "approve", map[string]any{"scope": "plan"}, 200, "If-Match", `"1"`)
	var a api.Approval
	r.JSON(t, &a)
	if a.Scope != "plan" || a.BuildScope == nil || a.BuildScope.SessionID != "kid" || len(a.BuildScope.AlsoLimitedBy) != 1 ||
		a.BuildScope.AlsoLimitedBy[0].SessionID != "root" {
		t.Errorf("a child's own scope: %s", r.Body)
	}

	// A revision without a scope: "plan" is 400 and changes nothing; the
	// default is a full build.
	createSession(t, env, map[string]any{"id": "plain", "mode": "plan"})
	pendingWith(t, env, "plain", "# no scope here")
	r = env.Call("POST", "/v1/sessions/plain/plan/approve", map[string]any{"scope": "plan"}, "If-Match", `"1"`)
	if r.Status != 400 || !strings.Contains(string(r.Body), `"field":"scope"`) {
		t.Errorf("scope plan without a scope: %d %s", r.Status, r.Body)
	}
	if s := sessionOf(t, env, "plain"); s.Review.State != "pending" || s.Mode != "plan" {
		t.Errorf("a refused approval changed the session: %+v", s)
	}
	if r := env.Bad("POST", "/v1/sessions/plain/plan/approve", map[string]any{"scope": "narrow"}, "If-Match", `"1"`); r.Status != 400 ||
		!strings.Contains(string(r.Body), `"field":"scope"`) {
		t.Errorf("an unknown scope: %d %s", r.Status, r.Body)
	}
	act(t, env, "plain", "approve", nil, 200, "If-Match", `"1"`)
	if s := sessionOf(t, env, "plain"); s.BuildScope != nil || *s.Review.Scope != "full" {
		t.Errorf("a plan without a scope builds in full: %+v", s)
	}

	// The diff of two revisions says what the scope adds.
	env.Call("PUT", "/v1/sessions/root/plan", map[string]any{"content": widerPlan})
	var d api.Diff
	env.Call("GET", "/v1/sessions/root/plan/diff", nil).JSON(t, &d)
	if d.Scope == nil || strings.Join(d.Scope.Added.Files, ",") != "README.md" ||
		strings.Join(d.Scope.Removed.Connect, ",") != "proxy.golang.org:443" || len(d.Scope.Removed.Files) != 0 {
		t.Errorf("the scope's diff: %+v", d.Scope)
	}
	// A session in scoped build asks again for a wider scope; its
	// approval replaces the grant.
	act(t, env, "root", "review", nil, 200)
	act(t, env, "root", "approve", nil, 200, "If-Match", `"2"`)
	if s := sessionOf(t, env, "root"); s.BuildScope == nil || s.BuildScope.PlanRevision != 2 ||
		strings.Join(s.BuildScope.Files, ",") != "src/app.go,README.md" {
		t.Errorf("a wider revision approved: %+v", s.BuildScope)
	}
}

// TestLiftingAScopeIsAnAdmins: a reviewer approves with the plan's scope
// but cannot lift it (approving "full", leaving plan mode without
// approval, DELETE …/scope); an admin can, and it is recorded.
func TestLiftingAScopeIsAnAdmins(t *testing.T) {
	e := newSignInEnv(t, dbtest.Fresh(t), newIDP(t))
	admin := e.As(e.Token(auth.Admin, "ops", ""))
	jane := e.signedIn(t, jane)
	createSession(t, admin, map[string]any{"id": "s", "mode": "plan"})
	createSession(t, admin, map[string]any{"id": "c", "parent_id": "s"})
	pendingWith(t, admin, "s", scopedPlan)

	r := jane.Call("POST", "/v1/sessions/s/plan/approve", map[string]any{"scope": "full"}, "If-Match", `"1"`)
	if r.Status != 403 || !strings.Contains(string(r.Body), "admin") {
		t.Fatalf("a reviewer lifting by approval: %d %s", r.Status, r.Body)
	}
	if s := sessionOf(t, admin, "s"); s.Review.State != "pending" || s.Mode != "plan" {
		t.Fatalf("a refused approval changed the session: %+v", s)
	}
	r = jane.Call("PATCH", "/v1/sessions/s/mode", map[string]any{"mode": "build"})
	if r.Status != 403 {
		t.Fatalf("a reviewer leaving plan mode past a declared scope: %d %s", r.Status, r.Body)
	}
	r = jane.Call("POST", "/v1/sessions/s/plan/approve", nil, "If-Match", `"1"`)
	if r.Status != 200 {
		t.Fatalf("a reviewer approving with the scope: %d %s", r.Status, r.Body)
	}
	s := sessionOf(t, admin, "s")
	if s.BuildScope == nil || s.BuildScope.GrantedBy != "jane@example.com" || s.BuildScope.GrantedByPerson == nil {
		t.Fatalf("who granted it: %+v", s.BuildScope)
	}
	// With a scope of its own, plan mode and back keeps it, whoever
	// moves it.
	if r := jane.Call("PATCH", "/v1/sessions/s/mode", map[string]any{"mode": "plan"}); r.Status != 200 {
		t.Fatalf("plan: %d", r.Status)
	}
	if s := sessionOf(t, admin, "s"); s.BuildScope != nil {
		t.Errorf("plan mode shows a build scope: %+v", s.BuildScope)
	}
	if r := jane.Call("PATCH", "/v1/sessions/s/mode", map[string]any{"mode": "build"}); r.Status != 200 {
		t.Fatalf("back to build keeping the scope: %d %s", r.Status, r.Body)
	}
	if s := sessionOf(t, admin, "s"); s.BuildScope == nil || s.BuildScope.PlanRevision != 1 {
		t.Errorf("the scope was not kept: %+v", s.BuildScope)
	}
	// DELETE …/scope: a reviewer 403, a child without a scope of its own
	// 404 naming where it comes from, the admin 200.
	if r := jane.Call("DELETE", "/v1/sessions/s/scope", nil); r.Status != 403 {
		t.Errorf("a reviewer lifting: %d %s", r.Status, r.Body)
	}
	if r := admin.Call("DELETE", "/v1/sessions/c/scope", nil); r.Status != 404 || !strings.Contains(string(r.Body), `\"s\"`) {
		t.Errorf("lifting an inherited scope: %d %s", r.Status, r.Body)
	}
	before := sessionOf(t, admin, "c").Revision
	r = admin.Call("DELETE", "/v1/sessions/s/scope", nil)
	if r.Status != 200 {
		t.Fatalf("an admin lifting: %d %s", r.Status, r.Body)
	}
	if s := sessionOf(t, admin, "s"); s.BuildScope != nil {
		t.Errorf("lifted, still scoped: %+v", s.BuildScope)
	}
	if c := sessionOf(t, admin, "c"); c.BuildScope != nil || c.Revision == before {
		t.Errorf("the child keeps the lifted scope, or its ETag: %+v", c)
	}
	ev := eventsOf(t, admin, "s", "session.scope_changed")
	last := ev[len(ev)-2] // the session's, then its child's
	var d struct {
		Reason   string
		Previous *api.ScopeGrant `json:"previous_grant"`
	}
	_ = json.Unmarshal(last.Data, &d)
	if last.SessionID != "s" || last.Actor != "ops" || d.Reason != "lifted" || d.Previous == nil {
		t.Errorf("the lift's event: %+v %+v", last, d)
	}
	if r := admin.Call("DELETE", "/v1/sessions/s/scope", nil); r.Status != 404 {
		t.Errorf("lifting twice: %d", r.Status)
	}
	// An admin may approve with "full" a revision that declares a scope.
	setMode(t, admin, "s", "plan", 200)
	admin.Call("PUT", "/v1/sessions/s/plan", map[string]any{"content": widerPlan})
	act(t, admin, "s", "review", nil, 200)
	act(t, admin, "s", "approve", map[string]any{"scope": "full"}, 200, "If-Match", `"2"`)
	if s := sessionOf(t, admin, "s"); s.BuildScope != nil || *s.Review.Scope != "full" {
		t.Errorf("an admin's full approval: %+v", s)
	}
}

// TestSharedPlanScope: a shared plan's scope is the union of its steps'
// files and commands, and they are validated like a scope block's.
func TestSharedPlanScope(t *testing.T) {
	env := apitest.New(t)
	steps := []map[string]any{
		{"id": "a", "description": "edit", "owner": "x", "files": []string{"src/app.go", "docs/"}, "commands": []string{"go test ./..."}},
		{"id": "b", "description": "doc", "owner": "x", "files": []string{"docs/", "README.md"}},
	}
	r := env.Call("PUT", "/v1/plans/p", map[string]any{"content": "# p", "steps": steps})
	if r.Status != 201 {
		t.Fatalf("put: %d %s", r.Status, r.Body)
	}
	var p api.Plan
	env.Call("GET", "/v1/plans/p", nil).JSON(t, &p)
	if strings.Join(p.Scope.Files, ",") != "src/app.go,docs/,README.md" || strings.Join(p.Scope.Commands, ",") != "go test ./..." ||
		p.Scope.Connect == nil {
		t.Errorf("the plan's scope: %+v", p.Scope)
	}
	steps[1]["files"] = []string{"../outside"}
	steps[0]["commands"] = []string{" "}
	r = env.Call("PUT", "/v1/plans/p", map[string]any{"content": "# p", "steps": steps})
	body := string(r.Body)
	if r.Status != 400 || !strings.Contains(body, "steps[1].files[0]") || !strings.Contains(body, "steps[0].commands[0]") {
		t.Errorf("bad step scope: %d %s", r.Status, body)
	}
}
