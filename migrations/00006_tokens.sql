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

-- +goose Down
DROP TABLE tokens;
