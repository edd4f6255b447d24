-- +goose Up
-- webhooks are the subscriptions of POST /v1/webhooks: a target, the
-- webhook event types it wants (a JSON array, internal/webhooks.Types), an
-- optional session subtree (session_path, resolved at creation) or shared
-- plan, and the delivery state. The event log is the outbox: cursor is the
-- last event seq the subscription is done with (delivered with a 2xx, or
-- not matching its filters); attempts and next_attempt_at are the retries
-- of the event after it. lease_owner/lease_until name the one process
-- (replica) that delivers it now. The secret is kept in the clear because
-- every delivery is signed with it; answers never carry it after creation.
CREATE TABLE webhooks (
    id                  TEXT    NOT NULL PRIMARY KEY,
    url                 TEXT    NOT NULL,
    events              TEXT    NOT NULL,
    format              TEXT    NOT NULL CHECK (format IN ('standard', 'slack')),
    session_id          TEXT,
    session_path        TEXT,
    plan                TEXT,
    secret              TEXT    NOT NULL,
    previous_secret     TEXT,
    previous_expires_at TEXT,
    state               TEXT    NOT NULL CHECK (state IN ('active', 'paused', 'failing')),
    state_reason        TEXT    NOT NULL DEFAULT '',
    cursor              INTEGER NOT NULL,
    attempts            INTEGER NOT NULL DEFAULT 0,
    next_attempt_at     TEXT,
    lease_owner         TEXT,
    lease_until         TEXT,
    created_at          TEXT    NOT NULL,
    updated_at          TEXT    NOT NULL
);
-- webhook_deliveries is the delivery log: one row per attempt (state
-- succeeded or failed), and manual redeliveries waiting for their turn
-- (state pending). Bounded like the event log (webhooks.Store.Prune).
CREATE TABLE webhook_deliveries (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    webhook_id    TEXT    NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    event_seq     INTEGER NOT NULL,
    message_id    TEXT    NOT NULL,
    type          TEXT    NOT NULL,
    attempt       INTEGER NOT NULL,
    manual        INTEGER NOT NULL DEFAULT 0,
    state         TEXT    NOT NULL CHECK (state IN ('pending', 'succeeded', 'failed')),
    status_code   INTEGER,
    latency_ms    INTEGER,
    response      TEXT    NOT NULL DEFAULT '',
    error         TEXT    NOT NULL DEFAULT '',
    next_retry_at TEXT,
    created_at    TEXT    NOT NULL
);
CREATE INDEX webhook_deliveries_by_webhook ON webhook_deliveries (webhook_id, id);

-- +goose Down
-- A rollback refuses while subscriptions exist, saying why, rather than
-- forget them and their secrets (raise() works only in a trigger, hence
-- the temporary one).
CREATE TEMP TABLE down_guard (x INTEGER);
-- +goose StatementBegin
CREATE TEMP TRIGGER down_guard BEFORE INSERT ON down_guard
BEGIN
    SELECT raise(ABORT, 'refusing to roll back 00013_webhooks: webhook subscriptions exist; delete them first (planserver webhook delete ID) if that is what you want');
END;
-- +goose StatementEnd
INSERT INTO down_guard SELECT 1 WHERE EXISTS (SELECT 1 FROM webhooks);
DROP TABLE down_guard;
DROP TABLE webhook_deliveries;
DROP TABLE webhooks;
