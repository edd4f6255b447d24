-- +goose Up
-- Sign-ins that can be listed and ended, and whose role follows the rules
-- in force (docs/sign-in.md). Each sign-in gets a public id (si_…, what
-- the admin API, planserver signin and the console name it by; the cookie
-- and its hash stay secret) and keeps the groups the provider sent, so
-- that every request can match --oidc-roles again: the role is no longer
-- taken once at login. email is the verified email only.
--
-- The sign-ins made before this version carry no groups to match and may
-- carry an email the provider had not verified, so they end here: their
-- people sign in again.
DELETE FROM signins;
ALTER TABLE signins ADD COLUMN id TEXT NOT NULL DEFAULT '';
ALTER TABLE signins ADD COLUMN groups TEXT NOT NULL DEFAULT '[]';
CREATE UNIQUE INDEX signins_id ON signins (id);
CREATE INDEX signins_subject ON signins (subject, created_at);
CREATE INDEX signins_created ON signins (created_at, id);

-- +goose Down
DROP INDEX signins_created;
DROP INDEX signins_subject;
DROP INDEX signins_id;
ALTER TABLE signins DROP COLUMN groups;
ALTER TABLE signins DROP COLUMN id;
