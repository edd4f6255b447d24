package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/db"
	"github.com/planserver/planserver/internal/plans"
)

// The team section (-only team; not part of the default run, it takes
// minutes): a database at the scale of a team, 100,000 sessions, 10,000
// plans, 1,000,000 events and 10,000 steps, against a small one seeded the
// same way, both served by the same binary in the same run. The reads a
// team's console and workers make all the time (the review inbox, session
// lists, event pages, a plan's ready set) must stay flat: p99 on the big
// database within 2× of the small one's. With -postgres, 2,000 event
// streams open across 3 replicas measure how long one commit takes to
// reach all of them (team_streams.go).
//
// Seeding goes around the API, or a million events would take an hour:
// planserver migrate up makes the schema, then one connection inserts the
// rows in large transactions with the server stopped, exactly as the
// stores write them (ancestry and paths by identity, gap-free event seqs,
// payloads marshalled from the API's own types, revisions that match the
// events). Then the server starts on the file and GETs check that it
// serves what was seeded, and a few writes through the API check that the
// seeded rows keep the stores' invariants, so a wrong seed fails the run
// instead of measuring something else.

// teamScale is the size of one seeded database.
type teamScale struct {
	label    string
	sessions int
	plans    int
	events   int
	// steps are spread 10 to a plan, besides the ready-set plan.
	steps int
	// pending is how many sessions wait for a review (the inbox).
	pending int
}

// readyPlanSteps is the size of the plan whose ready set is measured: the
// most steps a plan may hold (plan-schema.json), the same plan in both
// databases, since the ready set is computed from that plan alone.
const readyPlanSteps = 1000

const readyPlan = "team-ready"

// The two scales. The small inbox holds more than a page (100), so both
// inbox reads return a full page.
var (
	teamBig   = teamScale{label: "big", sessions: 100000, plans: 10000, events: 1000000, steps: 9000, pending: 2000}
	teamSmall = teamScale{label: "small", sessions: 1000, plans: 100, events: 10000, steps: 100, pending: 125}
)

// seeded is what a seed made, for the checks and the measured reads.
type seeded struct {
	scale   teamScale
	db      string
	head    int64 // the last event seq
	pending int
	// subtreeEvents is how many events name session s000001 or one of its
	// descendants.
	subtreeEvents int
	children      int // of s000001
	ready         int // ready steps of readyPlan
	// sample is a sub-session as seeded, to compare with GET.
	sample      api.Session
	pendingID   string // a session whose review is pending (plan revision 1)
	took        time.Duration
	readySample string // one ready step's id
	// deleted is a session deleted right after its creation, early in
	// the log (a leaf in the middle group: its session.created and
	// session.deleted events, its revision floor, no row), whose history
	// ?session_id= reads; deletedEvents is how many events it has.
	deleted       string
	deletedEvents int
}

// teamSession is a session as the seed builds it.
type teamSession struct {
	pk       int64
	id       string
	parent   int // index, -1 for a root
	ancestry string
	mode     string
	pending  bool
	revision int64
	title    string
	created  string
	updated  string
	planAt   string // when its session plan was written
	review   api.Review
	events   int // how many events it has
	deleted  bool
}

func (s *teamSession) path() string { return s.ancestry + strconv.FormatInt(s.pk, 10) + "/" }

// seedTeam makes the database file of one scale. bin is the planserver
// binary, whose migrate up makes the schema.
func seedTeam(ctx context.Context, bin, file string, sc teamScale) (*seeded, error) {
	start := time.Now()
	if out, err := exec.CommandContext(ctx, bin, "migrate", "up", "--db", file).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("planserver migrate up: %v: %s", err, out)
	}
	conn, err := sql.Open("sqlite", file)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	conn.SetMaxOpenConns(1)
	for _, p := range []string{`PRAGMA journal_mode = WAL`, `PRAGMA synchronous = OFF`, `PRAGMA cache_size = -262144`} {
		if _, err := conn.ExecContext(ctx, p); err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
	}
	var n int
	if err := conn.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM sessions) + (SELECT count(*) FROM events) + (SELECT count(*) FROM plans)`).Scan(&n); err != nil {
		return nil, err
	}
	if n != 0 {
		return nil, fmt.Errorf("%s is not empty after migrate up", file)
	}
	w := &teamWriter{ctx: ctx, conn: conn}
	out := &seeded{scale: sc, db: file}
	if err := w.seed(sc, out); err != nil {
		return nil, err
	}
	if _, err := conn.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		return nil, err
	}
	out.took = time.Since(start)
	return out, nil
}

// teamWriter inserts rows in transactions of batch rows each.
type teamWriter struct {
	ctx   context.Context
	conn  *sql.DB
	tx    *sql.Tx
	stmts map[string]*sql.Stmt
	rows  int
}

const teamBatch = 50000

func (w *teamWriter) exec(query string, args ...any) error {
	if w.tx == nil {
		tx, err := w.conn.BeginTx(w.ctx, nil)
		if err != nil {
			return err
		}
		w.tx, w.stmts = tx, map[string]*sql.Stmt{}
	}
	st, ok := w.stmts[query]
	if !ok {
		var err error
		if st, err = w.tx.PrepareContext(w.ctx, query); err != nil {
			return fmt.Errorf("prepare %.60s: %w", query, err)
		}
		w.stmts[query] = st
	}
	if _, err := st.ExecContext(w.ctx, args...); err != nil {
		return fmt.Errorf("%.60s: %w", query, err)
	}
	if w.rows++; w.rows%teamBatch == 0 {
		return w.commit()
	}
	return nil
}

func (w *teamWriter) commit() error {
	if w.tx == nil {
		return nil
	}
	for _, st := range w.stmts {
		st.Close()
	}
	err := w.tx.Commit()
	w.tx, w.stmts = nil, nil
	return err
}

const teamEventSQL = `INSERT INTO events (seq, type, time, actor, session_id, session_pk, session_path, plan, revision, data, actor_person)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL)`

// event appends the next event: seqs 1, 2, 3, ... with no gap, times
// 100 ms apart. data returns its payload, given the event's time (the
// time of the change it records).
func (w *teamWriter) event(seq *int64, clock *time.Time, typ string, s *teamSession, plan string, rev int64, data func(at string) any) error {
	*seq++
	*clock = clock.Add(100 * time.Millisecond)
	at := db.FormatTime(*clock)
	raw, err := json.Marshal(data(at))
	if err != nil {
		return err
	}
	var sid, path, pl sql.NullString
	var pk, r sql.NullInt64
	if s != nil {
		s.events++
		sid = sql.NullString{String: s.id, Valid: true}
		pk = sql.NullInt64{Int64: s.pk, Valid: true}
		path = sql.NullString{String: s.path(), Valid: true}
	}
	if plan != "" {
		pl = sql.NullString{String: plan, Valid: true}
	}
	if rev != 0 {
		r = sql.NullInt64{Int64: rev, Valid: true}
	}
	return w.exec(teamEventSQL, *seq, typ, at, "planbench", sid, pk, path, pl, r, string(raw))
}

// view is the session as the API shows it, its effective mode resolved
// from its chain.
func view(all []teamSession, i int) api.Session {
	s := &all[i]
	var parent *string
	if s.parent >= 0 {
		p := all[s.parent].id
		parent = &p
	}
	out := api.Session{ID: s.id, Title: s.title, Agent: "planbench", ParentID: parent, Mode: api.Mode(s.mode),
		EffectiveMode: "build", Metadata: map[string]any{}, Review: s.review, Revision: s.revision,
		CreatedAt: s.created, UpdatedAt: s.updated, Enforcement: []api.Enforcement{}}
	for j := i; j >= 0; j = all[j].parent {
		if all[j].mode == "plan" {
			src := all[j].id
			out.EffectiveMode, out.ModeSource = "plan", &src
			break
		}
	}
	return out
}

func (w *teamWriter) seed(sc teamScale, out *seeded) error {
	rng := rand.New(rand.NewPCG(27, 6))
	clock := time.Now().UTC().Add(-time.Duration(sc.events+1000) * 100 * time.Millisecond).Truncate(time.Millisecond)
	var seq int64
	all := make([]teamSession, sc.sessions)
	every := sc.sessions / sc.pending
	planEvery := max(1, sc.sessions/sc.plans)
	plansMade := 0
	inSubtree := func(i int) bool { return strings.HasPrefix(all[i].path(), "/1/") }
	// The deleted session: the last of a group of ten (no session is its
	// child) in the middle, outside s000001's subtree.
	deleted := sc.sessions/2/10*10 + 9

	// Sessions in creation order: a root every 10, each of the others the
	// child of its group's root or of an earlier session of its group;
	// one in 10 in plan mode; every every-th waits for a review of its
	// session plan. A plan is created every planEvery sessions.
	for i := range all {
		s := &all[i]
		s.pk, s.id, s.parent, s.ancestry, s.mode, s.revision = int64(i+1), fmt.Sprintf("s%06d", i+1), -1, "/", "build", 1
		s.title = "session " + strconv.Itoa(i+1)
		if i%10 != 0 {
			g := i / 10 * 10
			s.parent = g
			if rng.IntN(2) == 0 {
				s.parent = g + rng.IntN(i-g)
			}
			s.ancestry = all[s.parent].path()
		}
		s.pending = i%every == every/2 && out.pending < sc.pending
		if s.pending || rng.IntN(10) == 0 {
			s.mode = "plan"
		}
		s.review = api.Review{State: "none", Comments: []api.ReviewComment{}}
		if err := w.event(&seq, &clock, api.EventSessionCreated, s, "", 1, func(at string) any {
			s.created, s.updated = at, at
			return view(all, i)
		}); err != nil {
			return err
		}
		if i == 0 || inSubtree(i) {
			out.subtreeEvents++
		}
		if s.parent == 0 {
			out.children++
		}
		if i == deleted && s.pending {
			deleted += 10 // the next group's last: deleting this one would change the inbox
		}
		if i == deleted {
			// Deleted as the store deletes a leaf: its session.deleted
			// event, the revision it had remembered, no row.
			s.deleted = true
			if err := w.event(&seq, &clock, api.EventSessionDeleted, s, "", 0, func(string) any {
				return map[string]any{"id": s.id, "deleted_with": s.id}
			}); err != nil {
				return err
			}
			if err := w.exec(`INSERT INTO revision_floors (kind, key, revision) VALUES ('session', ?, ?)`, s.id, s.revision); err != nil {
				return err
			}
			out.deleted, out.deletedEvents = s.id, s.events
		}
		if s.pending {
			out.pending++
			if err := w.sessionPlan(&seq, &clock, all, i); err != nil {
				return err
			}
			if i == 0 || inSubtree(i) {
				out.subtreeEvents += 2
			}
			if out.pendingID == "" {
				out.pendingID = s.id
			}
		}
		if i%planEvery == 0 && plansMade < sc.plans {
			if err := w.plan(&seq, &clock, sc, plansMade, out); err != nil {
				return err
			}
			plansMade++
		}
	}
	for ; plansMade < sc.plans; plansMade++ {
		if err := w.plan(&seq, &clock, sc, plansMade, out); err != nil {
			return err
		}
	}

	// The rest of the log: agents at work. Half of it on the hottest 1%
	// of the sessions, the rest anywhere: a title change (a new revision)
	// or, in plan mode, a denied tool call (no revision).
	hot := max(1, sc.sessions/100)
	for seq < int64(sc.events) {
		i := rng.IntN(sc.sessions)
		if rng.IntN(2) == 0 {
			i = rng.IntN(hot) * 100
		}
		s := &all[i]
		if s.deleted {
			continue
		}
		v := view(all, i)
		if v.EffectiveMode == "plan" && rng.IntN(3) == 0 {
			denial := map[string]any{"tool": "Bash", "reason": "plan mode: Bash may change the workspace",
				"effective_mode": v.EffectiveMode, "mode_source": v.ModeSource}
			if err := w.event(&seq, &clock, api.EventToolCallDenied, s, "", 0, func(string) any { return denial }); err != nil {
				return err
			}
		} else {
			s.revision++
			s.title = fmt.Sprintf("session %d, edit %d", i+1, s.revision-1)
			if err := w.event(&seq, &clock, api.EventSessionUpdated, s, "", s.revision, func(at string) any {
				s.updated = at
				return view(all, i)
			}); err != nil {
				return err
			}
		}
		if i == 0 || inSubtree(i) {
			out.subtreeEvents++
		}
	}
	out.head = seq

	// The sessions as they stand after their last event.
	for i := range all {
		s := &all[i]
		if s.deleted {
			continue
		}
		var parent, planRev, rationale, requested sql.NullString
		if s.parent >= 0 {
			parent = sql.NullString{String: all[s.parent].id, Valid: true}
		}
		if s.pending {
			planRev = sql.NullString{String: "1", Valid: true}
			rationale = sql.NullString{String: *s.review.Rationale, Valid: true}
			requested = sql.NullString{String: *s.review.RequestedAt, Valid: true}
		}
		if err := w.exec(`INSERT INTO sessions (pk, ancestry, id, title, agent, parent_id, mode, harness, metadata,
			review_state, review_plan_revision, review_rationale, review_requested_at, review_comments,
			revision, created_at, updated_at, enforcement)
			VALUES (?, ?, ?, ?, 'planbench', ?, ?, 0, '{}', ?, ?, ?, ?, '[]', ?, ?, ?, '[]')`,
			s.pk, s.ancestry, s.id, s.title, parent, s.mode, s.review.State, planRev, rationale, requested,
			s.revision, s.created, s.updated); err != nil {
			return err
		}
		if s.pending {
			if err := w.exec(`INSERT INTO session_plans (session_id, content, author, revision, created_at, updated_at)
				VALUES (?, ?, 'planbench', 1, ?, ?)`, s.id, sessionPlanText(s.id), s.planAt, s.planAt); err != nil {
				return err
			}
		}
	}
	// A sub-session two levels down to compare with GET.
	for i := range all {
		if all[i].parent >= 0 && all[all[i].parent].parent >= 0 {
			out.sample = view(all, i)
			break
		}
	}
	return w.commit()
}

func sessionPlanText(id string) string {
	return "# Plan of " + id + "\n\n1. Read the code.\n2. Change it.\n3. Run the tests.\n"
}

// sessionPlan writes session i's plan (revision 1) and asks for its
// review: the events write_session_plan and exit_plan_mode record.
func (w *teamWriter) sessionPlan(seq *int64, clock *time.Time, all []teamSession, i int) error {
	s := &all[i]
	if err := w.event(seq, clock, api.EventSessionPlanUpdated, s, "", 1, func(at string) any {
		s.planAt = at
		plan := api.SessionPlan{SessionID: s.id, Content: sessionPlanText(s.id), Author: "planbench", Revision: 1, CreatedAt: at, UpdatedAt: at}
		return struct {
			api.SessionPlan
			Created bool `json:"created"`
		}{plan, true}
	}); err != nil {
		return err
	}
	s.revision++
	return w.event(seq, clock, api.EventSessionReviewRequested, s, "", s.revision, func(at string) any {
		rev, rationale := int64(1), "ready for review"
		s.review = api.Review{State: "pending", PlanRevision: &rev, Rationale: &rationale, RequestedAt: &at, Comments: []api.ReviewComment{}}
		s.updated = at
		return view(all, i)
	})
}

// plan writes shared plan k at revision 1: plan 0 is the ready-set plan,
// a binary tree of readyPlanSteps steps whose first 300 are complete;
// the next sc.steps/10 hold a chain of 10 steps each, the first complete.
func (w *teamWriter) plan(seq *int64, clock *time.Time, sc teamScale, k int, out *seeded) error {
	name := fmt.Sprintf("p%05d", k)
	var steps []api.Step
	step := func(id, status string, deps ...string) api.Step {
		if deps == nil {
			deps = []string{}
		}
		return api.Step{ID: id, Description: "do " + id, Owner: "worker", Deps: deps, Status: status, Commands: []string{}, Files: []string{}}
	}
	switch {
	case k == 0:
		name = readyPlan
		for j := 0; j < readyPlanSteps; j++ {
			status := plans.StepPending
			if j < 300 {
				status = plans.StepComplete
			}
			if j == 0 {
				steps = append(steps, step("s0", status))
			} else {
				steps = append(steps, step("s"+strconv.Itoa(j), status, "s"+strconv.Itoa((j-1)/2)))
			}
		}
	case k <= sc.steps/10:
		for j := 0; j < 10; j++ {
			status := plans.StepPending
			if j == 0 {
				status = plans.StepComplete
				steps = append(steps, step("s0", status))
				continue
			}
			steps = append(steps, step("s"+strconv.Itoa(j), status, "s"+strconv.Itoa(j-1)))
		}
	}
	rawSteps, err := json.Marshal(steps)
	if err != nil {
		return err
	}
	if steps == nil {
		rawSteps = []byte("[]")
	}
	at := db.FormatTime(clock.Add(100 * time.Millisecond)) // the time event() gives plan.created
	p := api.PlanSummary{Name: name, Title: "Plan " + name, Author: "planbench", Status: "active",
		Progress: plans.ProgressOf(steps, time.Now()), Revision: 1, CreatedAt: at, UpdatedAt: at}
	if k == 0 {
		ready := plans.Ready(steps, time.Now())
		out.ready = len(ready)
		out.readySample = steps[ready[0]].ID
	}
	if err := w.exec(`INSERT INTO plans (name, title, author, status, revision, created_at, updated_at, steps, content_rev, renewed)
		VALUES (?, ?, ?, ?, 1, ?, ?, ?, 1, 0)`, name, p.Title, p.Author, p.Status, at, at, string(rawSteps)); err != nil {
		return err
	}
	if err := w.exec(`INSERT INTO plan_contents (name, content_rev, content) VALUES (?, 1, ?)`,
		name, "# "+p.Title+"\n\nWhat the team does next.\n"); err != nil {
		return err
	}
	return w.event(seq, clock, api.EventPlanCreated, nil, name, 1, func(string) any { return p })
}
