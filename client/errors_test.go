package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/client"
	"github.com/planserver/planserver/internal/apitest"
	"github.com/planserver/planserver/internal/app"
	"github.com/planserver/planserver/internal/auth"
	"github.com/planserver/planserver/internal/db"
	"github.com/planserver/planserver/internal/disktest"
	"github.com/planserver/planserver/internal/events"
	planhttp "github.com/planserver/planserver/internal/http"
)

// sentinels lists every sentinel with its code.
var sentinels = map[api.Code]error{
	api.CodeInvalidArgument:      client.ErrInvalidArgument,
	api.CodeUnauthenticated:      client.ErrUnauthenticated,
	api.CodePermissionDenied:     client.ErrPermissionDenied,
	api.CodeNotFound:             client.ErrNotFound,
	api.CodeMethodNotAllowed:     client.ErrMethodNotAllowed,
	api.CodeNotAcceptable:        client.ErrNotAcceptable,
	api.CodeAlreadyExists:        client.ErrAlreadyExists,
	api.CodeVersionConflict:      client.ErrVersionConflict,
	api.CodePreconditionRequired: client.ErrPreconditionRequired,
	api.CodePayloadTooLarge:      client.ErrPayloadTooLarge,
	api.CodeHeadersTooLarge:      client.ErrHeadersTooLarge,
	api.CodeRequestTimeout:       client.ErrRequestTimeout,
	api.CodeUnsupportedMediaType: client.ErrUnsupportedMediaType,
	api.CodeUnsupportedMode:      client.ErrUnsupportedMode,
	api.CodePlanMissing:          client.ErrPlanMissing,
	api.CodeReviewNotPending:     client.ErrReviewNotPending,
	api.CodeDepsIncomplete:       client.ErrDepsIncomplete,
	api.CodeCursorExpired:        client.ErrCursorExpired,
	api.CodeRateLimited:          client.ErrRateLimited,
	api.CodeInsufficientStorage:  client.ErrInsufficientStorage,
	api.CodeUnavailable:          client.ErrUnavailable,
	api.CodeInternal:             client.ErrInternal,
}

// errorCase makes the real server answer with one code.
type errorCase struct {
	code   api.Code
	status int
	// provoke returns the error of a request the server refuses with code.
	provoke func(t *testing.T) error
	// check looks at what the code carries besides itself.
	check func(t *testing.T, e *client.Error)
}

// tokenServer is planserver with --auth token and an admin token.
func tokenServer(t *testing.T, configure ...func(*app.Config)) (*apitest.Env, string) {
	env := apitest.New(t, append([]func(*app.Config){func(c *app.Config) { c.Auth = planhttp.AuthToken }}, configure...)...)
	return env, env.Token(auth.Admin, "alice", "")
}

var errorCases = []errorCase{
	{api.CodeInvalidArgument, 400, func(t *testing.T) error {
		env, _ := newTest(t)
		_, err := badClient(t, env.Server.URL).CreateSession(t.Context(), api.SessionCreate{Mode: "sideways"})
		return err
	}, func(t *testing.T, e *client.Error) {
		if len(e.Fields) != 1 || e.Fields[0].Field != "mode" {
			t.Errorf("fields %+v", e.Fields)
		}
	}},
	{api.CodeUnauthenticated, 401, func(t *testing.T) error {
		env, _ := tokenServer(t)
		_, err := checkedClient(t, env.Server.URL, client.WithToken("ps_wrong")).ListSessions(t.Context(), client.SessionQuery{})
		return err
	}, nil},
	{api.CodePermissionDenied, 403, func(t *testing.T) error {
		env, admin := tokenServer(t)
		if _, err := checkedClient(t, env.Server.URL, client.WithToken(admin)).CreateSession(t.Context(),
			api.SessionCreate{ID: client.Ptr("s"), Mode: "plan"}); err != nil {
			t.Fatal(err)
		}
		agent := checkedClient(t, env.Server.URL, client.WithToken(env.Token(auth.Agent, "coder", "s")))
		_, err := agent.SetMode(t.Context(), "s", api.ModeBuild)
		return err
	}, nil},
	{api.CodeNotFound, 404, func(t *testing.T) error {
		_, c := newTest(t)
		_, err := c.GetSession(t.Context(), "nobody")
		return err
	}, nil},
	{api.CodeMethodNotAllowed, 405, func(t *testing.T) error {
		env, _ := newTest(t)
		return rawCall(t, env, "POST", "/v1/plans/p", "", "")
	}, func(t *testing.T, e *client.Error) {
		if e.Method != "POST" || e.Path != "/v1/plans/p" {
			t.Errorf("request %s %s", e.Method, e.Path)
		}
	}},
	{api.CodeNotAcceptable, 406, func(t *testing.T) error {
		env, _ := newTest(t)
		return rawCall(t, env, "GET", "/v1/plans/p", "image/png", "")
	}, nil},
	{api.CodeAlreadyExists, 409, func(t *testing.T) error {
		_, c := newTest(t)
		for range 2 {
			if _, err := c.CreateSession(t.Context(), api.SessionCreate{ID: client.Ptr("s")}); err != nil {
				return err
			}
		}
		return nil
	}, nil},
	{api.CodeVersionConflict, 412, func(t *testing.T) error {
		_, c := newTest(t)
		if _, err := c.PutPlanContent(t.Context(), "p", "# one"); err != nil {
			t.Fatal(err)
		}
		_, err := c.PutPlanContent(t.Context(), "p", "# two", client.IfMatch(7))
		return err
	}, func(t *testing.T, e *client.Error) {
		if e.CurrentRevision == nil || *e.CurrentRevision != 1 {
			t.Errorf("current revision %v", e.CurrentRevision)
		}
	}},
	{api.CodePreconditionRequired, 428, func(t *testing.T) error {
		_, c := newTest(t, func(c *app.Config) { c.RequirePreconditions = true })
		if _, err := c.PutPlanContent(t.Context(), "p", "# one"); err != nil {
			t.Fatal(err)
		}
		_, err := c.SetPlanStatus(t.Context(), "p", "done")
		return err
	}, nil},
	{api.CodePayloadTooLarge, 413, func(t *testing.T) error {
		_, c := newTest(t, func(c *app.Config) { c.MaxPlanBytes = 16 })
		_, err := c.PutPlanContent(t.Context(), "p", strings.Repeat("x", 64))
		return err
	}, nil},
	{api.CodeHeadersTooLarge, 431, func(t *testing.T) error {
		// A token no server takes: the request line and headers are above
		// serve's 64 KiB. The connection layer answers, before any route.
		srv := startServer(t)
		c, _ := client.New(srv.URL(), client.WithToken(strings.Repeat("x", 80<<10)))
		_, err := c.Health(t.Context())
		return err
	}, nil},
	{api.CodeRequestTimeout, 408, func(t *testing.T) error {
		// A body that stops arriving: the server gives up at its read
		// deadline. (Not through contractCheck, which reads the whole
		// body before sending it.)
		srv := startServerWith(t, func(s *server) { s.readTimeout = 300 * time.Millisecond })
		c, _ := client.New(srv.URL())
		body, w := io.Pipe()
		defer w.Close()
		go func() { _, _ = w.Write([]byte(`{"id":`)) }() // and then nothing
		req, err := c.NewRequest(t.Context(), "POST", "/v1/sessions", body)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.ContentLength = 100
		resp, err := c.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}, nil},
	{api.CodeUnsupportedMediaType, 415, func(t *testing.T) error {
		env, _ := newTest(t)
		return rawCall(t, env, "PUT", "/v1/plans/p", "", "text/csv")
	}, nil},
	{api.CodeUnsupportedMode, 409, func(t *testing.T) error {
		_, c := newTest(t)
		if _, err := c.CreateSession(t.Context(), api.SessionCreate{ID: client.Ptr("p"), Mode: "plan"}); err != nil {
			t.Fatal(err)
		}
		_, err := c.CreateSession(t.Context(), api.SessionCreate{ID: client.Ptr("h"), ParentID: "p", Harness: true})
		return err
	}, func(t *testing.T, e *client.Error) {
		if e.Problem.SessionID != "h" {
			t.Errorf("session_id %q", e.Problem.SessionID)
		}
	}},
	{api.CodePlanMissing, 409, func(t *testing.T) error {
		_, c := newTest(t)
		if _, err := c.CreateSession(t.Context(), api.SessionCreate{ID: client.Ptr("s")}); err != nil {
			t.Fatal(err)
		}
		_, err := c.RequestReview(t.Context(), "s", api.ReviewRequest{})
		return err
	}, nil},
	{api.CodeReviewNotPending, 409, func(t *testing.T) error {
		_, c := newTest(t)
		if _, err := c.CreateSession(t.Context(), api.SessionCreate{ID: client.Ptr("s")}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.PutSessionPlan(t.Context(), "s", api.SessionPlanWrite{Content: "# p"}); err != nil {
			t.Fatal(err)
		}
		_, err := c.ApprovePlan(t.Context(), "s", 1, api.ReviewApproval{})
		return err
	}, nil},
	{api.CodeDepsIncomplete, 409, func(t *testing.T) error {
		_, c := newTest(t)
		if _, err := c.PutPlan(t.Context(), "p", api.PlanWrite{Content: client.Ptr("# p"), Steps: stepsPlan}); err != nil {
			t.Fatal(err)
		}
		_, err := c.PatchStep(t.Context(), "p", "2", api.StepPatch{Status: client.Ptr(api.StepInProgress)})
		return err
	}, func(t *testing.T, e *client.Error) {
		if e.Problem.StepID != "2" || len(e.Problem.IncompleteDeps) != 1 {
			t.Errorf("problem %+v", e.Problem)
		}
	}},
	{api.CodeCursorExpired, 410, func(t *testing.T) error {
		env, c := newTest(t, func(c *app.Config) { c.EventRetention = events.Retention{MaxRows: 1} })
		for _, id := range []string{"a", "b"} {
			if _, err := c.CreateSession(t.Context(), api.SessionCreate{ID: client.Ptr(id)}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := env.App.PruneEvents(t.Context(), time.Now()); err != nil {
			t.Fatal(err)
		}
		_, err := c.ListEvents(t.Context(), client.EventQuery{After: client.Ptr[int64](0)})
		return err
	}, nil},
	{api.CodeRateLimited, 429, func(t *testing.T) error {
		env, admin := tokenServer(t, func(c *app.Config) { c.RateLimit, c.RateBurst = 0.001, 1 })
		c := checkedClient(t, env.Server.URL, client.WithToken(admin))
		for range 2 {
			if _, err := c.ListSessions(t.Context(), client.SessionQuery{}); err != nil {
				return err
			}
		}
		return nil
	}, func(t *testing.T, e *client.Error) {
		if e.RetryAfter < time.Second {
			t.Errorf("Retry-After %v", e.RetryAfter)
		}
	}},
	{api.CodeInsufficientStorage, 507, func(t *testing.T) error {
		dir := disktest.SmallDisk(t, "4m")
		env := apitest.Open(t, filepath.Join(dir, "planserver.db"))
		c := checkedClient(t, env.Server.URL)
		free := disktest.Fill(t, dir)
		defer free()
		_, err := c.PutPlanContent(t.Context(), "big", strings.Repeat("x", 512<<10))
		return err
	}, func(t *testing.T, e *client.Error) {
		if e.RetryAfter <= 0 {
			t.Errorf("Retry-After %v", e.RetryAfter)
		}
	}},
	{api.CodeUnavailable, 503, func(t *testing.T) error {
		env, c := newTest(t)
		// A schema newer than this binary knows: not ready.
		if err := env.DB.Write(t.Context(), func(tx *db.Tx) error {
			_, err := tx.Exec(`INSERT INTO goose_db_version (version_id, is_applied) VALUES (9999, 1)`)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		_, err := c.Ready(t.Context())
		return err
	}, nil},
	{api.CodeInternal, 500, func(t *testing.T) error {
		env, c := newTest(t)
		if _, err := c.PutPlanContent(t.Context(), "p", "# p"); err != nil {
			t.Fatal(err)
		}
		if err := env.DB.Write(t.Context(), func(tx *db.Tx) error {
			_, err := tx.Exec(`UPDATE plans SET steps = '{not json' WHERE name = 'p'`)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		_, err := c.GetPlan(t.Context(), "p")
		return err
	}, func(t *testing.T, e *client.Error) {
		if e.Detail != "internal error" || e.Problem.RequestID == "" {
			t.Errorf("problem %+v", e.Problem)
		}
	}},
}

// rawCall sends a request the typed methods never would, through Do.
func rawCall(t *testing.T, env *apitest.Env, method, path, accept, contentType string) error {
	c := badClient(t, env.Server.URL)
	var body *strings.Reader
	if contentType != "" {
		body = strings.NewReader("a,b")
	}
	var req *http.Request
	var err error
	if body != nil {
		req, err = c.NewRequest(t.Context(), method, path, body)
		req.Header.Set("Content-Type", contentType)
	} else {
		req, err = c.NewRequest(t.Context(), method, path, nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := c.Do(req)
	if err == nil {
		resp.Body.Close()
	}
	return err
}

// TestASentinelForEveryCode: every code the contract lists has its
// sentinel, so a code added to the server cannot go unmatched.
func TestASentinelForEveryCode(t *testing.T) {
	doc, err := openapi3.NewLoader().LoadFromData(api.Spec)
	if err != nil {
		t.Fatal(err)
	}
	codes := doc.Components.Schemas["Problem"].Value.Properties["code"].Value.Enum
	if len(codes) != len(sentinels) {
		t.Errorf("the contract has %d codes, the client %d sentinels", len(codes), len(sentinels))
	}
	for _, c := range codes {
		s, ok := sentinels[api.Code(c.(string))]
		if !ok || s.Error() != "planserver: "+c.(string) {
			t.Errorf("code %s: sentinel %v", c, s)
		}
	}
}

// TestEverySentinel makes the real server answer every code and checks
// that exactly its sentinel matches, and what the *Error carries.
func TestEverySentinel(t *testing.T) {
	if len(errorCases) != len(sentinels) {
		t.Fatalf("%d cases for %d sentinels", len(errorCases), len(sentinels))
	}
	for _, tc := range errorCases {
		t.Run(string(tc.code), func(t *testing.T) {
			err := tc.provoke(t)
			for code, s := range sentinels {
				if got := errors.Is(err, s); got != (code == tc.code) {
					t.Errorf("errors.Is(err, sentinel of %s) = %v; err = %v", code, got, err)
				}
			}
			var e *client.Error
			if !errors.As(err, &e) {
				t.Fatalf("not an *Error: %v", err)
			}
			if e.Code != tc.code || e.Status != tc.status || e.Problem.Code != tc.code || e.Problem.Status != tc.status ||
				len(e.Raw) == 0 || client.CodeOf(err) != tc.code || e.Detail == "" {
				t.Errorf("error %+v", e)
			}
			if msg := err.Error(); !strings.Contains(msg, fmt.Sprint(tc.status)) || !strings.Contains(msg, string(tc.code)) {
				t.Errorf("message %q", msg)
			}
			// Wrapped, it still matches.
			if !errors.Is(fmt.Errorf("doing it: %w", err), sentinels[tc.code]) {
				t.Error("wrapped error does not match")
			}
			if tc.check != nil {
				tc.check(t, e)
			}
		})
	}
}

// TestErrorOfAProxy: an answer that is not a problem document, such as a
// reverse proxy's 502 for a planserver that is down, still gets the code
// its status stands for.
func TestErrorOfAProxy(t *testing.T) {
	env := apitest.New(t)
	target, _ := url.Parse(env.Server.URL)
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.ErrorLog = log.New(io.Discard, "", 0)
	proxy := httptest.NewServer(rp)
	defer proxy.Close()
	c, err := client.New(proxy.URL)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Health(t.Context()); err != nil {
		t.Fatalf("through the proxy: %v", err)
	}
	env.Close()
	_, err = c.Health(t.Context())
	var e *client.Error
	if !errors.Is(err, client.ErrUnavailable) || !errors.As(err, &e) || e.Status != http.StatusBadGateway || e.Problem.Code != "" {
		t.Errorf("planserver down behind a proxy: %v", err)
	}
	if client.CodeOf(context.Canceled) != "" {
		t.Error("CodeOf an error that is no *Error")
	}
}
