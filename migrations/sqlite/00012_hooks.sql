-- +goose Up
-- Host hooks (planserver hook, POST /v1/hooks/{host}).
--
-- external_id is the host's own id of the conversation a session stands
-- for (Claude Code's session_id, Cursor's conversation_id, ...), set at
-- creation: with --parent P the hook finds the child of P for the host's
-- session by it. It is unique among one parent's children; ancestry names
-- the parent by identity ("/1/5/" for the children of pk 5), so a
-- session re-created under an old id starts an empty namespace.
ALTER TABLE sessions ADD COLUMN external_id TEXT;
CREATE UNIQUE INDEX sessions_external_id ON sessions (ancestry, external_id) WHERE external_id IS NOT NULL;
-- enforcement is which hook adapters asked about the session lately, a
-- JSON list of {host, adapter, last_decision_at}. It lives on the row so
-- that reading a session stays one statement; it is an observation, not
-- part of the session's state, so writing it bumps no revision.
ALTER TABLE sessions ADD COLUMN enforcement TEXT NOT NULL DEFAULT '[]';

-- +goose Down
DROP INDEX sessions_external_id;
ALTER TABLE sessions DROP COLUMN enforcement;
ALTER TABLE sessions DROP COLUMN external_id;
