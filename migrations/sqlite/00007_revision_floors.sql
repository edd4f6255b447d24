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
DROP TABLE revision_floors;
