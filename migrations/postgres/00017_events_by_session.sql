-- +goose Up
-- Version 17 on PostgreSQL: as ../sqlite/00017, an index that makes a
-- ?session_id= read of the log (a subtree: a range of session_path, which
-- is COLLATE "C", so the range is an index range) independent of the
-- log's length.
CREATE INDEX events_session ON events (session_path, seq) WHERE session_path IS NOT NULL;

-- +goose Down
DROP INDEX events_session;
