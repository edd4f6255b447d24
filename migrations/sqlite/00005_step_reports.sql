-- +goose Up
-- step_reports holds the execution reports of a plan's steps, oldest first
-- by id. A report is a fact about what a worker did, so it is kept when a
-- later write renames or drops its step; it goes with the plan. id never
-- repeats (AUTOINCREMENT), so an event naming a report never names
-- another one after a plan is deleted and made again.
CREATE TABLE step_reports (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    plan          TEXT    NOT NULL REFERENCES plans (name) ON DELETE CASCADE,
    step_id       TEXT    NOT NULL,
    outcome       TEXT    NOT NULL CHECK (outcome IN ('success', 'failure', 'blocked')),
    details       TEXT    NOT NULL DEFAULT '',
    artifacts     TEXT    NOT NULL DEFAULT '[]',
    actor         TEXT    NOT NULL,
    worker        TEXT,
    timestamp     TEXT,
    plan_revision INTEGER NOT NULL,
    created_at    TEXT    NOT NULL
);
-- A plan's reports, and one step's, each in id order straight from an
-- index (its rowid order); the first also serves the cascade on delete.
CREATE INDEX step_reports_plan ON step_reports (plan);
CREATE INDEX step_reports_step ON step_reports (plan, step_id);

-- +goose Down
-- A rollback refuses, saying why, rather than lose data or a guarantee
-- (raise() works only in a trigger, hence the temporary one).
CREATE TEMP TABLE down_guard (x INTEGER);
-- +goose StatementBegin
CREATE TEMP TRIGGER down_guard BEFORE INSERT ON down_guard
BEGIN
    SELECT raise(ABORT, 'refusing to roll back 00005_step_reports: step reports hold rows, which it would delete; back up and delete them first if that is what you want');
END;
-- +goose StatementEnd
INSERT INTO down_guard SELECT 1 WHERE EXISTS (SELECT 1 FROM step_reports);
DROP TABLE down_guard;
DROP TABLE step_reports;
