package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/planserver/planserver/api"
)

// teamWorkers is the concurrency of the team reads: latency, not
// saturation, is what they measure, so a few clients at once, as a team's
// consoles and workers are.
const teamWorkers = 4

// team seeds both databases, checks them through the API and measures the
// reads on both, interleaved; with -postgres, the streams across replicas.
func (b *bench) team(ctx context.Context) error {
	var dbs [2]*seeded
	big := teamBig
	if f := b.o.teamScale; f < 1 {
		big = teamScale{label: "big", sessions: int(float64(big.sessions) * f), plans: int(float64(big.plans) * f),
			events: int(float64(big.events) * f), steps: int(float64(big.steps)*f) / 10 * 10, pending: max(teamSmall.pending, int(float64(big.pending)*f))}
	}
	for k, sc := range []teamScale{teamSmall, big} {
		b.note("seeding the %s team database (%d sessions, %d plans, %d events, %d steps)", sc.label, sc.sessions, sc.plans, sc.events, sc.steps+readyPlanSteps)
		s, err := seedTeam(ctx, b.o.bin, filepath.Join(b.dir, "team-"+sc.label+".db"), sc)
		if err != nil {
			return fmt.Errorf("seed the %s database: %w", sc.label, err)
		}
		dbs[k] = s
		b.note("  seeded in %s", s.took.Round(time.Millisecond))
		b.notes = append(b.notes, fmt.Sprintf("team %s database: %d sessions (%d awaiting review), %d plans, %d events, %d steps (%d in %s, %d ready); seeded in %s",
			sc.label, sc.sessions, s.pending, sc.plans, s.head, sc.steps+readyPlanSteps, readyPlanSteps, readyPlan, s.ready, s.took.Round(100*time.Millisecond)))
	}
	var srvs [2]*process
	var reads [2][]side
	for k, s := range dbs {
		srv, err := startServer(b.o, s.db, "normal")
		if err != nil {
			return err
		}
		defer srv.stop()
		srv.label = "team " + s.scale.label
		srvs[k] = srv
		start := time.Now()
		if err := b.checkTeam(srv.base, s); err != nil {
			return fmt.Errorf("the %s database does not serve what was seeded: %w", s.scale.label, err)
		}
		b.note("  the %s database serves what was seeded (checked in %s)", s.scale.label, time.Since(start).Round(time.Millisecond))
		if reads[k], err = b.teamReads(srv, s); err != nil {
			return err
		}
	}
	first := len(b.rows)
	for i := range reads[0] {
		b.compare(ctx, reads[1][i], reads[0][i])
	}
	// The agent feeds, on the same databases served with --auth token.
	var feeds [2][]side
	for k, s := range dbs {
		srvs[k].stop()
		srv, sides, err := b.agentFeeds(s)
		if err != nil {
			return fmt.Errorf("the agent feed of the %s database: %w", s.scale.label, err)
		}
		defer srv.stop()
		srvs[k], feeds[k] = srv, sides
	}
	for i := range feeds[0] {
		b.compare(ctx, feeds[1][i], feeds[0][i])
	}
	b.notes = append(b.notes, fmt.Sprintf("team reads, %d clients, big database against small, p99 ratio (goal ≤ 2):", teamWorkers))
	for _, r := range b.rows[first:] {
		big, small := figures(r.runs, p99Of).median, figures(r.base, p99Of).median
		b.notes = append(b.notes, fmt.Sprintf("  %-62s p50 %8s / %8s  p99 %8s / %8s  ratio %5.2f",
			r.name, fmtDur(time.Duration(figures(r.runs, p50Of).median)), fmtDur(time.Duration(figures(r.base, p50Of).median)),
			fmtDur(time.Duration(big)), fmtDur(time.Duration(small)), big/max(small, 1)))
	}
	if b.o.postgres != "" {
		stopAll(srvs[:])
		if err := b.teamStreams(ctx); err != nil {
			return fmt.Errorf("event streams across replicas: %w", err)
		}
	}
	return nil
}

// getJSON reads a 200 answer into v and returns the X-Event-Seq header.
func (b *bench) getJSON(u string, v any) (string, error) {
	h, body, err := call(b.c, "GET", u, nil, map[string]string{"Accept": "application/json"}, 200)
	if err != nil {
		return "", err
	}
	if err := json.Unmarshal(body, v); err != nil {
		return "", fmt.Errorf("GET %s: %w", u, err)
	}
	return h.Get("X-Event-Seq"), nil
}

// checkTeam compares what the server answers with what was seeded, then
// makes a few writes through the API on top of the seeded rows.
func (b *bench) checkTeam(base string, s *seeded) error {
	var got api.Session
	if _, err := b.getJSON(base+"/v1/sessions/"+s.sample.ID, &got); err != nil {
		return err
	}
	if !reflect.DeepEqual(got, s.sample) {
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(s.sample)
		return fmt.Errorf("GET session %s:\n got %s\nwant %s", s.sample.ID, g, w)
	}
	// The inbox, every page of it.
	pending, err := b.countPages(base+"/v1/sessions?review_state=pending&limit=100", "sessions", func(raw json.RawMessage) error {
		var x api.Session
		if err := json.Unmarshal(raw, &x); err != nil {
			return err
		}
		if x.Review.State != "pending" || x.Review.PlanRevision == nil || *x.Review.PlanRevision != 1 || x.EffectiveMode != "plan" {
			return fmt.Errorf("inbox holds session %s with review %+v, effective mode %s", x.ID, x.Review, x.EffectiveMode)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if pending != s.pending {
		return fmt.Errorf("the inbox lists %d sessions, %d were seeded pending", pending, s.pending)
	}
	all, err := b.countPages(base+"/v1/sessions?limit=1000", "sessions", nil)
	if err != nil {
		return err
	}
	if all != s.scale.sessions-1 {
		return fmt.Errorf("the session list has %d sessions, %d were seeded (and one deleted)", all, s.scale.sessions-1)
	}
	children, err := b.countPages(base+"/v1/sessions?parent_id=s000001&limit=1000", "sessions", nil)
	if err != nil {
		return err
	}
	if children != s.children {
		return fmt.Errorf("s000001 has %d children listed, %d seeded", children, s.children)
	}
	nplans, err := b.countPages(base+"/v1/plans?limit=1000", "plans", nil)
	if err != nil {
		return err
	}
	if nplans != s.scale.plans {
		return fmt.Errorf("the plan list has %d plans, %d were seeded", nplans, s.scale.plans)
	}
	// The log: its head, its last page read back, and a subtree's events.
	var page api.EventPage
	if _, err := b.getJSON(fmt.Sprintf("%s/v1/events?after=%d&limit=1000", base, s.head-1000), &page); err != nil {
		return err
	}
	// A list's X-Event-Seq is the log's head too.
	head, err := b.getJSON(base+"/v1/sessions?limit=1", &map[string]any{})
	if err != nil {
		return err
	}
	if head != strconv.FormatInt(s.head, 10) || len(page.Events) != 1000 || page.NextAfter != s.head {
		return fmt.Errorf("the log's head is %q with %d events after %d (next %d), %d events were seeded", head, len(page.Events), s.head-1000, page.NextAfter, s.head)
	}
	for i, e := range page.Events {
		if e.Seq != s.head-1000+int64(i)+1 || !json.Valid(e.Data) || e.Type == "" {
			return fmt.Errorf("event %d of the last page: seq %d, type %q", i, e.Seq, e.Type)
		}
	}
	subtree := 0
	for after := int64(0); ; {
		var p api.EventPage
		if _, err := b.getJSON(fmt.Sprintf("%s/v1/events?session_id=s000001&limit=1000&after=%d", base, after), &p); err != nil {
			return err
		}
		subtree += len(p.Events)
		if len(p.Events) < 1000 {
			break
		}
		after = p.NextAfter
	}
	if subtree != s.subtreeEvents {
		return fmt.Errorf("the events of s000001 and its descendants: %d served, %d seeded", subtree, s.subtreeEvents)
	}
	var steps api.StepList
	if _, err := b.getJSON(base+"/v1/plans/"+readyPlan+"/steps?ready=true", &steps); err != nil {
		return err
	}
	if len(steps.Steps) != s.ready || steps.Revision != 1 {
		return fmt.Errorf("%s has %d ready steps at revision %d, %d seeded ready at revision 1", readyPlan, len(steps.Steps), steps.Revision, s.ready)
	}

	// Writes on top of the seed: a sub-session (its pk continues the
	// seeded ones, its ancestry is its parent's path), an approval of a
	// seeded review (If-Match: the seeded plan revision), a claim of a
	// seeded ready step, each with its event right after the seeded head.
	if err := expect(b.c, "POST", base+"/v1/sessions", strings.NewReader(`{"id":"team-check","parent_id":"`+s.sample.ID+`"}`), jsonHeader, 201); err != nil {
		return err
	}
	var child api.Session
	if _, err := b.getJSON(base+"/v1/sessions/team-check", &child); err != nil {
		return err
	}
	if child.EffectiveMode != s.sample.EffectiveMode || child.Revision != 1 {
		return fmt.Errorf("a new child of %s: effective mode %s revision %d, want %s revision 1", s.sample.ID, child.EffectiveMode, child.Revision, s.sample.EffectiveMode)
	}
	if err := expect(b.c, "POST", base+"/v1/sessions/"+s.pendingID+"/plan/approve", strings.NewReader(`{}`),
		map[string]string{"Content-Type": "application/json", "If-Match": `"1"`}, 200); err != nil {
		return err
	}
	if err := expect(b.c, "POST", base+"/v1/plans/"+readyPlan+"/steps/"+s.readySample+"/claim", strings.NewReader(`{"worker":"team-check"}`),
		map[string]string{"Content-Type": "application/json", "If-Match": `"1"`}, 200); err != nil {
		return err
	}
	var tail api.EventPage
	if _, err := b.getJSON(fmt.Sprintf("%s/v1/events?after=%d", base, s.head), &tail); err != nil {
		return err
	}
	var types []string
	for i, e := range tail.Events {
		if e.Seq != s.head+int64(i)+1 {
			return fmt.Errorf("the writes after the seed appended seq %d as event %d after %d", e.Seq, i+1, s.head)
		}
		types = append(types, e.Type)
	}
	if len(types) < 3 || types[0] != api.EventSessionCreated || types[len(types)-2] != api.EventSessionReviewApproved ||
		types[len(types)-1] != api.EventStepClaimed {
		return fmt.Errorf("the writes after the seed appended %v", types)
	}
	s.head = tail.NextAfter
	// The approval took one session out of the inbox.
	s.pending--

	// A deleted session's history: ?session_id= of a session that is
	// gone reads the events the log holds of it, its deletion last.
	if err := expect(b.c, "GET", base+"/v1/sessions/"+s.deleted, nil, nil, 404); err != nil {
		return err
	}
	var history api.EventPage
	if _, err := b.getJSON(base+"/v1/events?limit=1000&session_id="+s.deleted, &history); err != nil {
		return err
	}
	if len(history.Events) != s.deletedEvents || history.Events[len(history.Events)-1].Type != api.EventSessionDeleted {
		return fmt.Errorf("the history of deleted session %s: %d events, %d seeded", s.deleted, len(history.Events), s.deletedEvents)
	}
	for _, e := range history.Events {
		if e.SessionID != s.deleted {
			return fmt.Errorf("the history of deleted session %s holds event %d of %q", s.deleted, e.Seq, e.SessionID)
		}
	}
	return nil
}

// teamYoung is the session checkTeam creates, after the seeded log: the
// young session an agent token's feed is scoped to.
const teamYoung = "team-check"

// agentFeeds restarts the team servers with --auth token and returns the
// agent feed reads of one database: GET /v1/events with a token scoped to
// the young session (its subtree and the events of no session), which
// walked past every other session's events before it found a page. The
// server must be stopped (token create writes the database, which a
// running server holds).
func (b *bench) agentFeeds(s *seeded) (*process, []side, error) {
	out, err := exec.Command(b.o.bin, "token", "create", "--role", "agent", "--session", teamYoung, "--name", "team-agent", "--db", s.db).Output()
	if err != nil {
		return nil, nil, fmt.Errorf("planserver token create --role agent: %w", err)
	}
	bearer := map[string]string{"Accept": "application/json", "Authorization": "Bearer " + strings.TrimSpace(string(out))}
	srv, err := startServer(b.o, s.db, "normal", "--auth", "token", "--rate-limit", "0")
	if err != nil {
		return nil, nil, err
	}
	srv.label = "team " + s.scale.label + " (--auth token)"
	// The feed holds the young session's events and the events of no
	// session, and nothing else.
	var page api.EventPage
	if _, body, err := call(b.c, "GET", srv.base+"/v1/events?limit=1000", nil, bearer, 200); err != nil {
		srv.stop()
		return nil, nil, err
	} else if err := json.Unmarshal(body, &page); err != nil {
		srv.stop()
		return nil, nil, err
	}
	if len(page.Events) < 100 {
		srv.stop()
		return nil, nil, fmt.Errorf("the agent feed's first page holds %d events, want at least 100", len(page.Events))
	}
	for _, e := range page.Events {
		if e.SessionID != "" && e.SessionID != teamYoung {
			srv.stop()
			return nil, nil, fmt.Errorf("the agent feed of %s holds event %d of session %s", teamYoung, e.Seq, e.SessionID)
		}
	}
	get := func(name, path string) side {
		return side{
			name: name + " (" + s.scale.label + ")", proc: srv, workers: teamWorkers,
			op: func(ctx context.Context, w, i int) error {
				return expect(b.c, "GET", srv.base+path, nil, bearer, 200)
			},
		}
	}
	return srv, []side{
		get("agent feed: GET /v1/events?limit=100, first page", "/v1/events?limit=100"),
		get("agent feed: GET /v1/events?limit=100, after the middle", fmt.Sprintf("/v1/events?limit=100&after=%d", s.head/2)),
	}, nil
}

// countPages follows a list's page tokens to the end, checking each item
// with check (when not nil), and returns how many items it holds.
func (b *bench) countPages(first, key string, check func(json.RawMessage) error) (int, error) {
	n, token := 0, ""
	for {
		u := first
		if token != "" {
			u += "&page_token=" + url.QueryEscape(token)
		}
		var page map[string]json.RawMessage
		if _, err := b.getJSON(u, &page); err != nil {
			return 0, err
		}
		var items []json.RawMessage
		if err := json.Unmarshal(page[key], &items); err != nil {
			return 0, fmt.Errorf("GET %s: %s: %w", u, key, err)
		}
		for _, it := range items {
			if check != nil {
				if err := check(it); err != nil {
					return 0, err
				}
			}
		}
		n += len(items)
		token = ""
		if raw, ok := page["next_page_token"]; ok {
			_ = json.Unmarshal(raw, &token)
		}
		if token == "" {
			return n, nil
		}
	}
}

// teamReads are the reads measured on one database.
func (b *bench) teamReads(srv *process, s *seeded) ([]side, error) {
	// A deep page of the session list: the token of the page 90% of the
	// way through, reached page by page as a client would.
	deep, token := int(float64(s.scale.sessions)*0.9), ""
	for seen := 0; seen < deep; {
		u := srv.base + "/v1/sessions?limit=100"
		if token != "" {
			u += "&page_token=" + url.QueryEscape(token)
		}
		var page struct {
			Sessions []json.RawMessage `json:"sessions"`
			Next     string            `json:"next_page_token"`
		}
		if _, err := b.getJSON(u, &page); err != nil {
			return nil, err
		}
		seen += len(page.Sessions)
		if token = page.Next; token == "" {
			return nil, fmt.Errorf("the session list ended after %d sessions", seen)
		}
	}
	accept := map[string]string{"Accept": "application/json"}
	get := func(name, path string) side {
		return side{
			name: name + " (" + s.scale.label + ")", proc: srv, workers: teamWorkers,
			op: func(ctx context.Context, w, i int) error {
				return expect(b.c, "GET", srv.base+path, nil, accept, 200)
			},
		}
	}
	return []side{
		get("inbox: GET /v1/sessions?review_state=pending&limit=100", "/v1/sessions?review_state=pending&limit=100"),
		get("GET /v1/sessions?limit=100, first page", "/v1/sessions?limit=100"),
		get("GET /v1/sessions?limit=100, page at 90%", "/v1/sessions?limit=100&page_token="+url.QueryEscape(token)),
		get("GET /v1/sessions?parent_id=s000001&limit=100", "/v1/sessions?parent_id=s000001&limit=100"),
		get("GET /v1/events?limit=100, first page", "/v1/events?limit=100"),
		get("GET /v1/events?limit=100, after the middle", fmt.Sprintf("/v1/events?limit=100&after=%d", s.head/2)),
		get("GET /v1/events?session_id=s000001&limit=100", "/v1/events?session_id=s000001&limit=100"),
		get("GET /v1/events?session_id=s000001, after the middle", fmt.Sprintf("/v1/events?session_id=s000001&limit=100&after=%d", s.head/2)),
		get("GET /v1/events?session_id=(a deleted session)&limit=100", "/v1/events?limit=100&session_id="+s.deleted),
		get("GET /v1/events?session_id=(an id never used)&limit=100", "/v1/events?limit=100&session_id=never-used"),
		get("ready set: GET /v1/plans/"+readyPlan+"/steps?ready=true", "/v1/plans/"+readyPlan+"/steps?ready=true"),
	}, nil
}
