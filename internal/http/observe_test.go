package http

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/planserver/planserver/internal/db"
	"github.com/planserver/planserver/internal/dbtest/migrated"
	"github.com/planserver/planserver/internal/http/response"
)

// newLogged returns a server on a fresh database whose log lines (JSON)
// land in the returned buffer. It serves no store unless deps, when given,
// builds some on the database (the composition root, internal/app, is
// above this package).
func newLogged(t *testing.T, cfg Config, deps ...func(*db.DB) Deps) (*Server, *bytes.Buffer) {
	t.Helper()
	d := migrated.Fresh(t)
	var logs bytes.Buffer
	cfg.DB, cfg.Logger = d, slog.New(slog.NewJSONHandler(&logs, nil))
	var built Deps
	for _, f := range deps {
		built = f(d)
	}
	return New(cfg, built), &logs
}

// logLines decodes every log line, failing on a key that appears twice
// in one line (a JSON object keeps only one of them).
func logLines(t *testing.T, logs *bytes.Buffer) []map[string]any {
	t.Helper()
	key := regexp.MustCompile(`"([a-z_]+)":`)
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		seen := map[string]bool{}
		for _, m := range key.FindAllStringSubmatch(line, -1) {
			if seen[m[1]] {
				t.Errorf("key %q twice in one log line: %s", m[1], line)
			}
			seen[m[1]] = true
		}
		var v map[string]any
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		out = append(out, v)
	}
	return out
}

// TestRequestLogLines: one line per request with the route pattern, even
// for a request guard answers 401 before the router routes it, and the
// duration in milliseconds; an internal error's line names its request
// once.
func TestRequestLogLines(t *testing.T) {
	s, logs := newLogged(t, Config{Auth: AuthToken})
	s.router.Get("/fail", func(w http.ResponseWriter, r *http.Request) { response.Problem(w, r, errors.New("disk on fire")) })
	for path, want := range map[string]int{"/v1/sessions/s1/plan": 401, "/fail": 500, "/v1/nowhere": 401, "/healthz": 200} {
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		if rec.Code != want {
			t.Fatalf("GET %s: %d, want %d", path, rec.Code, want)
		}
	}
	routes := map[string]string{}
	for _, l := range logLines(t, logs) {
		switch l["msg"] {
		case "request":
			routes[l["path"].(string)] = l["route"].(string)
			if _, ok := l["duration_ms"].(float64); !ok || l["duration"] != nil {
				t.Errorf("duration not in milliseconds: %v", l)
			}
		case "internal error":
			if l["request_id"] == nil || !strings.Contains(l["error"].(string), "disk on fire") {
				t.Errorf("internal error line: %v", l)
			}
		}
	}
	for path, want := range map[string]string{"/v1/sessions/s1/plan": "/v1/sessions/{id}/plan", "/fail": "/fail",
		"/v1/nowhere": "unmatched", "/healthz": "/healthz"} {
		if routes[path] != want {
			t.Errorf("GET %s logged route %q, want %q", path, routes[path], want)
		}
	}
}

// TestProcessMetrics: /metrics names the build and shows the database's
// WAL and connections.
func TestProcessMetrics(t *testing.T) {
	s, _ := newLogged(t, Config{Version: "v1.2.3"})
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest("GET", "http://127.0.0.1/metrics", nil))
	body := rec.Body.String()
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`planserver_build_info\{goversion="go[^"]+",version="v1\.2\.3"\} 1`),
		regexp.MustCompile(`planserver_db_wal_bytes [0-9.e+]+`),
		regexp.MustCompile(`planserver_db_connections_open\{pool="writer"\} 1`),
		regexp.MustCompile(`planserver_db_connections_open\{pool="reader"\} [0-9]`),
		regexp.MustCompile(`planserver_db_connections_in_use\{pool="writer"\} 0`),
	} {
		if !want.MatchString(body) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// TestUnencodableAnswerIsAnInternalProblem: an answer encoding/json cannot
// encode (a bug) becomes a whole 500 problem, not half a body.
func TestUnencodableAnswerIsAnInternalProblem(t *testing.T) {
	rec := httptest.NewRecorder()
	response.JSON(rec, http.StatusOK, map[string]float64{"x": math.NaN()})
	var p map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil || rec.Code != 500 ||
		rec.Header().Get("Content-Type") != "application/problem+json" ||
		p["code"] != "internal" || p["status"] != 500.0 || p["title"] != "Internal error" ||
		rec.Header().Get("Content-Length") != strconv.Itoa(rec.Body.Len()) {
		t.Fatalf("%d %v %s (%v)", rec.Code, rec.Header(), rec.Body, err)
	}
}
