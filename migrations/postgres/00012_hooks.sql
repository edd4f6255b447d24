-- +goose Up
-- Version 12 on PostgreSQL: the same schema as ../sqlite/00012 (a
-- session's external_id, unique among its parent's children, and the
-- enforcement seen by host hooks), with this engine's types.
ALTER TABLE sessions ADD COLUMN external_id TEXT COLLATE "C";
CREATE UNIQUE INDEX sessions_external_id ON sessions (ancestry, external_id) WHERE external_id IS NOT NULL;
ALTER TABLE sessions ADD COLUMN enforcement TEXT COLLATE "C" NOT NULL DEFAULT '[]';

-- +goose Down
DROP INDEX sessions_external_id;
ALTER TABLE sessions DROP COLUMN enforcement;
ALTER TABLE sessions DROP COLUMN external_id;
