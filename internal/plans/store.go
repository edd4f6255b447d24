package plans

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/apierr"
	"github.com/planserver/planserver/internal/db"
	"github.com/planserver/planserver/internal/events"
	"github.com/planserver/planserver/internal/pagetoken"
	"github.com/planserver/planserver/internal/revision"
	"github.com/planserver/planserver/internal/validation"
	"github.com/planserver/planserver/internal/versioned"
)

// Defaults of Config.
const (
	DefaultMaxContentBytes = 1 << 20
	DefaultPageSize        = 50
	MaxPageSize            = 1000
)

// Config tunes a Store.
type Config struct {
	// History is how many revisions of a plan stay readable, the current
	// one included (--plan-history); older ones are pruned by the write
	// that pushes them out. versioned.DefaultHistory when 0.
	History int
	// MaxContentBytes bounds a plan's content (--max-plan-bytes).
	MaxContentBytes int64
	// Access says whether ctx's caller may execute steps
	// (auth.ExecuteSteps: an agent in plan mode may not). Put asks it
	// inside its transaction when a whole-plan write would execute a step
	// (FirstExecution), so no transport can forget to ask. Nil allows
	// (stores used without callers, such as copy and tests).
	Access ExecutionAccess
}

// ExecutionAccess is the access check the store asks before a write
// executes a step: auth.Authorizer.
type ExecutionAccess interface {
	AuthorizeExecution(ctx context.Context) error
}

// Store persists shared plans and their history. Every change runs in one
// write transaction that checks the preconditions, keeps the replaced
// revision, prunes the history and appends the event. A plan's content is
// stored once per version (plan_contents), so writes that change steps or
// status copy no content.
type Store struct {
	db  *db.DB
	cfg Config
}

// NewStore returns a Store on d.
func NewStore(d *db.DB, cfg Config) *Store {
	if cfg.History <= 0 {
		cfg.History = versioned.DefaultHistory
	}
	if cfg.MaxContentBytes <= 0 {
		cfg.MaxContentBytes = DefaultMaxContentBytes
	}
	return &Store{db: d, cfg: cfg}
}

// planColumns reads a plan with its content, from plans p joined with
// plan_contents c.
const planColumns = `p.name, p.title, p.author, p.status, p.revision, p.created_at, p.updated_at, p.steps, c.content`

const planJoin = ` FROM plans p JOIN plan_contents c ON c.name = p.name AND c.content_rev = p.content_rev`

type scanner interface{ Scan(dest ...any) error }

// scanPlan reads a plan row, evaluating its steps at time now.
func scanPlan(row scanner, now time.Time) (*Plan, error) {
	var (
		p     Plan
		steps string
	)
	if err := row.Scan(&p.Name, &p.Title, &p.Author, &p.Status, &p.Revision, &p.CreatedAt, &p.UpdatedAt,
		&steps, &p.Content); err != nil {
		return nil, err
	}
	if err := setStoredSteps(&p, []byte(steps), now); err != nil {
		return nil, err
	}
	return &p, nil
}

// setStoredSteps gives p the steps stored as raw, evaluated at now.
func setStoredSteps(p *Plan, raw []byte, now time.Time) error {
	s, err := decodeStoredSteps(raw)
	if err != nil {
		// A broken stored row is the server's problem (500), not the
		// client's invalid_argument.
		return fmt.Errorf("plan %q revision %d has unreadable steps: %w", p.Name, p.Revision, err)
	}
	p.Steps, p.Progress = s.View(now), ProgressOf(s, now)
	p.Scope = ScopeOf(s)
	return nil
}

func notFound(name string) error { return apierr.New(apierr.NotFound, "plan %q not found", name) }

func what(name string) string { return fmt.Sprintf("plan %q", name) }

// resource is plan name at revision rev (0: missing) as a versioned
// resource.
func resource(name string, rev int64) versioned.Resource {
	return versioned.Resource{Kind: versioned.Plan, Key: name, What: what(name), Revision: rev}
}

// get loads the current revision of a plan, evaluated at now.
func get(q db.Querier, name string, now time.Time) (*Plan, error) {
	p, err := scanPlan(q.QueryRow(`SELECT `+planColumns+planJoin+` WHERE p.name = ?`, name), now)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound(name)
	}
	if err != nil {
		return nil, fmt.Errorf("get plan %q: %w", name, err)
	}
	return p, nil
}

// head is what a write needs of the current revision of a plan, without
// its content or steps.
type head struct {
	revision   int64
	contentRev int64
	renewed    bool
	status     string
	author     string
	// sameContent, when not nil, says whether the current content is the
	// one the write brings (loadHeadFor compared them).
	sameContent *bool
	// title, createdAt and steps (as stored) are read for a write that
	// brings content, a Put, which answers with the plan it leaves
	// (planAfter) built from them.
	title, createdAt string
	steps            []byte
}

// planKey is the key of a write that touches only the rows of plan name
// (db.WriteKeyed).
func planKey(name string) db.Key { return db.Key{Kind: "plan", Name: name} }

// loadHead reads the head of a plan; nil when it does not exist.
func loadHead(q db.Querier, name string) (*head, error) {
	h, _, err := loadHeadFor(q, name, Change{})
	return h, err
}

// loadHeadFor is loadHead for a write of ch, in one query (headRead). When ch
// replaces the steps (next, not nil) it also reads the plan's steps: such a
// write compares them with the old ones when next would execute a step
// (FirstExecution) or the old ones hold a claim (settleLeases); most writes
// need neither, and skip the decoding. Steps that cannot be read come back
// nil, as if there were none, so that a write can still repair them. When
// ch brings content it also compares that with the current content
// (head.sameContent), which a write would otherwise read in a round trip of
// its own, and reads what the Put answers with besides (planAfter): the
// title, the creation time and the stored steps, undecoded.
func loadHeadFor(q db.Querier, name string, ch Change) (*head, Steps, error) {
	query, r := headRead(name, ch)
	return r.scan(q.QueryRow(query.SQL, query.Args...), name, ch)
}

// headRow is the row loadHeadFor reads, and where in it the columns go.
type headRow struct {
	head    head
	renewed int
	raw     []byte
	same    bool
	dest    []any
}

// headRead is the read of loadHeadFor for a write of ch to plan name, and
// the row that scans its answer. A keyed write of the plan declares it as
// its first read (db.WriteKeyedFirst) and scans what it answers.
func headRead(name string, ch Change) (db.Query, *headRow) {
	r := new(headRow)
	h := &r.head
	query, dest := `SELECT p.revision, p.content_rev, p.renewed, p.status, p.author`, []any{&h.revision, &h.contentRev, &r.renewed, &h.status, &h.author}
	var args []any
	if ch.Steps != nil || ch.Content != nil {
		query, dest = query+`, p.steps`, append(dest, &r.raw)
	}
	if ch.Content != nil {
		query, dest = query+`, p.title, p.created_at`, append(dest, &h.title, &h.createdAt)
		// A missing content row reads as different: the write stores
		// the content again.
		query, dest = query+`, coalesce(c.content = ?, false)`, append(dest, &r.same)
		args = append(args, *ch.Content)
		query += ` FROM plans p LEFT JOIN plan_contents c ON c.name = p.name AND c.content_rev = p.content_rev`
	} else {
		query += ` FROM plans p`
	}
	r.dest = dest
	return db.Query{SQL: query + ` WHERE p.name = ?`, Args: append(args, name)}, r
}

// scan reads the head of plan name from row, the answer of headRead for
// a write of ch; nil when the plan does not exist.
func (r *headRow) scan(row *db.Row, name string, ch Change) (*head, Steps, error) {
	err := row.Scan(r.dest...)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("get plan %q: %w", name, err)
	}
	h, raw, next := r.head, r.raw, ch.Steps
	h.renewed = r.renewed == 1
	if ch.Content != nil {
		h.sameContent, h.steps = &r.same, raw
	}
	var steps Steps
	// Stored steps are encoded by Steps.encode: a claim is the member
	// written exactly so (a string inside a value would have its quotes
	// escaped), and a step without one has "claimed_by":null.
	executes, _ := FirstExecution(nil, next)
	if next != nil && (executes >= 0 || bytes.Contains(raw, []byte(`"claimed_by":"`))) {
		steps, _ = decodeStoredSteps(raw)
	}
	return &h, steps, nil
}

func (h *head) rev() int64 {
	if h == nil {
		return 0
	}
	return h.revision
}

// Get returns the current revision of a plan. Errors: invalid_argument,
// not_found; a stored plan that cannot be decoded is an internal error.
func (st *Store) Get(ctx context.Context, name string) (*Plan, error) {
	return st.GetAt(ctx, name, st.db.Now())
}

// GetAt is Get with its steps evaluated at now, a reading of the
// database's clock (DB.Now) the caller also judges the answer's freshness
// by (plans.NextViewChange).
func (st *Store) GetAt(ctx context.Context, name string, now time.Time) (*Plan, error) {
	if err := ValidateName(name); err != nil {
		return nil, err
	}
	return get(st.db.Reader(ctx), name, now)
}

// GetStatus returns a plan's status and revision without reading its body.
// Errors: invalid_argument, not_found.
func (st *Store) GetStatus(ctx context.Context, name string) (*StatusView, error) {
	if err := ValidateName(name); err != nil {
		return nil, err
	}
	h, err := loadHead(st.db.Reader(ctx), name)
	if err != nil {
		return nil, err
	}
	if h == nil {
		return nil, notFound(name)
	}
	return &StatusView{Name: name, Status: h.status, Revision: h.revision}, nil
}

// Put creates or updates a plan (write_plan, update_plan_from_file). The
// content is required; nil fields of ch keep their current value. Every
// successful Put is a new revision, even one that changes nothing: the
// plan tools promise that each write bumps the revision. It reports
// whether the plan was created. Errors: invalid_argument,
// payload_too_large, version_conflict, already_exists,
// precondition_required, and permission_denied when the steps would
// execute a step for a caller who may not (Config.Access).
func (st *Store) Put(ctx context.Context, name string, ch Change, pre revision.Precondition) (*Plan, bool, error) {
	if err := ValidateName(name); err != nil {
		return nil, false, err
	}
	if err := ch.validate(true, st.cfg.MaxContentBytes); err != nil {
		return nil, false, err
	}
	if ch.Steps != nil {
		// ParseSteps has checked them; the graph is checked again here so
		// that no caller can store a graph the step operations cannot use.
		if fields := ValidateGraph(ch.Steps); len(fields) > 0 {
			return nil, false, apierr.InvalidFields(fields)
		}
	}
	var (
		out     *Plan
		created bool
	)
	// Keyed: a Put reads and changes only the plan's own rows (its head,
	// contents, history, step leases and revision floor). Its head is its
	// first read.
	query, head := headRead(name, ch)
	err := st.db.WriteKeyedFirst(ctx, planKey(name), query, func(tx *db.Tx, row *db.Row) error {
		h, old, err := head.scan(row, name, ch)
		if err != nil {
			return err
		}
		rev, err := resource(name, h.rev()).Write(tx, pre)
		if err != nil {
			return err
		}
		if err := st.authorizeSteps(ctx, name, old, ch.Steps); err != nil {
			return err
		}
		typ := events.PlanUpdated
		if h == nil {
			created, typ = true, events.PlanCreated
			err = st.insert(tx, name, rev, ch)
		} else {
			err = st.bump(tx, name, h, rev, ch, false)
		}
		if err != nil {
			return err
		}
		if ch.Steps != nil {
			// A lease that ran out before this write ended it is reported
			// before the write's own event.
			if err := settleLeases(tx, name, h.rev(), old, ch.Steps); err != nil {
				return err
			}
		}
		if out, err = planAfter(tx, name, h, rev, ch); err != nil {
			return err
		}
		err = events.Record(tx, events.New{Type: typ, Plan: name, Revision: out.Revision, Data: out.Summary()})
		return err
	})
	if err != nil {
		return nil, false, err
	}
	return out, created, nil
}

// planAfter is the plan that a Put of ch as revision rev leaves behind,
// built from the head it read (h; nil when the Put creates the plan)
// exactly as insert and bump store it, instead of read back: on
// PostgreSQL a read back costs a round trip under the write lock.
// TestPutAnswersWhatGetReads holds it to what a read gives.
func planAfter(tx *db.Tx, name string, h *head, rev int64, ch Change) (*Plan, error) {
	if h != nil && ch.Content == nil {
		// An import that leaves the content out keeps the stored one,
		// which its head was not read with (loadHeadFor): read it back.
		return get(tx, name, tx.Now())
	}
	now := tx.NowText()
	p := &Plan{Name: name, Title: deref(ch.Title), Author: ch.authorOf(tx), Status: deref(ch.Status),
		Revision: rev, CreatedAt: now, UpdatedAt: now, Content: deref(ch.Content)}
	steps := []byte(ch.Steps.encode())
	if h != nil {
		p.CreatedAt = h.createdAt
		if ch.Title == nil {
			p.Title = h.title
		}
		if ch.Status == nil {
			p.Status = h.status
		}
		if ch.Steps == nil {
			steps = h.steps
		}
	}
	if err := setStoredSteps(p, steps, tx.Now()); err != nil {
		return nil, err
	}
	return p, nil
}

// SetStatus sets the status of an existing plan without touching its body
// (set_plan_status); it is a new revision like any write. Errors:
// invalid_argument, not_found, version_conflict, precondition_required.
func (st *Store) SetStatus(ctx context.Context, name, status string, pre revision.Precondition) (*StatusView, error) {
	if err := ValidateName(name); err != nil {
		return nil, err
	}
	ch := Change{Status: &status}
	if err := ch.validate(false, st.cfg.MaxContentBytes); err != nil {
		return nil, err
	}
	var out *StatusView
	query, head := headRead(name, Change{})
	err := st.db.WriteKeyedFirst(ctx, planKey(name), query, func(tx *db.Tx, row *db.Row) error {
		h, _, err := head.scan(row, name, Change{})
		if err != nil {
			return err
		}
		if h == nil {
			return notFound(name)
		}
		rev, err := resource(name, h.revision).Write(tx, pre)
		if err != nil {
			return err
		}
		if err := st.bump(tx, name, h, rev, ch, false); err != nil {
			return err
		}
		out = &StatusView{Name: name, Status: status, Revision: rev}
		err = events.Record(tx, events.New{Type: events.PlanStatusChanged, Plan: name, Revision: rev, Data: statusChange{
			Name: name, Status: status, PreviousStatus: h.status, Revision: rev,
		}})
		return err
	})
	return out, err
}

// authorizeSteps refuses a write that would replace the steps old (none
// when the plan is new, or its steps cannot be read, so every executing
// step counts) of plan name with next and so execute a step, unless the
// caller may execute steps.
func (st *Store) authorizeSteps(ctx context.Context, name string, old, next Steps) error {
	if next == nil || st.cfg.Access == nil {
		return nil
	}
	i, what := FirstExecution(old, next)
	if i < 0 {
		return nil
	}
	err := st.cfg.Access.AuthorizeExecution(ctx)
	if e, ok := apierr.As(err); ok {
		return &apierr.Error{Code: e.Code, Detail: fmt.Sprintf("steps[%d] (%q): %s executes it, and %s", i, next[i].ID, what, e.Detail)}
	}
	return err
}

// statusChange is the data of a plan.status_changed event.
type statusChange struct {
	Name           string `json:"name"`
	Status         string `json:"status"`
	PreviousStatus string `json:"previous_status"`
	Revision       int64  `json:"revision"`
}

// insert creates a plan at revision rev.
func (st *Store) insert(tx *db.Tx, name string, rev int64, ch Change) error {
	now := tx.NowText()
	if _, err := tx.Exec(`INSERT INTO plans (name, title, author, status, revision, created_at, updated_at, steps, content_rev)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		name, deref(ch.Title), ch.authorOf(tx), deref(ch.Status), rev, now, now, ch.Steps.encode(), rev); err != nil {
		return fmt.Errorf("create plan %q: %w", name, err)
	}
	if _, err := tx.Exec(`INSERT INTO plan_contents (name, content_rev, content) VALUES (?, ?, ?)`,
		name, rev, deref(ch.Content)); err != nil {
		return fmt.Errorf("create plan %q: %w", name, err)
	}
	return nil
}

// authorOf is the author of the revision c writes in tx: the one the
// writer named, else the writer's own identity (the token's name, or
// "anonymous"). A revision never shows the previous revision's author as
// its own: history must say who wrote each one.
func (c Change) authorOf(tx *db.Tx) string {
	if c.Author != nil {
		return *c.Author
	}
	return events.ActorFrom(tx.Context())
}

// bump applies ch to the plan whose current revision is h as revision
// rev: the replaced revision goes to the history (unless it was only a
// lease renewal), new content is stored once, and the history is pruned
// to the configured length. renewal marks a change that only renews a
// claim's lease.
func (st *Store) bump(tx *db.Tx, name string, h *head, rev int64, ch Change, renewal bool) error {
	// A write that brings content read h with it compared (loadHeadFor):
	// its changes then need no answer from the database after that one
	// read, and an engine may send them together (db.Statements), instead
	// of a round trip before and after a read of its own.
	same := true
	if ch.Content != nil {
		if h.sameContent == nil {
			return fmt.Errorf("update plan %q: its head was read without the new content compared (loadHeadFor)", name)
		}
		same = *h.sameContent
	}
	if !h.renewed {
		if _, err := tx.Exec(`INSERT INTO plan_revisions
			(name, revision, title, author, status, updated_at, steps, content_rev)
			SELECT name, revision, title, author, status, updated_at, steps, content_rev FROM plans WHERE name = ?`, name); err != nil {
			return fmt.Errorf("keep revision %d of plan %q: %w", h.revision, name, err)
		}
	}
	contentRev := h.contentRev
	if ch.Content != nil {
		if !same {
			contentRev = rev
			if _, err := tx.Exec(`INSERT INTO plan_contents (name, content_rev, content) VALUES (?, ?, ?)`,
				name, rev, *ch.Content); err != nil {
				return fmt.Errorf("store content of plan %q: %w", name, err)
			}
		}
	}
	var steps sql.NullString
	if ch.Steps != nil {
		steps = sql.NullString{String: ch.Steps.encode(), Valid: true}
	}
	// A NULL argument keeps the column: coalesce(NULL, title) is title.
	// author and status are set only when they change: SQLite rewrites
	// the entries of every index on a column the SET list names, changed
	// or not, and three indexes list plans by them (three WAL pages per
	// write for nothing).
	set := `title = coalesce(?, title), steps = coalesce(?, steps), content_rev = ?, renewed = ?, revision = ?, updated_at = ?`
	args := []any{nullable(ch.Title), steps, contentRev, boolInt(renewal), rev, tx.NowText()}
	if author := ch.authorOf(tx); author != h.author {
		set += `, author = ?`
		args = append(args, author)
	}
	if ch.Status != nil && *ch.Status != h.status {
		set += `, status = ?`
		args = append(args, *ch.Status)
	}
	if _, err := tx.Exec(`UPDATE plans SET `+set+` WHERE name = ?`, append(args, name)...); err != nil {
		return fmt.Errorf("update plan %q: %w", name, err)
	}
	oldest := rev - int64(st.cfg.History)
	if _, err := tx.Exec(`DELETE FROM plan_revisions WHERE name = ? AND revision <= ?`, name, oldest); err != nil {
		return fmt.Errorf("prune history of plan %q: %w", name, err)
	}
	// Contents no kept revision names any more go too. Content revisions
	// only grow with revisions, so those are the ones below the content of
	// the oldest kept revision: one index probe, where min(content_rev)
	// read every kept revision (up to --plan-history of them, on every
	// write: one of the two costliest statements of a PUT on PostgreSQL).
	if _, err := tx.Exec(`DELETE FROM plan_contents WHERE name = ? AND content_rev < ?
		AND content_rev < coalesce((SELECT content_rev FROM plan_revisions WHERE name = ? ORDER BY revision LIMIT 1), ?)`,
		name, contentRev, name, contentRev); err != nil {
		return fmt.Errorf("prune contents of plan %q: %w", name, err)
	}
	return nil
}

// Delete removes a plan and its history (delete_plan). It reads nothing
// but the revision, so it also removes a plan whose stored body can no
// longer be decoded. Errors: invalid_argument, not_found,
// version_conflict, precondition_required.
func (st *Store) Delete(ctx context.Context, name string, pre revision.Precondition) error {
	if err := ValidateName(name); err != nil {
		return err
	}
	// Keyed: what goes with the plan (history, contents, leases, reports)
	// is its own, and so is its revision floor. Its head is its first read.
	query, head := headRead(name, Change{})
	return st.db.WriteKeyedFirst(ctx, planKey(name), query, func(tx *db.Tx, row *db.Row) error {
		h, _, err := head.scan(row, name, Change{})
		if err != nil {
			return err
		}
		if h == nil {
			return notFound(name)
		}
		res := resource(name, h.revision)
		if err := res.Check(pre); err != nil {
			return err
		}
		if _, err := tx.Exec(`DELETE FROM plans WHERE name = ?`, name); err != nil {
			return fmt.Errorf("delete plan %q: %w", name, err)
		}
		// Its leases go with it, unreported: plan.deleted says it all.
		if _, err := tx.Exec(`DELETE FROM step_leases WHERE plan = ?`, name); err != nil {
			return fmt.Errorf("delete plan %q: %w", name, err)
		}
		if err := res.Deleted(tx); err != nil {
			return err
		}
		err = events.Record(tx, events.New{Type: events.PlanDeleted, Plan: name, Revision: h.revision,
			Data: map[string]any{"name": name, "revision": h.revision}})
		return err
	})
}

// Revisions lists the readable revisions of a plan, newest first, the
// current one included. Errors: invalid_argument, not_found.
func (st *Store) Revisions(ctx context.Context, name string) ([]RevisionSummary, error) {
	if err := ValidateName(name); err != nil {
		return nil, err
	}
	var out []RevisionSummary
	err := st.db.Read(ctx, func(tx *db.Tx) error {
		var err error
		out, err = st.revisions(tx, name)
		return err
	})
	return out, err
}

// revisions lists the readable revisions of a plan in q, newest first.
func (st *Store) revisions(q db.Querier, name string) ([]RevisionSummary, error) {
	h, err := loadHead(q, name)
	if err != nil {
		return nil, err
	}
	if h == nil {
		return nil, notFound(name)
	}
	rows, err := q.Query(`
		SELECT revision, author, status, updated_at FROM plans WHERE name = ?
		UNION ALL
		SELECT revision, author, status, updated_at FROM plan_revisions WHERE name = ? AND revision > ?
		ORDER BY revision DESC`, name, name, h.revision-int64(st.cfg.History))
	if err != nil {
		return nil, fmt.Errorf("history of plan %q: %w", name, err)
	}
	defer rows.Close()
	var out []RevisionSummary
	for rows.Next() {
		var r RevisionSummary
		if err := rows.Scan(&r.Revision, &r.Author, &r.Status, &r.UpdatedAt); err != nil {
			return nil, fmt.Errorf("history of plan %q: %w", name, err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("history of plan %q: %w", name, err)
	}
	return out, nil
}

// GetRevision returns a plan as it was at revision n. A revision that was
// pruned, was a lease renewal, or never existed, is not_found. Errors:
// invalid_argument, not_found.
func (st *Store) GetRevision(ctx context.Context, name string, n int64) (*Plan, error) {
	if err := ValidateName(name); err != nil {
		return nil, err
	}
	var p *Plan
	err := st.db.Read(ctx, func(tx *db.Tx) error {
		var err error
		p, err = st.revisionAt(tx, name, n)
		return err
	})
	return p, err
}

// Diff answers how revision to of a plan's content differs from revision
// from, both read from one snapshot (versioned.Compare, which also says
// what a bound left nil defaults to). Errors: invalid_argument, not_found.
func (st *Store) Diff(ctx context.Context, name string, from, to *int64) (*api.Diff, error) {
	if err := ValidateName(name); err != nil {
		return nil, err
	}
	var c versioned.Compared
	err := st.db.Read(ctx, func(tx *db.Tx) error {
		revisions := func() ([]int64, error) {
			revs, err := st.revisions(tx, name)
			if err != nil {
				return nil, err
			}
			out := make([]int64, len(revs))
			for i, r := range revs {
				out[i] = r.Revision
			}
			return out, nil
		}
		content := func(n int64) (string, error) {
			p, err := st.revisionAt(tx, name, n)
			if err != nil {
				return "", err
			}
			return p.Content, nil
		}
		var err error
		c, err = versioned.Compare(from, to, revisions, content)
		return err
	})
	if err != nil {
		return nil, err
	}
	return c.Diff(), nil
}

// revisionAt reads revision n of a plan in q.
func (st *Store) revisionAt(q db.Querier, name string, n int64) (*Plan, error) {
	h, err := loadHead(q, name)
	if err != nil {
		return nil, err
	}
	if h == nil {
		return nil, notFound(name)
	}
	now := st.db.Now()
	if n == h.revision {
		return get(q, name, now)
	}
	if n > h.revision || n <= h.revision-int64(st.cfg.History) {
		return nil, revisionNotFound(name, n, h.revision, st.cfg.History)
	}
	p, err := scanPlan(q.QueryRow(`
		SELECT r.name, r.title, r.author, r.status, r.revision, p.created_at, r.updated_at, r.steps, c.content
		FROM plan_revisions r JOIN plans p ON p.name = r.name
		JOIN plan_contents c ON c.name = r.name AND c.content_rev = r.content_rev
		WHERE r.name = ? AND r.revision = ?`, name, n), now)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, revisionNotFound(name, n, h.revision, st.cfg.History)
	}
	if err != nil {
		return nil, fmt.Errorf("get revision %d of plan %q: %w", n, name, err)
	}
	return p, nil
}

func revisionNotFound(name string, n, current int64, history int) error {
	if n > current {
		return apierr.New(apierr.NotFound, "plan %q has no revision %d; it is at revision %d", name, n, current)
	}
	return apierr.New(apierr.NotFound, "revision %d of plan %q is not kept: the last %d revisions are, "+
		"except those that only renewed a claim's lease", n, name, history)
}

// ListQuery selects a page of plans.
type ListQuery struct {
	Status    string `json:"status" validate:"max=256"`
	Author    string `json:"author" validate:"max=256"`
	Limit     int    `json:"limit" validate:"gte=0,lte=1000"`
	PageToken string `json:"page_token"`
}

// Page is one page of the plan list.
type Page = api.PlanPage

// listSQL builds the page query of q, resuming after name after: one index
// range in name order (see the plans indexes), never OFFSET. It reads the
// steps, for the progress of each plan, but never the content, which is
// stored apart.
func listSQL(q ListQuery, after string, limit int) (string, []any) {
	var where db.Where
	where.Add("name > ?", after)
	where.Equal("status", q.Status)
	where.Equal("author", q.Author)
	return `SELECT name, title, author, status, revision, created_at, updated_at, steps
		FROM plans WHERE ` + where.SQL() + ` ORDER BY name LIMIT ?`, where.Args(limit + 1)
}

// List returns one page of plan summaries in name order (list_plans). Rows
// that cannot be read are skipped and reported in Warnings, so one corrupt
// plan never hides the others. Errors: invalid_argument.
func (st *Store) List(ctx context.Context, q ListQuery) (*Page, error) {
	if err := validation.Struct(q); err != nil {
		return nil, err
	}
	limit := q.Limit
	if limit == 0 {
		limit = DefaultPageSize
	}
	fp := pagetoken.Fingerprint(q.Status, q.Author)
	after, err := pagetoken.Decode("plans", fp, q.PageToken)
	if err != nil {
		return nil, err
	}
	page := &Page{Plans: []Summary{}, Warnings: []Warning{}}
	query, args := listSQL(q, after, limit)
	now := st.db.Now()
	rows, err := st.db.Reader(ctx).Query(query, args...)
	if err != nil {
		return nil, fmt.Errorf("list plans: %w", err)
	}
	defer rows.Close()
	n, last := 0, ""
	for rows.Next() {
		n++
		var (
			s   Summary
			raw []byte
		)
		if err := rows.Scan(&s.Name, &s.Title, &s.Author, &s.Status, &s.Revision, &s.CreatedAt, &s.UpdatedAt, &raw); err != nil {
			return nil, fmt.Errorf("list plans: %w", err)
		}
		if n > limit {
			// The extra row only says there is a next page, which resumes
			// after the last row of this one, readable or not.
			page.NextPageToken = pagetoken.Encode("plans", fp, last)
			break
		}
		steps, problem := decodeStoredSteps(raw)
		switch {
		case ValidateName(s.Name) != nil:
			page.Warnings = append(page.Warnings, Warning{Name: s.Name,
				Message: fmt.Sprintf("plan %q breaks the plan name rule; no request can address it", s.Name)})
		case problem != nil:
			page.Warnings = append(page.Warnings, Warning{Name: s.Name,
				Message: fmt.Sprintf("plan %q cannot be read: %v; delete it, or PUT it with new steps", s.Name, problem)})
		default:
			s.Progress = ProgressOf(steps, now)
			page.Plans = append(page.Plans, s)
		}
		last = s.Name
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list plans: %w", err)
	}
	return page, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func nullable(s *string) sql.NullString {
	if s == nil {
		return sql.NullString{}
	}
	return sql.NullString{String: *s, Valid: true}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
