package http

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/planserver/planserver/internal/dbtest/migrated"
)

// TestPanicIsAnsweredAsInternalProblem mounts a panicking route on the real
// router: the client gets a bare 500 internal problem, the log gets the
// panic with the request id, and the server keeps serving.
func TestPanicIsAnsweredAsInternalProblem(t *testing.T) {
	d := migrated.Fresh(t)
	var logs bytes.Buffer
	s := New(Config{DB: d, Logger: slog.New(slog.NewJSONHandler(&logs, nil))}, Deps{})
	s.router.Get("/boom", func(http.ResponseWriter, *http.Request) { panic("secret detail") })

	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest("GET", "http://127.0.0.1/boom", nil))
	if rec.Code != 500 || rec.Header().Get("Content-Type") != "application/problem+json" {
		t.Fatalf("panic answered %d %s", rec.Code, rec.Header().Get("Content-Type"))
	}
	var p map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil {
		t.Fatal(err)
	}
	if p["code"] != "internal" || p["detail"] != "internal error" || strings.Contains(rec.Body.String(), "secret") {
		t.Errorf("problem leaks or lacks the code: %s", rec.Body.String())
	}
	if !strings.Contains(logs.String(), "secret detail") || !strings.Contains(logs.String(), p["request_id"].(string)) {
		t.Errorf("log lacks the panic or the request id:\n%s", logs.String())
	}
	// The failure is logged once: in the request's own line.
	if n := strings.Count(logs.String(), "secret detail"); n != 1 {
		t.Errorf("the panic is logged %d times, want once:\n%s", n, logs.String())
	}
	rec = httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest("GET", "http://127.0.0.1/healthz", nil))
	if rec.Code != 200 {
		t.Errorf("healthz after panic: %d", rec.Code)
	}
	// One structured line per request, with the route pattern.
	if !strings.Contains(logs.String(), `"route":"/healthz"`) || !strings.Contains(logs.String(), `"status":200`) {
		t.Errorf("request log line missing:\n%s", logs.String())
	}
}
