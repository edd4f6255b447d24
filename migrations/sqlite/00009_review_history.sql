-- +goose Up
-- session_plan_revisions keeps the replaced revisions of each session plan,
-- so a reviewer can read and diff what the agent wrote before; the write
-- that replaces a revision copies it here and prunes what falls outside
-- --plan-history, in the same transaction.
CREATE TABLE session_plan_revisions (
    session_id TEXT    NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    revision   INTEGER NOT NULL,
    content    TEXT    NOT NULL,
    author     TEXT    NOT NULL,
    updated_at TEXT    NOT NULL,
    PRIMARY KEY (session_id, revision)
);

-- review_comments holds the comments of the current review's decision,
-- anchored to lines of the reviewed plan revision, as a JSON array.
ALTER TABLE sessions ADD COLUMN review_comments TEXT NOT NULL DEFAULT '[]';
-- The inbox: sessions with a pending review.
CREATE INDEX sessions_review_state ON sessions (review_state, pk);

-- session_reviews keeps every review that ended: decided (approved,
-- rejected) or closed without a decision (withdrawn by a plan rewrite,
-- cancelled by leaving plan mode), so no decision is ever lost.
CREATE TABLE session_reviews (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id    TEXT    NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    plan_revision INTEGER,
    state         TEXT    NOT NULL CHECK (state IN ('approved', 'rejected', 'withdrawn', 'cancelled')),
    rationale     TEXT,
    requested_at  TEXT,
    ended_at      TEXT    NOT NULL,
    ended_by      TEXT    NOT NULL,
    feedback      TEXT,
    comments      TEXT    NOT NULL DEFAULT '[]'
);
CREATE INDEX session_reviews_session ON session_reviews (session_id, id);

-- +goose Down
-- Rolling back would drop the review history and the session plans'
-- earlier revisions, which nothing can rebuild: refuse while they hold
-- anything, saying why (raise() works only in a trigger, hence the
-- temporary one), and otherwise undo the schema.
CREATE TEMP TABLE down_guard (x INTEGER);
-- +goose StatementBegin
CREATE TEMP TRIGGER down_guard BEFORE INSERT ON down_guard
BEGIN
    SELECT raise(ABORT, 'refusing to roll back 00009_review_history: it holds the review history and earlier session plan revisions, which a rollback would lose; every decision must stay readable');
END;
-- +goose StatementEnd
INSERT INTO down_guard SELECT 1 WHERE EXISTS (SELECT 1 FROM session_reviews) OR EXISTS (SELECT 1 FROM session_plan_revisions);
DROP TABLE down_guard;
DROP TABLE session_reviews;
DROP INDEX sessions_review_state;
ALTER TABLE sessions DROP COLUMN review_comments;
DROP TABLE session_plan_revisions;
