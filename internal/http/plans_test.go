package http_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/apitest"
	"github.com/planserver/planserver/internal/app"
	"github.com/planserver/planserver/internal/db"
)

// plan is a shared plan as the API answers it, but with its steps raw, so
// tests can check they round-trip byte for byte (the outer Steps wins over
// api.Plan's when decoding).
type plan struct {
	api.Plan
	Steps jsonRaw `json:"steps"`
}

type jsonRaw []byte

func (j *jsonRaw) UnmarshalJSON(b []byte) error { *j = append((*j)[:0], b...); return nil }

func putPlan(t *testing.T, env *apitest.Env, name string, body any, wantStatus int, header ...string) plan {
	t.Helper()
	resp := env.Call("PUT", "/v1/plans/"+name, body, header...)
	if resp.Status != wantStatus {
		t.Fatalf("PUT %s: got %d, want %d: %s", name, resp.Status, wantStatus, resp.Body)
	}
	var p plan
	resp.JSON(t, &p)
	if got, want := resp.Header.Get("ETag"), fmt.Sprintf(`"%d"`, p.Revision); got != want {
		t.Errorf("PUT %s: ETag %s, revision %d", name, got, p.Revision)
	}
	return p
}

func getPlan(t *testing.T, env *apitest.Env, name string) plan {
	t.Helper()
	resp := env.Call("GET", "/v1/plans/"+name, nil)
	if resp.Status != http.StatusOK {
		t.Fatalf("GET %s: %d %s", name, resp.Status, resp.Body)
	}
	var p plan
	resp.JSON(t, &p)
	return p
}

// planEvents lists "type@revision" of a plan's events, oldest first.
func planEvents(t *testing.T, env *apitest.Env, name string) string {
	t.Helper()
	rows, err := env.DB.Reader(context.Background()).Query(`SELECT type, coalesce(revision, 0) FROM events WHERE plan = ? ORDER BY seq`, name)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var (
			typ string
			rev int64
		)
		if err := rows.Scan(&typ, &rev); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s@%d", typ, rev))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(out, ",")
}

func TestPlanCreateReadUpdate(t *testing.T) {
	env := apitest.New(t)
	steps := `[{"id":"1","description":"Design the schema","owner":"DB-Agent","deps":[]},{"owner":"QA","id":"2","description":"Test","deps":["1"],"status":null}]`
	resp := env.Call("PUT", "/v1/plans/release", `{"title":"Release 1.0","content":"# Plan\n\n- ship it\n","author":"architect","status":"draft","steps":`+steps+`}`)
	if resp.Status != http.StatusCreated || resp.Header.Get("Location") != "/v1/plans/release" || resp.Header.Get("ETag") != `"1"` {
		t.Fatalf("create: %d Location %q ETag %q %s", resp.Status, resp.Header.Get("Location"), resp.Header.Get("ETag"), resp.Body)
	}
	var created plan
	resp.JSON(t, &created)
	if created.Name != "release" || created.Title != "Release 1.0" || created.Content != "# Plan\n\n- ship it\n" ||
		created.Author != "architect" || created.Status != "draft" || created.Revision != 1 || created.CreatedAt != created.UpdatedAt {
		t.Errorf("created = %+v", created)
	}
	// Steps come back in plan order with every field, defaults filled in.
	steps = `[{"id":"1","description":"Design the schema","owner":"DB-Agent","deps":[],"status":"pending","parallel":false,"criteria":"","commands":[],"files":[],"risk_notes":"","claimed_by":null,"claim_expires_at":null,"claim_expired":false},` +
		`{"id":"2","description":"Test","owner":"QA","deps":["1"],"status":"pending","parallel":false,"criteria":"","commands":[],"files":[],"risk_notes":"","claimed_by":null,"claim_expires_at":null,"claim_expired":false}]`
	if string(created.Steps) != steps {
		t.Errorf("steps = %s, want %s", created.Steps, steps)
	}
	got := getPlan(t, env, "release")
	if string(got.Steps) != steps || got.Content != created.Content || got.Revision != 1 {
		t.Errorf("read back = %+v", got)
	}
	for _, inm := range []string{`"1"`, `1`, `*`} {
		if r := env.Call("GET", "/v1/plans/release", nil, "If-None-Match", inm); r.Status != http.StatusNotModified || len(r.Body) != 0 || r.Header.Get("ETag") != `"1"` {
			t.Errorf("If-None-Match %s: %d %q", inm, r.Status, r.Body)
		}
	}

	// Left-out fields keep their value; "" and [] clear. The author is
	// the exception: a revision written without one is the writer's.
	upd := putPlan(t, env, "release", map[string]any{"content": "# Plan v2\n", "author": "builder"}, http.StatusOK)
	if upd.Title != "Release 1.0" || upd.Status != "draft" || string(upd.Steps) != steps || upd.Author != "builder" ||
		upd.Revision != 2 || upd.CreatedAt != created.CreatedAt || upd.UpdatedAt < created.UpdatedAt {
		t.Errorf("partial update = %+v", upd)
	}
	if r := env.Bad("PUT", "/v1/plans/release", nil); r.Status != 400 {
		t.Errorf("PUT without a body succeeded")
	}
	cleared := putPlan(t, env, "release", `{"content":"# Plan v2\n","title":"","status":"","steps":[],"author":null}`, http.StatusOK)
	if cleared.Title != "" || cleared.Status != "" || string(cleared.Steps) != "[]" || cleared.Author != "anonymous" || cleared.Revision != 3 {
		t.Errorf("cleared = %+v", cleared)
	}
	// A PUT that changes nothing is still a write: each write bumps.
	same := putPlan(t, env, "release", map[string]any{"content": "# Plan v2\n"}, http.StatusOK)
	if same.Revision != 4 {
		t.Errorf("no-op PUT revision = %d, want 4", same.Revision)
	}
	if r := env.Call("GET", "/v1/plans/release", nil, "If-None-Match", `"3"`); r.Status != 200 {
		t.Errorf("stale If-None-Match: %d", r.Status)
	}
	if got := planEvents(t, env, "release"); got != "plan.created@1,plan.updated@2,plan.updated@3,plan.updated@4" {
		t.Errorf("events = %s", got)
	}
	if r := env.Call("GET", "/v1/plans/missing", nil); r.Status != 404 || r.Code() != "not_found" {
		t.Errorf("missing plan: %d %s", r.Status, r.Body)
	}
}

func TestPlanMediaTypes(t *testing.T) {
	env := apitest.New(t)
	// Raw Markdown creates a plan with the content alone.
	md := "# Upload feature\n\nSteps below.\n"
	resp := env.Call("PUT", "/v1/plans/upload", md, "Content-Type", "text/markdown")
	if resp.Status != 201 {
		t.Fatalf("markdown create: %d %s", resp.Status, resp.Body)
	}
	// YAML, as in the plan & action item format, sets the whole document.
	doc := `# Plan generated on 2026-01-10 by PlannerAgent (Claude)
title: CSV upload
status: in-progress
author: PlannerAgent
steps:
- id: "1"
  description: "Design the database schema for storing uploaded CSV data"
  owner: "DB-Agent"
  deps: []
  status: "pending"
  risk_notes: "Ensure not to break existing schema; consider migration"
- id: "2"
  description: "Implement backend endpoint"
  owner: "Backend-Agent"
  deps: ["1"]
  parallel: true
  commands:
    - "Run: pytest tests/test_upload.py"   # to validate later
content: |
  # Upload feature

  Steps below.
`
	resp = env.Call("PUT", "/v1/plans/upload", doc, "Content-Type", "application/yaml", "If-Match", `"1"`)
	if resp.Status != 200 {
		t.Fatalf("yaml update: %d %s", resp.Status, resp.Body)
	}
	var p plan
	resp.JSON(t, &p)
	wantSteps := `[{"id":"1","description":"Design the database schema for storing uploaded CSV data","owner":"DB-Agent","deps":[],"status":"pending","parallel":false,"criteria":"","commands":[],"files":[],"risk_notes":"Ensure not to break existing schema; consider migration","claimed_by":null,"claim_expires_at":null,"claim_expired":false},` +
		`{"id":"2","description":"Implement backend endpoint","owner":"Backend-Agent","deps":["1"],"status":"pending","parallel":true,"criteria":"","commands":["Run: pytest tests/test_upload.py"],"files":[],"risk_notes":"","claimed_by":null,"claim_expires_at":null,"claim_expired":false}]`
	if p.Title != "CSV upload" || p.Status != "in-progress" || p.Author != "PlannerAgent" || p.Content != md || string(p.Steps) != wantSteps || p.Revision != 2 {
		t.Errorf("from YAML: %+v\nsteps %s", p, p.Steps)
	}
	// Markdown keeps everything but the content.
	resp = env.Call("PUT", "/v1/plans/upload", "# Upload feature, v3\n", "Content-Type", "text/markdown")
	resp.JSON(t, &p)
	if resp.Status != 200 || p.Title != "CSV upload" || p.Status != "in-progress" || string(p.Steps) != wantSteps || p.Content != "# Upload feature, v3\n" {
		t.Errorf("markdown update: %d %+v", resp.Status, p)
	}

	// Accept negotiation.
	for _, c := range []struct{ accept, want string }{
		{"", "application/json"},
		{"*/*", "application/json"},
		{"application/json", "application/json"},
		{"text/markdown", "text/markdown; charset=utf-8"},
		{"text/*", "text/markdown; charset=utf-8"},
		{"application/yaml", "application/yaml"},
		{"text/html, application/yaml;q=0.5, */*;q=0.1", "application/yaml"},
		{"application/json;q=0.2, text/markdown", "text/markdown; charset=utf-8"},
		{"application/*;q=0.9, application/json;q=0", "application/yaml"},
	} {
		r := env.Call("GET", "/v1/plans/upload", nil, "Accept", c.accept)
		if r.Status != 200 || r.Header.Get("Content-Type") != c.want || r.Header.Get("ETag") != `"3"` || r.Header.Get("Vary") != "Accept" {
			t.Errorf("Accept %q: %d %q ETag %q", c.accept, r.Status, r.Header.Get("Content-Type"), r.Header.Get("ETag"))
		}
	}
	for _, accept := range []string{"text/html", "image/png, application/xml", "application/json;q=0, text/markdown;q=0, application/yaml;q=0"} {
		if r := env.Call("GET", "/v1/plans/upload", nil, "Accept", accept); r.Status != 406 || r.Code() != "not_acceptable" {
			t.Errorf("Accept %q: %d %s", accept, r.Status, r.Body)
		}
	}
	if r := env.Call("GET", "/v1/plans/upload", nil, "Accept", "text/markdown"); string(r.Body) != "# Upload feature, v3\n" {
		t.Errorf("markdown body %q", r.Body)
	}

	// The YAML document PUT back unchanged is the same plan (one more
	// revision), so a downloaded document is an editable form.
	y := env.Call("GET", "/v1/plans/upload", nil, "Accept", "application/yaml")
	if !strings.HasPrefix(string(y.Body), `# Plan "upload", revision 3`) {
		t.Errorf("YAML starts %q", y.Body[:40])
	}
	before := getPlan(t, env, "upload")
	r := env.Call("PUT", "/v1/plans/upload", y.Body, "Content-Type", "application/yaml", "If-Match", y.Header.Get("ETag"))
	if r.Status != 200 {
		t.Fatalf("YAML round trip: %d %s", r.Status, r.Body)
	}
	r.JSON(t, &p)
	if p.Title != before.Title || p.Content != before.Content || p.Author != before.Author || p.Status != before.Status ||
		string(p.Steps) != string(before.Steps) || p.Revision != 4 {
		t.Errorf("YAML round trip changed the plan:\n%+v\n%+v", before, p)
	}
}

func TestPlanPreconditions(t *testing.T) {
	env := apitest.New(t)
	body := map[string]any{"content": "v"}
	// If-None-Match: * creates only.
	putPlan(t, env, "p", body, 201, "If-None-Match", "*")
	r := env.Call("PUT", "/v1/plans/p", body, "If-None-Match", "*")
	if r.Status != 412 || r.Code() != "already_exists" || r.Map(t)["current_revision"] != float64(1) {
		t.Errorf("If-None-Match * on existing: %d %s", r.Status, r.Body)
	}
	// If-Match, quoted or bare; weak never matches; * needs existence.
	putPlan(t, env, "p", body, 200, "If-Match", `"1"`)
	putPlan(t, env, "p", body, 200, "If-Match", `2`)
	for _, im := range []string{`"2"`, `W/"3"`, `"1", "2"`} {
		r := env.Call("PUT", "/v1/plans/p", body, "If-Match", im)
		if r.Status != 412 || r.Code() != "version_conflict" || r.Map(t)["current_revision"] != float64(3) {
			t.Errorf("If-Match %s at 3: %d %s", im, r.Status, r.Body)
		}
	}
	putPlan(t, env, "p", body, 200, "If-Match", `*`)
	if r := env.Call("PUT", "/v1/plans/new", body, "If-Match", `*`); r.Status != 412 || r.Map(t)["current_revision"] != float64(0) {
		t.Errorf("If-Match * on missing: %d %s", r.Status, r.Body)
	}
	if r := env.Call("PUT", "/v1/plans/new", body, "If-Match", `"1"`); r.Status != 412 {
		t.Errorf("If-Match on missing: %d %s", r.Status, r.Body)
	}
	if r := env.Bad("PUT", "/v1/plans/p", body, "If-Match", `seven`); r.Status != 400 || !strings.Contains(string(r.Body), `"field":"If-Match"`) {
		t.Errorf("garbage If-Match: %d %s", r.Status, r.Body)
	}
	// Body last_known_revision: a stale one is 409, 0 means "must not exist".
	putPlan(t, env, "p", map[string]any{"content": "v", "last_known_revision": 4}, 200)
	r = env.Call("PUT", "/v1/plans/p", map[string]any{"content": "v", "last_known_revision": 4})
	if r.Status != 409 || r.Code() != "version_conflict" || r.Map(t)["current_revision"] != float64(5) {
		t.Errorf("stale last_known_revision: %d %s", r.Status, r.Body)
	}
	putPlan(t, env, "fresh", map[string]any{"content": "v", "last_known_revision": 0}, 201)
	if r := env.Call("PUT", "/v1/plans/fresh", map[string]any{"content": "v", "last_known_revision": 0}); r.Status != 409 {
		t.Errorf("last_known_revision 0 on existing: %d %s", r.Status, r.Body)
	}
	if r := env.Call("PUT", "/v1/plans/ghost", map[string]any{"content": "v", "last_known_revision": 3}); r.Status != 409 || r.Map(t)["current_revision"] != float64(0) {
		t.Errorf("last_known_revision on missing: %d %s", r.Status, r.Body)
	}
	// Header and body both given: agreeing is fine, disagreeing is 400.
	putPlan(t, env, "p", map[string]any{"content": "v", "last_known_revision": 5}, 200, "If-Match", `"5"`)
	if r := env.Call("PUT", "/v1/plans/p", map[string]any{"content": "v", "last_known_revision": 6}, "If-Match", `"5"`); r.Status != 400 {
		t.Errorf("header and body disagree: %d %s", r.Status, r.Body)
	}
	// The same rules on /content, /status and DELETE; 404 before 412.
	if r := env.Call("PUT", "/v1/plans/p/content", "x", "Content-Type", "text/markdown", "If-Match", `"1"`); r.Status != 412 {
		t.Errorf("stale If-Match on /content: %d", r.Status)
	}
	if r := env.Call("PUT", "/v1/plans/p/status", map[string]any{"status": "x"}, "If-Match", `"1"`); r.Status != 412 {
		t.Errorf("stale If-Match on /status: %d", r.Status)
	}
	if r := env.Call("PUT", "/v1/plans/p/status", map[string]any{"status": "x", "last_known_revision": 1}); r.Status != 409 {
		t.Errorf("stale last_known_revision on /status: %d", r.Status)
	}
	if r := env.Call("PUT", "/v1/plans/nope/status", map[string]any{"status": "x"}, "If-Match", `"1"`); r.Status != 404 {
		t.Errorf("status of a missing plan with If-Match: %d", r.Status)
	}
	if r := env.Call("DELETE", "/v1/plans/nope", nil, "If-Match", `"1"`); r.Status != 404 {
		t.Errorf("delete of a missing plan with If-Match: %d", r.Status)
	}
	if r := env.Call("DELETE", "/v1/plans/p", nil, "If-Match", `"5"`); r.Status != 412 {
		t.Errorf("stale If-Match on delete: %d", r.Status)
	}
	if got := getPlan(t, env, "p"); got.Revision != 6 {
		t.Errorf("refused writes changed the plan: revision %d, want 6", got.Revision)
	}
	if got := planEvents(t, env, "p"); strings.Count(got, "plan.") != 6 {
		t.Errorf("events of p = %s, want one per revision", got)
	}
}

func TestPlanRequirePreconditions(t *testing.T) {
	env := apitest.New(t, func(c *app.Config) { c.RequirePreconditions = true })
	// Creating needs no precondition: there is nothing to overwrite.
	putPlan(t, env, "p", map[string]any{"content": "v"}, 201)
	for _, r := range []*apitest.Response{
		env.Call("PUT", "/v1/plans/p", map[string]any{"content": "w"}),
		env.Call("PUT", "/v1/plans/p", "content: w\n", "Content-Type", "application/yaml"),
		env.Call("PUT", "/v1/plans/p/content", "w", "Content-Type", "text/markdown"),
		env.Call("PUT", "/v1/plans/p/status", map[string]any{"status": "done"}),
		env.Call("DELETE", "/v1/plans/p", nil),
	} {
		if r.Status != 428 || r.Code() != "precondition_required" {
			t.Errorf("unconditional update: %d %s", r.Status, r.Body)
		}
	}
	putPlan(t, env, "p", map[string]any{"content": "w", "last_known_revision": 1}, 200)
	putPlan(t, env, "p", map[string]any{"content": "w"}, 200, "If-Match", `"2"`)
	if r := env.Call("DELETE", "/v1/plans/p", nil, "If-Match", `*`); r.Status != 204 {
		t.Errorf("conditional delete: %d %s", r.Status, r.Body)
	}
}

func TestPlanContentIsACheapEdit(t *testing.T) {
	env := apitest.New(t)
	putPlan(t, env, "big", map[string]any{"title": "Big", "content": "# Big plan\n\nünïcödé ✓\n", "author": "a", "status": "active",
		"steps": []map[string]any{{"id": "1", "description": "d", "owner": "o"}}}, 201)
	// Download: exactly the content, as Markdown.
	r := env.Call("GET", "/v1/plans/big/content", nil)
	if r.Status != 200 || string(r.Body) != "# Big plan\n\nünïcödé ✓\n" || r.Header.Get("Content-Type") != "text/markdown; charset=utf-8" || r.Header.Get("ETag") != `"1"` {
		t.Fatalf("GET content: %d %q %v", r.Status, r.Body, r.Header)
	}
	if r := env.Call("GET", "/v1/plans/big/content", nil, "If-None-Match", `"1"`); r.Status != 304 {
		t.Errorf("content If-None-Match: %d", r.Status)
	}
	if r := env.Call("GET", "/v1/plans/big/content", nil, "Accept", "application/json"); r.Status != 406 {
		t.Errorf("content as JSON: %d", r.Status)
	}
	// Upload: the body becomes the content, everything else but the
	// author (the writer's) stays, and the answer does not echo the body.
	r = env.Call("PUT", "/v1/plans/big/content", "# Big plan\n\nedited\n", "Content-Type", "text/markdown", "If-Match", `"1"`)
	if r.Status != 200 || r.Header.Get("ETag") != `"2"` {
		t.Fatalf("PUT content: %d %s", r.Status, r.Body)
	}
	if m := r.Map(t); m["content"] != nil || m["steps"] != nil || m["revision"] != float64(2) || m["title"] != "Big" {
		t.Errorf("PUT content answered %s", r.Body)
	}
	p := getPlan(t, env, "big")
	if p.Content != "# Big plan\n\nedited\n" || p.Title != "Big" || p.Author != "anonymous" || p.Status != "active" || !strings.Contains(string(p.Steps), `"owner":"o"`) {
		t.Errorf("after content PUT: %+v", p)
	}
	// text/plain is Markdown too; a form-encoded body (curl's default) is not.
	if r := env.Call("PUT", "/v1/plans/big/content", "plain\n", "Content-Type", "text/plain"); r.Status != 200 {
		t.Errorf("text/plain content: %d %s", r.Status, r.Body)
	}
	if r := env.Bad("PUT", "/v1/plans/big/content", "a=b", "Content-Type", "application/x-www-form-urlencoded"); r.Status != 415 {
		t.Errorf("form content: %d %s", r.Status, r.Body)
	}
	// A content PUT on a missing plan creates it.
	r = env.Call("PUT", "/v1/plans/from-file/content", "# From a file\n", "Content-Type", "text/markdown")
	if r.Status != 201 || r.Header.Get("Location") != "/v1/plans/from-file" {
		t.Errorf("content create: %d %s", r.Status, r.Body)
	}
	if got := planEvents(t, env, "big"); got != "plan.created@1,plan.updated@2,plan.updated@3" {
		t.Errorf("events = %s", got)
	}
}

func TestPlanStatus(t *testing.T) {
	env := apitest.New(t)
	putPlan(t, env, "s", map[string]any{"content": "body", "status": "idle"}, 201)
	r := env.Call("GET", "/v1/plans/s/status", nil)
	if r.Status != 200 || string(r.Body) != `{"name":"s","status":"idle","revision":1}`+"\n" || r.Header.Get("ETag") != `"1"` {
		t.Errorf("GET status: %d %s", r.Status, r.Body)
	}
	if r := env.Call("GET", "/v1/plans/s/status", nil, "If-None-Match", `"1"`); r.Status != 304 {
		t.Errorf("status If-None-Match: %d", r.Status)
	}
	for i, st := range []string{"in-progress", "in-progress", ""} {
		r := env.Call("PUT", "/v1/plans/s/status", map[string]any{"status": st, "last_known_revision": i + 1})
		want := fmt.Sprintf(`{"name":"s","status":%q,"revision":%d}`+"\n", st, i+2)
		if r.Status != 200 || string(r.Body) != want {
			t.Errorf("PUT status %q: %d %s, want %s", st, r.Status, r.Body, want)
		}
	}
	if p := getPlan(t, env, "s"); p.Content != "body" || p.Revision != 4 {
		t.Errorf("status writes touched the body: %+v", p)
	}
	if got := planEvents(t, env, "s"); got != "plan.created@1,plan.status_changed@2,plan.status_changed@3,plan.status_changed@4" {
		t.Errorf("events = %s", got)
	}
	var data string
	if err := env.DB.Reader(context.Background()).QueryRow(`SELECT data FROM events WHERE plan = 's' AND revision = 2`).Scan(&data); err != nil ||
		data != `{"name":"s","status":"in-progress","previous_status":"idle","revision":2}` {
		t.Errorf("status event data %s, %v", data, err)
	}
	if r := env.Call("PUT", "/v1/plans/ghost/status", map[string]any{"status": "x"}); r.Status != 404 {
		t.Errorf("status of a missing plan: %d", r.Status)
	}
	if r := env.Call("GET", "/v1/plans/ghost/status", nil); r.Status != 404 {
		t.Errorf("GET status of a missing plan: %d", r.Status)
	}
	for _, body := range []string{`{}`, `{"status":null}`, `{"status":1}`, `{"status":"x","colour":"red"}`, `{"status":"` + strings.Repeat("x", 257) + `"}`} {
		if r := env.Bad("PUT", "/v1/plans/s/status", body); r.Status != 400 || r.Code() != "invalid_argument" {
			t.Errorf("status body %.40s: %d %s", body, r.Status, r.Body)
		}
	}
	if p := getPlan(t, env, "s"); p.Revision != 4 {
		t.Errorf("bad status bodies wrote: revision %d", p.Revision)
	}
}

func TestPlanHistory(t *testing.T) {
	env := apitest.New(t, func(c *app.Config) { c.PlanHistory = 3 })
	for i := 1; i <= 5; i++ {
		putPlan(t, env, "h", map[string]any{"content": fmt.Sprintf("v%d", i), "author": fmt.Sprintf("a%d", i), "status": fmt.Sprintf("s%d", i)}, map[bool]int{true: 201, false: 200}[i == 1])
	}
	var hist api.PlanRevisions
	env.Call("GET", "/v1/plans/h/revisions", nil).JSON(t, &hist)
	var got []string
	for _, r := range hist.Revisions {
		got = append(got, fmt.Sprintf("%d:%s:%s", r.Revision, r.Author, r.Status))
	}
	if strings.Join(got, ",") != "5:a5:s5,4:a4:s4,3:a3:s3" {
		t.Errorf("history = %v", got)
	}
	// Pruned in the writing transaction: only the two earlier readable
	// revisions are stored besides the current one.
	if n := countRows(t, env, "plan_revisions", "name = 'h'"); n != 2 {
		t.Errorf("plan_revisions rows = %d, want 2", n)
	}
	var old plan
	r := env.Call("GET", "/v1/plans/h/revisions/3", nil)
	r.JSON(t, &old)
	if r.Status != 200 || old.Content != "v3" || old.Author != "a3" || old.Status != "s3" || old.Revision != 3 || r.Header.Get("ETag") != `"3"` {
		t.Errorf("revision 3: %d %+v", r.Status, old)
	}
	if r := env.Call("GET", "/v1/plans/h/revisions/5", nil); r.Status != 200 || r.Map(t)["content"] != "v5" {
		t.Errorf("current revision: %d %s", r.Status, r.Body)
	}
	if r := env.Call("GET", "/v1/plans/h/revisions/4", nil, "Accept", "text/markdown"); string(r.Body) != "v4" {
		t.Errorf("revision 4 as Markdown: %q", r.Body)
	}
	if r := env.Call("GET", "/v1/plans/h/revisions/4", nil, "Accept", "application/yaml"); !strings.Contains(string(r.Body), "content: v4") {
		t.Errorf("revision 4 as YAML: %s", r.Body)
	}
	if r := env.Call("GET", "/v1/plans/h/revisions/4", nil, "If-None-Match", `"4"`); r.Status != 304 {
		t.Errorf("revision If-None-Match: %d", r.Status)
	}
	for _, n := range []string{"2", "1", "6", "999"} {
		if r := env.Call("GET", "/v1/plans/h/revisions/"+n, nil); r.Status != 404 || r.Code() != "not_found" {
			t.Errorf("revision %s: %d %s", n, r.Status, r.Body)
		}
	}
	for _, n := range []string{"abc", "0", "-1", "+3", "1.5", "99999999999999999999"} {
		if r := env.Bad("GET", "/v1/plans/h/revisions/"+n, nil); r.Status != 400 || !strings.Contains(string(r.Body), `"field":"revision"`) {
			t.Errorf("revision %s: %d %s", n, r.Status, r.Body)
		}
	}
	if r := env.Call("GET", "/v1/plans/ghost/revisions", nil); r.Status != 404 {
		t.Errorf("history of a missing plan: %d", r.Status)
	}
	// A status write is a revision too and keeps the body in history.
	env.Call("PUT", "/v1/plans/h/status", map[string]any{"status": "done"})
	if r := env.Call("GET", "/v1/plans/h/revisions/5", nil); r.Map(t)["status"] != "s5" {
		t.Errorf("revision 5 after a status write: %s", r.Body)
	}
}

func TestPlanList(t *testing.T) {
	env := apitest.New(t)
	for i := 0; i < 7; i++ {
		status := []string{"draft", "active"}[i%2]
		author := []string{"ann", "bob", "cy"}[i%3]
		putPlan(t, env, fmt.Sprintf("plan-%d", i), map[string]any{"title": fmt.Sprintf("T%d", i), "content": strings.Repeat("x", 1000), "status": status, "author": author}, 201)
	}
	type page struct {
		Plans    []map[string]any `json:"plans"`
		Next     string           `json:"next_page_token"`
		Warnings []map[string]any `json:"warnings"`
	}
	walk := func(query string) ([]string, int) {
		t.Helper()
		var names []string
		token, pages := "", 0
		for {
			path := "/v1/plans?" + query
			if token != "" {
				path += "&page_token=" + token
			}
			var pg page
			r := env.Call("GET", path, nil)
			if r.Status != 200 {
				t.Fatalf("%s: %d %s", path, r.Status, r.Body)
			}
			r.JSON(t, &pg)
			pages++
			for _, p := range pg.Plans {
				if _, ok := p["content"]; ok {
					t.Errorf("list carries content: %v", p)
				}
				names = append(names, p["name"].(string))
			}
			if pg.Next == "" {
				return names, pages
			}
			token = pg.Next
		}
	}
	if names, pages := walk("limit=3"); strings.Join(names, ",") != "plan-0,plan-1,plan-2,plan-3,plan-4,plan-5,plan-6" || pages != 3 {
		t.Errorf("all: %v in %d pages", names, pages)
	}
	if names, _ := walk("status=active&limit=2"); strings.Join(names, ",") != "plan-1,plan-3,plan-5" {
		t.Errorf("status=active: %v", names)
	}
	if names, _ := walk("author=ann"); strings.Join(names, ",") != "plan-0,plan-3,plan-6" {
		t.Errorf("author=ann: %v", names)
	}
	if names, _ := walk("author=ann&status=draft&limit=1"); strings.Join(names, ",") != "plan-0,plan-6" {
		t.Errorf("author=ann&status=draft: %v", names)
	}
	var first page
	env.Call("GET", "/v1/plans?status=draft&limit=1", nil).JSON(t, &first)
	if r := env.Call("GET", "/v1/plans?status=active&page_token="+first.Next, nil); r.Status != 400 {
		t.Errorf("token with other filters: %d", r.Status)
	}
	for _, q := range []string{"limit=0", "limit=1001", "limit=x", "page_token=garbage"} {
		if r := env.Call("GET", "/v1/plans?"+q, nil); r.Status != 400 || r.Code() != "invalid_argument" {
			t.Errorf("?%s: %d %s", q, r.Status, r.Body)
		}
	}

	// Rows that cannot be read are skipped and named in warnings, never
	// fatal; the page still continues past them.
	for name, steps := range map[string]string{"plan-1": `{not json`, "plan-2": `{"a":1}`, "plan-4": `[1]`} {
		if err := env.DB.Write(context.Background(), func(tx *db.Tx) error {
			_, err := tx.Exec(`UPDATE plans SET steps = ? WHERE name = ?`, steps, name)
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	var pg page
	env.Call("GET", "/v1/plans?limit=3", nil).JSON(t, &pg)
	if len(pg.Plans) != 1 || pg.Plans[0]["name"] != "plan-0" || len(pg.Warnings) != 2 || pg.Next == "" {
		t.Fatalf("first page with corrupt rows: %+v", pg)
	}
	if pg.Warnings[0]["name"] != "plan-1" || !strings.Contains(pg.Warnings[0]["message"].(string), "not valid JSON") ||
		pg.Warnings[1]["name"] != "plan-2" || !strings.Contains(pg.Warnings[1]["message"].(string), "not a JSON array") {
		t.Errorf("warnings = %v", pg.Warnings)
	}
	names, _ := walk("limit=3")
	if strings.Join(names, ",") != "plan-0,plan-3,plan-5,plan-6" {
		t.Errorf("readable plans = %v", names)
	}
	// Reading a corrupt plan is an error distinct from a missing one, and
	// deleting it repairs the list.
	if r := env.Call("GET", "/v1/plans/plan-4", nil); r.Status != 500 || r.Code() != "internal" {
		t.Errorf("GET corrupt plan: %d %s", r.Status, r.Body)
	}
	if r := env.Call("GET", "/v1/plans/plan-4/status", nil); r.Status != 200 {
		t.Errorf("status of a corrupt plan: %d %s", r.Status, r.Body)
	}
	if r := env.Call("DELETE", "/v1/plans/plan-4", nil); r.Status != 204 {
		t.Errorf("delete corrupt plan: %d %s", r.Status, r.Body)
	}
	putPlan(t, env, "plan-1", map[string]any{"content": "fixed", "steps": []any{}}, 200)
	env.Call("GET", "/v1/plans?limit=100", nil).JSON(t, &pg)
	if len(pg.Plans) != 5 || len(pg.Warnings) != 1 || pg.Warnings[0]["name"] != "plan-2" {
		t.Errorf("after repairs: %d plans, warnings %v", len(pg.Plans), pg.Warnings)
	}
}

func TestPlanDelete(t *testing.T) {
	env := apitest.New(t)
	putPlan(t, env, "d", map[string]any{"content": "v1"}, 201)
	putPlan(t, env, "d", map[string]any{"content": "v2"}, 200)
	if r := env.Call("DELETE", "/v1/plans/d", nil, "If-Match", `"2"`); r.Status != 204 || len(r.Body) != 0 {
		t.Fatalf("delete: %d %s", r.Status, r.Body)
	}
	for _, p := range []string{"/v1/plans/d", "/v1/plans/d/content", "/v1/plans/d/status", "/v1/plans/d/revisions", "/v1/plans/d/revisions/1"} {
		if r := env.Call("GET", p, nil); r.Status != 404 {
			t.Errorf("GET %s after delete: %d", p, r.Status)
		}
	}
	if r := env.Call("DELETE", "/v1/plans/d", nil); r.Status != 404 {
		t.Errorf("second delete: %d", r.Status)
	}
	if n := countRows(t, env, "plan_revisions", "name = 'd'"); n != 0 {
		t.Errorf("history left behind: %d rows", n)
	}
	if got := planEvents(t, env, "d"); got != "plan.created@1,plan.updated@2,plan.deleted@2" {
		t.Errorf("events = %s", got)
	}
	// A plan made again under the same name continues above the deleted
	// one's revisions, so an ETag of the old plan can never match the new.
	if p := putPlan(t, env, "d", map[string]any{"content": "again"}, 201); p.Revision != 3 {
		t.Errorf("recreated at revision %d, want 3", p.Revision)
	}
	if r := env.Call("PUT", "/v1/plans/d", map[string]any{"content": "stale"}, "If-Match", `"1"`); r.Status != 412 {
		t.Errorf("If-Match of the deleted plan's revision 1: %d, want 412", r.Status)
	}
}

func TestPlanBadInputIsRefusedAndWritesNothing(t *testing.T) {
	const limit = 1000
	env := apitest.New(t, func(c *app.Config) { c.MaxPlanBytes = limit; c.MaxBodyBytes = 4096 })
	putPlan(t, env, "p", map[string]any{"content": "original"}, 201)
	long := strings.Repeat("a", 129)
	cases := []struct {
		name, method, path, body, contentType string
		status                                int
		code, field                           string
	}{
		{"upper case name", "PUT", "/v1/plans/Release", `{"content":"x"}`, "application/json", 400, "invalid_argument", "name"},
		{"dot dot", "PUT", "/v1/plans/..", `{"content":"x"}`, "application/json", 400, "invalid_argument", "name"},
		{"dot dot read", "GET", "/v1/plans/../sessions", ``, "", 400, "invalid_argument", "name"},
		{"escaped slash", "PUT", "/v1/plans/a%2Fb", `{"content":"x"}`, "application/json", 400, "invalid_argument", "name"},
		{"escaped slash read", "GET", "/v1/plans/a%2fb/content", ``, "", 400, "invalid_argument", "name"},
		{"slash", "PUT", "/v1/plans/a/b", `{"content":"x"}`, "application/json", 400, "invalid_argument", "name"},
		{"slash delete", "DELETE", "/v1/plans/p/x", ``, "", 400, "invalid_argument", "name"},
		{"dash first", "PUT", "/v1/plans/-x", `{"content":"x"}`, "application/json", 400, "invalid_argument", "name"},
		{"dot", "PUT", "/v1/plans/a.b", `{"content":"x"}`, "application/json", 400, "invalid_argument", "name"},
		{"space", "PUT", "/v1/plans/a%20b", `{"content":"x"}`, "application/json", 400, "invalid_argument", "name"},
		{"too long", "PUT", "/v1/plans/" + long, `{"content":"x"}`, "application/json", 400, "invalid_argument", "name"},
		{"trailing slash", "GET", "/v1/plans/", ``, "", 400, "invalid_argument", "name"},
		{"bad status name", "PUT", "/v1/plans/A/status", `{"status":"x"}`, "application/json", 400, "invalid_argument", "name"},
		{"bad revisions name", "GET", "/v1/plans/A/revisions", ``, "", 400, "invalid_argument", "name"},
		{"no content", "PUT", "/v1/plans/p", `{"title":"t"}`, "application/json", 400, "invalid_argument", "content"},
		{"empty content", "PUT", "/v1/plans/p", `{"content":""}`, "application/json", 400, "invalid_argument", "content"},
		{"blank content", "PUT", "/v1/plans/p", `{"content":"  \n\t"}`, "application/json", 400, "invalid_argument", "content"},
		{"null content", "PUT", "/v1/plans/p", `{"content":null}`, "application/json", 400, "invalid_argument", "content"},
		{"empty markdown", "PUT", "/v1/plans/p", ``, "text/markdown", 400, "invalid_argument", "content"},
		{"empty content upload", "PUT", "/v1/plans/p/content", "\n", "text/markdown", 400, "invalid_argument", "content"},
		{"binary markdown", "PUT", "/v1/plans/p/content", "\xff\xfe", "text/markdown", 400, "invalid_argument", "content"},
		{"content too large", "PUT", "/v1/plans/p", `{"content":"` + strings.Repeat("x", limit+1) + `"}`, "application/json", 413, "payload_too_large", ""},
		{"markdown too large", "PUT", "/v1/plans/p", strings.Repeat("x", limit+1), "text/markdown", 413, "payload_too_large", ""},
		{"upload too large", "PUT", "/v1/plans/p/content", strings.Repeat("x", limit+1), "text/markdown", 413, "payload_too_large", ""},
		{"yaml too large", "PUT", "/v1/plans/p", "content: " + strings.Repeat("x", limit+1), "application/yaml", 413, "payload_too_large", ""},
		{"body too large", "PUT", "/v1/plans/p", `{"content":"x","title":"` + strings.Repeat("t", 2*limit+70000) + `"}`, "application/json", 413, "payload_too_large", ""},
		{"title too long", "PUT", "/v1/plans/p", `{"content":"x","title":"` + strings.Repeat("t", 1025) + `"}`, "application/json", 400, "invalid_argument", "title"},
		{"author too long", "PUT", "/v1/plans/p", `{"content":"x","author":"` + strings.Repeat("t", 257) + `"}`, "application/json", 400, "invalid_argument", "author"},
		{"malformed", "PUT", "/v1/plans/p", `{"content":`, "application/json", 400, "invalid_argument", ""},
		{"unknown field", "PUT", "/v1/plans/p", `{"content":"x","revision":3}`, "application/json", 400, "invalid_argument", "revision"},
		{"name in body", "PUT", "/v1/plans/p", `{"content":"x","name":"p"}`, "application/json", 400, "invalid_argument", "name"},
		{"wrong type", "PUT", "/v1/plans/p", `{"content":5}`, "application/json", 400, "invalid_argument", "content"},
		{"steps not array", "PUT", "/v1/plans/p", `{"content":"x","steps":{"id":"1"}}`, "application/json", 400, "invalid_argument", "steps"},
		{"step not object", "PUT", "/v1/plans/p", `{"content":"x","steps":[{"id":"1"},"two"]}`, "application/json", 400, "invalid_argument", "steps[1]"},
		{"negative last known", "PUT", "/v1/plans/p", `{"content":"x","last_known_revision":-1}`, "application/json", 400, "invalid_argument", "last_known_revision"},
		{"yaml unknown field", "PUT", "/v1/plans/p", "content: x\nowner: me\n", "application/yaml", 400, "invalid_argument", ""},
		{"yaml name", "PUT", "/v1/plans/p", "name: p\ncontent: x\n", "application/yaml", 400, "invalid_argument", ""},
		{"yaml two documents", "PUT", "/v1/plans/p", "content: x\n---\ncontent: y\n", "application/yaml", 400, "invalid_argument", ""},
		{"yaml malformed", "PUT", "/v1/plans/p", "content: [x\n", "application/yaml", 400, "invalid_argument", ""},
		{"yaml not a mapping", "PUT", "/v1/plans/p", "- content\n", "application/yaml", 400, "invalid_argument", ""},
		{"yaml no content", "PUT", "/v1/plans/p", "title: t\n", "application/yaml", 400, "invalid_argument", "content"},
		{"yaml step not mapping", "PUT", "/v1/plans/p", "content: x\nsteps: [a]\n", "application/yaml", 400, "invalid_argument", "steps[0]"},
		{"html body", "PUT", "/v1/plans/p", `<p>x</p>`, "text/html", 415, "unsupported_media_type", ""},
		{"json content upload", "PUT", "/v1/plans/p/content", `{"content":"x"}`, "application/json", 415, "unsupported_media_type", ""},
		{"markdown status", "PUT", "/v1/plans/p/status", `done`, "text/markdown", 415, "unsupported_media_type", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := refused(t, env, c.method, c.path, c.body, c.contentType, c.status, c.code)
			if c.field != "" && !strings.Contains(string(r.Body), `"field":"`+c.field+`"`) {
				t.Errorf("error does not name field %s: %s", c.field, r.Body)
			}
		})
	}
	if n := countRows(t, env, "plans", ""); n != 1 {
		t.Errorf("bad input stored plans: %d rows, want 1", n)
	}
	if p := getPlan(t, env, "p"); p.Revision != 1 || p.Content != "original" {
		t.Errorf("bad input changed p: %+v", p)
	}
	if n := countRows(t, env, "events", "plan IS NOT NULL"); n != 1 {
		t.Errorf("bad input appended events: %d", n)
	}
	// POST is not a plan method: 405 with the methods that are.
	if r := env.Bad("POST", "/v1/plans/p", `{}`); r.Status != 405 || r.Header.Get("Allow") != "GET, HEAD, PUT, DELETE" {
		t.Errorf("POST on a plan: %d Allow %q", r.Status, r.Header.Get("Allow"))
	}
}

// TestPlanContentLimitCountsContentNotEscaping: a plan whose content is
// exactly at the limit is accepted even when JSON escaping doubles its
// size on the wire; one byte more is 413.
func TestPlanContentLimitCountsContentNotEscaping(t *testing.T) {
	env := apitest.New(t) // the default limits: 1 MiB of content
	const mib = 1 << 20
	line := "\"quoted\"\n" // 9 bytes, 13 once escaped
	content := strings.Repeat(line, mib/len(line))
	content += strings.Repeat("x", mib-len(content))
	body := map[string]any{"content": content}
	if encoded := mustJSON(body); len(encoded) < mib*13/10 {
		t.Fatalf("the JSON body is only %d bytes; the test needs escaping to inflate it", len(encoded))
	}
	putPlan(t, env, "big", body, 201)
	if r := env.Call("GET", "/v1/plans/big/content", nil); len(r.Body) != mib || string(r.Body) != content {
		t.Errorf("content came back as %d bytes", len(r.Body))
	}
	body["content"] = content + "x"
	if r := env.Call("PUT", "/v1/plans/big", body); r.Status != 413 || r.Code() != "payload_too_large" {
		t.Errorf("content one byte over: %d %s", r.Status, r.Body)
	}
	if r := env.Call("PUT", "/v1/plans/big/content", content+"x", "Content-Type", "text/markdown"); r.Status != 413 {
		t.Errorf("upload one byte over: %d %s", r.Status, r.Body)
	}
	if r := env.Call("PUT", "/v1/plans/big/content", content, "Content-Type", "text/markdown"); r.Status != 200 {
		t.Errorf("upload at the limit: %d %s", r.Status, r.Body)
	}
}

// TestConcurrentPlanWritersLoseNoUpdate runs 8 clients doing read →
// conditional write loops on one plan. Every write either wins (and is a
// revision of its own, readable in history with exactly its content) or
// gets a clean 412; no success is ever overwritten unseen.
func TestConcurrentPlanWritersLoseNoUpdate(t *testing.T) {
	env := apitest.New(t, func(c *app.Config) { c.PlanHistory = 1000 })
	putPlan(t, env, "shared", map[string]any{"content": "start"}, 201)
	const clients, rounds = 8, 12
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		wins     = map[int64]string{} // revision → content written
		failures int
	)
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < rounds; i++ {
				r := env.Call("GET", "/v1/plans/shared", nil)
				var cur plan
				r.JSON(t, &cur)
				etag := r.Header.Get("ETag")
				content := fmt.Sprintf("%s\nclient %d round %d read %d", cur.Content[:min(len(cur.Content), 40)], c, i, cur.Revision)
				w := env.Call("PUT", "/v1/plans/shared", map[string]any{"content": content, "author": fmt.Sprint("client-", c)}, "If-Match", etag)
				switch w.Status {
				case http.StatusOK:
					var p plan
					w.JSON(t, &p)
					if p.Revision != cur.Revision+1 {
						t.Errorf("write based on %d became revision %d", cur.Revision, p.Revision)
					}
					mu.Lock()
					if _, dup := wins[p.Revision]; dup {
						t.Errorf("two writes won revision %d", p.Revision)
					}
					wins[p.Revision] = content
					mu.Unlock()
				case http.StatusPreconditionFailed:
					if w.Code() != "version_conflict" || w.Map(t)["current_revision"].(float64) <= float64(cur.Revision) {
						t.Errorf("unclean 412: %s", w.Body)
					}
					mu.Lock()
					failures++
					mu.Unlock()
				default:
					t.Errorf("write: %d %s", w.Status, w.Body)
				}
			}
		}()
	}
	wg.Wait()
	final := getPlan(t, env, "shared")
	if final.Revision != int64(len(wins))+1 {
		t.Fatalf("final revision %d, %d successful writes: a lost or phantom update", final.Revision, len(wins))
	}
	if len(wins)+failures != clients*rounds {
		t.Errorf("%d wins + %d conflicts != %d attempts", len(wins), failures, clients*rounds)
	}
	var hist api.PlanRevisions
	env.Call("GET", "/v1/plans/shared/revisions", nil).JSON(t, &hist)
	if len(hist.Revisions) != int(final.Revision) {
		t.Errorf("history holds %d revisions, want %d", len(hist.Revisions), final.Revision)
	}
	for i, r := range hist.Revisions {
		if r.Revision != final.Revision-int64(i) {
			t.Fatalf("history entry %d is revision %d", i, r.Revision)
		}
	}
	for rev, content := range wins {
		var p plan
		env.Call("GET", fmt.Sprintf("/v1/plans/shared/revisions/%d", rev), nil).JSON(t, &p)
		if p.Content != content {
			t.Errorf("revision %d holds %q, its writer wrote %q", rev, p.Content, content)
		}
	}
	if n := countRows(t, env, "events", "plan = 'shared' AND type = 'plan.updated'"); n != len(wins) {
		t.Errorf("plan.updated events %d, wins %d", n, len(wins))
	}
	t.Logf("%d clients × %d rounds: %d writes won, %d got 412", clients, rounds, len(wins), failures)
}

// TestPlansSurviveRestart closes the database and serves the same file
// again: revisions, history and status are all still there.
func TestPlansSurviveRestart(t *testing.T) {
	env := apitest.New(t)
	putPlan(t, env, "durable", map[string]any{"title": "D", "content": "v1", "steps": []map[string]any{{"id": "1", "description": "d", "owner": "o"}}}, 201)
	putPlan(t, env, "durable", map[string]any{"content": "v2"}, 200)
	env.Call("PUT", "/v1/plans/durable/status", map[string]any{"status": "blocked"})
	before := getPlan(t, env, "durable")
	beforeHist := env.Call("GET", "/v1/plans/durable/revisions", nil).Body
	env.Close()

	env = apitest.Open(t, env.DBPath)
	after := getPlan(t, env, "durable")
	if after.Revision != 3 || after.Status != "blocked" || after.Content != "v2" || string(after.Steps) != string(before.Steps) || after.UpdatedAt != before.UpdatedAt {
		t.Errorf("after restart: %+v, before %+v", after, before)
	}
	if h := env.Call("GET", "/v1/plans/durable/revisions", nil).Body; string(h) != string(beforeHist) {
		t.Errorf("history after restart %s, before %s", h, beforeHist)
	}
	if r := env.Call("GET", "/v1/plans/durable/revisions/1", nil); r.Map(t)["content"] != "v1" {
		t.Errorf("revision 1 after restart: %s", r.Body)
	}
	if r := env.Call("GET", "/v1/plans/durable/status", nil); string(r.Body) != `{"name":"durable","status":"blocked","revision":3}`+"\n" {
		t.Errorf("status after restart: %s", r.Body)
	}
	// Writing goes on from the stored revision.
	putPlan(t, env, "durable", map[string]any{"content": "v4"}, 200, "If-Match", `"3"`)
}
