-- +goose Up
-- Version 25 on PostgreSQL: the same schema as ../sqlite/00025 (a
-- session's own scope grant, and what each approval granted), with this
-- engine's types.
ALTER TABLE sessions ADD COLUMN build_scope TEXT COLLATE "C";
ALTER TABLE sessions ADD COLUMN review_scope TEXT COLLATE "C";
ALTER TABLE session_reviews ADD COLUMN scope TEXT COLLATE "C";

-- +goose Down
ALTER TABLE session_reviews DROP COLUMN scope;
ALTER TABLE sessions DROP COLUMN review_scope;
ALTER TABLE sessions DROP COLUMN build_scope;
