-- +goose Up
-- Version 18 on PostgreSQL: as ../sqlite/00018, an index of the events of
-- no session (the part of an agent token's feed that is not its subtree,
-- merged in seq order with a range of events_session) and one by
-- session_id (the path of a deleted session's last event), so neither read
-- walks the log.
CREATE INDEX events_no_session ON events (seq) WHERE session_id IS NULL;
CREATE INDEX events_session_id ON events (session_id, seq) WHERE session_id IS NOT NULL;

-- +goose Down
DROP INDEX events_session_id;
DROP INDEX events_no_session;
