package http

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/planserver/planserver/internal/auth"
	"github.com/planserver/planserver/internal/db"
	"github.com/planserver/planserver/internal/dbtest"
	"github.com/planserver/planserver/internal/plans"
	"github.com/planserver/planserver/internal/sessions"
	"github.com/planserver/planserver/internal/tracing"
)

// otlpSpan is a span as an OTLP/HTTP receiver got it.
type otlpSpan struct {
	name, trace, id, parent string
	attrs                   map[string]string
}

// otlpReceiver is an OTLP/HTTP trace receiver on 127.0.0.1: it decodes
// every export (protobuf, as the exporter sends it) and keeps the spans.
type otlpReceiver struct {
	mu    sync.Mutex
	spans []otlpSpan
}

func (o *otlpReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	var req coltrace.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(body, &req)
	}
	if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" || err != nil {
		http.Error(w, "bad export", http.StatusBadRequest)
		return
	}
	o.mu.Lock()
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, sp := range ss.Spans {
				s := otlpSpan{name: sp.Name, trace: hexID(sp.TraceId), id: hexID(sp.SpanId), parent: hexID(sp.ParentSpanId),
					attrs: map[string]string{}}
				for _, a := range sp.Attributes {
					s.attrs[a.Key] = a.Value.String()
				}
				o.spans = append(o.spans, s)
			}
		}
	}
	o.mu.Unlock()
	out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func hexID(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}

// TestTracesReachAnOTLPReceiver turns tracing on through the environment,
// as an operator does, against a receiver in the test, and writes a plan:
// the request's span arrives with its route as name, and under it the
// authorization decision and the write, which holds its queue wait and
// its commit (and on PostgreSQL the round trip that took the write lock
// and the write's reads). The request's log line names the trace.
func TestTracesReachAnOTLPReceiver(t *testing.T) {
	recv := &otlpReceiver{}
	collector := httptest.NewServer(recv) // 127.0.0.1
	defer collector.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.URL)
	prev := otel.GetTracerProvider()
	stop, err := tracing.Setup(context.Background(), "test")
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = stop(context.Background())
		}
		otel.SetTracerProvider(prev)
	}()
	if !tracing.Enabled() {
		t.Fatal("tracing is off with OTEL_EXPORTER_OTLP_ENDPOINT set")
	}
	s, logs := newLogged(t, Config{}, func(d *db.DB) Deps {
		sess := sessions.NewStore(d, sessions.Config{})
		access := auth.NewAuthorizer(sess)
		return Deps{Sessions: sess, Access: access, Plans: plans.NewStore(d, plans.Config{Access: access})}
	})
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("PUT", "http://127.0.0.1/v1/plans/traced", strings.NewReader(`{"content":"# Plan\n"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("If-None-Match", "*")
	s.ServeHTTP(rec, req)
	if rec.Code != http.StatusCreated {
		t.Fatalf("PUT: %d %s", rec.Code, rec.Body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := stop(ctx); err != nil { // flushes every span to the receiver
		t.Fatal(err)
	}
	stopped = true

	recv.mu.Lock()
	defer recv.mu.Unlock()
	byName := map[string][]otlpSpan{}
	for _, sp := range recv.spans {
		byName[sp.name] = append(byName[sp.name], sp)
	}
	one := func(name string) otlpSpan {
		t.Helper()
		if len(byName[name]) != 1 {
			t.Fatalf("%d spans named %q, want 1; got %v", len(byName[name]), name, recv.spans)
		}
		return byName[name][0]
	}
	request := one("PUT /v1/plans/{name}")
	if request.parent != "" {
		t.Errorf("the request span has a parent: %v", request)
	}
	authz := one("authorize")
	if authz.parent != request.id || authz.attrs["planserver.authz.decision"] != `string_value:"allow"` {
		t.Errorf("authorize span %v; want a child of the request, decision allow", authz)
	}
	write := one("db.write")
	if write.parent != request.id {
		t.Errorf("db.write's parent is %s, want the request %s", write.parent, request.id)
	}
	children := []string{"db.queue", "db.commit"}
	if dbtest.Postgres() {
		children = append(children, "db.lock_wait")
		// The write's read of the plan's head travels in the round trip
		// that takes the locks: BEGIN, the write lock (shared: a PUT is
		// keyed), the plan's own lock, the read.
		if lock := one("db.lock_wait"); lock.attrs["planserver.db.statements"] != "int_value:4" {
			t.Errorf("db.lock_wait %v; want 4 statements, the write's read among them", lock)
		}
	}
	for _, name := range children {
		if len(byName[name]) == 0 {
			t.Errorf("no %s span; got %v", name, recv.spans)
		}
		for _, sp := range byName[name] {
			if sp.parent != write.id || sp.trace != request.trace {
				t.Errorf("%s span %v is not under db.write %s", name, sp, write.id)
			}
		}
	}
	found := false
	for _, l := range logLines(t, logs) {
		if l["msg"] == "request" && l["path"] == "/v1/plans/traced" {
			found = l["trace_id"] == request.trace
		}
	}
	if !found {
		t.Errorf("no request log line with trace_id %s:\n%s", request.trace, logs)
	}
}
