package sessions

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/planserver/planserver/internal/apierr"
	"github.com/planserver/planserver/internal/events"
	"github.com/planserver/planserver/internal/pagetoken"
	"github.com/planserver/planserver/internal/revision"
	"github.com/planserver/planserver/internal/sqlite"
	"github.com/planserver/planserver/internal/validation"
)

// MaxMetadataBytes bounds a session's metadata object, encoded as JSON.
const MaxMetadataBytes = 64 << 10

// Store persists sessions. Every change runs in one write transaction that
// also appends its event.
type Store struct {
	db *sqlite.DB
}

// NewStore returns a Store on db.
func NewStore(db *sqlite.DB) *Store { return &Store{db: db} }

// querier is what both *sql.Tx and *sql.DB offer.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

const sessionColumns = `id, title, agent, parent_id, mode, harness, metadata,
	review_state, review_plan_revision, review_rationale, review_feedback,
	review_requested_at, review_decided_at, review_decided_by,
	revision, created_at, updated_at`

type scanner interface{ Scan(dest ...any) error }

func scanSession(row scanner) (*Session, error) {
	var (
		s        Session
		parent   sql.NullString
		harness  int
		metadata string
	)
	err := row.Scan(&s.ID, &s.Title, &s.Agent, &parent, &s.Mode, &harness, &metadata,
		&s.Review.State, &s.Review.PlanRevision, &s.Review.Rationale, &s.Review.Feedback,
		&s.Review.RequestedAt, &s.Review.DecidedAt, &s.Review.DecidedBy,
		&s.Revision, &s.CreatedAt, &s.UpdatedAt)
	if err != nil {
		return nil, err
	}
	if parent.Valid {
		s.ParentID = &parent.String
	}
	s.Harness = harness == 1
	if err := json.Unmarshal([]byte(metadata), &s.Metadata); err != nil {
		return nil, fmt.Errorf("decode metadata of session %q: %w", s.ID, err)
	}
	if s.Metadata == nil {
		s.Metadata = map[string]any{}
	}
	return &s, nil
}

// resolver computes effective modes within one transaction, remembering the
// mode source of every session it has visited so a page of siblings costs
// one lookup per distinct ancestor.
type resolver struct {
	q    querier
	memo map[string]*string
}

func newResolver(q querier) *resolver { return &resolver{q: q, memo: map[string]*string{}} }

// source returns the id of the nearest session, id itself or an ancestor,
// whose own mode is plan; nil when there is none.
func (r *resolver) source(ctx context.Context, id string) (*string, error) {
	if src, ok := r.memo[id]; ok {
		return src, nil
	}
	var (
		mode   Mode
		parent sql.NullString
	)
	err := r.q.QueryRowContext(ctx, `SELECT mode, parent_id FROM sessions WHERE id = ?`, id).Scan(&mode, &parent)
	if err != nil {
		return nil, fmt.Errorf("resolve mode of session %q: %w", id, err)
	}
	var src *string
	switch {
	case mode == Plan:
		src = &id
	case parent.Valid:
		if src, err = r.source(ctx, parent.String); err != nil {
			return nil, err
		}
	}
	r.memo[id] = src
	return src, nil
}

// complete fills in the effective mode of s.
func (r *resolver) complete(ctx context.Context, s *Session) error {
	src, err := r.source(ctx, s.ID)
	if err != nil {
		return err
	}
	s.EffectiveMode, s.ModeSource = Build, nil
	if src != nil {
		s.EffectiveMode, s.ModeSource = Plan, src
	}
	return nil
}

func notFound(id string) error { return apierr.New(apierr.NotFound, "session %q not found", id) }

// NotFound is the error for a session that does not exist. Access control
// answers it for a session outside an agent's scope too, so that the two
// cannot be told apart.
func NotFound(id string) error { return notFound(id) }

// UnknownParent is the error for a parent_id naming no session; access
// control answers it for a parent outside an agent's scope too.
func UnknownParent(id string) error { return apierr.Invalid("parent_id", "no session %q", id) }

// get loads one session with its effective mode.
func get(ctx context.Context, q querier, id string) (*Session, error) {
	s, err := scanSession(q.QueryRowContext(ctx, `SELECT `+sessionColumns+` FROM sessions WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound(id)
	}
	if err != nil {
		return nil, fmt.Errorf("get session %q: %w", id, err)
	}
	if err := newResolver(q).complete(ctx, s); err != nil {
		return nil, err
	}
	return s, nil
}

// Get returns the session id. Errors: not_found.
func (st *Store) Get(ctx context.Context, id string) (*Session, error) {
	var s *Session
	err := st.db.Read(ctx, func(tx *sql.Tx) error {
		var err error
		s, err = get(ctx, tx, id)
		return err
	})
	return s, err
}

// CreateInput is the body of POST /v1/sessions.
type CreateInput struct {
	ID       string         `json:"id" validate:"omitempty,session_id"`
	Title    string         `json:"title" validate:"max=1024"`
	Agent    string         `json:"agent" validate:"max=256"`
	ParentID string         `json:"parent_id" validate:"omitempty,session_id"`
	Mode     string         `json:"mode" validate:"omitempty,oneof=build plan"`
	Harness  bool           `json:"harness"`
	Metadata map[string]any `json:"metadata"`
}

// Create stores a new session. Errors: invalid_argument (bad field, unknown
// parent), already_exists (id taken), unsupported_mode (a harness session
// that would be in plan mode).
func (st *Store) Create(ctx context.Context, in CreateInput) (*Session, error) {
	if err := validation.Struct(in); err != nil {
		return nil, err
	}
	metadata, err := encodeMetadata(in.Metadata)
	if err != nil {
		return nil, err
	}
	if in.ID == "" {
		in.ID = newID()
	}
	mode := Mode(in.Mode)
	if mode == "" {
		mode = Build
	}
	var created *Session
	err = st.db.Write(ctx, func(tx *sql.Tx) error {
		var taken int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM sessions WHERE id = ?`, in.ID).Scan(&taken); err != nil {
			return fmt.Errorf("create session %q: %w", in.ID, err)
		}
		if taken > 0 {
			return apierr.New(apierr.AlreadyExists, "session %q already exists", in.ID)
		}
		var parent sql.NullString
		if in.ParentID != "" {
			src, err := newResolver(tx).source(ctx, in.ParentID)
			if errors.Is(err, sql.ErrNoRows) {
				return UnknownParent(in.ParentID)
			}
			if err != nil {
				return err
			}
			if in.Harness && mode != Plan && src != nil {
				return unsupportedMode(in.ID, fmt.Sprintf(
					"session %q would inherit plan mode from %q, but a harness session owns its tools and cannot be gated",
					in.ID, *src))
			}
			parent = sql.NullString{String: in.ParentID, Valid: true}
		}
		if in.Harness && mode == Plan {
			return unsupportedMode(in.ID, fmt.Sprintf(
				"session %q is harness-backed: its agent owns its tools, so plan mode cannot be enforced", in.ID))
		}
		first, err := sqlite.FirstRevision(ctx, tx, sqlite.FloorSession, in.ID)
		if err != nil {
			return err
		}
		now := sqlite.FormatTime(time.Now())
		_, err = tx.ExecContext(ctx, `INSERT INTO sessions
			(id, title, agent, parent_id, mode, harness, metadata, revision, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			in.ID, in.Title, in.Agent, parent, mode, boolInt(in.Harness), metadata, first, now, now)
		if err != nil {
			return fmt.Errorf("create session %q: %w", in.ID, err)
		}
		if created, err = get(ctx, tx, in.ID); err != nil {
			return err
		}
		_, err = events.Append(ctx, tx, events.SessionCreated, created.ID, "", created.Revision, created)
		return err
	})
	if err != nil {
		return nil, err
	}
	return created, nil
}

// ListQuery selects a page of sessions.
type ListQuery struct {
	// Subtree, when set, limits the list to that session and its
	// descendants: an agent token's view. It is set by access control,
	// not by the client.
	Subtree   string `json:"-"`
	ParentID  string `json:"parent_id" validate:"omitempty,session_id"`
	Mode      string `json:"mode" validate:"omitempty,oneof=build plan"`
	Limit     int    `json:"limit" validate:"gte=0,lte=1000"`
	PageToken string `json:"page_token"`
}

// DefaultPageSize is the page size when a list request names none.
const DefaultPageSize = 50

// List returns one page of sessions in creation order and the token of the
// next page ("" at the end). Errors: invalid_argument.
func (st *Store) List(ctx context.Context, q ListQuery) ([]*Session, string, error) {
	if err := validation.Struct(q); err != nil {
		return nil, "", err
	}
	limit := q.Limit
	if limit == 0 {
		limit = DefaultPageSize
	}
	fp := pagetoken.Fingerprint(q.ParentID, q.Mode, q.Subtree)
	afterStr, err := pagetoken.Decode("sessions", fp, q.PageToken)
	if err != nil {
		return nil, "", err
	}
	var after int64
	if afterStr != "" {
		if after, err = strconv.ParseInt(afterStr, 10, 64); err != nil {
			return nil, "", apierr.Invalid("page_token", "not a page token of this list")
		}
	}
	where := []string{"pk > ?"}
	args := []any{after}
	if q.ParentID != "" {
		where = append(where, "parent_id = ?")
		args = append(args, q.ParentID)
	}
	if q.Mode != "" {
		where = append(where, "mode = ?")
		args = append(args, q.Mode)
	}
	if q.Subtree != "" {
		where = append(where, `id IN (
			WITH RECURSIVE sub(id) AS (
				SELECT id FROM sessions WHERE id = ?
				UNION ALL
				SELECT s.id FROM sessions s JOIN sub ON s.parent_id = sub.id
			)
			SELECT id FROM sub)`)
		args = append(args, q.Subtree)
	}
	args = append(args, limit+1)
	var (
		page []*Session
		pks  []int64
	)
	err = st.db.Read(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT pk, `+sessionColumns+` FROM sessions WHERE `+
			strings.Join(where, " AND ")+` ORDER BY pk LIMIT ?`, args...)
		if err != nil {
			return fmt.Errorf("list sessions: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var pk int64
			s, err := scanSession(pkScanner{rows, &pk})
			if err != nil {
				return fmt.Errorf("list sessions: %w", err)
			}
			page = append(page, s)
			pks = append(pks, pk)
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("list sessions: %w", err)
		}
		rows.Close()
		r := newResolver(tx)
		for _, s := range page {
			if err := r.complete(ctx, s); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	next := ""
	if len(page) > limit {
		page = page[:limit]
		next = pagetoken.Encode("sessions", fp, strconv.FormatInt(pks[limit-1], 10))
	}
	return page, next, nil
}

// pkScanner scans a leading pk column before the session columns.
type pkScanner struct {
	rows *sql.Rows
	pk   *int64
}

func (p pkScanner) Scan(dest ...any) error { return p.rows.Scan(append([]any{p.pk}, dest...)...) }

// Patch is an RFC 7396 JSON merge patch of a session's title and metadata,
// as its members were sent.
type Patch map[string]json.RawMessage

// Update applies a merge patch. A patch that changes nothing is a success
// without a revision bump or event. Errors: not_found, invalid_argument,
// version_conflict, precondition_required.
func (st *Store) Update(ctx context.Context, id string, patch Patch, pre revision.Precondition) (*Session, error) {
	var out *Session
	err := st.db.Write(ctx, func(tx *sql.Tx) error {
		s, err := get(ctx, tx, id)
		if err != nil {
			return err
		}
		if err := pre.Check(fmt.Sprintf("session %q", id), true, s.Revision); err != nil {
			return err
		}
		title, metadata, err := applyPatch(s, patch)
		if err != nil {
			return err
		}
		oldMeta, _ := json.Marshal(s.Metadata)
		newMeta, err := encodeMetadata(metadata)
		if err != nil {
			return err
		}
		if title == s.Title && string(oldMeta) == newMeta {
			out = s
			return nil
		}
		_, err = tx.ExecContext(ctx, `UPDATE sessions SET title = ?, metadata = ?, revision = revision + 1, updated_at = ?
			WHERE id = ?`, title, newMeta, sqlite.FormatTime(time.Now()), id)
		if err != nil {
			return fmt.Errorf("update session %q: %w", id, err)
		}
		if out, err = get(ctx, tx, id); err != nil {
			return err
		}
		_, err = events.Append(ctx, tx, events.SessionUpdated, id, "", out.Revision, out)
		return err
	})
	return out, err
}

// applyPatch returns s's title and metadata with patch merged in.
func applyPatch(s *Session, patch Patch) (string, map[string]any, error) {
	title, metadata := s.Title, s.Metadata
	var fields []apierr.FieldError
	for name, raw := range patch {
		isNull := string(raw) == "null"
		switch name {
		case "title":
			if isNull {
				title = ""
				continue
			}
			if err := json.Unmarshal(raw, &title); err != nil {
				fields = append(fields, apierr.FieldError{Field: "title", Message: "must be a string or null"})
			} else if len([]rune(title)) > 1024 {
				fields = append(fields, apierr.FieldError{Field: "title", Message: "must be at most 1024 characters"})
			}
		case "metadata":
			var patchValue any
			if err := json.Unmarshal(raw, &patchValue); err != nil {
				fields = append(fields, apierr.FieldError{Field: "metadata", Message: "must be a JSON object or null"})
				continue
			}
			switch pv := patchValue.(type) {
			case nil:
				metadata = map[string]any{}
			case map[string]any:
				metadata = MergePatch(metadata, pv).(map[string]any)
			default:
				fields = append(fields, apierr.FieldError{Field: "metadata", Message: "must be a JSON object or null"})
			}
		case "mode":
			fields = append(fields, apierr.FieldError{Field: name, Message: "change the mode with PATCH /v1/sessions/{id}/mode"})
		case "parent_id":
			fields = append(fields, apierr.FieldError{Field: name, Message: "sessions cannot be re-parented"})
		default:
			fields = append(fields, apierr.FieldError{Field: name, Message: "unknown or read-only field; only title and metadata can be patched"})
		}
	}
	if len(fields) > 0 {
		return "", nil, apierr.InvalidFields(fields)
	}
	return title, metadata, nil
}

// MergePatch applies an RFC 7396 merge patch to target and returns the
// result; target is not modified.
func MergePatch(target any, patch any) any {
	p, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	t, ok := target.(map[string]any)
	out := make(map[string]any, len(t)+len(p))
	if ok {
		for k, v := range t {
			out[k] = v
		}
	}
	for k, v := range p {
		if v == nil {
			delete(out, k)
			continue
		}
		out[k] = MergePatch(out[k], v)
	}
	return out
}

// subtree returns a session and all its descendants, parents before
// children.
func subtree(ctx context.Context, q querier, id string) ([]Node, error) {
	rows, err := q.QueryContext(ctx, `
		WITH RECURSIVE tree(id, parent_id, mode, harness, depth) AS (
			SELECT id, '', mode, harness, 0 FROM sessions WHERE id = ?
			UNION ALL
			SELECT s.id, s.parent_id, s.mode, s.harness, t.depth + 1
			FROM sessions s JOIN tree t ON s.parent_id = t.id
		)
		SELECT id, parent_id, mode, harness FROM tree ORDER BY depth, id`, id)
	if err != nil {
		return nil, fmt.Errorf("subtree of session %q: %w", id, err)
	}
	defer rows.Close()
	var nodes []Node
	for rows.Next() {
		var (
			n       Node
			harness int
		)
		if err := rows.Scan(&n.ID, &n.ParentID, &n.Mode, &harness); err != nil {
			return nil, fmt.Errorf("subtree of session %q: %w", id, err)
		}
		n.Harness = harness == 1
		nodes = append(nodes, n)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("subtree of session %q: %w", id, err)
	}
	return nodes, nil
}

// SetMode sets a session's own mode. Setting the mode it already has is a
// success without a revision bump or event. Moving from plan to build
// cancels a pending review (see review.go). Descendants whose effective mode
// or mode source changes get a revision bump and a session.mode_changed
// event of their own, so a client watching only them sees the change and
// their ETags never serve a stale effective mode. Errors: not_found,
// unsupported_mode, version_conflict, precondition_required.
func (st *Store) SetMode(ctx context.Context, id string, mode Mode, pre revision.Precondition) (*Session, error) {
	var out *Session
	err := st.db.Write(ctx, func(tx *sql.Tx) error {
		s, err := get(ctx, tx, id)
		if err != nil {
			return err
		}
		if err := pre.Check(fmt.Sprintf("session %q", id), true, s.Revision); err != nil {
			return err
		}
		if s.Mode == mode {
			out = s
			return nil
		}
		// Leaving plan mode directly cancels a pending review: there is
		// nothing left for a human to let the session do.
		var cancelled *closedReview
		if s.Mode == Plan && mode == Build && s.Review.State == ReviewPending {
			if _, err := saveReview(ctx, tx, id, Review{State: ReviewNone}, sqlite.FormatTime(time.Now()), false); err != nil {
				return err
			}
			cancelled = closeReview(s.Review, s.Revision+1, "the session's mode was set to build directly")
		}
		if out, err = setMode(ctx, tx, s, mode, cancelled); err != nil {
			return err
		}
		return nil
	})
	return out, err
}

// setMode changes s's own mode inside tx and propagates the effective-mode
// change to its descendants. cancelled, when set, is the pending review the
// change cancelled, recorded in the session's mode_changed event.
func setMode(ctx context.Context, tx *sql.Tx, s *Session, mode Mode, cancelled *closedReview) (*Session, error) {
	nodes, err := subtree(ctx, tx, s.ID)
	if err != nil {
		return nil, err
	}
	if mode == Plan {
		if h := FirstHarness(nodes); h != "" {
			detail := fmt.Sprintf("session %q is harness-backed: its agent owns its tools, so plan mode cannot be enforced", h)
			if h != s.ID {
				detail = fmt.Sprintf("session %q has harness-backed descendant %q, whose tools cannot be gated; plan mode would not hold there", s.ID, h)
			}
			return nil, unsupportedMode(h, detail)
		}
	}
	var inherited *string
	if s.ParentID != nil {
		if inherited, err = newResolver(tx).source(ctx, *s.ParentID); err != nil {
			return nil, err
		}
	}
	before := EffectiveModes(nodes, inherited)
	nodes[0].Mode = mode
	after := EffectiveModes(nodes, inherited)

	now := sqlite.FormatTime(time.Now())
	if _, err := tx.ExecContext(ctx, `UPDATE sessions SET mode = ?, revision = revision + 1, updated_at = ? WHERE id = ?`,
		mode, now, s.ID); err != nil {
		return nil, fmt.Errorf("set mode of session %q: %w", s.ID, err)
	}
	out, err := get(ctx, tx, s.ID)
	if err != nil {
		return nil, err
	}
	if _, err := events.Append(ctx, tx, events.SessionModeChanged, s.ID, "", out.Revision, modeChange{
		Mode: out.Mode, PreviousMode: s.Mode, EffectiveMode: out.EffectiveMode, ModeSource: out.ModeSource,
		ReviewCancelled: cancelled,
	}); err != nil {
		return nil, err
	}
	for _, n := range nodes[1:] {
		if sameSource(before[n.ID], after[n.ID]) {
			continue
		}
		var rev int64
		if err := tx.QueryRowContext(ctx, `UPDATE sessions SET revision = revision + 1, updated_at = ? WHERE id = ?
			RETURNING revision`, now, n.ID).Scan(&rev); err != nil {
			return nil, fmt.Errorf("propagate mode to session %q: %w", n.ID, err)
		}
		eff := Build
		if after[n.ID] != nil {
			eff = Plan
		}
		if _, err := events.Append(ctx, tx, events.SessionModeChanged, n.ID, "", rev, modeChange{
			Mode: n.Mode, PreviousMode: n.Mode, EffectiveMode: eff, ModeSource: after[n.ID], ChangedBy: s.ID,
		}); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// modeChange is the data of a session.mode_changed event. ChangedBy names
// the ancestor whose mode change this descendant inherited.
type modeChange struct {
	Mode          Mode    `json:"mode"`
	PreviousMode  Mode    `json:"previous_mode"`
	EffectiveMode Mode    `json:"effective_mode"`
	ModeSource    *string `json:"mode_source"`
	ChangedBy     string  `json:"changed_by,omitempty"`
	// ReviewCancelled is the pending review this change cancelled.
	ReviewCancelled *closedReview `json:"review_cancelled,omitempty"`
}

func sameSource(a, b *string) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// Delete removes a session and all its descendants with everything they
// own. Errors: not_found, version_conflict, precondition_required.
func (st *Store) Delete(ctx context.Context, id string, pre revision.Precondition) error {
	return st.db.Write(ctx, func(tx *sql.Tx) error {
		s, err := get(ctx, tx, id)
		if err != nil {
			return err
		}
		if err := pre.Check(fmt.Sprintf("session %q", id), true, s.Revision); err != nil {
			return err
		}
		nodes, err := subtree(ctx, tx, id)
		if err != nil {
			return err
		}
		// The deepest sessions first, so a UI removes children before
		// their parent.
		for i := len(nodes) - 1; i >= 0; i-- {
			n := nodes[i]
			data := map[string]any{"id": n.ID, "deleted_with": id}
			if _, err := events.Append(ctx, tx, events.SessionDeleted, n.ID, "", 0, data); err != nil {
				return err
			}
			if err := recordDeletion(ctx, tx, n.ID); err != nil {
				return err
			}
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM sessions WHERE id = ?`, id); err != nil {
			return fmt.Errorf("delete session %q: %w", id, err)
		}
		return nil
	})
}

// recordDeletion remembers the revisions of a session, its plan and its
// todos as they are deleted, so that a session re-created under the same
// id continues above them and no ETag or approval If-Match of the old one
// can match the new one.
func recordDeletion(ctx context.Context, tx *sql.Tx, id string) error {
	for _, r := range []struct{ kind, query string }{
		{sqlite.FloorSession, `SELECT revision FROM sessions WHERE id = ?`},
		{sqlite.FloorSessionPlan, `SELECT revision FROM session_plans WHERE session_id = ?`},
		{sqlite.FloorTodos, `SELECT revision FROM session_todos WHERE session_id = ?`},
	} {
		var rev int64
		err := tx.QueryRowContext(ctx, r.query, id).Scan(&rev)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return fmt.Errorf("delete session %q: %w", id, err)
		}
		if err := sqlite.RecordDeletion(ctx, tx, r.kind, id, rev); err != nil {
			return err
		}
	}
	return nil
}

func encodeMetadata(m map[string]any) (string, error) {
	if m == nil {
		return "{}", nil
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return "", apierr.Invalid("metadata", "must be a JSON object")
	}
	if len(raw) > MaxMetadataBytes {
		return "", apierr.Invalid("metadata", "must be at most %d bytes encoded", MaxMetadataBytes)
	}
	return string(raw), nil
}

var idEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// newID returns a random session id: "ses_" and 80 random bits.
func newID() string {
	b := make([]byte, 10)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return "ses_" + idEncoding.EncodeToString(b)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
