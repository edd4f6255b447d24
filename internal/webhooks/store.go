package webhooks

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/apierr"
	"github.com/planserver/planserver/internal/db"
	"github.com/planserver/planserver/internal/pagetoken"
)

// Store keeps the subscriptions, their delivery state and the delivery
// log. Its writes append no event: a delivery must never make news of its
// own.
type Store struct {
	db *db.DB
	// onChange is called after each write that can give a deliverer work
	// (OnChange).
	onChange func()
}

// NewStore returns the store on d.
func NewStore(d *db.DB) *Store { return &Store{db: d} }

// OnChange makes the store call fn after each write that can give a
// deliverer work: a subscription created, updated or rotated, a
// redelivery asked. Call it before the store is used.
func (st *Store) OnChange(fn func()) { st.onChange = fn }

func (st *Store) changed() {
	if st.onChange != nil {
		st.onChange()
	}
}

// Sub is a subscription with what the deliverer needs beyond its API
// view: the session path it follows and its secrets.
type Sub struct {
	api.Webhook
	SessionPath    string
	Secret         string
	PreviousSecret string
	LeaseOwner     string
	LeaseUntil     string
}

// Secrets returns the secrets that sign a delivery at now: the current
// one, and the previous one while the rotation's overlap lasts.
func (s *Sub) Secrets(now time.Time) []string {
	out := []string{s.Secret}
	if s.PreviousSecret != "" && s.PreviousSecretExpiresAt != nil && db.FormatTime(now) < *s.PreviousSecretExpiresAt {
		out = append(out, s.PreviousSecret)
	}
	return out
}

const subColumns = `id, url, events, format, session_id, session_path, plan, secret, previous_secret, previous_expires_at,
	state, state_reason, cursor, attempts, next_attempt_at, lease_owner, lease_until, created_at, updated_at`

func scanSub(row interface{ Scan(...any) error }) (*Sub, error) {
	var (
		s                                                Sub
		evs                                              string
		session, path, plan, prev, prevExp, next, lo, lu sql.NullString
	)
	if err := row.Scan(&s.ID, &s.URL, &evs, &s.Format, &session, &path, &plan, &s.Secret, &prev, &prevExp,
		&s.State, &s.StateReason, &s.Cursor, &s.Attempts, &next, &lo, &lu, &s.CreatedAt, &s.UpdatedAt); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(evs), &s.Events); err != nil {
		return nil, fmt.Errorf("webhook %s: events is not a JSON list: %w", s.ID, err)
	}
	s.Session, s.SessionPath, s.Plan, s.PreviousSecret = session.String, path.String, plan.String, prev.String
	s.LeaseOwner, s.LeaseUntil = lo.String, lu.String
	if prevExp.Valid && prev.Valid {
		s.PreviousSecretExpiresAt = &prevExp.String
	}
	if next.Valid {
		s.NextAttemptAt = &next.String
	}
	return &s, nil
}

func notFound(id string) error {
	return apierr.New(apierr.NotFound, "no webhook %q (GET /v1/webhooks lists them)", id)
}

func getSub(q db.Querier, id string) (*Sub, error) {
	s, err := scanSub(q.QueryRow(`SELECT `+subColumns+` FROM webhooks WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound(id)
	}
	if err != nil {
		return nil, fmt.Errorf("get webhook %q: %w", id, err)
	}
	return s, nil
}

// sessionPath resolves a session filter to the live session's path.
// Errors: invalid_argument when no such session exists.
func sessionPath(q db.Querier, id string) (string, error) {
	var path string
	err := q.QueryRow(`SELECT ancestry || pk || '/' FROM sessions WHERE id = ?`, id).Scan(&path)
	if errors.Is(err, sql.ErrNoRows) {
		return "", apierr.Invalid("session", "no session %q: a subscription follows an existing session and its descendants", id)
	}
	if err != nil {
		return "", fmt.Errorf("find session %q: %w", id, err)
	}
	return path, nil
}

// logHead returns the seq of the newest event ever appended, so a new
// subscription starts after it.
func logHead(q db.Querier) (int64, error) {
	var head, pruned int64
	err := q.QueryRow(`SELECT coalesce((SELECT max(seq) FROM events), 0),
		coalesce((SELECT pruned_through FROM event_retention WHERE id = 1), 0)`).Scan(&head, &pruned)
	if err != nil {
		return 0, fmt.Errorf("read event log head: %w", err)
	}
	return max(head, pruned), nil
}

func nullable(s string) sql.NullString { return sql.NullString{String: s, Valid: s != ""} }

// Create adds a subscription, delivering the events appended after it,
// and returns it with its secret (the only time the secret is shown).
// Errors: invalid_argument.
func (st *Store) Create(ctx context.Context, in api.WebhookCreate) (*api.WebhookCreated, error) {
	if err := ValidateURL(in.URL); err != nil {
		return nil, err
	}
	evs, err := ValidateEvents(in.Events)
	if err != nil {
		return nil, err
	}
	format, err := ValidateFormat(in.Format)
	if err != nil {
		return nil, err
	}
	if err := ValidateFilters(in.Session, in.Plan); err != nil {
		return nil, err
	}
	raw, _ := json.Marshal(evs)
	id, secret := newID(), NewSecret()
	var out *Sub
	err = st.db.Write(ctx, func(tx *db.Tx) error {
		path := ""
		if in.Session != "" {
			var err error
			if path, err = sessionPath(tx, in.Session); err != nil {
				return err
			}
		}
		head, err := logHead(tx)
		if err != nil {
			return err
		}
		now := tx.NowText()
		_, err = tx.Exec(`INSERT INTO webhooks (id, url, events, format, session_id, session_path, plan, secret, state, cursor, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			id, in.URL, string(raw), format, nullable(in.Session), nullable(path), nullable(in.Plan), secret, api.WebhookActive, head, now, now)
		if err != nil {
			return fmt.Errorf("create webhook: %w", err)
		}
		out, err = getSub(tx, id)
		return err
	})
	if err != nil {
		return nil, err
	}
	st.changed()
	return &api.WebhookCreated{Webhook: out.Webhook, Secret: secret}, nil
}

// Get returns the subscription id. Errors: not_found.
func (st *Store) Get(ctx context.Context, id string) (*api.Webhook, error) {
	s, err := getSub(st.db.Reader(ctx), id)
	if err != nil {
		return nil, err
	}
	return &s.Webhook, nil
}

// Load returns the subscription id with its secrets, for the deliverer.
func (st *Store) Load(ctx context.Context, id string) (*Sub, error) {
	return getSub(st.db.Reader(ctx), id)
}

// Page sizes of the lists.
const (
	DefaultLimit = 50
	MaxLimit     = 1000
)

func checkLimit(limit int) (int, error) {
	switch {
	case limit == 0:
		return DefaultLimit, nil
	case limit < 0 || limit > MaxLimit:
		return 0, apierr.Invalid("limit", "must be between 1 and %d", MaxLimit)
	}
	return limit, nil
}

// List returns a page of subscriptions by id. Errors: invalid_argument.
func (st *Store) List(ctx context.Context, limit int, pageToken string) ([]api.Webhook, string, error) {
	limit, err := checkLimit(limit)
	if err != nil {
		return nil, "", err
	}
	after, err := pagetoken.Decode("webhooks", "", pageToken)
	if err != nil {
		return nil, "", err
	}
	subs, err := st.all(ctx, after, limit+1)
	if err != nil {
		return nil, "", err
	}
	next := ""
	if len(subs) > limit {
		subs = subs[:limit]
		next = pagetoken.Encode("webhooks", "", subs[limit-1].ID)
	}
	out := make([]api.Webhook, len(subs))
	for i, s := range subs {
		out[i] = s.Webhook
	}
	return out, next, nil
}

// all returns up to limit subscriptions after id after (every one when
// limit is 0), by id.
func (st *Store) all(ctx context.Context, after string, limit int) ([]*Sub, error) {
	q := `SELECT ` + subColumns + ` FROM webhooks WHERE id > ? ORDER BY id`
	args := []any{after}
	if limit > 0 {
		q += ` LIMIT ?`
		args = append(args, limit)
	}
	rows, err := st.db.Reader(ctx).Query(q, args...)
	if err != nil {
		return nil, fmt.Errorf("list webhooks: %w", err)
	}
	defer rows.Close()
	var out []*Sub
	for rows.Next() {
		s, err := scanSub(rows)
		if err != nil {
			return nil, fmt.Errorf("list webhooks: %w", err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list webhooks: %w", err)
	}
	return out, nil
}

// All returns every subscription, for the deliverer's scheduler.
func (st *Store) All(ctx context.Context) ([]*Sub, error) { return st.all(ctx, "", 0) }

// Update applies a patch. Resuming (state active) a failing or paused
// subscription retries at once; a cursor that fell behind the retained
// log moves to its oldest retained event. Errors: invalid_argument,
// not_found.
func (st *Store) Update(ctx context.Context, id string, p api.WebhookPatch) (*api.Webhook, error) {
	if p.URL != nil {
		if err := ValidateURL(*p.URL); err != nil {
			return nil, err
		}
	}
	var evs []string
	if p.Events != nil {
		var err error
		if evs, err = ValidateEvents(*p.Events); err != nil {
			return nil, err
		}
	}
	if p.Format != nil {
		if _, err := ValidateFormat(*p.Format); err != nil || *p.Format == "" {
			return nil, apierr.Invalid("format", "unknown format %q; want standard or slack", truncate(*p.Format, 100))
		}
	}
	var session, plan string
	if p.Session != nil {
		session = *p.Session
	}
	if p.Plan != nil {
		plan = *p.Plan
	}
	if err := ValidateFilters(session, plan); err != nil {
		return nil, err
	}
	if p.State != nil && *p.State != api.WebhookActive && *p.State != api.WebhookPaused {
		return nil, apierr.Invalid("state", "want active (resume) or paused; failing is set by the deliverer; got %q", truncate(*p.State, 100))
	}
	var out *Sub
	err := st.db.Write(ctx, func(tx *db.Tx) error {
		s, err := getSub(tx, id)
		if err != nil {
			return err
		}
		if p.URL != nil {
			s.URL = *p.URL
		}
		if p.Events != nil {
			s.Events = evs
		}
		if p.Format != nil {
			s.Format = *p.Format
		}
		if p.Session != nil {
			s.Session, s.SessionPath = session, ""
			if session != "" {
				if s.SessionPath, err = sessionPath(tx, session); err != nil {
					return err
				}
			}
		}
		if p.Plan != nil {
			s.Plan = plan
		}
		var next sql.NullString
		if s.NextAttemptAt != nil {
			next = nullable(*s.NextAttemptAt)
		}
		if p.State != nil && *p.State != s.State {
			if *p.State == api.WebhookActive {
				// A resumed subscription retries at once, its schedule afresh.
				s.Attempts, next = 0, sql.NullString{}
				var pruned int64
				if err := tx.QueryRow(`SELECT coalesce((SELECT pruned_through FROM event_retention WHERE id = 1), 0)`).Scan(&pruned); err != nil {
					return fmt.Errorf("update webhook %q: %w", id, err)
				}
				s.Cursor = max(s.Cursor, pruned)
			}
			s.State, s.StateReason = *p.State, ""
		}
		raw, _ := json.Marshal(s.Events)
		_, err = tx.Exec(`UPDATE webhooks SET url = ?, events = ?, format = ?, session_id = ?, session_path = ?, plan = ?,
			state = ?, state_reason = ?, cursor = ?, attempts = ?, next_attempt_at = ?, updated_at = ? WHERE id = ?`,
			s.URL, string(raw), s.Format, nullable(s.Session), nullable(s.SessionPath), nullable(s.Plan),
			s.State, s.StateReason, s.Cursor, s.Attempts, next, tx.NowText(), id)
		if err != nil {
			return fmt.Errorf("update webhook %q: %w", id, err)
		}
		out, err = getSub(tx, id)
		return err
	})
	if err != nil {
		return nil, err
	}
	st.changed()
	return &out.Webhook, nil
}

// Delete removes a subscription and its delivery log. Errors: not_found.
func (st *Store) Delete(ctx context.Context, id string) error {
	return st.db.Write(ctx, func(tx *db.Tx) error {
		if _, err := tx.Exec(`DELETE FROM webhook_deliveries WHERE webhook_id = ?`, id); err != nil {
			return fmt.Errorf("delete webhook %q: %w", id, err)
		}
		res, err := tx.Exec(`DELETE FROM webhooks WHERE id = ?`, id)
		if err != nil {
			return fmt.Errorf("delete webhook %q: %w", id, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return notFound(id)
		}
		return nil
	})
}

// Rotate gives a subscription a new secret and returns it. The old one
// keeps signing beside it for overlap (both signatures in every delivery)
// and is then forgotten. Errors: invalid_argument, not_found.
func (st *Store) Rotate(ctx context.Context, id string, overlap time.Duration) (*api.WebhookCreated, error) {
	if overlap < 0 || overlap > MaxOverlap {
		return nil, apierr.Invalid("overlap_seconds", "must be between 0 and %d", int64(MaxOverlap/time.Second))
	}
	secret := NewSecret()
	var out *Sub
	err := st.db.Write(ctx, func(tx *db.Tx) error {
		s, err := getSub(tx, id)
		if err != nil {
			return err
		}
		prev, exp := nullable(s.Secret), nullable(db.FormatTime(tx.Now().Add(overlap)))
		if overlap == 0 {
			prev, exp = sql.NullString{}, sql.NullString{}
		}
		if _, err := tx.Exec(`UPDATE webhooks SET secret = ?, previous_secret = ?, previous_expires_at = ?, updated_at = ? WHERE id = ?`,
			secret, prev, exp, tx.NowText(), id); err != nil {
			return fmt.Errorf("rotate the secret of webhook %q: %w", id, err)
		}
		out, err = getSub(tx, id)
		return err
	})
	if err != nil {
		return nil, err
	}
	st.changed()
	return &api.WebhookCreated{Webhook: out.Webhook, Secret: secret}, nil
}

const deliveryColumns = `id, webhook_id, event_seq, message_id, type, attempt, manual, state, status_code, latency_ms, response, error, next_retry_at, created_at`

func scanDelivery(row interface{ Scan(...any) error }) (api.Delivery, error) {
	var (
		d       api.Delivery
		manual  int
		code    sql.NullInt64
		latency sql.NullInt64
		next    sql.NullString
	)
	if err := row.Scan(&d.ID, &d.WebhookID, &d.EventSeq, &d.MessageID, &d.Type, &d.Attempt, &manual, &d.State,
		&code, &latency, &d.Response, &d.Error, &next, &d.CreatedAt); err != nil {
		return d, err
	}
	d.Manual = manual != 0
	if code.Valid {
		c := int(code.Int64)
		d.StatusCode = &c
	}
	if latency.Valid {
		d.LatencyMS = &latency.Int64
	}
	if next.Valid {
		d.NextRetryAt = &next.String
	}
	return d, nil
}

// Deliveries returns a page of a subscription's delivery log, newest
// first. Errors: invalid_argument, not_found.
func (st *Store) Deliveries(ctx context.Context, id string, limit int, pageToken string) ([]api.Delivery, string, error) {
	limit, err := checkLimit(limit)
	if err != nil {
		return nil, "", err
	}
	after, err := pagetoken.Decode("webhook_deliveries", pagetoken.Fingerprint(id), pageToken)
	if err != nil {
		return nil, "", err
	}
	before := int64(1 << 62)
	if after != "" {
		if before, err = strconv.ParseInt(after, 10, 64); err != nil {
			return nil, "", apierr.Invalid("page_token", "not a page token of this list; pass next_page_token back unchanged")
		}
	}
	out := []api.Delivery{}
	err = st.db.Read(ctx, func(tx *db.Tx) error {
		if _, err := getSub(tx, id); err != nil {
			return err
		}
		rows, err := tx.Query(`SELECT `+deliveryColumns+` FROM webhook_deliveries WHERE webhook_id = ? AND id < ? ORDER BY id DESC LIMIT ?`, id, before, limit+1)
		if err != nil {
			return fmt.Errorf("list deliveries of webhook %q: %w", id, err)
		}
		defer rows.Close()
		for rows.Next() {
			d, err := scanDelivery(rows)
			if err != nil {
				return fmt.Errorf("list deliveries of webhook %q: %w", id, err)
			}
			out = append(out, d)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, "", err
	}
	next := ""
	if len(out) > limit {
		out = out[:limit]
		next = pagetoken.Encode("webhook_deliveries", pagetoken.Fingerprint(id), strconv.FormatInt(out[limit-1].ID, 10))
	}
	return out, next, nil
}

// Redeliver sends the event of delivery again. An event the subscription
// is done with (at or before its cursor) is queued as a manual delivery,
// sent once, out of the cursor's order, with the same webhook-id. An
// event still ahead of the cursor is on its way anyway: a failing or
// paused subscription is resumed and retried at once (an active one has
// its retry moved to now). Returns the queued delivery, or the delivery
// itself when nothing was queued. Errors: not_found.
func (st *Store) Redeliver(ctx context.Context, id string, delivery int64) (*api.Delivery, bool, error) {
	var (
		out    api.Delivery
		queued bool
	)
	err := st.db.Write(ctx, func(tx *db.Tx) error {
		s, err := getSub(tx, id)
		if err != nil {
			return err
		}
		d, err := scanDelivery(tx.QueryRow(`SELECT `+deliveryColumns+` FROM webhook_deliveries WHERE webhook_id = ? AND id = ?`, id, delivery))
		if errors.Is(err, sql.ErrNoRows) {
			return apierr.New(apierr.NotFound, "webhook %q has no delivery %d (GET /v1/webhooks/%s/deliveries lists them)", id, delivery, id)
		}
		if err != nil {
			return fmt.Errorf("redeliver %d of webhook %q: %w", delivery, id, err)
		}
		now := tx.NowText()
		if d.EventSeq > s.Cursor {
			_, err := tx.Exec(`UPDATE webhooks SET state = ?, state_reason = '', attempts = 0, next_attempt_at = NULL, updated_at = ? WHERE id = ?`,
				api.WebhookActive, now, id)
			out = d
			return err
		}
		queued = true
		var newID int64
		err = tx.QueryRow(`INSERT INTO webhook_deliveries (webhook_id, event_seq, message_id, type, attempt, manual, state, created_at)
			VALUES (?, ?, ?, ?, 1, 1, ?, ?) RETURNING id`,
			id, d.EventSeq, d.MessageID, d.Type, api.DeliveryPending, now).Scan(&newID)
		if err != nil {
			return fmt.Errorf("redeliver %d of webhook %q: %w", delivery, id, err)
		}
		out, err = scanDelivery(tx.QueryRow(`SELECT `+deliveryColumns+` FROM webhook_deliveries WHERE id = ?`, newID))
		return err
	})
	if err != nil {
		return nil, false, err
	}
	st.changed()
	return &out, queued, nil
}
