package http_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/apitest"
	"github.com/planserver/planserver/internal/app"
	"github.com/planserver/planserver/internal/db"
	"github.com/planserver/planserver/internal/events"
)

// sseBlock is one block of an event stream, up to its blank line.
type sseBlock struct {
	ID, Event, Data, Retry string
	Comments               []string
}

// stream is an open GET /v1/events with Accept: text/event-stream, read
// line by line as a browser would.
type stream struct {
	resp   *http.Response
	br     *bufio.Reader
	cancel context.CancelFunc
}

// streamGuard ends a stream a test forgot, so a bug fails the test
// instead of hanging it.
const streamGuard = 60 * time.Second

// dialStream opens the event stream of baseURL with query and header
// pairs. It returns the response on any status; on 200 the retry block
// has been read.
func dialStream(client *http.Client, baseURL, query string, header ...string) (*stream, error) {
	ctx, cancel := context.WithTimeout(context.Background(), streamGuard)
	req, err := http.NewRequestWithContext(ctx, "GET", baseURL+"/v1/events"+query, nil)
	if err != nil {
		cancel()
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	for i := 0; i+1 < len(header); i += 2 {
		if header[i+1] != "" {
			req.Header.Set(header[i], header[i+1])
		}
	}
	resp, err := client.Do(req)
	if err != nil {
		cancel()
		return nil, err
	}
	s := &stream{resp: resp, br: bufio.NewReader(resp.Body), cancel: cancel}
	if resp.StatusCode != http.StatusOK {
		return s, nil
	}
	b, err := s.block()
	if err != nil {
		s.close()
		return nil, err
	}
	if b.Retry != "3000" || b.Data != "" {
		s.close()
		return nil, fmt.Errorf("first block %+v, want retry: 3000", b)
	}
	return s, nil
}

// openStream is dialStream on env that must succeed with 200.
func openStream(t *testing.T, env *apitest.Env, query string, header ...string) *stream {
	t.Helper()
	s, err := dialStream(env.Client, env.Server.URL, query, header...)
	if err != nil {
		t.Fatalf("open stream %s: %v", query, err)
	}
	if s.resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(s.resp.Body)
		s.close()
		t.Fatalf("open stream %s: %d %s", query, s.resp.StatusCode, body)
	}
	t.Cleanup(s.close)
	return s
}

func (s *stream) close() {
	s.cancel()
	s.resp.Body.Close()
}

// block reads the next block.
func (s *stream) block() (sseBlock, error) {
	var b sseBlock
	started := false
	for {
		line, err := s.br.ReadString('\n')
		if err != nil {
			return b, err
		}
		line = strings.TrimSuffix(line, "\n")
		if line == "" {
			if started {
				return b, nil
			}
			continue
		}
		started = true
		if c, ok := strings.CutPrefix(line, ":"); ok {
			b.Comments = append(b.Comments, strings.TrimSpace(c))
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "id":
			b.ID = value
		case "event":
			b.Event = value
		case "retry":
			b.Retry = value
		case "data":
			if b.Data != "" {
				b.Data += "\n"
			}
			b.Data += value
		default:
			return b, fmt.Errorf("unknown field in line %q", line)
		}
	}
}

// event reads blocks until one carries an event, checking that its id and
// event lines agree with its data.
func (s *stream) event() (events.Event, error) {
	for {
		b, err := s.block()
		if err != nil {
			return events.Event{}, err
		}
		if b.Data == "" {
			continue
		}
		return decodeBlock(b)
	}
}

func decodeBlock(b sseBlock) (events.Event, error) {
	var e events.Event
	if err := json.Unmarshal([]byte(b.Data), &e); err != nil {
		return e, fmt.Errorf("data %q: %w", b.Data, err)
	}
	if b.ID != strconv.FormatInt(e.Seq, 10) || b.Event != e.Type {
		return e, fmt.Errorf("block id %q event %q, data says seq %d type %s", b.ID, b.Event, e.Seq, e.Type)
	}
	return e, nil
}

// noEventWithin checks that s delivers no event within d, then closes it.
func noEventWithin(t *testing.T, s *stream, d time.Duration) {
	t.Helper()
	got := make(chan events.Event, 1)
	go func() {
		if e, err := s.event(); err == nil {
			got <- e
		}
		close(got)
	}()
	time.Sleep(d)
	s.close()
	if e, ok := <-got; ok {
		t.Errorf("unexpected event %+v", e)
	}
}

func mustEvent(t *testing.T, s *stream) events.Event {
	t.Helper()
	e, err := s.event()
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// logRow is an event as the events table has it.
type logRow struct {
	Seq       int64
	Type      string
	SessionID string
}

// eventLog reads the events table, optionally filtered by where.
func eventLog(t *testing.T, env *apitest.Env, where string, args ...any) []logRow {
	t.Helper()
	q := `SELECT seq, type, coalesce(session_id, '') FROM events`
	if where != "" {
		q += " WHERE " + where
	}
	rows, err := env.DB.Reader(context.Background()).Query(q+" ORDER BY seq", args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []logRow
	for rows.Next() {
		var r logRow
		if err := rows.Scan(&r.Seq, &r.Type, &r.SessionID); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func rowsOf(es []events.Event) []logRow {
	out := make([]logRow, 0, len(es))
	for _, e := range es {
		out = append(out, logRow{e.Seq, e.Type, e.SessionID})
	}
	return out
}

func sameRows(a, b []logRow) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

type eventPage = api.EventPage

func getEvents(t *testing.T, env *apitest.Env, query string, header ...string) eventPage {
	t.Helper()
	resp := env.Call("GET", "/v1/events"+query, nil, header...)
	if resp.Status != http.StatusOK {
		t.Fatalf("GET /v1/events%s: %d %s", query, resp.Status, resp.Body)
	}
	var p eventPage
	resp.JSON(t, &p)
	return p
}

// headOf returns the X-Event-Seq of a session listing.
func headOf(t *testing.T, env *apitest.Env) int64 {
	t.Helper()
	resp := env.Call("GET", "/v1/sessions?limit=1", nil)
	n, err := strconv.ParseInt(resp.Header.Get("X-Event-Seq"), 10, 64)
	if resp.Status != http.StatusOK || err != nil {
		t.Fatalf("list: %d, X-Event-Seq %q", resp.Status, resp.Header.Get("X-Event-Seq"))
	}
	return n
}

// metric returns the value of an unlabelled (or fully labelled, as
// written in the exposition) Prometheus series.
func metric(t *testing.T, env *apitest.Env, series string) float64 {
	t.Helper()
	resp := env.Call("GET", "/metrics", nil)
	for _, line := range strings.Split(string(resp.Body), "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("metric %s: %q", series, line)
			}
			return f
		}
	}
	return 0
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestEventsJSONPages(t *testing.T) {
	env := apitest.New(t)
	createSession(t, env, map[string]any{"id": "a"})
	createSession(t, env, map[string]any{"id": "b", "parent_id": "a"})
	setMode(t, env, "a", "plan", 200)                                                                    // 3, 4 (b inherits)
	env.Call("PATCH", "/v1/sessions/b", `{"title":"t"}`, "Content-Type", "application/merge-patch+json") // 5
	if st := env.Call("DELETE", "/v1/sessions/a", nil).Status; st != 204 {                               // 6, 7
		t.Fatalf("delete: %d", st)
	}
	want := eventLog(t, env, "")
	if len(want) != 7 {
		t.Fatalf("log has %d events, want 7", len(want))
	}
	types := []string{}
	for _, r := range want {
		types = append(types, r.Type)
	}
	if got := strings.Join(types, " "); got != "session.created session.created session.mode_changed session.mode_changed session.updated session.deleted session.deleted" {
		t.Errorf("every session change emits its type: %s", got)
	}

	// Default Accept (curl's */*), no cursor: the whole log.
	all := getEvents(t, env, "", "Accept", "*/*")
	if !sameRows(rowsOf(all.Events), want) || all.NextAfter != 7 {
		t.Errorf("whole log: %+v next %d", rowsOf(all.Events), all.NextAfter)
	}
	first := all.Events[0]
	if first.Actor != "anonymous" || first.Revision != 1 || first.Time == "" || !strings.Contains(string(first.Data), `"id":"a"`) {
		t.Errorf("first event = %+v", first)
	}
	if del := all.Events[6]; del.Revision != 0 || string(del.Data) != `{"deleted_with":"a","id":"a"}` {
		t.Errorf("delete event = %+v %s", del, del.Data)
	}

	// Pages of 3 follow next_after to the end, then an empty page at the head.
	var paged []events.Event
	after := int64(0)
	for i := 0; ; i++ {
		p := getEvents(t, env, fmt.Sprintf("?after=%d&limit=3", after), "Accept", "application/json")
		paged = append(paged, p.Events...)
		after = p.NextAfter
		if len(p.Events) == 0 {
			break
		}
		if i > 5 {
			t.Fatal("pages never end")
		}
	}
	if !sameRows(rowsOf(paged), want) || after != 7 {
		t.Errorf("paged: %+v, next %d", rowsOf(paged), after)
	}

	// Last-Event-ID wins over ?after= (EventSource reconnects send both).
	if p := getEvents(t, env, "?after=1", "Last-Event-ID", "5"); !sameRows(rowsOf(p.Events), want[5:]) {
		t.Errorf("Last-Event-ID 5 with after=1: %+v", rowsOf(p.Events))
	}
	// Type filter; the cursor still moves to the head past skipped events.
	p := getEvents(t, env, "?types=session.updated,session.created")
	if !sameRows(rowsOf(p.Events), []logRow{want[0], want[1], want[4]}) || p.NextAfter != 7 {
		t.Errorf("types filter: %+v next %d", rowsOf(p.Events), p.NextAfter)
	}
	if resp := env.Call("GET", "/v1/events", nil); resp.Header.Get("Vary") != "Accept" || resp.Header.Get("X-Event-Seq") != "" {
		t.Errorf("Vary %q, X-Event-Seq %q", resp.Header.Get("Vary"), resp.Header.Get("X-Event-Seq"))
	}
	if got := metric(t, env, `planserver_events_delivered_total{transport="json"}`); got < 7 {
		t.Errorf("delivered json = %v", got)
	}
}

func TestEventsPlanFilter(t *testing.T) {
	env := apitest.New(t)
	createSession(t, env, map[string]any{"id": "s"})
	// Real plan events, whose data the contract checks by type.
	for _, p := range []string{"release", "other", "release"} {
		if r := env.Call("PUT", "/v1/plans/"+p, map[string]any{"content": "# " + p}); r.Status >= 300 {
			t.Fatalf("PUT %s: %d %s", p, r.Status, r.Body)
		}
	}
	p := getEvents(t, env, "?plan=release")
	if len(p.Events) != 2 || p.Events[0].Seq != 2 || p.Events[1].Seq != 4 || p.Events[0].Plan != "release" || p.NextAfter != 4 {
		t.Errorf("plan filter: %+v", p)
	}
	if p := getEvents(t, env, "?plan=release&session_id=s"); len(p.Events) != 0 {
		t.Errorf("filters combine with AND: %+v", p.Events)
	}
}

func TestEventsBadRequests(t *testing.T) {
	env := apitest.New(t)
	createSession(t, env, map[string]any{"id": "s"})
	cases := []struct {
		query  string
		header []string
		status int
		code   string
		field  string
	}{
		{"?after=abc", nil, 400, "invalid_argument", "after"},
		{"?after=-1", nil, 400, "invalid_argument", "after"},
		{"?after=1.5", nil, 400, "invalid_argument", "after"},
		{"", []string{"Last-Event-ID", "x"}, 400, "invalid_argument", "Last-Event-ID"},
		{"?limit=0", nil, 400, "invalid_argument", "limit"},
		{"?limit=1001", nil, 400, "invalid_argument", "limit"},
		{"?limit=ten", nil, 400, "invalid_argument", "limit"},
		{"?types=session.created,session.exploded", nil, 400, "invalid_argument", "types"},
		{"?types=", nil, 400, "invalid_argument", "types"},
		{"?types=session.created,", nil, 400, "invalid_argument", "types"},
		{"?session_id=-x", nil, 400, "invalid_argument", "session_id"},
		{"?session_id=a%2Fb", nil, 400, "invalid_argument", "session_id"},
		{"?plan=..", nil, 400, "invalid_argument", "plan"},
		{"?plan=Release", nil, 400, "invalid_argument", "plan"},
		{"?after=99", nil, 410, "cursor_expired", ""},
		{"", []string{"Accept", "text/html"}, 406, "not_acceptable", ""},
		{"", []string{"Accept", "text/event-stream;q=0, application/json;q=0"}, 406, "not_acceptable", ""},
		// The stream answers bad input with a status before it starts.
		{"?after=abc", []string{"Accept", "text/event-stream"}, 400, "invalid_argument", "after"},
		{"?after=99", []string{"Accept", "text/event-stream"}, 410, "cursor_expired", ""},
	}
	for _, c := range cases {
		resp := env.Bad("GET", "/v1/events"+c.query, nil, c.header...)
		if resp.Status != c.status || resp.Code() != c.code {
			t.Errorf("%s %v: %d %s, want %d %s", c.query, c.header, resp.Status, resp.Body, c.status, c.code)
			continue
		}
		if c.field != "" {
			var p struct {
				Errors []struct{ Field string } `json:"errors"`
			}
			resp.JSON(t, &p)
			if len(p.Errors) != 1 || p.Errors[0].Field != c.field {
				t.Errorf("%s: errors %s, want field %s", c.query, resp.Body, c.field)
			}
		}
	}
	if resp := env.Bad("POST", "/v1/events", "{}"); resp.Status != 405 || resp.Header.Get("Allow") != "GET, HEAD" {
		t.Errorf("POST: %d Allow %q", resp.Status, resp.Header.Get("Allow"))
	}
	if got := countRows(t, env, "events", ""); got != 1 {
		t.Errorf("bad requests wrote events: %d", got)
	}
}

func TestEventStreamFormatAndHeartbeat(t *testing.T) {
	env := apitest.New(t, func(c *app.Config) { c.SSEHeartbeat = 20 * time.Millisecond })
	createSession(t, env, map[string]any{"id": "a"})
	createSession(t, env, map[string]any{"id": "b"})

	s := openStream(t, env, "?after=0")
	if h := s.resp.Header; h.Get("Content-Type") != "text/event-stream" || h.Get("Cache-Control") != "no-cache" ||
		h.Get("X-Accel-Buffering") != "no" {
		t.Errorf("stream headers: %v", h)
	}
	// Catch-up: the same events, byte for byte, as the JSON form.
	page := getEvents(t, env, "?after=0")
	for _, want := range page.Events {
		b, err := s.block()
		if err != nil {
			t.Fatal(err)
		}
		wantData, _ := json.Marshal(want)
		if b.ID != strconv.FormatInt(want.Seq, 10) || b.Event != want.Type || b.Data != string(wantData) {
			t.Errorf("block %+v, want %s", b, wantData)
		}
	}
	// Idle: heartbeats. Then a change is delivered live.
	for {
		b, err := s.block()
		if err != nil {
			t.Fatal(err)
		}
		if len(b.Comments) == 1 && b.Comments[0] == "heartbeat" && b.Data == "" && b.ID == "" {
			break
		}
		t.Fatalf("unexpected block while idle: %+v", b)
	}
	setMode(t, env, "a", "plan", 200)
	if e := mustEvent(t, s); e.Seq != 3 || e.Type != events.SessionModeChanged || e.SessionID != "a" {
		t.Errorf("live event = %+v", e)
	}
	// Counted after the flush, so the client may see the event first.
	eventually(t, "3 events counted as delivered", func() bool {
		return metric(t, env, `planserver_events_delivered_total{transport="sse"}`) == 3
	})

	// A filtered stream: events of other sessions are skipped, and the next
	// heartbeat hands over the cursor (an id without data), so a reconnect
	// resumes after them instead of re-reading them.
	f := openStream(t, env, "?session_id=a&after=3")
	createSession(t, env, map[string]any{"id": "c"}) // 4, skipped
	var moved string
	for moved == "" {
		b, err := f.block()
		if err != nil {
			t.Fatal(err)
		}
		if b.Data != "" {
			t.Fatalf("filtered stream delivered %+v", b)
		}
		moved = b.ID
	}
	if moved != "4" {
		t.Errorf("heartbeat id = %q, want 4", moved)
	}
	f.close()
	g := openStream(t, env, "", "Last-Event-ID", moved)
	env.Call("PATCH", "/v1/sessions/a", `{"title":"x"}`, "Content-Type", "application/merge-patch+json") // 5
	if e := mustEvent(t, g); e.Seq != 5 {
		t.Errorf("after reconnect: %+v", e)
	}
}

// TestEventsGapFreeAcrossReconnects runs 4 writers of 250 changes each
// through the API while one subscriber drops its stream after a random
// number of events and reconnects with Last-Event-ID (or ?after=): it must
// receive every event of the log exactly once, in order.
func TestEventsGapFreeAcrossReconnects(t *testing.T) {
	env := apitest.New(t, func(c *app.Config) { c.SSEHeartbeat = 20 * time.Millisecond })
	const writers, changes = 4, 250
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < changes; i++ {
				id := fmt.Sprintf("w%d-%d", w, i/2)
				if i%2 == 0 {
					if st := env.Call("POST", "/v1/sessions", map[string]any{"id": id}).Status; st != 201 {
						t.Errorf("create %s: %d", id, st)
					}
					continue
				}
				if st := env.Call("PATCH", "/v1/sessions/"+id+"/mode", map[string]any{"mode": "plan"}).Status; st != 200 {
					t.Errorf("mode of %s: %d", id, st)
				}
			}
		}()
	}
	writing := make(chan struct{})
	go func() { wg.Wait(); close(writing) }()
	finished := func() bool {
		select {
		case <-writing:
			return true
		default:
			return false
		}
	}

	rng := rand.New(rand.NewPCG(6, 6))
	var got []events.Event
	last := int64(0)
	reconnects := 0
	for done := false; !done; reconnects++ {
		var s *stream
		switch {
		case reconnects == 0:
			s = openStream(t, env, "") // no cursor: from the start of the log
		case rng.IntN(2) == 0:
			s = openStream(t, env, "", "Last-Event-ID", strconv.FormatInt(last, 10))
		default:
			// As an EventSource does: the original ?after= plus the header.
			s = openStream(t, env, "?after=0", "Last-Event-ID", strconv.FormatInt(last, 10))
		}
		for n := 1 + rng.IntN(40); n > 0; {
			b, err := s.block()
			if err != nil {
				t.Fatal(err)
			}
			if b.Data == "" {
				if finished() && len(got) == countRows(t, env, "events", "") {
					done = true
					break
				}
				continue
			}
			e, err := decodeBlock(b)
			if err != nil {
				t.Fatal(err)
			}
			if e.Seq <= last {
				t.Fatalf("event %d after %d: duplicate or out of order", e.Seq, last)
			}
			got = append(got, e)
			last = e.Seq
			n--
		}
		s.close()
	}
	want := eventLog(t, env, "")
	if len(want) != writers*changes || !sameRows(rowsOf(got), want) {
		t.Fatalf("received %d events, log has %d; equal: %v", len(got), len(want), sameRows(rowsOf(got), want))
	}
	t.Logf("%d events over %d connections", len(got), reconnects)
}

func TestEventsSurviveRestart(t *testing.T) {
	env := apitest.New(t)
	createSession(t, env, map[string]any{"id": "a"})
	createSession(t, env, map[string]any{"id": "a.b", "parent_id": "a"})
	setMode(t, env, "a", "plan", 200) // 3, 4
	s := openStream(t, env, "?after=0")
	mustEvent(t, s)
	last := mustEvent(t, s).Seq
	s.close()
	path := env.DBPath
	env.Close()

	env = apitest.Open(t, path)
	createSession(t, env, map[string]any{"id": "c"}) // 5
	r := openStream(t, env, "", "Last-Event-ID", strconv.FormatInt(last, 10))
	var got []events.Event
	for len(got) < 3 {
		got = append(got, mustEvent(t, r))
	}
	createSession(t, env, map[string]any{"id": "d"}) // 6, live
	got = append(got, mustEvent(t, r))
	if want := eventLog(t, env, "seq > ?", last); !sameRows(rowsOf(got), want) || len(want) != 4 {
		t.Errorf("after restart: %+v, want %+v", rowsOf(got), want)
	}
	if p := getEvents(t, env, "?after=0"); len(p.Events) != 6 || p.NextAfter != 6 {
		t.Errorf("JSON after restart: %d events, next %d", len(p.Events), p.NextAfter)
	}
}

// TestEventsSubtreeFilter: a subscription to a session sees its own and
// its descendants' events, including their deletion, and nothing else.
func TestEventsSubtreeFilter(t *testing.T) {
	env := apitest.New(t)
	createSession(t, env, map[string]any{"id": "root"})
	createSession(t, env, map[string]any{"id": "root.a", "parent_id": "root"})
	s := openStream(t, env, "?session_id=root.a&after=0")
	j := openStream(t, env, "?session_id=root.a&types=session.deleted,session.mode_changed")

	createSession(t, env, map[string]any{"id": "root.a.x", "parent_id": "root.a"})
	createSession(t, env, map[string]any{"id": "root.a.x.y", "parent_id": "root.a.x"})
	createSession(t, env, map[string]any{"id": "root.b", "parent_id": "root"})
	createSession(t, env, map[string]any{"id": "other"})
	createSession(t, env, map[string]any{"id": "root.ab"}) // a prefix of root.a's id, not a descendant
	setMode(t, env, "root", "plan", 200)                   // root's event is not in the subtree; the propagations are
	env.Call("PATCH", "/v1/sessions/root.a.x", `{"title":"x"}`, "Content-Type", "application/merge-patch+json")
	env.Call("PATCH", "/v1/sessions/other", `{"title":"o"}`, "Content-Type", "application/merge-patch+json")
	if st := env.Call("DELETE", "/v1/sessions/root.a", nil).Status; st != 204 {
		t.Fatal(st)
	}
	createSession(t, env, map[string]any{"id": "last"})

	want := eventLog(t, env, "session_id IN (?, ?, ?)", "root.a", "root.a.x", "root.a.x.y")
	// root.a's creation and its descendants' (3), their inherited mode
	// changes (3), one title change, and the three deletions.
	if len(want) != 10 {
		t.Fatalf("subtree log has %d events, want 10: %+v", len(want), want)
	}
	var got []events.Event
	for len(got) < len(want) {
		got = append(got, mustEvent(t, s))
	}
	if !sameRows(rowsOf(got), want) {
		t.Errorf("subtree stream: %+v\nwant %+v", rowsOf(got), want)
	}
	// The filter names a session, not an id: a new session reusing the
	// id is another session. The stream that followed the deleted root.a
	// gets none of its namesake's events ("last" and the rest are skipped
	// too); a stream opened now follows the new one.
	created := createSession(t, env, map[string]any{"id": "root.a", "parent_id": "root"})
	all := eventLog(t, env, "")
	fresh := openStream(t, env, "?session_id=root.a&after=0")
	if e := mustEvent(t, fresh); e.SessionID != created.ID || e.Type != events.SessionCreated || e.Seq != all[len(all)-1].Seq {
		t.Errorf("first event of the new root.a = %+v", e)
	}
	noEventWithin(t, s, 300*time.Millisecond)

	// Types and subtree together, from no cursor.
	var typed []logRow
	for _, r := range want {
		if r.Type == events.SessionDeleted || r.Type == events.SessionModeChanged {
			typed = append(typed, r)
		}
	}
	var gotTyped []events.Event
	for len(gotTyped) < len(typed) {
		gotTyped = append(gotTyped, mustEvent(t, j))
	}
	if !sameRows(rowsOf(gotTyped), typed) {
		t.Errorf("subtree and types: %+v, want %+v", rowsOf(gotTyped), typed)
	}

	// The deleted subtree's history stays readable through the filter.
	p := getEvents(t, env, "?session_id=root.a.x&limit=1000")
	for _, e := range p.Events {
		if e.SessionID != "root.a.x" && e.SessionID != "root.a.x.y" {
			t.Errorf("root.a.x subtree has %+v", e)
		}
	}
	if len(p.Events) != len(eventLog(t, env, "session_id IN (?, ?)", "root.a.x", "root.a.x.y")) {
		t.Errorf("root.a.x subtree: %d events", len(p.Events))
	}
}

// TestEventsManyIdleSubscribers connects 200 streams, delivers one change
// to all of them, and checks that disconnecting frees every goroutine.
// What idle streams cost is measured by make bench (1,000 of them, on the
// server process alone: docs/benchmarks.md), not here.
func TestEventsManyIdleSubscribers(t *testing.T) {
	env := apitest.New(t, func(c *app.Config) { c.SSEHeartbeat = time.Hour })
	createSession(t, env, map[string]any{"id": "seed"})
	head := headOf(t, env)
	const n = 200

	transport := &http.Transport{MaxIdleConnsPerHost: -1, DisableKeepAlives: true}
	client := &http.Client{Transport: transport}
	g0 := runtime.NumGoroutine()

	streams := make([]*stream, n)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		if first == nil {
			first = err
		}
	}
	next := make(chan int)
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				s, err := dialStream(client, env.Server.URL, "?after="+strconv.FormatInt(head, 10))
				if err == nil && s.resp.StatusCode != 200 {
					err = fmt.Errorf("status %d", s.resp.StatusCode)
				}
				if err != nil {
					fail(fmt.Errorf("stream %d: %w", i, err))
					continue
				}
				streams[i] = s
			}
		}()
	}
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	defer func() {
		for _, s := range streams {
			if s != nil {
				s.close()
			}
		}
	}()
	if first != nil {
		t.Fatal(first)
	}
	if got := metric(t, env, "planserver_event_subscribers"); got != n {
		t.Fatalf("subscribers gauge = %v, want %d", got, n)
	}

	// One change reaches every subscriber.
	createSession(t, env, map[string]any{"id": "hello"})
	for i, s := range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e, err := s.event()
			if err == nil && (e.Seq != head+1 || e.SessionID != "hello") {
				err = fmt.Errorf("got %+v", e)
			}
			if err != nil {
				fail(fmt.Errorf("stream %d: %w", i, err))
			}
		}()
	}
	wg.Wait()
	if first != nil {
		t.Fatal(first)
	}

	for _, s := range streams {
		s.close()
	}
	streams = nil // so that "after" measures what the server kept, not the test
	transport.CloseIdleConnections()
	eventually(t, "every stream to end", func() bool {
		return runtime.NumGoroutine() <= g0 && metric(t, env, "planserver_event_subscribers") == 0
	})
}

func TestEventsCursorExpired(t *testing.T) {
	env := apitest.New(t, func(c *app.Config) {
		c.EventRetention = events.Retention{MaxAge: 7 * 24 * time.Hour, MaxRows: 1000}
	})
	for i := 0; i < 3; i++ {
		createSession(t, env, map[string]any{"id": fmt.Sprintf("s%d", i)})
	}
	if n, err := env.App.PruneEvents(context.Background(), time.Now()); err != nil || n != 0 {
		t.Fatalf("prune of fresh events: %d, %v", n, err)
	}
	live := openStream(t, env, "?after=1")
	mustEvent(t, live)
	mustEvent(t, live)
	n, err := env.App.PruneEvents(context.Background(), time.Now().Add(8*24*time.Hour))
	if err != nil || n != 3 {
		t.Fatalf("pruned %d, %v; want 3", n, err)
	}
	if got := metric(t, env, "planserver_events_pruned_total"); got != 3 {
		t.Errorf("pruned metric = %v", got)
	}
	for _, q := range []string{"?after=0", "?after=2"} {
		resp := env.Call("GET", "/v1/events"+q, nil)
		if resp.Status != http.StatusGone || resp.Code() != "cursor_expired" {
			t.Errorf("%s: %d %s", q, resp.Status, resp.Body)
		}
		resp = env.Call("GET", "/v1/events"+q, nil, "Accept", "text/event-stream")
		if resp.Status != http.StatusGone || resp.Code() != "cursor_expired" {
			t.Errorf("stream %s: %d %s", q, resp.Status, resp.Body)
		}
	}
	// Pruned through 3: a client at 3 missed nothing; the head stays 3.
	if p := getEvents(t, env, "?after=3"); len(p.Events) != 0 || p.NextAfter != 3 {
		t.Errorf("after=3: %+v", p)
	}
	if head := headOf(t, env); head != 3 {
		t.Errorf("X-Event-Seq after pruning = %d, want 3", head)
	}
	// A stream that was up to date when the log was pruned goes on.
	createSession(t, env, map[string]any{"id": "s3"})
	if e := mustEvent(t, live); e.Seq != 4 {
		t.Errorf("live stream after the prune got %+v", e)
	}
}

// TestStuckSubscriberIsDropped: a client that stops reading is cut off
// after the write timeout, while writers and other subscribers go on.
func TestStuckSubscriberIsDropped(t *testing.T) {
	env := apitest.New(t, func(c *app.Config) {
		c.SSEWriteTimeout = 200 * time.Millisecond
		c.SSEHeartbeat = time.Hour
	})
	conn, err := net.Dial("tcp", env.Server.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.(*net.TCPConn).SetReadBuffer(4096)
	if _, err := fmt.Fprintf(conn, "GET /v1/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	healthy := openStream(t, env, "")
	eventually(t, "both subscribers", func() bool { return metric(t, env, "planserver_event_subscribers") == 2 })

	// Commit ~1 MB of events at a time, appended the way every store
	// does, until the socket buffers towards the client that reads
	// nothing are full and its write deadline passes. Commits never wait
	// for it, and the healthy subscriber gets every event meanwhile.
	big := map[string]string{"blob": strings.Repeat("x", 50_000)}
	for batch := 0; metric(t, env, "planserver_event_subscribers") == 2; batch++ {
		if batch == 100 {
			t.Fatal("the stuck subscriber was never dropped")
		}
		err := env.DB.Write(context.Background(), func(tx *db.Tx) error {
			for i := 0; i < 20; i++ {
				if _, err := events.Append(tx, events.New{Type: events.PlanUpdated, Plan: "big", Revision: 1, Data: big}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 20; i++ {
			if e := mustEvent(t, healthy); e.Plan != "big" {
				t.Fatalf("healthy subscriber got %+v", e)
			}
		}
	}
	createSession(t, env, map[string]any{"id": "after"})
	if e := mustEvent(t, healthy); e.SessionID != "after" {
		t.Errorf("healthy subscriber after the drop got %+v", e)
	}
}

// TestEventStreamOutlivesServerTimeouts runs the API behind an http.Server
// whose ReadTimeout and WriteTimeout are short: a stream must keep going
// long past both.
func TestEventStreamOutlivesServerTimeouts(t *testing.T) {
	env := apitest.New(t, func(c *app.Config) { c.SSEHeartbeat = 20 * time.Millisecond })
	ts := httptest.NewUnstartedServer(env.API)
	ts.Config.ReadTimeout = 100 * time.Millisecond
	ts.Config.WriteTimeout = 100 * time.Millisecond
	ts.Start()
	defer ts.Close()
	s, err := dialStream(ts.Client(), ts.URL, "?after=0")
	if err != nil || s.resp.StatusCode != 200 {
		t.Fatalf("open: %v", err)
	}
	defer s.close()
	start := time.Now()
	for time.Since(start) < 5*ts.Config.WriteTimeout {
		if _, err := s.block(); err != nil {
			t.Fatalf("stream ended %v after it began: %v", time.Since(start), err)
		}
	}
	createSession(t, env, map[string]any{"id": "late"})
	if e := mustEvent(t, s); e.SessionID != "late" {
		t.Errorf("late event = %+v", e)
	}
}

func TestShutdownEndsStreams(t *testing.T) {
	env := apitest.New(t)
	s := openStream(t, env, "")
	env.API.Shutdown()
	if _, err := s.block(); !errors.Is(err, io.EOF) {
		t.Errorf("stream after Shutdown: %v, want a clean end (EOF)", err)
	}
	env.API.Shutdown() // twice is fine
}

// TestEventSeqHeaderLetsAClientListThenWatch: snapshots carry the head
// read before them, so watching from it misses nothing.
func TestEventSeqHeaderLetsAClientListThenWatch(t *testing.T) {
	env := apitest.New(t)
	if head := headOf(t, env); head != 0 {
		t.Errorf("empty log head = %d", head)
	}
	createSession(t, env, map[string]any{"id": "a"})
	createSession(t, env, map[string]any{"id": "b"})
	list := env.Call("GET", "/v1/sessions", nil)
	get := env.Call("GET", "/v1/sessions/a", nil)
	notMod := env.Call("GET", "/v1/sessions/a", nil, "If-None-Match", `"1"`)
	for name, resp := range map[string]*apitest.Response{"list": list, "get": get, "304": notMod} {
		if resp.Header.Get("X-Event-Seq") != "2" {
			t.Errorf("%s: X-Event-Seq %q, want 2", name, resp.Header.Get("X-Event-Seq"))
		}
	}
	if env.Call("GET", "/healthz", nil).Header.Get("X-Event-Seq") != "" {
		t.Error("X-Event-Seq outside /v1")
	}
	setMode(t, env, "b", "plan", 200)
	s := openStream(t, env, "?after="+list.Header.Get("X-Event-Seq"))
	if e := mustEvent(t, s); e.Seq != 3 || e.SessionID != "b" {
		t.Errorf("first event after the list = %+v", e)
	}
}

// TestEventStreamHEADDoesNotHang: HEAD is routed to GET handlers, and a
// stream must not start for it. (HEAD is not in the contract, so the
// request is made directly.)
func TestEventStreamHEADDoesNotHang(t *testing.T) {
	env := apitest.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), streamGuard)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "HEAD", env.Server.URL+"/v1/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := env.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Errorf("HEAD: %d %v", resp.StatusCode, resp.Header)
	}
	eventually(t, "the HEAD handler to return", func() bool {
		return metric(t, env, "planserver_event_subscribers") == 0
	})
}

// TestEventStreamCatchesUpAcrossBatches: a backlog longer than one read of
// the stream (500 events) arrives whole and in order, then live events.
func TestEventStreamCatchesUpAcrossBatches(t *testing.T) {
	env := apitest.New(t)
	const backlog = 1_100
	err := env.DB.Write(context.Background(), func(tx *db.Tx) error {
		for i := 0; i < backlog; i++ {
			if _, err := events.Append(tx, events.New{Type: events.StepUpdated, Plan: "p", Revision: int64(i + 1)}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	s := openStream(t, env, "?plan=p")
	for want := int64(1); want <= backlog; want++ {
		if e := mustEvent(t, s); e.Seq != want {
			t.Fatalf("event %d, want %d", e.Seq, want)
		}
	}
	createSession(t, env, map[string]any{"id": "live"})
	err = env.DB.Write(context.Background(), func(tx *db.Tx) error {
		_, err := events.Append(tx, events.New{Type: events.PlanDeleted, Plan: "p"})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if e := mustEvent(t, s); e.Seq != backlog+2 || e.Type != events.PlanDeleted {
		t.Errorf("live event after the backlog: %+v", e)
	}
}

// TestEventsOfDeletedSessions: ?session_id= of a session that is gone reads
// the history of the last session of that id deleted (its subtree's path,
// taken from its session.deleted event), and a live session of the id wins.
func TestEventsOfDeletedSessions(t *testing.T) {
	env := apitest.New(t)
	del := func(id string) {
		t.Helper()
		if r := env.Call("DELETE", "/v1/sessions/"+id, nil); r.Status != 204 {
			t.Fatalf("delete %s: %d %s", id, r.Status, r.Body)
		}
	}
	ofID := func(id string) string {
		t.Helper()
		var types []string
		for _, e := range getEvents(t, env, "?session_id="+id).Events {
			types = append(types, e.SessionID+":"+e.Type)
		}
		return strings.Join(types, " ")
	}
	createSession(t, env, map[string]any{"id": "s"})
	createSession(t, env, map[string]any{"id": "c", "parent_id": "s"})
	createSession(t, env, map[string]any{"id": "other"})
	setMode(t, env, "c", "plan", 200)
	del("s") // and c with it
	first := "s:session.created c:session.created c:session.mode_changed c:session.deleted s:session.deleted"
	if got := ofID("s"); got != first {
		t.Errorf("the deleted s: %s, want %s", got, first)
	}
	if got, want := ofID("c"), "c:session.created c:session.mode_changed c:session.deleted"; got != want {
		t.Errorf("the child deleted with s: %s, want %s", got, want)
	}
	// s again, alone, deleted again: its id now names the second one.
	createSession(t, env, map[string]any{"id": "s"})
	setMode(t, env, "s", "plan", 200)
	del("s")
	if got, want := ofID("s"), "s:session.created s:session.mode_changed s:session.deleted"; got != want {
		t.Errorf("the second s, deleted: %s, want %s", got, want)
	}
	createSession(t, env, map[string]any{"id": "s"})
	if got, want := ofID("s"), "s:session.created"; got != want {
		t.Errorf("a live s: %s, want %s", got, want)
	}
	if got := ofID("never"); got != "" {
		t.Errorf("an id never used: %s", got)
	}
}
