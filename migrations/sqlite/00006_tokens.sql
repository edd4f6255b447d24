-- +goose Up
-- tokens holds bearer tokens as SHA-256 hashes only; the secret is shown
-- once at creation and never stored. Revoked tokens stay listed (with
-- revoked_at) so an admin can see what existed.
CREATE TABLE tokens (
    name         TEXT PRIMARY KEY,
    hash         TEXT NOT NULL UNIQUE,
    role         TEXT NOT NULL CHECK (role IN ('admin', 'agent', 'viewer')),
    session_id   TEXT,
    created_at   TEXT NOT NULL,
    expires_at   TEXT,
    last_used_at TEXT,
    revoked_at   TEXT,
    CHECK ((role = 'agent') = (session_id IS NOT NULL))
);

-- An agent token dies with its session (and with any ancestor, whose
-- delete cascades here): otherwise a session created later under the same
-- id would silently fall into the old token's scope. The trigger fires for
-- cascaded deletes too, so no store has to remember it.
-- +goose StatementBegin
CREATE TRIGGER tokens_revoke_with_session AFTER DELETE ON sessions
BEGIN
    UPDATE tokens SET revoked_at = coalesce(revoked_at, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
    WHERE session_id = OLD.id;
END;
-- +goose StatementEnd

-- +goose Down
-- A rollback refuses, saying why, rather than lose data or a guarantee
-- (raise() works only in a trigger, hence the temporary one).
CREATE TEMP TABLE down_guard (x INTEGER);
-- +goose StatementBegin
CREATE TEMP TRIGGER down_guard BEFORE INSERT ON down_guard
BEGIN
    SELECT raise(ABORT, 'refusing to roll back 00006_tokens: tokens exist, and dropping them would also forget which were revoked; revoke and delete them first if that is what you want');
END;
-- +goose StatementEnd
INSERT INTO down_guard SELECT 1 WHERE EXISTS (SELECT 1 FROM tokens);
DROP TABLE down_guard;
DROP TRIGGER tokens_revoke_with_session;
DROP TABLE tokens;
