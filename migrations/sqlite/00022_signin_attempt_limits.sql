-- +goose Up
-- /auth/login is unauthenticated and records an attempt per request, so
-- the attempts are bounded (internal/auth/signins.go, Begin): per client
-- (its address, an IPv6 client by its /64) and in all. client is that
-- key; the indexes serve the counts and the pruning of expired attempts
-- that every login makes.
ALTER TABLE signin_attempts ADD COLUMN client TEXT NOT NULL DEFAULT '';
CREATE INDEX signin_attempts_expires ON signin_attempts (expires_at);
CREATE INDEX signin_attempts_client ON signin_attempts (client, expires_at);

-- +goose Down
DROP INDEX signin_attempts_client;
DROP INDEX signin_attempts_expires;
ALTER TABLE signin_attempts DROP COLUMN client;
