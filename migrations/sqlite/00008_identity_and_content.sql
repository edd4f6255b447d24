-- +goose Up
-- A session's identity is its pk, never reused (AUTOINCREMENT); its id is
-- a name that a later session may take again. ancestry is the pks of the
-- session's ancestors, root first, as "/1/5/" ("/" for a root). Sessions
-- are never re-parented, so it is written once, at creation: effective
-- mode reads the chain in one query, and a subtree is every session whose
-- ancestry starts with "<ancestry><pk>/".
ALTER TABLE sessions ADD COLUMN ancestry TEXT NOT NULL DEFAULT '/';
WITH RECURSIVE chain(pk, id, anc) AS (
    SELECT pk, id, '/' FROM sessions WHERE parent_id IS NULL
    UNION ALL
    SELECT s.pk, s.id, c.anc || c.pk || '/' FROM sessions s JOIN chain c ON s.parent_id = c.id
)
UPDATE sessions SET ancestry = (SELECT anc FROM chain WHERE chain.pk = sessions.pk);
CREATE INDEX sessions_ancestry ON sessions (ancestry);

-- Events record the session they are about by identity: session_pk, and
-- session_path "/<ancestry pks>/<pk>/", so a scope or a subtree filter
-- matches the sessions it was granted, never a later namesake. Events
-- recorded before this migration named sessions by id only: those from the
-- creation of a live session on belong to it; older ones belonged to a
-- session that was deleted, whose identity is lost, so they keep their id
-- but match no scope and no subtree filter.
ALTER TABLE events ADD COLUMN session_pk INTEGER;
CREATE INDEX events_session_migration ON events (session_id, type, seq);
CREATE TEMP TABLE incarnations AS
    SELECT s.id AS id, s.pk AS pk, s.ancestry || s.pk || '/' AS path,
           coalesce((SELECT max(e.seq) FROM events e WHERE e.session_id = s.id AND e.type = 'session.created'), 0) AS since
    FROM sessions s;
UPDATE events SET session_pk = i.pk, session_path = i.path
    FROM incarnations i WHERE i.id = events.session_id AND events.seq >= i.since;
UPDATE events SET session_path = NULL WHERE session_id IS NOT NULL AND session_pk IS NULL;
DROP TABLE incarnations;
DROP INDEX events_session_migration;
-- A ?plan= read of the log is one index range.
CREATE INDEX events_plan ON events (plan, seq);

-- An agent token is bound to its session's identity. Revocation when the
-- session goes is done by the delete itself (internal/sessions), on every
-- engine, so the trigger goes.
ALTER TABLE tokens ADD COLUMN session_pk INTEGER;
UPDATE tokens SET session_pk = (SELECT pk FROM sessions WHERE sessions.id = tokens.session_id)
    WHERE session_id IS NOT NULL;
DROP TRIGGER tokens_revoke_with_session;

-- A plan's content is stored once per distinct version: plan_contents
-- holds each content under the revision that introduced it (content_rev),
-- and the current row and every kept revision name theirs. A step change
-- or a status change writes no content at all.
CREATE TABLE plan_contents (
    name        TEXT    NOT NULL REFERENCES plans (name) ON DELETE CASCADE,
    content_rev INTEGER NOT NULL,
    content     TEXT    NOT NULL,
    PRIMARY KEY (name, content_rev)
);
INSERT INTO plan_contents (name, content_rev, content) SELECT name, revision, content FROM plans;
INSERT INTO plan_contents (name, content_rev, content) SELECT name, revision, content FROM plan_revisions;
ALTER TABLE plans ADD COLUMN content_rev INTEGER NOT NULL DEFAULT 0;
UPDATE plans SET content_rev = revision;
ALTER TABLE plans DROP COLUMN content;
ALTER TABLE plan_revisions ADD COLUMN content_rev INTEGER NOT NULL DEFAULT 0;
UPDATE plan_revisions SET content_rev = revision;
ALTER TABLE plan_revisions DROP COLUMN content;
-- renewed marks a current revision made only by renewing a claim's lease:
-- it is not kept in the history when a later write replaces it, so
-- workers renewing leases never push real revisions out of the window.
ALTER TABLE plans ADD COLUMN renewed INTEGER NOT NULL DEFAULT 0;

-- +goose Down
-- Every row keeps its data: contents go back into their rows, event paths
-- back to ids, tokens back to their trigger.
ALTER TABLE plans DROP COLUMN renewed;
ALTER TABLE plan_revisions ADD COLUMN content TEXT NOT NULL DEFAULT '';
UPDATE plan_revisions SET content = (SELECT c.content FROM plan_contents c
    WHERE c.name = plan_revisions.name AND c.content_rev = plan_revisions.content_rev);
ALTER TABLE plan_revisions DROP COLUMN content_rev;
ALTER TABLE plans ADD COLUMN content TEXT NOT NULL DEFAULT '';
UPDATE plans SET content = (SELECT c.content FROM plan_contents c
    WHERE c.name = plans.name AND c.content_rev = plans.content_rev);
ALTER TABLE plans DROP COLUMN content_rev;
DROP TABLE plan_contents;

-- +goose StatementBegin
CREATE TRIGGER tokens_revoke_with_session AFTER DELETE ON sessions
BEGIN
    UPDATE tokens SET revoked_at = coalesce(revoked_at, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
    WHERE session_id = OLD.id;
END;
-- +goose StatementEnd
ALTER TABLE tokens DROP COLUMN session_pk;

DROP INDEX events_plan;
WITH RECURSIVE chain(pk, path) AS (
    SELECT pk, '/' || id || '/' FROM sessions WHERE parent_id IS NULL
    UNION ALL
    SELECT s.pk, c.path || s.id || '/' FROM sessions s JOIN sessions p ON s.parent_id = p.id JOIN chain c ON c.pk = p.pk
)
UPDATE events SET session_path = coalesce((SELECT path FROM chain WHERE chain.pk = events.session_pk), '/' || session_id || '/')
    WHERE session_id IS NOT NULL;
ALTER TABLE events DROP COLUMN session_pk;

DROP INDEX sessions_ancestry;
ALTER TABLE sessions DROP COLUMN ancestry;
