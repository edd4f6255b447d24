-- +goose Up
-- Scoped build (issue 45): approving a plan revision that declares a scope
-- limits the session's build to it.
--
-- build_scope is the session's own grant, a JSON object {files, commands,
-- connect, plan_revision, granted_by, granted_by_person, granted_at}, NULL
-- when it has none (full build, or never approved with a scope). It lives
-- on the row, like the mode, so that a session's chain (and so its
-- effective scope) is read with the same one query as its effective mode.
ALTER TABLE sessions ADD COLUMN build_scope TEXT;
-- review_scope is what the current review's approval granted ("plan" or
-- "full"), NULL before a decision or for a rejection; the history keeps
-- the same for every review that ended.
ALTER TABLE sessions ADD COLUMN review_scope TEXT;
ALTER TABLE session_reviews ADD COLUMN scope TEXT;

-- +goose Down
-- A rollback refuses while a session builds within an approved scope, or
-- a review records what an approval granted: an older planserver would
-- let those sessions build without their scope, and forget who granted
-- what (raise() works only in a trigger, hence the temporary one).
CREATE TEMP TABLE down_guard (x INTEGER);
-- +goose StatementBegin
CREATE TEMP TRIGGER down_guard BEFORE INSERT ON down_guard
BEGIN
    SELECT raise(ABORT, 'refusing to roll back 00025_build_scope: sessions build within the scopes humans approved (or reviews record what an approval granted), and an older planserver would let them build without; lift the scopes first (DELETE /v1/sessions/{id}/scope) if that is what you want');
END;
-- +goose StatementEnd
INSERT INTO down_guard SELECT 1 WHERE EXISTS (SELECT 1 FROM sessions WHERE build_scope IS NOT NULL OR review_scope IS NOT NULL)
    OR EXISTS (SELECT 1 FROM session_reviews WHERE scope IS NOT NULL);
DROP TABLE down_guard;
ALTER TABLE session_reviews DROP COLUMN scope;
ALTER TABLE sessions DROP COLUMN review_scope;
ALTER TABLE sessions DROP COLUMN build_scope;
