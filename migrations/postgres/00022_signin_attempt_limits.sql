-- +goose Up
-- Version 22 on PostgreSQL: as ../sqlite/00022, login attempts carry their
-- client's key, counted and pruned through two indexes.
ALTER TABLE signin_attempts ADD COLUMN client TEXT COLLATE "C" NOT NULL DEFAULT '';
CREATE INDEX signin_attempts_expires ON signin_attempts (expires_at);
CREATE INDEX signin_attempts_client ON signin_attempts (client, expires_at);

-- +goose Down
DROP INDEX signin_attempts_client;
DROP INDEX signin_attempts_expires;
ALTER TABLE signin_attempts DROP COLUMN client;
