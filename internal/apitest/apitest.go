// Package apitest runs the real planserver router on a real database (a
// SQLite file in a test's temp dir, or, when PLANSERVER_TEST_POSTGRES is
// set, a PostgreSQL database of the test's own: internal/dbtest), behind a
// real loopback HTTP server, and checks every request and response a test
// makes against api/openapi.yaml, so the contract and the code cannot
// drift. The same tests judge both engines. It is imported only by tests.
package apitest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/app"
	"github.com/planserver/planserver/internal/auth"
	"github.com/planserver/planserver/internal/db"
	_ "github.com/planserver/planserver/internal/db/postgres" // the engines its databases are on
	_ "github.com/planserver/planserver/internal/db/sqlite"
	"github.com/planserver/planserver/internal/dbtest"
	planhttp "github.com/planserver/planserver/internal/http"
)

var (
	specOnce   sync.Once
	specDoc    *openapi3.T
	specRouter routers.Router
	specErr    error
)

func init() {
	openapi3filter.RegisterBodyDecoder("text/markdown", openapi3filter.PlainBodyDecoder)
	openapi3filter.RegisterBodyDecoder("text/event-stream", openapi3filter.PlainBodyDecoder)
	openapi3filter.RegisterBodyDecoder("text/x-diff", openapi3filter.PlainBodyDecoder)
}

// Router returns the kin-openapi router of api/openapi.yaml, loaded and
// validated once per test binary.
func Router(tb testing.TB) routers.Router {
	tb.Helper()
	specOnce.Do(func() {
		loader := openapi3.NewLoader()
		doc, err := loader.LoadFromData(api.Spec)
		if err != nil {
			specErr = fmt.Errorf("load openapi.yaml: %w", err)
			return
		}
		if err := doc.Validate(context.Background()); err != nil {
			specErr = fmt.Errorf("openapi.yaml is not a valid OpenAPI document: %w", err)
			return
		}
		// Match any host: tests run on random loopback ports.
		doc.Servers = nil
		specDoc = doc
		specRouter, specErr = legacy.NewRouter(doc)
	})
	if specErr != nil {
		tb.Fatal(specErr)
	}
	return specRouter
}

// Env is one planserver under test.
type Env struct {
	TB testing.TB
	DB *db.DB
	// App is the planserver built (its jobs: PruneEvents, RunWebhooks,
	// SweepLeases...); API is its HTTP server.
	App    *app.App
	API    *planhttp.Server
	Server *httptest.Server
	Client *http.Client
	// DBPath is the database (a SQLite file or a PostgreSQL URL), for
	// tests that reopen it.
	DBPath string
	// header is sent with every request unless the request overrides it
	// (see As).
	header map[string]string
}

// As returns a view of e whose requests carry token as their bearer
// credential; "" sends none. The view shares e's server and database.
func (e *Env) As(token string) *Env {
	c := *e
	c.header = map[string]string{}
	if token != "" {
		c.header["Authorization"] = "Bearer " + token
	}
	return &c
}

// AsSignedIn returns a view of e whose requests carry a sign-in cookie
// (name=value) and the sign-in's CSRF token, as the console sends them.
func (e *Env) AsSignedIn(cookie, csrf string) *Env {
	c := *e
	c.header = map[string]string{"Cookie": cookie, "X-CSRF-Token": csrf}
	return &c
}

// Token creates a token directly in the database, the way `planserver
// token create` does, and returns its secret. session is the scope of an
// agent token ("" for other roles).
func (e *Env) Token(role auth.Role, name, session string) string {
	e.TB.Helper()
	secret, _, err := auth.NewStore(e.DB).Create(context.Background(),
		auth.CreateInput{Role: string(role), Name: name, SessionID: session})
	if err != nil {
		e.TB.Fatalf("create %s token %q: %v", role, name, err)
	}
	return secret
}

// New starts planserver on a fresh database (dbtest.Fresh), built as
// serve builds it (app.New). configure may adjust the configuration
// before it is built.
func New(tb testing.TB, configure ...func(*app.Config)) *Env {
	tb.Helper()
	return Open(tb, dbtest.Fresh(tb), configure...)
}

// Open starts planserver on the database at path (a SQLite file or a
// PostgreSQL URL), migrating it first.
func Open(tb testing.TB, path string, configure ...func(*app.Config)) *Env {
	tb.Helper()
	return OpenOn(tb, path, nil, configure...)
}

// OpenOn is Open serving on ln (a loopback listener the test made first,
// so that settings such as the sign-in's redirect URL can name the
// server's address); nil picks one.
func OpenOn(tb testing.TB, path string, ln net.Listener, configure ...func(*app.Config)) *Env {
	tb.Helper()
	ctx := context.Background()
	store, err := db.Open(ctx, path, db.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	if _, _, err := store.MigrateUp(ctx, nil); err != nil {
		store.Close()
		tb.Fatal(err)
	}
	cfg := app.Config{Config: planhttp.Config{DB: store, Logger: discardLogger(), Version: "test"}}
	for _, c := range configure {
		c(&cfg)
	}
	a := app.New(cfg)
	srv := a.HTTP
	ts := httptest.NewUnstartedServer(srv)
	if ln != nil {
		ts.Listener.Close()
		ts.Listener = ln
	}
	ts.Start()
	e := &Env{TB: tb, DB: store, App: a, API: srv, Server: ts, Client: ts.Client(), DBPath: path}
	tb.Cleanup(e.Close)
	return e
}

// Close stops the server and closes the database; safe to call twice.
// Event streams are ended first: httptest.Server.Close waits for every
// request in flight, and a stream would never finish by itself.
func (e *Env) Close() {
	if e.Server != nil {
		e.API.Shutdown()
		e.Server.Close()
		e.Server = nil
	}
	if e.DB != nil {
		e.DB.Close()
		e.DB = nil
	}
}

// Request describes one call.
type Request struct {
	Method string
	Path   string
	// Body is sent as JSON unless it is a string or []byte, which are sent
	// as they are.
	Body any
	// Header entries; Content-Type defaults to application/json when Body
	// is not nil. "Host" sets the request's Host (the name a browser
	// sends), not a header field.
	Header map[string]string
	// Invalid marks a request that deliberately breaks the contract (bad
	// input tests): it is not validated, but its response still is.
	Invalid bool
}

// Response is what came back.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body into v, failing the test on error.
func (r *Response) JSON(tb testing.TB, v any) {
	tb.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		tb.Fatalf("decode response %d %q: %v", r.Status, r.Body, err)
	}
}

// Map decodes the body as a JSON object.
func (r *Response) Map(tb testing.TB) map[string]any {
	tb.Helper()
	var m map[string]any
	r.JSON(tb, &m)
	return m
}

// Code returns the problem code of an error response ("" otherwise).
func (r *Response) Code() string {
	var p struct {
		Code string `json:"code"`
	}
	_ = json.Unmarshal(r.Body, &p)
	return p.Code
}

// Do sends req and checks request and response against the contract. It
// may be called from several goroutines; failures are reported with Errorf
// so that it is safe off the test goroutine.
func (e *Env) Do(req Request) *Response {
	e.TB.Helper()
	resp, err := e.do(req)
	if err != nil {
		e.TB.Errorf("%s %s: %v", req.Method, req.Path, err)
		return &Response{Status: -1, Header: http.Header{}}
	}
	return resp
}

// Call is Do with the common fields as arguments; header is a list of
// name, value pairs.
func (e *Env) Call(method, path string, body any, header ...string) *Response {
	e.TB.Helper()
	h := map[string]string{}
	for i := 0; i+1 < len(header); i += 2 {
		h[header[i]] = header[i+1]
	}
	return e.Do(Request{Method: method, Path: path, Body: body, Header: h})
}

// Bad is Call for a request that deliberately breaks the contract.
func (e *Env) Bad(method, path string, body any, header ...string) *Response {
	e.TB.Helper()
	h := map[string]string{}
	for i := 0; i+1 < len(header); i += 2 {
		h[header[i]] = header[i+1]
	}
	return e.Do(Request{Method: method, Path: path, Body: body, Header: h, Invalid: true})
}

func (e *Env) do(req Request) (*Response, error) {
	var body []byte
	contentType := ""
	switch b := req.Body.(type) {
	case nil:
	case string:
		body = []byte(b)
		contentType = "application/json"
	case []byte:
		body = b
		contentType = "application/json"
	default:
		var err error
		if body, err = json.Marshal(b); err != nil {
			return nil, err
		}
		contentType = "application/json"
	}
	hreq, err := http.NewRequest(req.Method, e.Server.URL+req.Path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	if contentType != "" {
		hreq.Header.Set("Content-Type", contentType)
	}
	for k, v := range e.header {
		hreq.Header.Set(k, v)
	}
	for k, v := range req.Header {
		if k == "Host" {
			hreq.Host = v
			continue
		}
		if v == "" {
			hreq.Header.Del(k)
			continue
		}
		hreq.Header.Set(k, v)
	}
	if req.Body == nil {
		hreq.Body = http.NoBody
	}
	hresp, err := e.Client.Do(hreq)
	if err != nil {
		return nil, err
	}
	defer hresp.Body.Close()
	respBody, err := io.ReadAll(hresp.Body)
	if err != nil {
		return nil, err
	}
	resp := &Response{Status: hresp.StatusCode, Header: hresp.Header, Body: respBody}
	if err := Validate(e.TB, hreq, body, resp, !req.Invalid); err != nil {
		return resp, err
	}
	return resp, nil
}

// Validate checks one exchange against the contract: the request (when
// checkRequest) and always the response. Every error response must be a
// problem document whose status matches the HTTP status.
func Validate(tb testing.TB, hreq *http.Request, reqBody []byte, resp *Response, checkRequest bool) error {
	if resp.Status >= 400 {
		if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/problem+json") {
			return fmt.Errorf("error %d has Content-Type %q, want application/problem+json (body %s)", resp.Status, ct, resp.Body)
		}
		var p struct {
			Status int    `json:"status"`
			Code   string `json:"code"`
		}
		if err := json.Unmarshal(resp.Body, &p); err != nil || p.Status != resp.Status || p.Code == "" {
			return fmt.Errorf("error %d is not a problem document with matching status and a code: %s", resp.Status, resp.Body)
		}
	}
	router := Router(tb)
	vreq := hreq.Clone(context.Background())
	vreq.Body = io.NopCloser(bytes.NewReader(reqBody))
	route, params, err := router.FindRoute(vreq)
	if err != nil {
		if resp.Status == http.StatusNotFound || resp.Status == http.StatusMethodNotAllowed {
			return nil // unknown routes are answered with a checked problem above
		}
		if !checkRequest && resp.Status >= 400 {
			return nil
		}
		return fmt.Errorf("route %s %s is not in openapi.yaml (answered %d): %v", hreq.Method, hreq.URL.Path, resp.Status, err)
	}
	in := &openapi3filter.RequestValidationInput{
		Request: vreq, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc},
	}
	if checkRequest {
		if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil {
			return fmt.Errorf("request breaks the contract: %v", err)
		}
	}
	out := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in,
		Status:                 resp.Status,
		Header:                 resp.Header,
		Options:                &openapi3filter.Options{IncludeResponseStatus: true},
	}
	out.SetBodyBytes(resp.Body)
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		return fmt.Errorf("response %d breaks the contract: %v\nbody: %s", resp.Status, err, resp.Body)
	}
	return nil
}

// ValidateProblem checks an answer given before any route is reached (the
// connection layer's, to requests net/http cannot parse or above the
// connection cap): a problem document whose status matches the HTTP status,
// valid against the contract's Problem schema.
func ValidateProblem(tb testing.TB, status int, header http.Header, body []byte) error {
	tb.Helper()
	Router(tb)
	if ct := header.Get("Content-Type"); ct != "application/problem+json" {
		return fmt.Errorf("answer %d has Content-Type %q, want application/problem+json: %s", status, ct, body)
	}
	var doc map[string]any
	if err := json.Unmarshal(body, &doc); err != nil {
		return fmt.Errorf("answer %d is not JSON: %v: %s", status, err, body)
	}
	if s, _ := doc["status"].(float64); int(s) != status {
		return fmt.Errorf("problem status %v in a %d answer: %s", doc["status"], status, body)
	}
	if err := specDoc.Components.Schemas["Problem"].Value.VisitJSON(doc); err != nil {
		return fmt.Errorf("answer %d breaks the Problem schema: %v\nbody: %s", status, err, body)
	}
	return nil
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
