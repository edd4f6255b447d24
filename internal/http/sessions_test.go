package http_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/apitest"
	"github.com/planserver/planserver/internal/app"
)

// session is a session as the API answers it.
type session = api.Session

func createSession(t *testing.T, env *apitest.Env, body map[string]any) session {
	t.Helper()
	var b any
	if body != nil {
		b = body
	}
	resp := env.Call("POST", "/v1/sessions", b)
	if resp.Status != http.StatusCreated {
		t.Fatalf("create %v: %d %s", body, resp.Status, resp.Body)
	}
	var s session
	resp.JSON(t, &s)
	return s
}

func getSession(t *testing.T, env *apitest.Env, id string) session {
	t.Helper()
	resp := env.Call("GET", "/v1/sessions/"+id, nil)
	if resp.Status != http.StatusOK {
		t.Fatalf("get %s: %d %s", id, resp.Status, resp.Body)
	}
	var s session
	resp.JSON(t, &s)
	return s
}

func setMode(t *testing.T, env *apitest.Env, id, mode string, wantStatus int) *apitest.Response {
	t.Helper()
	resp := env.Call("PATCH", "/v1/sessions/"+id+"/mode", map[string]string{"mode": mode})
	if resp.Status != wantStatus {
		t.Fatalf("set mode of %s to %s: got %d, want %d: %s", id, mode, resp.Status, wantStatus, resp.Body)
	}
	return resp
}

// answersAsGet checks that resp, the answer of a write, is what a GET of
// path then reads (an approval's note aside), with the same ETag when the
// answer has one, and returns what the GET read.
func answersAsGet(t *testing.T, env *apitest.Env, what, path string, resp *apitest.Response) map[string]any {
	t.Helper()
	var answered, stored map[string]any
	resp.JSON(t, &answered)
	get := env.Call("GET", path, nil)
	get.JSON(t, &stored)
	if _, approval := answered["note"]; approval {
		delete(answered, "note")
		delete(answered, "scope") // what the approval granted
	}
	if !reflect.DeepEqual(answered, stored) {
		t.Errorf("%s answered\n%s\nGET reads\n%s", what, resp.Body, get.Body)
	}
	if etag := resp.Header.Get("ETag"); etag != "" && etag != get.Header.Get("ETag") {
		t.Errorf("%s: ETag %s, GET's %s", what, etag, get.Header.Get("ETag"))
	}
	return stored
}

// countRows counts the rows of a table matching where (with args).
func countRows(t *testing.T, env *apitest.Env, table, where string, args ...any) int {
	t.Helper()
	var n int
	q := "SELECT count(*) FROM " + table
	if where != "" {
		q += " WHERE " + where
	}
	if err := env.DB.Reader(context.Background()).QueryRow(q, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// refused sends one case of a bad-input table, a request that deliberately
// breaks the contract (a raw body, none when both body and contentType are
// empty), and fails the test unless it is refused with status and code.
func refused(t *testing.T, env *apitest.Env, method, path, body, contentType string, status int, code string) *apitest.Response {
	t.Helper()
	var h []string
	if contentType != "" {
		h = append(h, "Content-Type", contentType)
	}
	var b any
	if body != "" || contentType != "" {
		b = body
	}
	r := env.Bad(method, path, b, h...)
	if r.Status != status || r.Code() != code {
		t.Fatalf("got %d %s, want %d %s", r.Status, r.Body, status, code)
	}
	return r
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func TestSessionCreateGetETagAnd304(t *testing.T) {
	env := apitest.New(t)
	resp := env.Call("POST", "/v1/sessions", map[string]any{"id": "s1", "title": "first", "agent": "coder", "metadata": map[string]any{"k": "v"}})
	if resp.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", resp.Status, resp.Body)
	}
	if got := resp.Header.Get("Location"); got != "/v1/sessions/s1" {
		t.Errorf("Location = %q", got)
	}
	if got := resp.Header.Get("ETag"); got != `"1"` {
		t.Errorf("ETag = %q, want \"1\"", got)
	}
	var s session
	resp.JSON(t, &s)
	if s.Mode != "build" || s.EffectiveMode != "build" || s.ModeSource != nil || s.Review.State != "none" || s.Revision != 1 {
		t.Errorf("new session = %+v", s)
	}

	got := env.Call("GET", "/v1/sessions/s1", nil)
	if got.Status != 200 || got.Header.Get("ETag") != `"1"` {
		t.Fatalf("get: %d %s", got.Status, got.Header.Get("ETag"))
	}
	for _, inm := range []string{`"1"`, `1`, `*`, `"0", "1"`} {
		nm := env.Call("GET", "/v1/sessions/s1", nil, "If-None-Match", inm)
		if nm.Status != http.StatusNotModified || len(nm.Body) != 0 || nm.Header.Get("ETag") != `"1"` {
			t.Errorf("If-None-Match %s: %d %q etag %q", inm, nm.Status, nm.Body, nm.Header.Get("ETag"))
		}
	}
	if nm := env.Call("GET", "/v1/sessions/s1", nil, "If-None-Match", `"2"`); nm.Status != 200 {
		t.Errorf("If-None-Match stale: %d", nm.Status)
	}

	// A generated id.
	gen := createSession(t, env, nil)
	if !strings.HasPrefix(gen.ID, "ses_") {
		t.Errorf("generated id %q", gen.ID)
	}
	if env.Call("GET", "/v1/sessions/"+gen.ID, nil).Status != 200 {
		t.Error("generated session not found")
	}

	// Taken id.
	dup := env.Call("POST", "/v1/sessions", map[string]any{"id": "s1"})
	if dup.Status != http.StatusConflict || dup.Code() != "already_exists" {
		t.Errorf("duplicate: %d %s", dup.Status, dup.Body)
	}
	if nf := env.Call("GET", "/v1/sessions/nope", nil); nf.Status != 404 || nf.Code() != "not_found" {
		t.Errorf("missing: %d %s", nf.Status, nf.Body)
	}
	if n := countRows(t, env, "events", "type = 'session.created'"); n != 2 {
		t.Errorf("session.created events = %d, want 2", n)
	}
}

func TestEffectiveModeIsInheritedAtAnyDepth(t *testing.T) {
	env := apitest.New(t)
	ids := []string{"root", "a", "b", "c", "d", "e"}
	createSession(t, env, map[string]any{"id": "root"})
	for i := 1; i < len(ids); i++ {
		createSession(t, env, map[string]any{"id": ids[i], "parent_id": ids[i-1]})
	}
	setMode(t, env, "root", "plan", 200)
	for _, id := range ids {
		s := getSession(t, env, id)
		if s.EffectiveMode != "plan" || s.ModeSource == nil || *s.ModeSource != "root" {
			t.Errorf("%s after root→plan: effective %s source %v", id, s.EffectiveMode, s.ModeSource)
		}
		if id != "root" && s.Mode != "build" {
			t.Errorf("%s own mode = %s, want build", id, s.Mode)
		}
	}
	// The deepest session cannot leave plan mode by setting its own mode.
	resp := setMode(t, env, "e", "build", 200)
	var e session
	resp.JSON(t, &e)
	if e.EffectiveMode != "plan" || *e.ModeSource != "root" {
		t.Errorf("e set to build under a plan root: %+v", e)
	}
	// A nearer plan ancestor becomes the source.
	setMode(t, env, "b", "plan", 200)
	if s := getSession(t, env, "d"); *s.ModeSource != "b" {
		t.Errorf("d source = %s, want b", *s.ModeSource)
	}
	if s := getSession(t, env, "a"); *s.ModeSource != "root" {
		t.Errorf("a source = %s, want root", *s.ModeSource)
	}
	// Root back to build: b's subtree stays in plan, a leaves it.
	setMode(t, env, "root", "build", 200)
	if s := getSession(t, env, "a"); s.EffectiveMode != "build" || s.ModeSource != nil {
		t.Errorf("a after root→build: %+v", s)
	}
	if s := getSession(t, env, "e"); s.EffectiveMode != "plan" || *s.ModeSource != "b" {
		t.Errorf("e after root→build: %+v", s)
	}
	// A child created under a plan session gets build as its own mode.
	child := createSession(t, env, map[string]any{"id": "late", "parent_id": "e"})
	if child.Mode != "build" || child.EffectiveMode != "plan" || *child.ModeSource != "b" {
		t.Errorf("late child: %+v", child)
	}
	// The list resolves effective modes too.
	var list api.SessionList
	env.Call("GET", "/v1/sessions?limit=100", nil).JSON(t, &list)
	want := map[string]api.Mode{"root": "build", "a": "build", "b": "plan", "c": "plan", "d": "plan", "e": "plan", "late": "plan"}
	for _, s := range list.Sessions {
		if want[s.ID] != s.EffectiveMode {
			t.Errorf("list: %s effective %s, want %s", s.ID, s.EffectiveMode, want[s.ID])
		}
	}
}

func TestAncestorModeChangeBumpsDescendants(t *testing.T) {
	env := apitest.New(t)
	createSession(t, env, map[string]any{"id": "p"})
	createSession(t, env, map[string]any{"id": "k", "parent_id": "p"})
	before := getSession(t, env, "k")
	setMode(t, env, "p", "plan", 200)
	after := getSession(t, env, "k")
	if after.Revision != before.Revision+1 {
		t.Errorf("child revision %d → %d, want a bump: its effective mode changed", before.Revision, after.Revision)
	}
	// A cached child representation is no longer current.
	if r := env.Call("GET", "/v1/sessions/k", nil, "If-None-Match", fmt.Sprintf(`"%d"`, before.Revision)); r.Status != 200 {
		t.Errorf("stale If-None-Match on child: %d", r.Status)
	}
	if n := countRows(t, env, "events", "type = 'session.mode_changed' AND session_id = 'k'"); n != 1 {
		t.Errorf("child mode_changed events = %d, want 1", n)
	}
}

func TestHarnessSessionsRefusePlanMode(t *testing.T) {
	env := apitest.New(t)
	// On itself.
	createSession(t, env, map[string]any{"id": "h", "harness": true})
	resp := setMode(t, env, "h", "plan", http.StatusConflict)
	if resp.Code() != "unsupported_mode" || resp.Map(t)["session_id"] != "h" {
		t.Errorf("plan on harness: %s", resp.Body)
	}
	if r := env.Call("POST", "/v1/sessions", map[string]any{"id": "h2", "harness": true, "mode": "plan"}); r.Status != 409 || r.Code() != "unsupported_mode" {
		t.Errorf("create harness in plan: %d %s", r.Status, r.Body)
	}
	// As a child created under a plan tree, however deep.
	createSession(t, env, map[string]any{"id": "top", "mode": "plan"})
	createSession(t, env, map[string]any{"id": "mid", "parent_id": "top"})
	r := env.Call("POST", "/v1/sessions", map[string]any{"id": "hc", "parent_id": "mid", "harness": true})
	if r.Status != 409 || r.Code() != "unsupported_mode" || !strings.Contains(r.Map(t)["detail"].(string), "top") {
		t.Errorf("harness under plan tree: %d %s", r.Status, r.Body)
	}
	// Plan asked of an ancestor of a harness session names the harness.
	createSession(t, env, map[string]any{"id": "anc"})
	createSession(t, env, map[string]any{"id": "anc-kid", "parent_id": "anc"})
	createSession(t, env, map[string]any{"id": "deep-h", "parent_id": "anc-kid", "harness": true})
	resp = setMode(t, env, "anc", "plan", 409)
	if m := resp.Map(t); m["code"] != "unsupported_mode" || m["session_id"] != "deep-h" || !strings.Contains(m["detail"].(string), "deep-h") {
		t.Errorf("plan on ancestor of harness: %s", resp.Body)
	}
	if s := getSession(t, env, "anc"); s.Mode != "build" || s.Revision != 1 {
		t.Errorf("refused mode change wrote: %+v", s)
	}
	if n := countRows(t, env, "sessions", "id IN ('h2', 'hc')"); n != 0 {
		t.Errorf("refused harness sessions stored: %d", n)
	}
}

func TestUnknownModeIsInvalidArgumentEverywhere(t *testing.T) {
	env := apitest.New(t)
	r := env.Bad("POST", "/v1/sessions", map[string]any{"id": "x", "mode": "auto"})
	if r.Status != 400 || r.Code() != "invalid_argument" || !strings.Contains(string(r.Body), `"field":"mode"`) {
		t.Errorf("create with unknown mode: %d %s", r.Status, r.Body)
	}
	createSession(t, env, map[string]any{"id": "x"})
	for _, body := range []string{`{"mode":"auto"}`, `{"mode":""}`, `{}`, `{"mode":7}`, `{"mode":"PLAN"}`} {
		r = env.Bad("PATCH", "/v1/sessions/x/mode", body)
		if r.Status != 400 || r.Code() != "invalid_argument" {
			t.Errorf("PATCH mode %s: %d %s", body, r.Status, r.Body)
		}
	}
	if s := getSession(t, env, "x"); s.Revision != 1 {
		t.Errorf("invalid modes wrote: revision %d", s.Revision)
	}
}

func TestSameModeAgainIsANoOp(t *testing.T) {
	env := apitest.New(t)
	createSession(t, env, map[string]any{"id": "s", "mode": "plan"})
	events := countRows(t, env, "events", "")
	resp := setMode(t, env, "s", "plan", 200)
	if resp.Header.Get("ETag") != `"1"` {
		t.Errorf("same mode bumped ETag to %s", resp.Header.Get("ETag"))
	}
	if n := countRows(t, env, "events", ""); n != events {
		t.Errorf("same mode appended %d events", n-events)
	}
	setMode(t, env, "s", "build", 200)
	if s := getSession(t, env, "s"); s.Revision != 2 {
		t.Errorf("revision after a real change = %d", s.Revision)
	}
}

func TestIfMatchIsHonouredOnEveryWrite(t *testing.T) {
	env := apitest.New(t)
	createSession(t, env, map[string]any{"id": "s"})

	stale := env.Call("PATCH", "/v1/sessions/s/mode", map[string]string{"mode": "plan"}, "If-Match", `"9"`)
	if stale.Status != 412 || stale.Code() != "version_conflict" || stale.Map(t)["current_revision"] != float64(1) {
		t.Errorf("stale If-Match on mode: %d %s", stale.Status, stale.Body)
	}
	weak := env.Call("PATCH", "/v1/sessions/s/mode", map[string]string{"mode": "plan"}, "If-Match", `W/"1"`)
	if weak.Status != 412 {
		t.Errorf("weak If-Match matched: %d", weak.Status)
	}
	if r := env.Bad("PATCH", "/v1/sessions/s/mode", map[string]string{"mode": "plan"}, "If-Match", `abc`); r.Status != 400 {
		t.Errorf("garbage If-Match: %d %s", r.Status, r.Body)
	}
	if r := env.Call("PATCH", "/v1/sessions/s/mode", map[string]string{"mode": "plan"}, "If-Match", `1`); r.Status != 200 || r.Header.Get("ETag") != `"2"` {
		t.Errorf("bare If-Match: %d %s", r.Status, r.Body)
	}
	if r := env.Call("PATCH", "/v1/sessions/s", map[string]any{"title": "t"}, "If-Match", `"1"`, "Content-Type", "application/merge-patch+json"); r.Status != 412 {
		t.Errorf("stale If-Match on patch: %d", r.Status)
	}
	if r := env.Call("PATCH", "/v1/sessions/s", map[string]any{"title": "t"}, "If-Match", `"2"`, "Content-Type", "application/merge-patch+json"); r.Status != 200 {
		t.Errorf("current If-Match on patch: %d %s", r.Status, r.Body)
	}
	if r := env.Call("DELETE", "/v1/sessions/s", nil, "If-Match", `"2"`); r.Status != 412 {
		t.Errorf("stale If-Match on delete: %d", r.Status)
	}
	if r := env.Call("DELETE", "/v1/sessions/s", nil, "If-Match", `*`); r.Status != 204 {
		t.Errorf("If-Match * on delete: %d %s", r.Status, r.Body)
	}
	// 404 comes before 412.
	if r := env.Call("DELETE", "/v1/sessions/s", nil, "If-Match", `"1"`); r.Status != 404 {
		t.Errorf("delete of a missing session with If-Match: %d", r.Status)
	}
}

func TestRequirePreconditions(t *testing.T) {
	env := apitest.New(t, func(c *app.Config) { c.RequirePreconditions = true })
	createSession(t, env, map[string]any{"id": "s"})
	for _, r := range []*apitest.Response{
		env.Call("PATCH", "/v1/sessions/s/mode", map[string]string{"mode": "plan"}),
		env.Call("PATCH", "/v1/sessions/s", map[string]any{"title": "x"}),
		env.Call("DELETE", "/v1/sessions/s", nil),
	} {
		if r.Status != 428 || r.Code() != "precondition_required" {
			t.Errorf("unconditional write: %d %s", r.Status, r.Body)
		}
	}
	if r := env.Call("PATCH", "/v1/sessions/s/mode", map[string]string{"mode": "plan"}, "If-Match", `"1"`); r.Status != 200 {
		t.Errorf("conditional write: %d %s", r.Status, r.Body)
	}
}

func TestSessionMergePatch(t *testing.T) {
	env := apitest.New(t)
	createSession(t, env, map[string]any{"id": "s", "title": "old", "metadata": map[string]any{"a": 1, "b": map[string]any{"x": 1, "y": 2}}})
	r := env.Call("PATCH", "/v1/sessions/s", `{"title":"new","metadata":{"a":null,"b":{"y":null,"z":3},"c":"d"}}`,
		"Content-Type", "application/merge-patch+json")
	if r.Status != 200 {
		t.Fatalf("patch: %d %s", r.Status, r.Body)
	}
	var s session
	r.JSON(t, &s)
	want := `{"b":{"x":1,"z":3},"c":"d"}`
	if got := mustJSON(s.Metadata); s.Title != "new" || got != want || s.Revision != 2 {
		t.Errorf("patched: title %q metadata %s revision %d; want metadata %s", s.Title, got, s.Revision, want)
	}
	// A patch that changes nothing does not bump.
	if r := env.Call("PATCH", "/v1/sessions/s", `{"title":"new"}`, "Content-Type", "application/merge-patch+json"); r.Header.Get("ETag") != `"2"` {
		t.Errorf("no-op patch ETag %s", r.Header.Get("ETag"))
	}
	for body, field := range map[string]string{
		`{"mode":"plan"}`:   "mode",
		`{"parent_id":"x"}`: "parent_id",
		`{"harness":true}`:  "harness",
		`{"title":5}`:       "title",
		`{"metadata":[1]}`:  "metadata",
		`{"metadata":"x"}`:  "metadata",
		`{"revision":9}`:    "revision",
		`{"title":"` + strings.Repeat("x", 1025) + `"}`: "title",
	} {
		r := env.Bad("PATCH", "/v1/sessions/s", body, "Content-Type", "application/merge-patch+json")
		if r.Status != 400 || !strings.Contains(string(r.Body), `"field":"`+field+`"`) {
			t.Errorf("patch %.40s: %d %s", body, r.Status, r.Body)
		}
	}
	if s := getSession(t, env, "s"); s.Revision != 2 {
		t.Errorf("bad patches wrote: revision %d", s.Revision)
	}
	if n := countRows(t, env, "events", "type = 'session.updated'"); n != 1 {
		t.Errorf("session.updated events = %d, want 1", n)
	}
}

func TestSessionListPagination(t *testing.T) {
	env := apitest.New(t)
	createSession(t, env, map[string]any{"id": "parent"})
	for i := 0; i < 7; i++ {
		mode := "build"
		if i%2 == 0 {
			mode = "plan"
		}
		createSession(t, env, map[string]any{"id": fmt.Sprintf("c%d", i), "parent_id": "parent", "mode": mode})
	}
	createSession(t, env, map[string]any{"id": "other"})

	var ids []string
	token := ""
	pages := 0
	for {
		path := "/v1/sessions?parent_id=parent&limit=3"
		if token != "" {
			path += "&page_token=" + token
		}
		var page api.SessionList
		env.Call("GET", path, nil).JSON(t, &page)
		pages++
		for _, s := range page.Sessions {
			ids = append(ids, s.ID)
		}
		if page.NextPageToken == "" {
			break
		}
		token = page.NextPageToken
	}
	if got := strings.Join(ids, ","); got != "c0,c1,c2,c3,c4,c5,c6" || pages != 3 {
		t.Errorf("paged children = %s in %d pages", got, pages)
	}
	var plans api.SessionList
	env.Call("GET", "/v1/sessions?mode=plan", nil).JSON(t, &plans)
	if len(plans.Sessions) != 4 {
		t.Errorf("mode=plan gave %d sessions, want 4", len(plans.Sessions))
	}
	// A token from one filter set is refused with another.
	var first api.SessionList
	env.Call("GET", "/v1/sessions?parent_id=parent&limit=1", nil).JSON(t, &first)
	if r := env.Call("GET", "/v1/sessions?mode=plan&page_token="+first.NextPageToken, nil); r.Status != 400 {
		t.Errorf("token with other filters: %d", r.Status)
	}
	for _, q := range []string{"limit=0", "limit=-1", "limit=x", "limit=1001", "page_token=garbage", "mode=auto", "parent_id=bad%20id"} {
		if r := env.Call("GET", "/v1/sessions?"+q, nil); r.Status != 400 || r.Code() != "invalid_argument" {
			t.Errorf("list ?%s: %d %s", q, r.Status, r.Body)
		}
	}
}

func TestDeleteRemovesDescendants(t *testing.T) {
	env := apitest.New(t)
	createSession(t, env, map[string]any{"id": "r"})
	createSession(t, env, map[string]any{"id": "k1", "parent_id": "r"})
	createSession(t, env, map[string]any{"id": "k2", "parent_id": "k1"})
	createSession(t, env, map[string]any{"id": "keep"})
	if r := env.Call("DELETE", "/v1/sessions/r", nil); r.Status != 204 || len(r.Body) != 0 {
		t.Fatalf("delete: %d %s", r.Status, r.Body)
	}
	for _, id := range []string{"r", "k1", "k2"} {
		if r := env.Call("GET", "/v1/sessions/"+id, nil); r.Status != 404 {
			t.Errorf("%s after delete: %d", id, r.Status)
		}
	}
	if getSession(t, env, "keep").ID != "keep" {
		t.Error("unrelated session gone")
	}
	rows, err := env.DB.Reader(context.Background()).Query(`SELECT session_id, session_path FROM events WHERE type = 'session.deleted' ORDER BY seq`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var id, path string
		if err := rows.Scan(&id, &path); err != nil {
			t.Fatal(err)
		}
		got = append(got, id+"@"+path)
	}
	// Paths name sessions by identity (their pks: r, k1, k2 were created
	// first), deepest first.
	if want := "k2@/1/2/3/,k1@/1/2/,r@/1/"; strings.Join(got, ",") != want {
		t.Errorf("deleted events = %s, want %s", strings.Join(got, ","), want)
	}
}

func TestBadInputIsRefusedAndWritesNothing(t *testing.T) {
	env := apitest.New(t, func(c *app.Config) { c.MaxBodyBytes = 4096 })
	createSession(t, env, map[string]any{"id": "p"})
	cases := []struct {
		name, method, path, body, contentType string
		status                                int
		code, field                           string
	}{
		{"malformed", "POST", "/v1/sessions", `{"id":`, "application/json", 400, "invalid_argument", ""},
		{"not an object", "POST", "/v1/sessions", `[1,2]`, "application/json", 400, "invalid_argument", ""},
		{"two values", "POST", "/v1/sessions", `{"id":"a"}{"id":"b"}`, "application/json", 400, "invalid_argument", ""},
		{"unknown field", "POST", "/v1/sessions", `{"id":"a","colour":"red"}`, "application/json", 400, "invalid_argument", "colour"},
		{"member name in the wrong case", "POST", "/v1/sessions", `{"ID":"a"}`, "application/json", 400, "invalid_argument", "ID"},
		{"mode member in the wrong case", "PATCH", "/v1/sessions/p/mode", `{"MODE":"plan"}`, "application/json", 400, "invalid_argument", "MODE"},
		{"wrong type", "POST", "/v1/sessions", `{"id":"a","harness":"yes"}`, "application/json", 400, "invalid_argument", "harness"},
		{"bad id", "POST", "/v1/sessions", `{"id":"-dash-first"}`, "application/json", 400, "invalid_argument", "id"},
		{"slash id", "POST", "/v1/sessions", `{"id":"a/b"}`, "application/json", 400, "invalid_argument", "id"},
		{"long id", "POST", "/v1/sessions", `{"id":"` + strings.Repeat("a", 129) + `"}`, "application/json", 400, "invalid_argument", "id"},
		{"unknown parent", "POST", "/v1/sessions", `{"id":"a","parent_id":"ghost"}`, "application/json", 400, "invalid_argument", "parent_id"},
		{"metadata not object", "POST", "/v1/sessions", `{"id":"a","metadata":[]}`, "application/json", 400, "invalid_argument", "metadata"},
		{"form body", "POST", "/v1/sessions", `id=a`, "application/x-www-form-urlencoded", 415, "unsupported_media_type", ""},
		{"text body", "PATCH", "/v1/sessions/p/mode", `plan`, "text/plain", 415, "unsupported_media_type", ""},
		{"too large", "POST", "/v1/sessions", `{"id":"a","title":"` + strings.Repeat("x", 5000) + `"}`, "application/json", 413, "payload_too_large", ""},
		{"bad path id", "GET", "/v1/sessions/bad%20id", ``, "", 400, "invalid_argument", "id"},
		{"bad path id on mode", "PATCH", "/v1/sessions/.dot/mode", `{"mode":"plan"}`, "application/json", 400, "invalid_argument", "id"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := refused(t, env, c.method, c.path, c.body, c.contentType, c.status, c.code)
			if c.field != "" && !strings.Contains(string(r.Body), `"field":"`+c.field+`"`) {
				t.Errorf("error does not name field %s: %s", c.field, r.Body)
			}
		})
	}
	if n := countRows(t, env, "sessions", ""); n != 1 {
		t.Errorf("bad input stored sessions: %d rows, want 1", n)
	}
	if s := getSession(t, env, "p"); s.Revision != 1 {
		t.Errorf("bad input changed p: revision %d", s.Revision)
	}
	if r := env.Call("GET", "/healthz", nil); r.Status != 200 {
		t.Errorf("healthz after bad input: %d", r.Status)
	}
}

func TestUnknownRoutesAndMethodsAreProblems(t *testing.T) {
	env := apitest.New(t)
	r := env.Bad("GET", "/v1/nothing-here", nil)
	if r.Status != 404 || r.Code() != "not_found" {
		t.Errorf("unknown route: %d %s", r.Status, r.Body)
	}
	r = env.Bad("PUT", "/v1/sessions", nil)
	if r.Status != 405 || r.Code() != "method_not_allowed" {
		t.Fatalf("wrong method: %d %s", r.Status, r.Body)
	}
	if got := r.Header.Get("Allow"); got != "GET, HEAD, POST" {
		t.Errorf("Allow = %q, want GET, HEAD, POST", got)
	}
	r = env.Bad("POST", "/v1/sessions/x/mode", nil)
	if r.Status != 405 || r.Header.Get("Allow") != "PATCH" {
		t.Errorf("POST on mode: %d Allow %q", r.Status, r.Header.Get("Allow"))
	}
}

func TestOperationsEndpoints(t *testing.T) {
	env := apitest.New(t)
	for _, p := range []string{"/healthz", "/readyz", "/metrics", "/openapi.yaml"} {
		if r := env.Call("GET", p, nil); r.Status != 200 {
			t.Errorf("%s: %d %s", p, r.Status, r.Body)
		}
	}
	env.Call("GET", "/v1/sessions", nil)
	if r := env.Call("GET", "/metrics", nil); !strings.Contains(string(r.Body), `planserver_http_requests_total{method="GET",route="/v1/sessions",status="200"}`) {
		t.Errorf("metrics lack the request counter")
	}
	if r := env.Call("GET", "/openapi.yaml", nil); !strings.HasPrefix(string(r.Body), "openapi: 3.0") {
		t.Errorf("openapi.yaml body starts %.20q", r.Body)
	}
	r := env.Call("GET", "/healthz", nil, "X-Request-ID", "abc-123")
	if r.Header.Get("X-Request-ID") != "abc-123" {
		t.Errorf("request id not echoed: %q", r.Header.Get("X-Request-ID"))
	}
	if r := env.Call("GET", "/healthz", nil, "X-Request-ID", "bad id <script>"); r.Header.Get("X-Request-ID") == "" || strings.Contains(r.Header.Get("X-Request-ID"), " ") {
		t.Errorf("unsafe request id echoed: %q", r.Header.Get("X-Request-ID"))
	}
}

// TestConcurrentModeChangesAreLinearizable toggles one session's mode from
// several clients with If-Match loops while readers watch: every successful
// write bumps the revision by exactly one, readers never see a revision go
// backwards or a mode that disagrees with the revision's parity.
func TestConcurrentModeChangesAreLinearizable(t *testing.T) {
	env := apitest.New(t)
	createSession(t, env, map[string]any{"id": "s"})
	createSession(t, env, map[string]any{"id": "kid", "parent_id": "s"})
	const writers, rounds = 4, 25
	var (
		wg        sync.WaitGroup
		mu        sync.Mutex
		successes int
	)
	stop := make(chan struct{})
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < rounds; i++ {
				var cur session
				env.Call("GET", "/v1/sessions/s", nil).JSON(t, &cur)
				next := "plan"
				if cur.Mode == "plan" {
					next = "build"
				}
				r := env.Call("PATCH", "/v1/sessions/s/mode", map[string]string{"mode": next}, "If-Match", fmt.Sprint(cur.Revision))
				switch r.Status {
				case 200:
					mu.Lock()
					successes++
					mu.Unlock()
				case 412:
				default:
					t.Errorf("mode write: %d %s", r.Status, r.Body)
				}
			}
		}()
	}
	var readers sync.WaitGroup
	for rd := 0; rd < 2; rd++ {
		readers.Add(1)
		go func() {
			defer readers.Done()
			var last int64
			for {
				select {
				case <-stop:
					return
				default:
				}
				var s, kid session
				env.Call("GET", "/v1/sessions/s", nil).JSON(t, &s)
				env.Call("GET", "/v1/sessions/kid", nil).JSON(t, &kid)
				if s.Revision < last {
					t.Errorf("revision went backwards: %d after %d", s.Revision, last)
				}
				last = s.Revision
				// Revision 1 is build; each write flips the mode.
				wantMode := api.ModeBuild
				if s.Revision%2 == 0 {
					wantMode = api.ModePlan
				}
				if s.Mode != wantMode {
					t.Errorf("revision %d has mode %s, want %s", s.Revision, s.Mode, wantMode)
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	readers.Wait()
	final := getSession(t, env, "s")
	if final.Revision != int64(successes)+1 {
		t.Errorf("final revision %d, successes %d: a lost or phantom update", final.Revision, successes)
	}
	if n := countRows(t, env, "events", "type = 'session.mode_changed' AND session_id = 's'"); n != successes {
		t.Errorf("mode_changed events %d, successes %d", n, successes)
	}
	kid := getSession(t, env, "kid")
	if kid.EffectiveMode != final.EffectiveMode {
		t.Errorf("child effective %s, parent %s", kid.EffectiveMode, final.EffectiveMode)
	}
}

// TestRecreatedSessionNeverMatchesOldRevisions deletes a session whose plan
// a human read at revision 1, re-creates it under the same id with a new
// plan, and checks that nothing of the old one can match the new: not the
// session's ETag, not the plan's, not an approval naming the old plan
// revision.
func TestRecreatedSessionNeverMatchesOldRevisions(t *testing.T) {
	env := apitest.New(t)
	createSession(t, env, map[string]any{"id": "s", "mode": "plan"})
	if r := env.Call("PUT", "/v1/sessions/s/plan", map[string]any{"content": "old plan"}); r.Status != 201 || r.Header.Get("ETag") != `"1"` {
		t.Fatalf("old plan: %d %s", r.Status, r.Header.Get("ETag"))
	}
	env.Call("PUT", "/v1/sessions/s/todos", map[string]any{"todos": []map[string]any{{"content": "x", "status": "pending"}}})
	setMode(t, env, "s", "build", 200) // the session is at revision 2
	if r := env.Call("DELETE", "/v1/sessions/s", nil); r.Status != 204 {
		t.Fatalf("delete: %d", r.Status)
	}

	again := createSession(t, env, map[string]any{"id": "s", "mode": "plan"})
	if again.Revision != 3 {
		t.Errorf("re-created session at revision %d, want 3", again.Revision)
	}
	r := env.Call("PUT", "/v1/sessions/s/plan", map[string]any{"content": "new plan, never read"})
	if r.Status != 201 || r.Header.Get("ETag") != `"2"` {
		t.Fatalf("new plan: %d ETag %s, want 201 \"2\"", r.Status, r.Header.Get("ETag"))
	}
	if r := env.Call("GET", "/v1/sessions/s/todos", nil); r.Map(t)["revision"] != float64(0) {
		t.Errorf("todos of the re-created session: %s", r.Body)
	}
	if r := env.Call("PUT", "/v1/sessions/s/todos", map[string]any{"todos": []any{}}); r.Header.Get("ETag") != `"2"` {
		t.Errorf("first todos of the re-created session: ETag %s, want \"2\"", r.Header.Get("ETag"))
	}
	env.Call("POST", "/v1/sessions/s/plan/review", nil)
	// The human's If-Match names the old plan's revision 1: refused.
	if r := env.Call("POST", "/v1/sessions/s/plan/approve", nil, "If-Match", `"1"`); r.Status != 412 {
		t.Errorf("approval of the deleted session's plan revision: %d %s", r.Status, r.Body)
	}
	if s := getSession(t, env, "s"); s.EffectiveMode != "plan" {
		t.Errorf("effective mode %s after a refused approval", s.EffectiveMode)
	}
}

// TestSessionCreateAnswersAsGet: the answer of POST /v1/sessions is the
// session as GET reads it afterwards, byte for byte, and so is its
// session.created event: for roots, for sub-sessions whose effective mode
// comes from an ancestor in plan mode, with external ids, harness sessions,
// metadata of every JSON kind and an empty body. Create builds its answer
// from the request and the columns' defaults, without reading the row back.
func TestSessionCreateAnswersAsGet(t *testing.T) {
	env := apitest.New(t)
	for _, body := range []map[string]any{
		{"id": "root", "title": "root", "mode": "plan", "metadata": map[string]any{"k": "v"}},
		{"id": "child", "parent_id": "root", "agent": "coder", "external_id": "conv-1"},
		{"id": "grandchild", "parent_id": "child", "mode": "build"},
		{"id": "other", "harness": true},
		{"id": "meta", "title": "T", "agent": "a", "metadata": map[string]any{"n": 1.5, "big": 12345678901, "list": []any{"x", nil}, "o": map[string]any{}}},
		{"id": "empty-meta", "parent_id": "root", "external_id": "conv-2", "metadata": map[string]any{}},
		{"id": "harness-child", "parent_id": "meta", "harness": true, "external_id": "conv-3"},
		{},
	} {
		created := env.Call("POST", "/v1/sessions", body)
		if created.Status != http.StatusCreated || created.Header.Get("ETag") == "" {
			t.Fatalf("create %v: %d %s", body, created.Status, created.Body)
		}
		var s api.Session
		created.JSON(t, &s)
		got := env.Call("GET", "/v1/sessions/"+s.ID, nil)
		if got.Status != 200 || string(got.Body) != string(created.Body) || got.Header.Get("ETag") != created.Header.Get("ETag") {
			t.Errorf("%v: POST answered\n%s\nGET reads\n%s", body, created.Body, got.Body)
		}
		var stored map[string]any
		got.JSON(t, &stored)
		if recorded := eventData(t, env, "session.created", s.ID); len(recorded) != 1 || !reflect.DeepEqual(recorded[0], stored) {
			t.Errorf("%v recorded %v, GET reads %s", body, recorded, got.Body)
		}
	}
}

// TestCreateReportsTakenIDFirst: a taken id is the error, whatever else is
// wrong with the request, and a failed create changes nothing.
func TestCreateReportsTakenIDFirst(t *testing.T) {
	env := apitest.New(t)
	createSession(t, env, map[string]any{"id": "p", "mode": "plan"})
	createSession(t, env, map[string]any{"id": "s", "parent_id": "p", "external_id": "x"})
	for _, body := range []map[string]any{
		{"id": "s"},
		{"id": "s", "parent_id": "nope"},
		{"id": "s", "parent_id": "p", "external_id": "x"},
		{"id": "s", "parent_id": "p", "harness": true},
	} {
		r := env.Call("POST", "/v1/sessions", body)
		if r.Status != http.StatusConflict || r.Code() != "already_exists" || !strings.Contains(string(r.Body), `session \"s\" already exists`) {
			t.Errorf("create %v: %d %s", body, r.Status, r.Body)
		}
	}
	// Without the taken id, each of the other faults is what is reported.
	for body, want := range map[string]string{
		`{"id":"t","parent_id":"nope"}`:                "invalid_argument",
		`{"id":"t","parent_id":"p","external_id":"x"}`: "already_exists",
		`{"id":"t","parent_id":"p","harness":true}`:    "unsupported_mode",
	} {
		var b map[string]any
		if err := json.Unmarshal([]byte(body), &b); err != nil {
			t.Fatal(err)
		}
		if r := env.Call("POST", "/v1/sessions", b); r.Code() != want {
			t.Errorf("create %s: %d %s, want %s", body, r.Status, r.Body, want)
		}
	}
	if n := countRows(t, env, "sessions", ""); n != 2 {
		t.Errorf("sessions = %d, want 2", n)
	}
	if n := countRows(t, env, "events", "type = 'session.created'"); n != 2 {
		t.Errorf("session.created events = %d, want 2", n)
	}
}

// TestUpdateAnswersAsStored: a merge patch of title and metadata answers
// the session as it stored it, without reading the row back; the answer
// and the session.updated event must be exactly what a GET then reads.
func TestUpdateAnswersAsStored(t *testing.T) {
	env := apitest.New(t)
	createSession(t, env, map[string]any{"id": "p", "mode": "plan"})
	createSession(t, env, map[string]any{"id": "u", "parent_id": "p", "external_id": "x",
		"metadata": map[string]any{"keep": 1, "drop": true, "nested": map[string]any{"a": 1, "b": 2}}})
	for i, patch := range []string{
		`{"title":"renamed"}`,
		`{"metadata":{"drop":null,"nested":{"b":null,"c":[1.5,"x",null]},"new":12345678901}}`,
		`{"title":null,"metadata":{"keep":{"deep":{}}}}`,
		`{"metadata":null}`,
	} {
		resp := env.Call("PATCH", "/v1/sessions/u", patch, "Content-Type", "application/merge-patch+json")
		if resp.Status != http.StatusOK {
			t.Fatalf("patch %s: %d %s", patch, resp.Status, resp.Body)
		}
		if etag := resp.Header.Get("ETag"); etag != fmt.Sprintf(`"%d"`, i+2) {
			t.Errorf("patch %s: ETag %s, want \"%d\"", patch, etag, i+2)
		}
		what := "patch " + patch
		stored := answersAsGet(t, env, what, "/v1/sessions/u", resp)
		recorded := eventData(t, env, "session.updated", "u")
		if len(recorded) != i+1 || !reflect.DeepEqual(recorded[i], stored) {
			t.Errorf("%s recorded %v, GET reads %v", what, recorded, stored)
		}
	}
}
