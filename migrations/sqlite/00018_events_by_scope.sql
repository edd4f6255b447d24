-- +goose Up
-- Two indexes that keep an agent token's feed, and a ?session_id= read of
-- a deleted session, independent of the log's length (team benchmark,
-- docs/benchmarks.md).
--
-- events_no_session: an agent token's view of the log (events.Query.Scope)
-- is its session's subtree and the events of no session (shared plans).
-- Past the stretch events.Read walks in log order, it reads the subtree as
-- a range of events_session and the events of no session as a range of
-- this index, in seq order, and merges the two; without it the events of
-- no session were found only by walking the log past every other
-- session's events. Events of a session cost no entry in it.
CREATE INDEX events_no_session ON events (seq) WHERE session_id IS NULL;

-- events_session_id: a ?session_id= that names no live session resolves
-- to the path of the last event of that id (a deleted session's history);
-- that lookup was a walk of the log from its newest event back to the
-- session's last one, or through all of it for an id the log never knew.
CREATE INDEX events_session_id ON events (session_id, seq) WHERE session_id IS NOT NULL;

-- +goose Down
DROP INDEX events_session_id;
DROP INDEX events_no_session;
