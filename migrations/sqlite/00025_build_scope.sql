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
ALTER TABLE session_reviews DROP COLUMN scope;
ALTER TABLE sessions DROP COLUMN review_scope;
ALTER TABLE sessions DROP COLUMN build_scope;
