-- +goose Up
-- plans holds the current revision of every shared plan. steps is a JSON
-- array of step objects (structured steps build on it without reshaping
-- the table). steps and content come last: SQLite reads a row's columns in
-- order, so a listing that stops at updated_at never touches the overflow
-- pages of a large plan body.
CREATE TABLE plans (
    name       TEXT    NOT NULL PRIMARY KEY,
    title      TEXT    NOT NULL DEFAULT '',
    author     TEXT    NOT NULL DEFAULT '',
    status     TEXT    NOT NULL DEFAULT '',
    revision   INTEGER NOT NULL CHECK (revision >= 1),
    created_at TEXT    NOT NULL,
    updated_at TEXT    NOT NULL,
    steps      TEXT    NOT NULL DEFAULT '[]',
    content    TEXT    NOT NULL
);
-- Keyset listing by name, filtered by status, author or both: each filter
-- combination has an index that yields its rows already in name order, so
-- a page is one index range, never a scan or a sort.
CREATE INDEX plans_status ON plans (status, name);
CREATE INDEX plans_author ON plans (author, name);
CREATE INDEX plans_status_author ON plans (status, author, name);

-- plan_revisions keeps the whole document of earlier revisions of a plan,
-- for history; the write that replaces a revision copies it here and prunes
-- what falls outside --plan-history, in the same transaction.
CREATE TABLE plan_revisions (
    name       TEXT    NOT NULL REFERENCES plans (name) ON DELETE CASCADE,
    revision   INTEGER NOT NULL,
    title      TEXT    NOT NULL,
    author     TEXT    NOT NULL,
    status     TEXT    NOT NULL,
    updated_at TEXT    NOT NULL,
    steps      TEXT    NOT NULL,
    content    TEXT    NOT NULL,
    PRIMARY KEY (name, revision)
);

-- +goose Down
-- A rollback refuses, saying why, rather than lose data or a guarantee
-- (raise() works only in a trigger, hence the temporary one).
CREATE TEMP TABLE down_guard (x INTEGER);
-- +goose StatementBegin
CREATE TEMP TRIGGER down_guard BEFORE INSERT ON down_guard
BEGIN
    SELECT raise(ABORT, 'refusing to roll back 00002_plans: plans hold rows, which it would delete with their history; back up and delete them first if that is what you want');
END;
-- +goose StatementEnd
INSERT INTO down_guard SELECT 1 WHERE EXISTS (SELECT 1 FROM plans);
DROP TABLE down_guard;
DROP TABLE plan_revisions;
DROP TABLE plans;
