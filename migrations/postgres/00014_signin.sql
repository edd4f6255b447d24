-- +goose Up
-- Version 14 on PostgreSQL: the same schema as ../sqlite/00014 (sign-in
-- attempts, signed-in sessions, the person behind each change), with this
-- engine's types (see 00008_baseline).
CREATE TABLE signin_attempts (
    state_hash TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    nonce      TEXT COLLATE "C" NOT NULL,
    verifier   TEXT COLLATE "C" NOT NULL,
    return_to  TEXT COLLATE "C" NOT NULL DEFAULT '/ui/',
    expires_at TEXT COLLATE "C" NOT NULL
);
CREATE TABLE signins (
    hash         TEXT   COLLATE "C" NOT NULL PRIMARY KEY,
    subject      TEXT   COLLATE "C" NOT NULL,
    email        TEXT   COLLATE "C" NOT NULL DEFAULT '',
    name         TEXT   COLLATE "C" NOT NULL DEFAULT '',
    role         TEXT   COLLATE "C" NOT NULL CHECK (role IN ('admin', 'reviewer', 'viewer')),
    session_id   TEXT   COLLATE "C",
    session_pk   BIGINT,
    id_token     TEXT   COLLATE "C" NOT NULL DEFAULT '',
    created_at   TEXT   COLLATE "C" NOT NULL,
    last_seen_at TEXT   COLLATE "C" NOT NULL,
    expires_at   TEXT   COLLATE "C" NOT NULL
);
CREATE INDEX signins_expires ON signins (expires_at);

ALTER TABLE events ADD COLUMN actor_person TEXT COLLATE "C";
ALTER TABLE sessions ADD COLUMN review_decided_by_person TEXT COLLATE "C";
ALTER TABLE session_reviews ADD COLUMN ended_by_person TEXT COLLATE "C";
ALTER TABLE tokens ADD COLUMN created_by TEXT COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE tokens ADD COLUMN created_by_person TEXT COLLATE "C";

-- +goose Down
-- +goose StatementBegin
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM events WHERE actor_person IS NOT NULL)
        OR EXISTS (SELECT 1 FROM session_reviews WHERE ended_by_person IS NOT NULL)
        OR EXISTS (SELECT 1 FROM sessions WHERE review_decided_by_person IS NOT NULL)
        OR EXISTS (SELECT 1 FROM tokens WHERE created_by_person IS NOT NULL) THEN
        RAISE EXCEPTION 'refusing to roll back 00014_signin: changes record the signed-in people who made them (subject, email, name), which a rollback would lose';
    END IF;
END
$$;
-- +goose StatementEnd
ALTER TABLE tokens DROP COLUMN created_by_person;
ALTER TABLE tokens DROP COLUMN created_by;
ALTER TABLE session_reviews DROP COLUMN ended_by_person;
ALTER TABLE sessions DROP COLUMN review_decided_by_person;
ALTER TABLE events DROP COLUMN actor_person;
DROP INDEX signins_expires;
DROP TABLE signins;
DROP TABLE signin_attempts;
