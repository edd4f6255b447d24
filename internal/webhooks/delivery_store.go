package webhooks

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/db"
)

// ErrLostLease is returned to a deliverer that no longer holds a
// subscription's lease (it expired and another replica took it): it must
// stop delivering that subscription, and nothing it reports is recorded.
var ErrLostLease = errors.New("webhook lease lost to another deliverer")

// Acquire takes (or renews) the lease on subscription id for owner until
// ttl from now, unless another owner holds an unexpired one. Exactly one
// deliverer, on any replica, delivers a subscription at a time: the lease
// is taken in a write transaction, and on PostgreSQL every write
// transaction holds the one write advisory lock, so two replicas never
// both see it free. A killed replica's lease runs out and another takes
// over. It returns the subscription, and false when someone else holds it.
func (st *Store) Acquire(ctx context.Context, id, owner string, ttl time.Duration) (*Sub, bool, error) {
	var (
		out *Sub
		ok  bool
	)
	err := st.db.Write(ctx, func(tx *db.Tx) error {
		s, err := getSub(tx, id)
		if err != nil {
			return err
		}
		now := tx.NowText()
		if s.LeaseOwner != "" && s.LeaseOwner != owner && s.LeaseUntil > now {
			out = s
			return nil
		}
		until := db.FormatTime(tx.Now().Add(ttl))
		if _, err := tx.Exec(`UPDATE webhooks SET lease_owner = ?, lease_until = ? WHERE id = ?`, owner, until, id); err != nil {
			return fmt.Errorf("lease webhook %q: %w", id, err)
		}
		s.LeaseOwner, s.LeaseUntil, ok, out = owner, until, true, s
		return nil
	})
	return out, ok, err
}

// Release gives up owner's lease on id, so another replica may take it at
// once (a clean shutdown).
func (st *Store) Release(ctx context.Context, id, owner string) error {
	return st.db.Write(ctx, func(tx *db.Tx) error {
		_, err := tx.Exec(`UPDATE webhooks SET lease_owner = NULL, lease_until = NULL WHERE id = ? AND lease_owner = ?`, id, owner)
		return err
	})
}

// holds renews owner's lease on id inside tx, or returns ErrLostLease.
func holds(tx *db.Tx, id, owner string, ttl time.Duration) error {
	res, err := tx.Exec(`UPDATE webhooks SET lease_until = ? WHERE id = ? AND lease_owner = ?`,
		db.FormatTime(tx.Now().Add(ttl)), id, owner)
	if err != nil {
		return fmt.Errorf("renew the lease on webhook %q: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrLostLease
	}
	return nil
}

// Attempt is the outcome of one delivery attempt, to record.
type Attempt struct {
	Seq       int64
	MessageID string
	Type      string
	// Number is the attempt's number for this event (1 for the first).
	Number int
	// Manual names the pending manual delivery this attempt served (0:
	// a delivery in cursor order).
	Manual     int64
	OK         bool
	StatusCode int
	Latency    time.Duration
	Response   string
	Error      string
	// NextRetry is when the event is tried again after a failure (zero:
	// never, the schedule is used up and the subscription is failing).
	NextRetry time.Time
}

// Record logs an attempt, and for a delivery in cursor order moves the
// subscription on: a 2xx moves the cursor past the event; a failure sets
// the retry, or marks the subscription failing when the schedule is used
// up. It renews owner's lease, and records nothing but returns
// ErrLostLease when owner lost it.
func (st *Store) Record(ctx context.Context, id, owner string, ttl time.Duration, a Attempt) error {
	return st.db.Write(ctx, func(tx *db.Tx) error {
		if err := holds(tx, id, owner, ttl); err != nil {
			return err
		}
		state := api.DeliveryFailed
		if a.OK {
			state = api.DeliverySucceeded
		}
		var code sql.NullInt64
		if a.StatusCode != 0 {
			code = sql.NullInt64{Int64: int64(a.StatusCode), Valid: true}
		}
		var next sql.NullString
		if !a.OK && !a.NextRetry.IsZero() && a.Manual == 0 {
			next = nullable(db.FormatTime(a.NextRetry))
		}
		now := tx.NowText()
		latency := a.Latency.Milliseconds()
		if a.Manual != 0 {
			if _, err := tx.Exec(`UPDATE webhook_deliveries SET state = ?, status_code = ?, latency_ms = ?, response = ?, error = ?, created_at = ?
				WHERE id = ?`, state, code, latency, a.Response, a.Error, now, a.Manual); err != nil {
				return fmt.Errorf("record a delivery of webhook %q: %w", id, err)
			}
			return nil
		}
		if _, err := tx.Exec(`INSERT INTO webhook_deliveries (webhook_id, event_seq, message_id, type, attempt, manual, state,
			status_code, latency_ms, response, error, next_retry_at, created_at) VALUES (?, ?, ?, ?, ?, 0, ?, ?, ?, ?, ?, ?, ?)`,
			id, a.Seq, a.MessageID, a.Type, a.Number, state, code, latency, a.Response, a.Error, next, now); err != nil {
			return fmt.Errorf("record a delivery of webhook %q: %w", id, err)
		}
		var err error
		switch {
		case a.OK:
			_, err = tx.Exec(`UPDATE webhooks SET cursor = ?, attempts = 0, next_attempt_at = NULL WHERE id = ? AND cursor < ?`, a.Seq, id, a.Seq)
		case next.Valid:
			_, err = tx.Exec(`UPDATE webhooks SET attempts = ?, next_attempt_at = ? WHERE id = ?`, a.Number, next, id)
		default:
			_, err = tx.Exec(`UPDATE webhooks SET attempts = ?, next_attempt_at = NULL, state = ?, state_reason = ?, updated_at = ? WHERE id = ?`,
				a.Number, api.WebhookFailing, fmt.Sprintf("event %d failed %d attempts over the whole retry schedule (last: %s); "+
					"redeliver it or PATCH state active to retry from it", a.Seq, a.Number, a.Error), now, id)
		}
		if err != nil {
			return fmt.Errorf("move webhook %q on: %w", id, err)
		}
		return nil
	})
}

// Delivered logs successful attempts in cursor order, made in a row, and
// moves the cursor to cursor (at least past the last of them), in one
// transaction: a deliverer sends a run of events and records them
// together, so a busy subscription costs one write per run, not per event.
// A crash before the record re-sends the run, with the same webhook-ids.
// It renews owner's lease (ErrLostLease).
func (st *Store) Delivered(ctx context.Context, id, owner string, ttl time.Duration, ok []Attempt, cursor int64) error {
	return st.db.Write(ctx, func(tx *db.Tx) error {
		if err := holds(tx, id, owner, ttl); err != nil {
			return err
		}
		now := tx.NowText()
		for _, a := range ok {
			if _, err := tx.Exec(`INSERT INTO webhook_deliveries (webhook_id, event_seq, message_id, type, attempt, manual, state,
				status_code, latency_ms, response, error, created_at) VALUES (?, ?, ?, ?, ?, 0, ?, ?, ?, ?, '', ?)`,
				id, a.Seq, a.MessageID, a.Type, a.Number, api.DeliverySucceeded, a.StatusCode, a.Latency.Milliseconds(), a.Response, now); err != nil {
				return fmt.Errorf("record deliveries of webhook %q: %w", id, err)
			}
		}
		_, err := tx.Exec(`UPDATE webhooks SET cursor = ?, attempts = 0, next_attempt_at = NULL WHERE id = ? AND cursor < ?`, cursor, id, cursor)
		if err != nil {
			return fmt.Errorf("move webhook %q on: %w", id, err)
		}
		return nil
	})
}

// Skip moves id's cursor to cursor: the events up to it match none of the
// subscription's filters. It renews owner's lease (ErrLostLease).
func (st *Store) Skip(ctx context.Context, id, owner string, ttl time.Duration, cursor int64) error {
	return st.db.Write(ctx, func(tx *db.Tx) error {
		if err := holds(tx, id, owner, ttl); err != nil {
			return err
		}
		_, err := tx.Exec(`UPDATE webhooks SET cursor = ? WHERE id = ? AND cursor < ?`, cursor, id, cursor)
		return err
	})
}

// Renew renews owner's lease on id (ErrLostLease).
func (st *Store) Renew(ctx context.Context, id, owner string, ttl time.Duration) error {
	return st.db.Write(ctx, func(tx *db.Tx) error { return holds(tx, id, owner, ttl) })
}

// MarkFailing stops id's deliveries with reason, for the operator to read
// (GET /v1/webhooks/{id}, the console) and act on.
func (st *Store) MarkFailing(ctx context.Context, id, owner string, ttl time.Duration, reason string) error {
	return st.db.Write(ctx, func(tx *db.Tx) error {
		if err := holds(tx, id, owner, ttl); err != nil {
			return err
		}
		_, err := tx.Exec(`UPDATE webhooks SET state = ?, state_reason = ?, next_attempt_at = NULL, updated_at = ? WHERE id = ?`,
			api.WebhookFailing, reason, tx.NowText(), id)
		return err
	})
}

// NextManual returns the oldest redelivery of id waiting to be sent, or
// nil.
func (st *Store) NextManual(ctx context.Context, id string) (*api.Delivery, error) {
	d, err := scanDelivery(st.db.Reader(ctx).QueryRow(`SELECT `+deliveryColumns+` FROM webhook_deliveries
		WHERE webhook_id = ? AND state = ? ORDER BY id LIMIT 1`, id, api.DeliveryPending))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("find redeliveries of webhook %q: %w", id, err)
	}
	return &d, nil
}

// Retention of the delivery log.
const (
	// DefaultLogAge is how long attempts stay in the delivery log.
	DefaultLogAge = 7 * 24 * time.Hour
	// DefaultLogRows is how many of its newest attempts each subscription
	// keeps.
	DefaultLogRows = 1000
)

// Prune deletes the delivery log's attempts older than maxAge (0: any
// age), and beyond the newest keep of each subscription (0: no cap).
// Pending redeliveries stay. It returns how many it deleted.
func (st *Store) Prune(ctx context.Context, now time.Time, maxAge time.Duration, keep int) (int64, error) {
	var n int64
	err := st.db.Write(ctx, func(tx *db.Tx) error {
		if maxAge > 0 {
			res, err := tx.Exec(`DELETE FROM webhook_deliveries WHERE state <> ? AND created_at < ?`, api.DeliveryPending, db.FormatTime(now.Add(-maxAge)))
			if err != nil {
				return fmt.Errorf("prune the delivery log: %w", err)
			}
			d, _ := res.RowsAffected()
			n += d
		}
		if keep > 0 {
			res, err := tx.Exec(`DELETE FROM webhook_deliveries WHERE state <> ? AND id <= (
				SELECT d.id FROM webhook_deliveries d WHERE d.webhook_id = webhook_deliveries.webhook_id
				ORDER BY d.id DESC LIMIT 1 OFFSET ?)`, api.DeliveryPending, keep)
			if err != nil {
				return fmt.Errorf("prune the delivery log: %w", err)
			}
			d, _ := res.RowsAffected()
			n += d
		}
		return nil
	})
	return n, err
}
