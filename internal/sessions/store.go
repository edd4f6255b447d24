package sessions

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/apierr"
	"github.com/planserver/planserver/internal/db"
	"github.com/planserver/planserver/internal/events"
	"github.com/planserver/planserver/internal/pagetoken"
	"github.com/planserver/planserver/internal/revision"
	"github.com/planserver/planserver/internal/validation"
	"github.com/planserver/planserver/internal/versioned"
)

// MaxMetadataBytes bounds a session's metadata object, encoded as JSON.
const MaxMetadataBytes = 64 << 10

// Store persists sessions and everything they own. Every change runs in
// one write transaction that also appends its events.
type Store struct {
	db  *db.DB
	cfg Config
}

// Config tunes a Store.
type Config struct {
	// History is how many revisions of a session plan stay readable, the
	// current one included (--plan-history); versioned.DefaultHistory
	// when 0.
	History int
}

// NewStore returns a Store on d.
func NewStore(d *db.DB, cfg Config) *Store {
	if cfg.History <= 0 {
		cfg.History = versioned.DefaultHistory
	}
	return &Store{db: d, cfg: cfg}
}

const sessionColumns = `pk, ancestry, id, title, agent, parent_id, mode, harness, metadata,
	review_state, review_plan_revision, review_rationale, review_feedback,
	review_requested_at, review_decided_at, review_decided_by, review_comments,
	revision, created_at, updated_at, external_id, enforcement, review_decided_by_person,
	build_scope, review_scope`

// record is a session as stored, with its identity, before its effective
// mode is resolved from its chain.
type record struct {
	Session
	pk       int64
	ancestry string
	// grant is the session's own scope grant (build_scope), nil when none.
	grant *api.ScopeGrant
}

func (r *record) link() Link {
	return Link{PK: r.pk, ID: r.ID, Ancestry: r.ancestry, Mode: r.Mode, Harness: r.Harness, Revision: r.Revision, Grant: r.grant}
}

type scanner interface{ Scan(dest ...any) error }

func scanRecord(row scanner) (*record, error) {
	var (
		r        record
		parent   sql.NullString
		harness  int
		metadata string
		comments string
		external sql.NullString
		enforced string
		person   sql.NullString
		grant    sql.NullString
	)
	err := row.Scan(&r.pk, &r.ancestry, &r.ID, &r.Title, &r.Agent, &parent, &r.Mode, &harness, &metadata,
		&r.Review.State, &r.Review.PlanRevision, &r.Review.Rationale, &r.Review.Feedback,
		&r.Review.RequestedAt, &r.Review.DecidedAt, &r.Review.DecidedBy, &comments,
		&r.Revision, &r.CreatedAt, &r.UpdatedAt, &external, &enforced, &person,
		&grant, &r.Review.Scope)
	if err != nil {
		return nil, err
	}
	if r.grant, err = decodeGrant(r.ID, grant); err != nil {
		return nil, err
	}
	if external.Valid {
		r.ExternalID = &external.String
	}
	if err := json.Unmarshal([]byte(enforced), &r.Enforcement); err != nil {
		return nil, fmt.Errorf("decode enforcement of session %q: %w", r.ID, err)
	}
	if r.Enforcement == nil {
		r.Enforcement = []api.Enforcement{}
	}
	if r.Review.DecidedByPerson, err = events.UnmarshalPerson(person); err != nil {
		return nil, fmt.Errorf("decode the decider of session %q: %w", r.ID, err)
	}
	if parent.Valid {
		r.ParentID = &parent.String
	}
	r.Harness = harness == 1
	if err := json.Unmarshal([]byte(metadata), &r.Metadata); err != nil {
		return nil, fmt.Errorf("decode metadata of session %q: %w", r.ID, err)
	}
	if r.Metadata == nil {
		r.Metadata = map[string]any{}
	}
	if err := json.Unmarshal([]byte(comments), &r.Review.Comments); err != nil {
		return nil, fmt.Errorf("decode review comments of session %q: %w", r.ID, err)
	}
	if r.Review.Comments == nil {
		r.Review.Comments = []ReviewComment{}
	}
	return &r, nil
}

// load reads one session as stored. Errors: not_found.
func load(q db.Querier, id string) (*record, error) {
	r, err := scanRecord(q.QueryRow(`SELECT `+sessionColumns+` FROM sessions WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, NotFound(id)
	}
	if err != nil {
		return nil, fmt.Errorf("get session %q: %w", id, err)
	}
	return r, nil
}

// loadLinks reads the sessions with the given pks, in one query.
func loadLinks(q db.Querier, pks []int64) (map[int64]Link, error) {
	out := make(map[int64]Link, len(pks))
	if len(pks) == 0 {
		return out, nil
	}
	args := make([]any, len(pks))
	for i, pk := range pks {
		args[i] = pk
	}
	rows, err := q.Query(`SELECT pk, id, ancestry, mode, harness, build_scope FROM sessions WHERE pk IN (?`+
		strings.Repeat(", ?", len(pks)-1)+`)`, args...)
	if err != nil {
		return nil, fmt.Errorf("load session chain: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			l       Link
			harness int
			grant   sql.NullString
		)
		if err := rows.Scan(&l.PK, &l.ID, &l.Ancestry, &l.Mode, &harness, &grant); err != nil {
			return nil, fmt.Errorf("load session chain: %w", err)
		}
		l.Harness = harness == 1
		if l.Grant, err = decodeGrant(l.ID, grant); err != nil {
			return nil, err
		}
		out[l.PK] = l
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("load session chain: %w", err)
	}
	return out, nil
}

// resolve fills in the effective mode of every record from its chain,
// loading every ancestor they have in one query.
func resolve(q db.Querier, rs ...*record) error {
	var pks []int64
	seen := map[int64]bool{}
	for _, r := range rs {
		anc, err := ancestryPKs(r.ancestry)
		if err != nil {
			return err
		}
		for _, pk := range anc {
			if !seen[pk] {
				seen[pk] = true
				pks = append(pks, pk)
			}
		}
	}
	links, err := loadLinks(q, pks)
	if err != nil {
		return err
	}
	for _, r := range rs {
		chainOf(r.link(), links).resolved(&r.Session)
	}
	return nil
}

// chain returns r's chain, loaded.
func chain(q db.Querier, r *record) (Chain, error) {
	pks, err := ancestryPKs(r.ancestry)
	if err != nil {
		return nil, err
	}
	links, err := loadLinks(q, pks)
	if err != nil {
		return nil, err
	}
	return chainOf(r.link(), links), nil
}

// get loads one session with its effective mode. Errors: not_found.
func get(q db.Querier, id string) (*record, error) {
	r, err := load(q, id)
	if err != nil {
		return nil, err
	}
	if err := resolve(q, r); err != nil {
		return nil, err
	}
	return r, nil
}

// getToWrite loads session id, with its effective mode, for a write in tx
// and checks the client's precondition against its revision. Errors:
// not_found, version_conflict, precondition_required.
func getToWrite(tx *db.Tx, id string, pre revision.Precondition) (*record, error) {
	r, err := get(tx, id)
	if err != nil {
		return nil, err
	}
	if err := resource(id, r.Revision).Check(pre); err != nil {
		return nil, err
	}
	return r, nil
}

// Get returns the session id. Errors: not_found.
func (st *Store) Get(ctx context.Context, id string) (*Session, error) {
	// A root session's chain is itself: one statement answers, with no
	// transaction around it. A sub-session's row and chain are read in one
	// snapshot, so its revision and its effective mode always agree.
	r, err := load(st.db.Reader(ctx), id)
	if err != nil {
		return nil, err
	}
	if r.ancestry == "/" {
		Chain{r.link()}.resolved(&r.Session)
		return &r.Session, nil
	}
	var s *Session
	err = st.db.Read(ctx, func(tx *db.Tx) error {
		r, err := get(tx, id)
		if err == nil {
			s = &r.Session
		}
		return err
	})
	return s, err
}

// Locate returns the identity of session id: its path, which an agent
// token's scope is compared with. Errors: not_found.
func (st *Store) Locate(ctx context.Context, id string) (*events.Session, error) {
	var pk int64
	var ancestry string
	err := st.db.Reader(ctx).QueryRow(`SELECT pk, ancestry FROM sessions WHERE id = ?`, id).Scan(&pk, &ancestry)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, NotFound(id)
	}
	if err != nil {
		return nil, fmt.Errorf("find session %q: %w", id, err)
	}
	return Link{PK: pk, ID: id, Ancestry: ancestry}.Ref(), nil
}

// PlanModeOf reports whether the session with identity pk is in plan mode
// (its effective mode), and whether that session still exists: what the
// authorizer asks before an agent executes steps (auth.SessionLookup).
func (st *Store) PlanModeOf(ctx context.Context, pk int64) (plan, found bool, err error) {
	var mode Mode
	err = st.db.Read(ctx, func(tx *db.Tx) error {
		links, err := loadLinks(tx, []int64{pk})
		if err != nil {
			return err
		}
		l, ok := links[pk]
		if !ok {
			return nil
		}
		found = true
		c, err := chain(tx, &record{Session: Session{ID: l.ID, Mode: l.Mode, Harness: l.Harness}, pk: pk, ancestry: l.Ancestry})
		if err != nil {
			return err
		}
		mode, _ = c.Effective()
		return nil
	})
	return mode == Plan, found, err
}

// resource is session id as a versioned resource.
func resource(id string, rev int64) versioned.Resource {
	return versioned.Resource{Kind: versioned.Session, Key: id, What: fmt.Sprintf("session %q", id), Revision: rev}
}

// Create stores a new session. Errors: invalid_argument (bad field, unknown
// parent), already_exists (id taken), unsupported_mode (a harness session
// that would be in plan mode).
func (st *Store) Create(ctx context.Context, in api.SessionCreate) (*Session, error) {
	if err := validation.Struct(in); err != nil {
		return nil, err
	}
	metadata, err := encodeMetadata(in.Metadata)
	if err != nil {
		return nil, err
	}
	id := newID()
	if in.ID != nil {
		id = *in.ID
	}
	mode := Mode(in.Mode)
	if mode == "" {
		mode = Build
	}
	var created *Session
	err = st.db.Write(ctx, func(tx *db.Tx) error {
		self, c, err := placeNew(tx, id, mode, in)
		if err != nil {
			// A taken id is reported first, whatever else is wrong with
			// the request. The insert below finds it on the way that
			// succeeds; this read pays for the ways that fail.
			taken, terr := idTaken(tx, id)
			switch {
			case terr != nil:
				return terr
			case taken:
				return alreadyExists(id)
			}
			return err
		}
		var parent, external sql.NullString
		if in.ParentID != "" {
			parent = sql.NullString{String: in.ParentID, Valid: true}
		}
		if in.ExternalID != nil {
			external = sql.NullString{String: *in.ExternalID, Valid: true}
		}
		now := tx.NowText()
		// The revision above the floor of a deleted namesake is taken in
		// the insert itself: one statement and, on PostgreSQL, one round
		// trip fewer.
		first, floorArgs := resource(id, 0).FirstRevision()
		err = tx.QueryRow(`INSERT INTO sessions
			(ancestry, id, title, agent, parent_id, mode, harness, metadata, created_at, updated_at, external_id, revision)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, `+first+`) ON CONFLICT (id) DO NOTHING RETURNING pk, revision`,
			append([]any{self.Ancestry, id, in.Title, in.Agent, parent, mode, boolInt(in.Harness), metadata, now, now, external},
				floorArgs...)...).Scan(&self.PK, &self.Revision)
		if errors.Is(err, sql.ErrNoRows) {
			return alreadyExists(id)
		}
		if err != nil {
			return fmt.Errorf("create session %q: %w", id, err)
		}
		created = newSession(in, self, c, now)
		return events.Record(tx, events.New{Type: events.SessionCreated, Session: self.Ref(), Revision: self.Revision, Data: created})
	})
	if err != nil {
		return nil, err
	}
	return created, nil
}

// placeNew checks where a new session would go and returns its link (pk
// and revision not yet known) and its chain, itself last. Errors:
// invalid_argument (unknown parent), already_exists (external id taken),
// unsupported_mode (a harness session that would be in plan mode).
func placeNew(tx *db.Tx, id string, mode Mode, in api.SessionCreate) (Link, Chain, error) {
	self := Link{ID: id, Ancestry: "/", Mode: mode, Harness: in.Harness}
	var c Chain
	if in.ParentID != "" {
		p, err := load(tx, in.ParentID)
		if apierr.CodeOf(err) == apierr.NotFound {
			return self, nil, UnknownParent(in.ParentID)
		}
		if err != nil {
			return self, nil, err
		}
		if c, err = chain(tx, p); err != nil {
			return self, nil, err
		}
		self.Ancestry = p.link().Path()
	}
	if in.ExternalID != nil {
		if err := externalIDFree(tx, self.Ancestry, in.ParentID, *in.ExternalID); err != nil {
			return self, nil, err
		}
	}
	c = append(c, self)
	if eff, _ := c.Effective(); eff == Plan {
		if err := harnessInPlan(id, []Link{self}, func(Link) *string { return c.ModeSource() }); err != nil {
			return self, nil, err
		}
	}
	return self, c, nil
}

// newSession is the session Create just stored as self, under chain c:
// what the request gave, and for the rest the columns' defaults (no review,
// no enforcement), without reading the row back. TestSessionCreateAnswersAsGet
// holds it to the row as read.
func newSession(in api.SessionCreate, self Link, c Chain, now string) *Session {
	s := &Session{
		ID: self.ID, Title: in.Title, Agent: in.Agent, Mode: self.Mode, Harness: self.Harness,
		Metadata: in.Metadata, Revision: self.Revision, CreatedAt: now, UpdatedAt: now,
		ExternalID: in.ExternalID, Enforcement: []api.Enforcement{},
		Review: noReview(),
	}
	if s.Metadata == nil {
		s.Metadata = map[string]any{}
	}
	if in.ParentID != "" {
		parent := in.ParentID
		s.ParentID = &parent
	}
	c.resolved(s)
	return s
}

// idTaken reports whether a session has the id.
func idTaken(tx *db.Tx, id string) (bool, error) {
	var taken int
	if err := tx.QueryRow(`SELECT count(*) FROM sessions WHERE id = ?`, id).Scan(&taken); err != nil {
		return false, fmt.Errorf("create session %q: %w", id, err)
	}
	return taken > 0, nil
}

// alreadyExists is the error of creating session id when it is taken.
func alreadyExists(id string) error {
	return apierr.New(apierr.AlreadyExists, "session %q already exists", id)
}

// ListQuery selects a page of sessions.
type ListQuery struct {
	// Subtree, when set, limits the list to the session with that path
	// and its descendants: an agent token's view. It is set by access
	// control, not by the client.
	Subtree  string `json:"-"`
	ParentID string `json:"parent_id" validate:"omitempty,session_id"`
	Mode     string `json:"mode" validate:"omitempty,oneof=build plan"`
	// ReviewState keeps the sessions whose review is in that state:
	// pending ones are a reviewer's inbox.
	ReviewState string `json:"review_state" validate:"omitempty,oneof=none pending approved rejected"`
	// ExternalID keeps the session the host knows by that id (with
	// ParentID: the one child of that parent).
	ExternalID string `json:"external_id" validate:"omitempty,external_id"`
	Limit      int    `json:"limit" validate:"gte=0,lte=1000"`
	PageToken  string `json:"page_token"`
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
	filters := []string{q.ParentID, q.Mode, q.Subtree, q.ReviewState}
	if q.ExternalID != "" {
		// Only when given, so that page tokens issued before the filter
		// existed stay valid.
		filters = append(filters, q.ExternalID)
	}
	fp := pagetoken.Fingerprint(filters...)
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
	var page []*record
	err = st.db.Read(ctx, func(tx *db.Tx) error {
		query, args := listSQL(q, after, limit+1)
		rows, err := tx.Query(query, args...)
		if err != nil {
			return fmt.Errorf("list sessions: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			r, err := scanRecord(rows)
			if err != nil {
				return fmt.Errorf("list sessions: %w", err)
			}
			page = append(page, r)
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("list sessions: %w", err)
		}
		rows.Close()
		return resolve(tx, page...)
	})
	if err != nil {
		return nil, "", err
	}
	next := ""
	if len(page) > limit {
		page = page[:limit]
		next = pagetoken.Encode("sessions", fp, strconv.FormatInt(page[limit-1].pk, 10))
	}
	out := make([]*Session, len(page))
	for i, r := range page {
		out[i] = &r.Session
	}
	return out, next, nil
}

// listSQL is the query of a page of at most limit sessions after pk
// after that match q's filters, in creation order.
func listSQL(q ListQuery, after int64, limit int) (string, []any) {
	var where db.Where
	where.Add("pk > ?", after)
	where.Equal("parent_id", q.ParentID) // implies isChild: sessions_parent serves it
	where.Equal("mode", q.Mode)
	where.Equal("review_state", q.ReviewState)
	if q.ReviewState != "" && q.ReviewState != ReviewNone {
		where.Add(withReview)
	}
	where.Equal("external_id", q.ExternalID)
	if q.Subtree != "" {
		lo, hi := events.SubtreeRange(q.Subtree)
		where.Add("(ancestry || pk || '/') >= ? AND (ancestry || pk || '/') < ?", lo, hi)
	}
	return `SELECT ` + sessionColumns + ` FROM sessions WHERE ` + where.SQL() + ` ORDER BY pk LIMIT ?`, where.Args(limit)
}

// Patch is an RFC 7396 JSON merge patch of a session's title and metadata,
// as its members were sent.
type Patch map[string]json.RawMessage

// Update applies a merge patch. A patch that changes nothing is a success
// without a revision bump or event. Errors: not_found, invalid_argument,
// version_conflict, precondition_required.
func (st *Store) Update(ctx context.Context, id string, patch Patch, pre revision.Precondition) (*Session, error) {
	var out *Session
	err := st.db.Write(ctx, func(tx *db.Tx) error {
		r, err := getToWrite(tx, id, pre)
		if err != nil {
			return err
		}
		res := resource(id, r.Revision)
		title, metadata, err := applyPatch(&r.Session, patch)
		if err != nil {
			return err
		}
		oldMeta, _ := json.Marshal(r.Metadata)
		newMeta, err := encodeMetadata(metadata)
		if err != nil {
			return err
		}
		if title == r.Title && string(oldMeta) == newMeta {
			out = &r.Session
			return nil
		}
		rev, err := res.Next(tx)
		if err != nil {
			return err
		}
		now := tx.NowText()
		if _, err := tx.Exec(`UPDATE sessions SET title = ?, metadata = ?, revision = ?, updated_at = ? WHERE pk = ?`,
			title, newMeta, rev, now, r.pk); err != nil {
			return fmt.Errorf("update session %q: %w", id, err)
		}
		// The answer is r as just stored, not read back
		// (TestUpdateAnswersAsStored).
		r.Title, r.Metadata, r.Revision, r.UpdatedAt = title, metadata, rev, now
		out = &r.Session
		err = events.Record(tx, events.New{Type: events.SessionUpdated, Session: r.link().Ref(), Revision: rev, Data: out})
		return err
	})
	return out, err
}

// patchFields are the members a session merge patch may set; the title
// rule is the one of SessionCreate.
type patchFields struct {
	Title string `json:"title" validate:"title"`
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
			} else if err := validation.Struct(patchFields{Title: title}); err != nil {
				e, _ := apierr.As(err)
				fields = append(fields, e.Fields...)
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

// The predicates of the partial indexes of sessions (migration 00021),
// written into the queries that use those indexes: a planner uses a
// partial index only for a query that implies its predicate, and neither
// can tell from a bound parameter that it does (PostgreSQL's generic
// plans never know the value). Only "parent_id = ?" needs no help, since
// it holds for no NULL. TestSessionQueriesUseTheirIndexes holds each.
const (
	// isChild: sessions_parent and sessions_ancestry hold no roots, since
	// a root is nobody's child or descendant.
	isChild = `parent_id IS NOT NULL`
	// withReview: sessions_review_state holds no session without a review.
	withReview = `review_state <> 'none'`
)

// subtreeSQL reads the descendants of a session: those whose ancestry is
// in the range of its path (events.SubtreeRange).
const subtreeSQL = `SELECT pk, id, ancestry, mode, harness, revision, build_scope FROM sessions
	WHERE ancestry >= ? AND ancestry < ? AND ` + isChild

// subtree returns the descendants of the session with path path.
func subtree(q db.Querier, path string) ([]Link, error) {
	lo, hi := events.SubtreeRange(path)
	rows, err := q.Query(subtreeSQL, lo, hi)
	if err != nil {
		return nil, fmt.Errorf("descendants of %s: %w", path, err)
	}
	defer rows.Close()
	var out []Link
	for rows.Next() {
		var (
			l       Link
			harness int
			grant   sql.NullString
		)
		if err := rows.Scan(&l.PK, &l.ID, &l.Ancestry, &l.Mode, &harness, &l.Revision, &grant); err != nil {
			return nil, fmt.Errorf("descendants of %s: %w", path, err)
		}
		l.Harness = harness == 1
		if l.Grant, err = decodeGrant(l.ID, grant); err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("descendants of %s: %w", path, err)
	}
	return out, nil
}

// SetMode sets a session's own mode. Setting the mode it already has is a
// success without a revision bump or event. Moving from plan to build
// cancels a pending review and keeps the session's own scope grant; when
// the session has none and its plan declares a scope, that move lifts the
// scope, which only a caller that mayLift makes. Errors: not_found,
// unsupported_mode, version_conflict, precondition_required,
// permission_denied.
func (st *Store) SetMode(ctx context.Context, id string, mode Mode, pre revision.Precondition, mayLift bool) (*Session, error) {
	var out *Session
	err := st.db.Write(ctx, func(tx *db.Tx) error {
		r, err := getToWrite(tx, id, pre)
		if err != nil {
			return err
		}
		if r.Mode == mode {
			out = &r.Session
			return nil
		}
		if mode == Build {
			p, err := loadSessionPlan(tx, id)
			if err != nil {
				return err
			}
			if err := leavingLifts(&r.Session, p, r.grant, mayLift); err != nil {
				return err
			}
		}
		rev, err := resource(id, r.Revision).Next(tx)
		if err != nil {
			return err
		}
		review, cancelled := r.Review, (*closedReview)(nil)
		if mode == Build {
			// Leaving plan mode directly cancels a pending review: there
			// is nothing left for a human to let the session do.
			review, cancelled = closeReview(r.Review, rev, "the session's mode was set to build directly")
			if cancelled != nil {
				if err := recordReview(tx, id, ended(r.Review, api.ReviewCancelled, tx.NowText(), events.ActorFrom(tx.Context()), events.PersonFrom(tx.Context()))); err != nil {
					return err
				}
			}
		}
		s, err := applyChange(tx, r, rev, selfChange{mode: mode, grant: r.grant, review: review, cancelled: cancelled})
		if err == nil {
			out = s
		}
		return err
	})
	return out, err
}

// selfChange is a change of a session's own state that its descendants
// may inherit: its mode and its scope grant, with its review after.
type selfChange struct {
	mode  Mode
	grant *api.ScopeGrant
	// review is the session's review after the change; cancelled, when
	// set, the pending review the change ended, recorded in the event.
	review    Review
	cancelled *closedReview
	// scopeReason says why the grant changes (scopeGranted, scopeLifted).
	scopeReason string
}

// applyChange stores change c of session r as revision rev
// (resource(r.ID, r.Revision).Next), propagates what its descendants
// inherit (effective mode, build scope), and appends the events: a
// session.mode_changed when the mode changes, a session.scope_changed
// when the grant does, and the same for each descendant the change moves.
func applyChange(tx *db.Tx, r *record, rev int64, c selfChange) (*Session, error) {
	ch, err := chain(tx, r)
	if err != nil {
		return nil, err
	}
	desc, err := subtree(tx, r.link().Path())
	if err != nil {
		return nil, err
	}
	self := r.link()
	self.Mode, self.Grant = c.mode, c.grant
	moved, err := changeSelf(ch, desc, self)
	if err != nil {
		return nil, err
	}
	grant, err := encodeGrant(c.grant)
	if err != nil {
		return nil, err
	}
	now := tx.NowText()
	if err := saveReview(tx, r, c.review, rev, now, `, mode = ?, build_scope = ?`, c.mode, grant); err != nil {
		return nil, err
	}
	out := r.reviewed(c.review, rev, now)
	out.Mode, out.grant = c.mode, c.grant
	after := slices.Clone(ch)
	after[len(after)-1] = out.link()
	after.resolved(&out.Session)
	ref := out.link().Ref()
	if c.mode != r.Mode {
		if err := events.Record(tx, events.New{Type: events.SessionModeChanged, Session: ref, Revision: rev,
			Data: modeChange{Mode: out.Mode, PreviousMode: r.Mode, EffectiveMode: out.EffectiveMode, ModeSource: out.ModeSource,
				ReviewCancelled: c.cancelled}}); err != nil {
			return nil, err
		}
	}
	if !sameGrant(r.grant, c.grant) {
		if err := events.Record(tx, events.New{Type: events.SessionScopeChanged, Session: ref, Revision: rev,
			Data: scopeChange{BuildScope: out.BuildScope, Grant: c.grant, Previous: r.grant, Reason: c.scopeReason,
				Change: scopeDiff(r.grant, c.grant)}}); err != nil {
			return nil, err
		}
	}
	for _, d := range moved {
		drev, err := resource(d.ID, d.Revision).Next(tx)
		if err != nil {
			return nil, err
		}
		if _, err := tx.Exec(`UPDATE sessions SET revision = ?, updated_at = ? WHERE pk = ?`, drev, now, d.PK); err != nil {
			return nil, fmt.Errorf("propagate mode to session %q: %w", d.ID, err)
		}
		if d.modeMoved {
			eff := Build
			if d.source != nil {
				eff = Plan
			}
			if err := events.Record(tx, events.New{Type: events.SessionModeChanged, Session: d.Ref(), Revision: drev,
				Data: modeChange{Mode: d.Mode, PreviousMode: d.Mode, EffectiveMode: eff, ModeSource: d.source, ChangedBy: r.ID}}); err != nil {
				return nil, err
			}
		}
		if d.scopeMoved {
			if err := events.Record(tx, events.New{Type: events.SessionScopeChanged, Session: d.Ref(), Revision: drev,
				Data: scopeChange{BuildScope: d.scope, Reason: scopeInherited, ChangedBy: r.ID}}); err != nil {
				return nil, err
			}
		}
	}
	return &out.Session, nil
}

// LiftScope is a human's decision to end the scoped build of session id:
// its own scope grant goes, and it (and every descendant it limited)
// builds without it, unless an ancestor's grant still limits it. Only an
// admin lifts a scope: the transport asks auth first. Errors: not_found
// (no such session, or no grant of its own: the scope comes from an
// ancestor, lifted there), version_conflict, precondition_required.
func (st *Store) LiftScope(ctx context.Context, id string, pre revision.Precondition) (*Session, error) {
	var out *Session
	err := st.db.Write(ctx, func(tx *db.Tx) error {
		r, err := getToWrite(tx, id, pre)
		if err != nil {
			return err
		}
		if r.grant == nil {
			detail := fmt.Sprintf("session %q has no scope of its own to lift", id)
			if r.BuildScope != nil {
				detail += fmt.Sprintf("; its build is limited by the scope of session %q: lift it there", r.BuildScope.SessionID)
			}
			return apierr.New(apierr.NotFound, "%s", detail)
		}
		rev, err := resource(id, r.Revision).Next(tx)
		if err != nil {
			return err
		}
		out, err = applyChange(tx, r, rev, selfChange{mode: r.Mode, review: r.Review, scopeReason: scopeLifted})
		return err
	})
	return out, err
}

// reviewed is session r as saveReview leaves it (the extra assignments
// aside): with review, as revision rev, updated at now. A write answers
// with it instead of reading the row back; the tests hold each answer to
// a GET of the row (TestSessionCreateAnswersAsGet, TestReviewAnswersAsStored).
func (r *record) reviewed(review Review, rev int64, now string) *record {
	out := *r
	out.Review, out.Revision, out.UpdatedAt = review, rev, now
	out.Review.Comments = nonNil(review.Comments) // as stored, and as read back
	return &out
}

// saveReview stores the review of session cur as revision rev, with extra
// assignments (", mode = ?") and their arguments, in one update.
// review_state is set only when it changes: SQLite rewrites the entries of
// every index on a column the SET list names, changed or not, and the
// inbox's index is on it.
func saveReview(tx *db.Tx, cur *record, r Review, rev int64, now string, extra string, extraArgs ...any) error {
	pk := cur.pk
	comments, err := json.Marshal(nonNil(r.Comments))
	if err != nil {
		return fmt.Errorf("encode review comments of session %d: %w", pk, err)
	}
	set := `review_plan_revision = ?, review_rationale = ?, review_feedback = ?, review_requested_at = ?,
		review_decided_at = ?, review_decided_by = ?, review_comments = ?, revision = ?, updated_at = ?,
		review_decided_by_person = ?, review_scope = ?`
	args := []any{r.PlanRevision, r.Rationale, r.Feedback, r.RequestedAt, r.DecidedAt, r.DecidedBy, string(comments), rev, now,
		events.MarshalPerson(r.DecidedByPerson), r.Scope}
	if r.State != cur.Review.State {
		set += `, review_state = ?`
		args = append(args, r.State)
	}
	args = append(append(args, extraArgs...), pk)
	_, err = tx.Exec(`UPDATE sessions SET `+set+extra+` WHERE pk = ?`, args...)
	if err != nil {
		return fmt.Errorf("save review of session %d: %w", pk, err)
	}
	return nil
}

// recordReview keeps a review that ended in the session's review history.
func recordReview(tx *db.Tx, sessionID string, rec ReviewRecord) error {
	comments, err := json.Marshal(nonNil(rec.Comments))
	if err != nil {
		return fmt.Errorf("encode review comments of session %q: %w", sessionID, err)
	}
	if _, err := tx.Exec(`INSERT INTO session_reviews
		(session_id, plan_revision, state, rationale, requested_at, ended_at, ended_by, feedback, comments, ended_by_person, scope)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, sessionID, rec.PlanRevision, rec.State, rec.Rationale, rec.RequestedAt,
		rec.EndedAt, rec.EndedBy, rec.Feedback, string(comments), events.MarshalPerson(rec.EndedByPerson), rec.Scope); err != nil {
		return fmt.Errorf("record the review of session %q: %w", sessionID, err)
	}
	return nil
}

func nonNil(c []ReviewComment) []ReviewComment {
	if c == nil {
		return []ReviewComment{}
	}
	return c
}

// revokeSubtreeTokensSQL revokes the agent tokens of a session (its pk)
// and of its descendants (the range of its path).
const revokeSubtreeTokensSQL = `UPDATE tokens SET revoked_at = ? WHERE revoked_at IS NULL AND session_pk IN
	(SELECT pk FROM sessions WHERE pk = ? OR (ancestry >= ? AND ancestry < ? AND ` + isChild + `))`

// Delete removes a session and all its descendants with everything they
// own, revokes the agent tokens bound to any of them, and remembers their
// revisions. Errors: not_found, version_conflict, precondition_required.
func (st *Store) Delete(ctx context.Context, id string, pre revision.Precondition) error {
	return st.db.Write(ctx, func(tx *db.Tx) error {
		r, err := load(tx, id)
		if err != nil {
			return err
		}
		if err := resource(id, r.Revision).Check(pre); err != nil {
			return err
		}
		desc, err := subtree(tx, r.link().Path())
		if err != nil {
			return err
		}
		sortByDepth(desc)
		nodes := append([]Link{r.link()}, desc...)
		// The deepest sessions first, so a UI removes children before
		// their parent.
		for i := len(nodes) - 1; i >= 0; i-- {
			n := nodes[i]
			if err := events.Record(tx, events.New{Type: events.SessionDeleted, Session: n.Ref(),
				Data: map[string]any{"id": n.ID, "deleted_with": id}}); err != nil {
				return err
			}
			if err := forget(tx, n); err != nil {
				return err
			}
		}
		// An agent token dies with its session: it was granted that
		// session, not a later one of the same id.
		lo, hi := events.SubtreeRange(r.link().Path())
		if _, err := tx.Exec(revokeSubtreeTokensSQL, tx.NowText(), r.pk, lo, hi); err != nil {
			return fmt.Errorf("revoke the tokens of session %q: %w", id, err)
		}
		if _, err := tx.Exec(`DELETE FROM sessions WHERE pk = ?`, r.pk); err != nil {
			return fmt.Errorf("delete session %q: %w", id, err)
		}
		return nil
	})
}

// forget records the revisions of a session, its plan and its todos as
// they are deleted, so a session re-created under the same id continues
// above them and no ETag or approval If-Match of the old one can match the
// new one. s is the session as the deleting transaction loaded it.
func forget(tx *db.Tx, s Link) error {
	if err := resource(s.ID, s.Revision).Deleted(tx); err != nil {
		return err
	}
	for _, r := range []struct {
		resource func(id string, rev int64) versioned.Resource
		query    string
	}{
		{sessionPlanResource, `SELECT revision FROM session_plans WHERE session_id = ?`},
		{todosResource, `SELECT revision FROM session_todos WHERE session_id = ?`},
	} {
		var rev int64
		err := tx.QueryRow(r.query, s.ID).Scan(&rev)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return fmt.Errorf("delete session %q: %w", s.ID, err)
		}
		if err := r.resource(s.ID, rev).Deleted(tx); err != nil {
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
