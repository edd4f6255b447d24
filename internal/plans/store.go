package plans

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/planserver/planserver/internal/apierr"
	"github.com/planserver/planserver/internal/events"
	"github.com/planserver/planserver/internal/pagetoken"
	"github.com/planserver/planserver/internal/revision"
	"github.com/planserver/planserver/internal/sqlite"
	"github.com/planserver/planserver/internal/validation"
)

// Defaults of Config.
const (
	DefaultHistory         = 100
	DefaultMaxContentBytes = 1 << 20
	DefaultPageSize        = 50
	MaxPageSize            = 1000
)

// Config tunes a Store.
type Config struct {
	// History is how many revisions of a plan stay readable, the current
	// one included (--plan-history); older ones are pruned by the write
	// that pushes them out.
	History int
	// MaxContentBytes bounds a plan's content (--max-plan-bytes).
	MaxContentBytes int64
	// Now is the clock: timestamps, lease expiry and readiness are all
	// taken from it. time.Now when nil; tests move it forward instead of
	// sleeping.
	Now func() time.Time
}

// Store persists shared plans and their history. Every change runs in one
// write transaction that checks the preconditions, keeps the replaced
// revision, prunes the history and appends the event.
type Store struct {
	db  *sqlite.DB
	cfg Config
}

// NewStore returns a Store on db.
func NewStore(db *sqlite.DB, cfg Config) *Store {
	if cfg.History <= 0 {
		cfg.History = DefaultHistory
	}
	if cfg.MaxContentBytes <= 0 {
		cfg.MaxContentBytes = DefaultMaxContentBytes
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Store{db: db, cfg: cfg}
}

// now is the store's clock.
func (st *Store) now() time.Time { return st.cfg.Now() }

// querier is what both *sql.Tx and *sql.DB offer.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

const planColumns = `name, title, author, status, revision, created_at, updated_at, steps, content`

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
	s, err := decodeStoredSteps([]byte(steps))
	if err != nil {
		// A broken stored row is the server's problem (500), not the
		// client's invalid_argument.
		return nil, fmt.Errorf("plan %q revision %d has unreadable steps: %w", p.Name, p.Revision, err)
	}
	p.Steps, p.Progress = s.View(now), ProgressOf(s, now)
	return &p, nil
}

func notFound(name string) error { return apierr.New(apierr.NotFound, "plan %q not found", name) }

func what(name string) string { return fmt.Sprintf("plan %q", name) }

// get loads the current revision of a plan.
func (st *Store) get(ctx context.Context, q querier, name string) (*Plan, error) {
	p, err := scanPlan(q.QueryRowContext(ctx, `SELECT `+planColumns+` FROM plans WHERE name = ?`, name), st.now())
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound(name)
	}
	if err != nil {
		return nil, fmt.Errorf("get plan %q: %w", name, err)
	}
	return p, nil
}

// current returns a plan's revision, or exists=false.
func current(ctx context.Context, q querier, name string) (rev int64, exists bool, err error) {
	err = q.QueryRowContext(ctx, `SELECT revision FROM plans WHERE name = ?`, name).Scan(&rev)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("get plan %q: %w", name, err)
	}
	return rev, true, nil
}

// read runs fn in a read transaction after checking the name.
func (st *Store) read(ctx context.Context, name string, fn func(tx *sql.Tx) error) error {
	if err := ValidateName(name); err != nil {
		return err
	}
	return st.db.Read(ctx, fn)
}

// Get returns the current revision of a plan. Errors: invalid_argument,
// not_found; a stored plan that cannot be decoded is an internal error.
func (st *Store) Get(ctx context.Context, name string) (*Plan, error) {
	var p *Plan
	err := st.read(ctx, name, func(tx *sql.Tx) error {
		var err error
		p, err = st.get(ctx, tx, name)
		return err
	})
	return p, err
}

// GetStatus returns a plan's status and revision without reading its body.
// Errors: invalid_argument, not_found.
func (st *Store) GetStatus(ctx context.Context, name string) (*StatusView, error) {
	v := StatusView{Name: name}
	err := st.read(ctx, name, func(tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx, `SELECT status, revision FROM plans WHERE name = ?`, name).Scan(&v.Status, &v.Revision)
		if errors.Is(err, sql.ErrNoRows) {
			return notFound(name)
		}
		if err != nil {
			return fmt.Errorf("get status of plan %q: %w", name, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &v, nil
}

// Put creates or updates a plan (write_plan, update_plan_from_file). The
// content is required; nil fields of ch keep their current value. Every
// successful Put is a new revision, even one that changes nothing: the
// plan tools promise that each write bumps the revision. It reports
// whether the plan was created. Errors: invalid_argument,
// payload_too_large, version_conflict, already_exists,
// precondition_required.
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
	err := st.db.Write(ctx, func(tx *sql.Tx) error {
		rev, exists, err := current(ctx, tx, name)
		if err != nil {
			return err
		}
		if err := pre.Check(what(name), exists, rev); err != nil {
			return err
		}
		if !exists {
			created = true
			if out, err = st.insert(ctx, tx, name, ch); err != nil {
				return err
			}
			_, err = events.Append(ctx, tx, events.PlanCreated, "", name, out.Revision, out.Summary())
			return err
		}
		if out, err = st.update(ctx, tx, name, rev, ch); err != nil {
			return err
		}
		_, err = events.Append(ctx, tx, events.PlanUpdated, "", name, out.Revision, out.Summary())
		return err
	})
	if err != nil {
		return nil, false, err
	}
	return out, created, nil
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
	err := st.db.Write(ctx, func(tx *sql.Tx) error {
		var previous string
		var rev int64
		err := tx.QueryRowContext(ctx, `SELECT status, revision FROM plans WHERE name = ?`, name).Scan(&previous, &rev)
		if errors.Is(err, sql.ErrNoRows) {
			return notFound(name)
		}
		if err != nil {
			return fmt.Errorf("set status of plan %q: %w", name, err)
		}
		if err := pre.Check(what(name), true, rev); err != nil {
			return err
		}
		p, err := st.update(ctx, tx, name, rev, ch)
		if err != nil {
			return err
		}
		out = &StatusView{Name: name, Status: p.Status, Revision: p.Revision}
		_, err = events.Append(ctx, tx, events.PlanStatusChanged, "", name, p.Revision, statusChange{
			Name: name, Status: p.Status, PreviousStatus: previous, Revision: p.Revision,
		})
		return err
	})
	return out, err
}

// statusChange is the data of a plan.status_changed event.
type statusChange struct {
	Name           string `json:"name"`
	Status         string `json:"status"`
	PreviousStatus string `json:"previous_status"`
	Revision       int64  `json:"revision"`
}

// insert creates a plan at revision 1, or above the last revision of a
// deleted plan of the same name.
func (st *Store) insert(ctx context.Context, tx *sql.Tx, name string, ch Change) (*Plan, error) {
	first, err := sqlite.FirstRevision(ctx, tx, sqlite.FloorPlan, name)
	if err != nil {
		return nil, err
	}
	now := sqlite.FormatTime(st.now())
	_, err = tx.ExecContext(ctx, `INSERT INTO plans (`+planColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		name, deref(ch.Title), deref(ch.Author), deref(ch.Status), first, now, now, ch.Steps.encode(), deref(ch.Content))
	if err != nil {
		return nil, fmt.Errorf("create plan %q: %w", name, err)
	}
	return st.get(ctx, tx, name)
}

// update applies ch to a plan at revision rev as revision rev+1 (see bump)
// and returns the new revision.
func (st *Store) update(ctx context.Context, tx *sql.Tx, name string, rev int64, ch Change) (*Plan, error) {
	if err := st.bump(ctx, tx, name, rev, ch); err != nil {
		return nil, err
	}
	return st.get(ctx, tx, name)
}

// bump applies ch to a plan at revision rev as revision rev+1: the
// replaced revision goes to the history, and the history is pruned to the
// configured length.
func (st *Store) bump(ctx context.Context, tx *sql.Tx, name string, rev int64, ch Change) error {
	if _, err := tx.ExecContext(ctx, `INSERT INTO plan_revisions
		(name, revision, title, author, status, updated_at, steps, content)
		SELECT name, revision, title, author, status, updated_at, steps, content FROM plans WHERE name = ?`, name); err != nil {
		return fmt.Errorf("keep revision %d of plan %q: %w", rev, name, err)
	}
	var steps sql.NullString
	if ch.Steps != nil {
		steps = sql.NullString{String: ch.Steps.encode(), Valid: true}
	}
	// A NULL argument keeps the column: coalesce(NULL, title) is title.
	_, err := tx.ExecContext(ctx, `UPDATE plans SET
		title = coalesce(?, title), author = coalesce(?, author), status = coalesce(?, status),
		steps = coalesce(?, steps), content = coalesce(?, content),
		revision = revision + 1, updated_at = ?
		WHERE name = ?`,
		nullable(ch.Title), nullable(ch.Author), nullable(ch.Status), steps, nullable(ch.Content),
		sqlite.FormatTime(st.now()), name)
	if err != nil {
		return fmt.Errorf("update plan %q: %w", name, err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM plan_revisions WHERE name = ? AND revision <= ?`,
		name, rev+1-int64(st.cfg.History)); err != nil {
		return fmt.Errorf("prune history of plan %q: %w", name, err)
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
	return st.db.Write(ctx, func(tx *sql.Tx) error {
		rev, exists, err := current(ctx, tx, name)
		if err != nil {
			return err
		}
		if !exists {
			return notFound(name)
		}
		if err := pre.Check(what(name), true, rev); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM plans WHERE name = ?`, name); err != nil {
			return fmt.Errorf("delete plan %q: %w", name, err)
		}
		if err := sqlite.RecordDeletion(ctx, tx, sqlite.FloorPlan, name, rev); err != nil {
			return err
		}
		_, err = events.Append(ctx, tx, events.PlanDeleted, "", name, rev, map[string]any{"name": name, "revision": rev})
		return err
	})
}

// Revisions lists the readable revisions of a plan, newest first, the
// current one included. Errors: invalid_argument, not_found.
func (st *Store) Revisions(ctx context.Context, name string) ([]RevisionSummary, error) {
	var out []RevisionSummary
	err := st.read(ctx, name, func(tx *sql.Tx) error {
		rev, exists, err := current(ctx, tx, name)
		if err != nil {
			return err
		}
		if !exists {
			return notFound(name)
		}
		rows, err := tx.QueryContext(ctx, `
			SELECT revision, author, status, updated_at FROM plans WHERE name = ?
			UNION ALL
			SELECT revision, author, status, updated_at FROM plan_revisions WHERE name = ? AND revision > ?
			ORDER BY revision DESC`, name, name, rev-int64(st.cfg.History))
		if err != nil {
			return fmt.Errorf("history of plan %q: %w", name, err)
		}
		defer rows.Close()
		for rows.Next() {
			var r RevisionSummary
			if err := rows.Scan(&r.Revision, &r.Author, &r.Status, &r.UpdatedAt); err != nil {
				return fmt.Errorf("history of plan %q: %w", name, err)
			}
			out = append(out, r)
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("history of plan %q: %w", name, err)
		}
		return nil
	})
	return out, err
}

// GetRevision returns a plan as it was at revision n. A revision that was
// pruned, or never existed, is not_found. Errors: invalid_argument,
// not_found.
func (st *Store) GetRevision(ctx context.Context, name string, n int64) (*Plan, error) {
	var p *Plan
	err := st.read(ctx, name, func(tx *sql.Tx) error {
		rev, exists, err := current(ctx, tx, name)
		if err != nil {
			return err
		}
		if !exists {
			return notFound(name)
		}
		if n == rev {
			p, err = st.get(ctx, tx, name)
			return err
		}
		if n > rev || n <= rev-int64(st.cfg.History) {
			return revisionNotFound(name, n, rev, st.cfg.History)
		}
		p, err = scanPlan(tx.QueryRowContext(ctx, `
			SELECT r.name, r.title, r.author, r.status, r.revision, p.created_at, r.updated_at, r.steps, r.content
			FROM plan_revisions r JOIN plans p ON p.name = r.name
			WHERE r.name = ? AND r.revision = ?`, name, n), st.now())
		if errors.Is(err, sql.ErrNoRows) {
			return revisionNotFound(name, n, rev, st.cfg.History)
		}
		if err != nil {
			return fmt.Errorf("get revision %d of plan %q: %w", n, name, err)
		}
		return nil
	})
	return p, err
}

func revisionNotFound(name string, n, current int64, history int) error {
	if n > current {
		return apierr.New(apierr.NotFound, "plan %q has no revision %d; it is at revision %d", name, n, current)
	}
	return apierr.New(apierr.NotFound, "revision %d of plan %q is no longer kept; the last %d revisions are", n, name, history)
}

// ListQuery selects a page of plans.
type ListQuery struct {
	Status    string `json:"status" validate:"max=256"`
	Author    string `json:"author" validate:"max=256"`
	Limit     int    `json:"limit" validate:"gte=0,lte=1000"`
	PageToken string `json:"page_token"`
}

// Page is one page of the plan list.
type Page struct {
	Plans []Summary `json:"plans"`
	// NextPageToken continues the list; "" at the end.
	NextPageToken string `json:"next_page_token"`
	// Warnings name the plans of this page's range that were skipped
	// because they could not be read.
	Warnings []Warning `json:"warnings"`
}

// listSQL builds the page query of q, resuming after name after: one index
// range in name order (see the plans indexes), never OFFSET. It reads the
// steps, for the progress of each plan, but never the content, which is
// stored after them.
func listSQL(q ListQuery, after string, limit int) (string, []any) {
	where := []string{"name > ?"}
	args := []any{after}
	if q.Status != "" {
		where = append(where, "status = ?")
		args = append(args, q.Status)
	}
	if q.Author != "" {
		where = append(where, "author = ?")
		args = append(args, q.Author)
	}
	args = append(args, limit+1)
	return `SELECT name, title, author, status, revision, created_at, updated_at, steps
		FROM plans WHERE ` + strings.Join(where, " AND ") + ` ORDER BY name LIMIT ?`, args
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
	now := st.now()
	err = st.db.Read(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, query, args...)
		if err != nil {
			return fmt.Errorf("list plans: %w", err)
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
				return fmt.Errorf("list plans: %w", err)
			}
			steps, problem := decodeStoredSteps(raw)
			if n > limit {
				// The extra row only says there is a next page, which
				// resumes after the last row of this one, readable or not.
				page.NextPageToken = pagetoken.Encode("plans", fp, last)
				break
			}
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
			return fmt.Errorf("list plans: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
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
