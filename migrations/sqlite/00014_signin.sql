-- +goose Up
-- Sign-in through an OIDC provider (docs/sign-in.md). Every replica must
-- know every sign-in, so both the login attempts (state, nonce, PKCE
-- verifier between /auth/login and /auth/callback, which may land on
-- another replica) and the signed-in sessions live here.
--
-- signin_attempts: one row per login in progress, keyed by the SHA-256 of
-- its state; the callback takes (deletes) it, so a state works once.
CREATE TABLE signin_attempts (
    state_hash TEXT NOT NULL PRIMARY KEY,
    nonce      TEXT NOT NULL,
    verifier   TEXT NOT NULL,
    return_to  TEXT NOT NULL DEFAULT '/ui/',
    expires_at TEXT NOT NULL
);
-- signins: a signed-in person, keyed by the SHA-256 of the random id in
-- their cookie (the id itself is never stored). role and the reviewer's
-- subtree (session_id, session_pk: the subtree by identity, as agent
-- tokens) come from --oidc-roles at login. id_token is the provider's ID
-- token, kept only as the id_token_hint of RP-initiated logout.
CREATE TABLE signins (
    hash         TEXT NOT NULL PRIMARY KEY,
    subject      TEXT NOT NULL,
    email        TEXT NOT NULL DEFAULT '',
    name         TEXT NOT NULL DEFAULT '',
    role         TEXT NOT NULL CHECK (role IN ('admin', 'reviewer', 'viewer')),
    session_id   TEXT,
    session_pk   INTEGER,
    id_token     TEXT NOT NULL DEFAULT '',
    created_at   TEXT NOT NULL,
    last_seen_at TEXT NOT NULL,
    expires_at   TEXT NOT NULL
);
CREATE INDEX signins_expires ON signins (expires_at);

-- The person behind a change, beside its actor (a token's name, or the
-- person's email): {subject, email, name} as JSON, NULL when a token acted.
ALTER TABLE events ADD COLUMN actor_person TEXT;
ALTER TABLE sessions ADD COLUMN review_decided_by_person TEXT;
ALTER TABLE session_reviews ADD COLUMN ended_by_person TEXT;
-- Who made a token: the actor and, for a person, who they are. Empty for
-- tokens made before, or by planserver token create on the host.
ALTER TABLE tokens ADD COLUMN created_by TEXT NOT NULL DEFAULT '';
ALTER TABLE tokens ADD COLUMN created_by_person TEXT;

-- +goose Down
-- Rolling back forgets who the people behind past changes were (their
-- actor names stay) and signs everyone out; refuse while any change
-- records a person, saying why (raise() works only in a trigger).
CREATE TEMP TABLE down_guard (x INTEGER);
-- +goose StatementBegin
CREATE TEMP TRIGGER down_guard BEFORE INSERT ON down_guard
BEGIN
    SELECT raise(ABORT, 'refusing to roll back 00014_signin: changes record the signed-in people who made them (subject, email, name), which a rollback would lose');
END;
-- +goose StatementEnd
INSERT INTO down_guard SELECT 1 WHERE EXISTS (SELECT 1 FROM events WHERE actor_person IS NOT NULL)
    OR EXISTS (SELECT 1 FROM session_reviews WHERE ended_by_person IS NOT NULL)
    OR EXISTS (SELECT 1 FROM sessions WHERE review_decided_by_person IS NOT NULL)
    OR EXISTS (SELECT 1 FROM tokens WHERE created_by_person IS NOT NULL);
DROP TABLE down_guard;
ALTER TABLE tokens DROP COLUMN created_by_person;
ALTER TABLE tokens DROP COLUMN created_by;
ALTER TABLE session_reviews DROP COLUMN ended_by_person;
ALTER TABLE sessions DROP COLUMN review_decided_by_person;
ALTER TABLE events DROP COLUMN actor_person;
DROP INDEX signins_expires;
DROP TABLE signins;
DROP TABLE signin_attempts;
