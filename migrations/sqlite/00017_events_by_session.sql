-- +goose Up
-- events_session serves ?session_id= reads of the log (and the event
-- streams that follow one session's subtree): a subtree is a range of
-- session_path, so its events are one range of this index instead of a
-- walk of the whole log past every other session's events, which grew
-- with the log (1.4 s a page at 1,000,000 events: the team benchmark,
-- docs/benchmarks.md). events.Read walks the next few thousand seqs
-- first and turns to the index only when they held less than a page, so a
-- busy subtree is never sorted whole. It costs an index entry per event
-- of a session; events of no session (shared plans) cost none.
CREATE INDEX events_session ON events (session_path, seq) WHERE session_path IS NOT NULL;

-- +goose Down
DROP INDEX events_session;
