-- +goose Up
-- A deleted session's path comes from its session.deleted event, the last
-- event the log records of it (every session of a deleted subtree gets
-- one, and pruning takes the log's oldest events first, so that event is
-- the last of the session's events to go). events_session_id indexed
-- every event of every session for that lookup, about a sixth of the one
-- writer's time for a session create (docs/benchmarks.md, round twelve);
-- this index holds the deletions only.
DROP INDEX events_session_id;
CREATE INDEX events_deleted_session ON events (session_id, seq) WHERE type = 'session.deleted';

-- +goose Down
DROP INDEX events_deleted_session;
CREATE INDEX events_session_id ON events (session_id, seq) WHERE session_id IS NOT NULL;
