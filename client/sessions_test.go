package client_test

import (
	"errors"
	"net/http"
	"testing"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/client"
)

func TestNewRefusesWhatIsNoServerURL(t *testing.T) {
	for _, u := range []string{"", "localhost:8080", "ftp://h", "http://", "http://h/?q=1", "http://u:p@h", "http://h/#f"} {
		if _, err := client.New(u); err == nil {
			t.Errorf("New(%q) accepted it", u)
		}
	}
	c, err := client.New("http://127.0.0.1:8080/prefix/")
	if err != nil || c.BaseURL() != "http://127.0.0.1:8080/prefix" {
		t.Errorf("New with a prefix: %v %v", c, err)
	}
}

func TestSessions(t *testing.T) {
	_, c := newTest(t)
	ctx := t.Context()

	var meta client.ResponseMeta
	main, err := c.CreateSession(ctx, api.SessionCreate{ID: client.Ptr("main"), Title: "Refactor", Agent: "coder"}, client.Meta(&meta))
	if err != nil || main.ID != "main" || main.Revision != 1 || main.Mode != api.ModeBuild {
		t.Fatalf("create: %+v %v", main, err)
	}
	if meta.Status != http.StatusCreated || meta.Revision != 1 || meta.Header.Get("Location") != "/v1/sessions/main" {
		t.Errorf("create meta: %+v", meta)
	}
	// An empty create is every default: a generated id.
	if gen, err := c.CreateSession(ctx, api.SessionCreate{}); err != nil || gen.ID == "" {
		t.Errorf("create with defaults: %+v %v", gen, err)
	}
	if _, err := c.CreateSession(ctx, api.SessionCreate{ID: client.Ptr("main")}); !errors.Is(err, client.ErrAlreadyExists) {
		t.Errorf("taken id: %v", err)
	}
	child, err := c.CreateSession(ctx, api.SessionCreate{ID: client.Ptr("main.worker"), ParentID: "main",
		Metadata: map[string]any{"host": "tui"}})
	if err != nil || *child.ParentID != "main" || child.Metadata["host"] != "tui" {
		t.Fatalf("create child: %+v %v", child, err)
	}

	// Mode: the child inherits plan; a stale If-Match changes nothing.
	planned, err := c.SetMode(ctx, "main", api.ModePlan, client.IfMatch(main.Revision))
	if err != nil || planned.Mode != api.ModePlan || planned.Revision != 2 {
		t.Fatalf("set mode: %+v %v", planned, err)
	}
	_, err = c.SetMode(ctx, "main", api.ModeBuild, client.IfMatch(1))
	var e *client.Error
	if !errors.As(err, &e) || e.Status != http.StatusPreconditionFailed || e.CurrentRevision == nil || *e.CurrentRevision != 2 {
		t.Fatalf("stale If-Match: %v", err)
	}
	// Entering plan mode above it bumped the child's revision too.
	got, err := c.GetSession(ctx, "main.worker", client.Meta(&meta))
	if err != nil || got.EffectiveMode != api.ModePlan || *got.ModeSource != "main" || meta.Revision != got.Revision || meta.EventSeq < 1 {
		t.Fatalf("get child: %+v %+v %v", got, meta, err)
	}
	// A poller re-reads nothing unchanged.
	if _, err := c.GetSession(ctx, "main", client.IfNoneMatch(2)); !errors.Is(err, client.ErrNotModified) {
		t.Errorf("If-None-Match of the current revision: %v", err)
	}
	if s, err := c.GetSession(ctx, "main", client.IfNoneMatch(1)); err != nil || s.Revision != 2 {
		t.Errorf("If-None-Match of an old revision: %+v %v", s, err)
	}

	// Merge patch: a nil clears, metadata merges.
	patched, err := c.PatchSession(ctx, "main.worker", map[string]any{"title": "Worker", "metadata": map[string]any{"pane": 2}},
		client.IfMatch(got.Revision))
	if err != nil || patched.Title != "Worker" || patched.Metadata["host"] != "tui" || patched.Metadata["pane"] != float64(2) {
		t.Fatalf("patch: %+v %v", patched, err)
	}
	if cleared, err := c.PatchSession(ctx, "main.worker", map[string]any{"title": nil}); err != nil || cleared.Title != "" {
		t.Errorf("patch null: %+v %v", cleared, err)
	}

	// Lists, a page at a time and walked whole.
	page, err := c.ListSessions(ctx, client.SessionQuery{Limit: 2})
	if err != nil || len(page.Sessions) != 2 || page.NextPageToken == "" {
		t.Fatalf("first page: %+v %v", page, err)
	}
	var ids []string
	for s, err := range c.Sessions(ctx, client.SessionQuery{Limit: 1}) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, s.ID)
	}
	if len(ids) != 3 || ids[0] != "main" || ids[2] != "main.worker" {
		t.Errorf("walked %v", ids)
	}
	if kids, err := c.ListSessions(ctx, client.SessionQuery{ParentID: "main", Mode: api.ModeBuild}); err != nil ||
		len(kids.Sessions) != 1 || kids.NextPageToken != "" {
		t.Errorf("children in build: %+v %v", kids, err)
	}
	for s, err := range c.Sessions(ctx, client.SessionQuery{PageToken: "bogus"}) {
		if !errors.Is(err, client.ErrInvalidArgument) || s != nil {
			t.Errorf("walk from a bad token: %v %v", s, err)
		}
	}

	// Delete takes the tree with it.
	if err := c.DeleteSession(ctx, "main", client.IfMatch(1)); !errors.Is(err, client.ErrVersionConflict) {
		t.Errorf("stale delete: %v", err)
	}
	if err := c.DeleteSession(ctx, "main"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetSession(ctx, "main.worker"); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("child after delete: %v", err)
	}
}

// TestPathSegmentsStayOneSegment: an id or name is one path segment, so
// a "/" or ".." in it is refused by the server as a bad name instead of
// reaching another route.
func TestPathSegmentsStayOneSegment(t *testing.T) {
	env, c := newTest(t)
	ctx := t.Context()
	if _, err := c.PutPlan(ctx, "x", api.PlanWrite{Content: client.Ptr("# x")}); err != nil {
		t.Fatal(err)
	}
	// The contract has no route for such paths: only the answers are checked.
	c = badClient(t, env.Server.URL)
	for _, name := range []string{"x/status", "..", "x/../x"} {
		if _, err := c.GetPlan(ctx, name); !errors.Is(err, client.ErrInvalidArgument) {
			t.Errorf("GetPlan(%q): %v", name, err)
		}
	}
	if _, err := c.GetSession(ctx, "a/b"); !errors.Is(err, client.ErrInvalidArgument) && !errors.Is(err, client.ErrNotFound) {
		t.Errorf("GetSession(a/b): %v", err)
	}
}
