-- +goose Up
-- Version 20 on PostgreSQL: as ../sqlite/00020, a deleted session's path
-- comes from an index of session.deleted events only, not of every event
-- of every session.
DROP INDEX events_session_id;
CREATE INDEX events_deleted_session ON events (session_id, seq) WHERE type = 'session.deleted';

-- +goose Down
DROP INDEX events_deleted_session;
CREATE INDEX events_session_id ON events (session_id, seq) WHERE session_id IS NOT NULL;
