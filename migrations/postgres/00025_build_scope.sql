-- +goose Up
-- Version 25 on PostgreSQL: the same schema as ../sqlite/00025 (a
-- session's own scope grant, and what each approval granted), with this
-- engine's types.
ALTER TABLE sessions ADD COLUMN build_scope TEXT COLLATE "C";
ALTER TABLE sessions ADD COLUMN review_scope TEXT COLLATE "C";
ALTER TABLE session_reviews ADD COLUMN scope TEXT COLLATE "C";

-- +goose Down
-- A rollback refuses while a session builds within an approved scope, or
-- a review records what an approval granted (as on SQLite).
-- +goose StatementBegin
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM sessions WHERE build_scope IS NOT NULL OR review_scope IS NOT NULL)
        OR EXISTS (SELECT 1 FROM session_reviews WHERE scope IS NOT NULL) THEN
        RAISE EXCEPTION 'refusing to roll back 00025_build_scope: sessions build within the scopes humans approved (or reviews record what an approval granted), and an older planserver would let them build without; lift the scopes first (DELETE /v1/sessions/{id}/scope) if that is what you want';
    END IF;
END
$$;
-- +goose StatementEnd
ALTER TABLE session_reviews DROP COLUMN scope;
ALTER TABLE sessions DROP COLUMN review_scope;
ALTER TABLE sessions DROP COLUMN build_scope;
