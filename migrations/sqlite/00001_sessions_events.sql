-- +goose Up
-- Sessions form a tree through parent_id; deleting a session deletes its
-- descendants (ON DELETE CASCADE). pk gives creation order for keyset
-- pagination; AUTOINCREMENT keeps it from ever being reused.
CREATE TABLE sessions (
    pk                   INTEGER PRIMARY KEY AUTOINCREMENT,
    id                   TEXT    NOT NULL UNIQUE,
    title                TEXT    NOT NULL DEFAULT '',
    agent                TEXT    NOT NULL DEFAULT '',
    parent_id            TEXT    REFERENCES sessions(id) ON DELETE CASCADE,
    mode                 TEXT    NOT NULL DEFAULT 'build' CHECK (mode IN ('build', 'plan')),
    harness              INTEGER NOT NULL DEFAULT 0 CHECK (harness IN (0, 1)),
    metadata             TEXT    NOT NULL DEFAULT '{}',
    review_state         TEXT    NOT NULL DEFAULT 'none'
                         CHECK (review_state IN ('none', 'pending', 'approved', 'rejected')),
    review_plan_revision INTEGER,
    review_rationale     TEXT,
    review_feedback      TEXT,
    review_requested_at  TEXT,
    review_decided_at    TEXT,
    review_decided_by    TEXT,
    revision             INTEGER NOT NULL DEFAULT 1,
    created_at           TEXT    NOT NULL,
    updated_at           TEXT    NOT NULL
);
CREATE INDEX sessions_parent ON sessions (parent_id, pk);
CREATE INDEX sessions_mode ON sessions (mode, pk);

-- events is the append-only change log. Every change appends its event in
-- the same transaction, so the log and the data never disagree. session_path
-- is "/root/.../self/" at the time of the event, so a subtree subscription
-- still finds events of sessions that were deleted since.
CREATE TABLE events (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    type         TEXT    NOT NULL,
    time         TEXT    NOT NULL,
    actor        TEXT    NOT NULL,
    session_id   TEXT,
    session_path TEXT,
    plan         TEXT,
    revision     INTEGER,
    data         TEXT    NOT NULL DEFAULT '{}'
);
CREATE INDEX events_time ON events (time);

-- +goose Down
-- A rollback refuses, saying why, rather than lose data or a guarantee
-- (raise() works only in a trigger, hence the temporary one).
CREATE TEMP TABLE down_guard (x INTEGER);
-- +goose StatementBegin
CREATE TEMP TRIGGER down_guard BEFORE INSERT ON down_guard
BEGIN
    SELECT raise(ABORT, 'refusing to roll back 00001_sessions_events: sessions or events hold rows, which it would delete (and event seqs would start again at 1 under the cursors clients hold); back up and delete them first if that is what you want');
END;
-- +goose StatementEnd
INSERT INTO down_guard SELECT 1 WHERE EXISTS (SELECT 1 FROM sessions) OR EXISTS (SELECT 1 FROM events);
DROP TABLE down_guard;
DROP TABLE events;
DROP TABLE sessions;
