-- +goose Up
-- Version 23 on PostgreSQL: as ../sqlite/00023, sign-ins get a public id
-- and keep their groups, so the rules are matched on every request; the
-- sign-ins made before end.
DELETE FROM signins;
ALTER TABLE signins ADD COLUMN id TEXT COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE signins ADD COLUMN groups TEXT COLLATE "C" NOT NULL DEFAULT '[]';
CREATE UNIQUE INDEX signins_id ON signins (id);
CREATE INDEX signins_subject ON signins (subject, created_at);
CREATE INDEX signins_created ON signins (created_at, id);

-- +goose Down
DROP INDEX signins_created;
DROP INDEX signins_subject;
DROP INDEX signins_id;
ALTER TABLE signins DROP COLUMN groups;
ALTER TABLE signins DROP COLUMN id;
