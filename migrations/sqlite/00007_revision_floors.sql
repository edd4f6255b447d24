-- +goose Up
-- revision_floors remembers the last revision of every versioned resource
-- that was deleted, so one re-created under the same name continues above
-- it. Otherwise a client holding ETag "1" of the deleted resource would
-- match the new one at revision 1, and its conditional write (or a human's
-- approval of a plan revision they read) would apply to something it never
-- saw.
CREATE TABLE revision_floors (
    kind     TEXT    NOT NULL,
    key      TEXT    NOT NULL,
    revision INTEGER NOT NULL,
    PRIMARY KEY (kind, key)
) WITHOUT ROWID;

-- +goose Down
-- A rollback refuses, saying why, rather than lose data or a guarantee
-- (raise() works only in a trigger, hence the temporary one).
CREATE TEMP TABLE down_guard (x INTEGER);
-- +goose StatementBegin
CREATE TEMP TRIGGER down_guard BEFORE INSERT ON down_guard
BEGIN
    SELECT raise(ABORT, 'refusing to roll back 00007_revision_floors: it remembers the last revision of deleted plans and sessions; without it one re-created under the same name would start again at revision 1, and a stale If-Match or approval of the deleted one would match it');
END;
-- +goose StatementEnd
INSERT INTO down_guard SELECT 1 WHERE EXISTS (SELECT 1 FROM revision_floors);
DROP TABLE down_guard;
DROP TABLE revision_floors;
