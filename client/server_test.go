package client_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/planserver/planserver/client"
	"github.com/planserver/planserver/internal/apitest"
	"github.com/planserver/planserver/internal/app"
	"github.com/planserver/planserver/internal/db"
	planhttp "github.com/planserver/planserver/internal/http"
)

// contractCheck checks every exchange a client makes against
// api/openapi.yaml, as the server's own tests do: a client that sends what
// the contract does not describe, or a method that decodes what the
// server does not promise, fails the test. Event streams are passed
// through unchecked: they have no end to validate.
type contractCheck struct {
	tb   testing.TB
	next http.RoundTripper
	// badRequests marks a client whose requests deliberately break the
	// contract (the error tests); only the answers are checked.
	badRequests bool
}

func (c *contractCheck) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		var err error
		if body, err = io.ReadAll(req.Body); err != nil {
			return nil, err
		}
		req.Body.Close()
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	resp, err := c.next.RoundTrip(req)
	if err != nil || (resp.StatusCode == http.StatusOK && resp.Header.Get("Content-Type") == "text/event-stream") {
		return resp, err
	}
	data, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	if verr := apitest.Validate(c.tb, req, body, &apitest.Response{Status: resp.StatusCode, Header: resp.Header, Body: data},
		!c.badRequests); verr != nil {
		c.tb.Errorf("%s %s: %v", req.Method, req.URL, verr)
	}
	return resp, nil
}

// checkedClient returns a client of url whose exchanges are checked
// against the contract.
func checkedClient(tb testing.TB, url string, opts ...client.Option) *client.Client {
	tb.Helper()
	hc := &http.Client{Transport: &contractCheck{tb: tb, next: http.DefaultTransport}}
	c, err := client.New(url, append([]client.Option{client.WithHTTPClient(hc)}, opts...)...)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// badClient is checkedClient for requests that deliberately break the
// contract: only the answers are checked.
func badClient(tb testing.TB, url string, opts ...client.Option) *client.Client {
	tb.Helper()
	hc := &http.Client{Transport: &contractCheck{tb: tb, next: http.DefaultTransport, badRequests: true}}
	c, err := client.New(url, append([]client.Option{client.WithHTTPClient(hc)}, opts...)...)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// newTest starts planserver on a fresh SQLite file and returns it with a
// checked client.
func newTest(t *testing.T, configure ...func(*app.Config)) (*apitest.Env, *client.Client) {
	t.Helper()
	env := apitest.New(t, configure...)
	return env, checkedClient(t, env.Server.URL)
}

// discard drops the servers' logs: the tests read answers, not logs.
var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

// server is planserver on a database file and a fixed address, which can
// be stopped and started again there: a subscriber sees a restart, not a
// different server.
type server struct {
	t         *testing.T
	path      string
	addr      string
	configure []func(*app.Config)
	// readTimeout is the http.Server's (0: none).
	readTimeout time.Duration
	App         *app.App
	API         *planhttp.Server
	DB          *db.DB
	http        *http.Server
	served      chan error
}

// startServer serves a fresh database on a free loopback port.
func startServer(t *testing.T, configure ...func(*app.Config)) *server {
	t.Helper()
	return startServerWith(t, func(s *server) { s.configure = configure })
}

// startServerWith is startServer with the server's settings adjusted by
// set before it starts.
func startServerWith(t *testing.T, set func(*server)) *server {
	t.Helper()
	s := &server{t: t, path: filepath.Join(t.TempDir(), "planserver.db"), addr: "127.0.0.1:0"}
	set(s)
	s.start()
	t.Cleanup(s.stop)
	return s
}

// URL is the server's base URL.
func (s *server) URL() string { return "http://" + s.addr }

// start opens the database and serves it, on the address of the previous
// start if there was one. before, when given, runs on the new server
// before it takes any request.
func (s *server) start(before ...func(*server)) {
	s.t.Helper()
	ctx := context.Background()
	d, err := db.Open(ctx, s.path, db.Options{})
	if err != nil {
		s.t.Fatal(err)
	}
	if _, _, err := d.MigrateUp(ctx, nil); err != nil {
		s.t.Fatal(err)
	}
	cfg := app.Config{Config: planhttp.Config{DB: d, Version: "test", Logger: discard}}
	for _, c := range s.configure {
		c(&cfg)
	}
	s.App = app.New(cfg)
	s.DB, s.API = d, s.App.HTTP
	for _, b := range before {
		b(s)
	}
	var ln net.Listener
	for deadline := time.Now().Add(5 * time.Second); ; {
		// The port of a server just stopped may take a moment to free.
		if ln, err = net.Listen("tcp", s.addr); err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		s.t.Fatal(err)
	}
	s.addr = ln.Addr().String()
	// As planserver serve does: the API's own listener, which answers
	// what net/http refuses with problem documents, and its header limit.
	pl := s.API.Listener(ln, 0)
	ln = pl
	s.http = &http.Server{Handler: s.API, ConnContext: pl.ConnContext, MaxHeaderBytes: 64 << 10, ReadTimeout: s.readTimeout}
	s.http.RegisterOnShutdown(s.API.Shutdown)
	s.served = make(chan error, 1)
	go func() { s.served <- s.http.Serve(ln) }()
}

// stop ends every stream and request, then closes the database, as a
// SIGTERM to planserver serve does. Safe to call twice.
func (s *server) stop() {
	if s.http == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.http.Shutdown(ctx); err != nil {
		s.t.Errorf("shutdown: %v", err)
	}
	if err := <-s.served; !errors.Is(err, http.ErrServerClosed) {
		s.t.Errorf("serve: %v", err)
	}
	s.DB.Close()
	s.http = nil
}

// restart stops the server and starts it again on the same file and
// address.
func (s *server) restart(before ...func(*server)) {
	s.t.Helper()
	s.stop()
	s.start(before...)
}
