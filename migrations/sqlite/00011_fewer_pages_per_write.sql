-- +goose Up
-- Fewer pages per write: every change appends an event, so each index on
-- events is a page more in every commit's WAL frames (planbench's WAL
-- figures, docs/benchmarks.md).
--
-- events_time goes: retention by age walks the log from its oldest event
-- in seq order and stops at the first one young enough (events.Prune), so
-- nothing needs the log ordered by time.
DROP INDEX events_time;
-- events_plan holds only the events of a shared plan: a session's events
-- (plan IS NULL) never cost a page of it. Every read through it names a
-- plan (plan = ?), which implies the index's condition.
DROP INDEX events_plan;
CREATE INDEX events_plan ON events (plan, seq) WHERE plan IS NOT NULL;
-- plan_contents and plan_revisions are keyed by (name, content_rev) and
-- (name, revision) and read by those keys only: WITHOUT ROWID keeps one
-- b-tree for each, not a table and an index beside it (a page less for
-- each in every write of a plan).
CREATE TABLE plan_contents_by_key (
    name        TEXT    NOT NULL REFERENCES plans (name) ON DELETE CASCADE,
    content_rev INTEGER NOT NULL,
    content     TEXT    NOT NULL,
    PRIMARY KEY (name, content_rev)
) WITHOUT ROWID;
INSERT INTO plan_contents_by_key (name, content_rev, content)
    SELECT name, content_rev, content FROM plan_contents;
DROP TABLE plan_contents;
ALTER TABLE plan_contents_by_key RENAME TO plan_contents;
CREATE TABLE plan_revisions_by_key (
    name        TEXT    NOT NULL REFERENCES plans (name) ON DELETE CASCADE,
    revision    INTEGER NOT NULL,
    title       TEXT    NOT NULL,
    author      TEXT    NOT NULL,
    status      TEXT    NOT NULL,
    updated_at  TEXT    NOT NULL,
    steps       TEXT    NOT NULL,
    content_rev INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (name, revision)
) WITHOUT ROWID;
INSERT INTO plan_revisions_by_key (name, revision, title, author, status, updated_at, steps, content_rev)
    SELECT name, revision, title, author, status, updated_at, steps, content_rev FROM plan_revisions;
DROP TABLE plan_revisions;
ALTER TABLE plan_revisions_by_key RENAME TO plan_revisions;

-- +goose Down
CREATE TABLE plan_revisions_with_rowid (
    name        TEXT    NOT NULL REFERENCES plans (name) ON DELETE CASCADE,
    revision    INTEGER NOT NULL,
    title       TEXT    NOT NULL,
    author      TEXT    NOT NULL,
    status      TEXT    NOT NULL,
    updated_at  TEXT    NOT NULL,
    steps       TEXT    NOT NULL,
    content_rev INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (name, revision)
);
INSERT INTO plan_revisions_with_rowid (name, revision, title, author, status, updated_at, steps, content_rev)
    SELECT name, revision, title, author, status, updated_at, steps, content_rev FROM plan_revisions;
DROP TABLE plan_revisions;
ALTER TABLE plan_revisions_with_rowid RENAME TO plan_revisions;
CREATE TABLE plan_contents_with_rowid (
    name        TEXT    NOT NULL REFERENCES plans (name) ON DELETE CASCADE,
    content_rev INTEGER NOT NULL,
    content     TEXT    NOT NULL,
    PRIMARY KEY (name, content_rev)
);
INSERT INTO plan_contents_with_rowid (name, content_rev, content)
    SELECT name, content_rev, content FROM plan_contents;
DROP TABLE plan_contents;
ALTER TABLE plan_contents_with_rowid RENAME TO plan_contents;
DROP INDEX events_plan;
CREATE INDEX events_plan ON events (plan, seq);
CREATE INDEX events_time ON events (time);
