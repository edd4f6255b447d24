-- +goose Up
-- Every session create inserted an entry into each index of sessions, and
-- on SQLite those inserts are most of the one writer's time for a create
-- (docs/benchmarks.md, round fourteen). Three of the indexes serve lookups
-- that never find the sessions most creates make, roots without a review:
--
-- - sessions_parent finds a session's children (parent_id = ?, and the
--   cascade of a delete): a root's NULL parent is never looked up.
-- - sessions_ancestry finds a session's descendants (an ancestry range):
--   a root is nobody's descendant. The subtree queries say
--   parent_id IS NOT NULL so that the planners may use it.
-- - sessions_review_state is the review inbox (review_state = 'pending',
--   and the other states of a review): a list of the sessions without one
--   walks the primary key, as a list without a filter does. The list
--   query says review_state <> 'none' with such a filter so that the
--   planners may use it.
--
-- TestSessionQueriesUseTheirIndexes holds every such query to its index.
DROP INDEX sessions_parent;
CREATE INDEX sessions_parent ON sessions (parent_id, pk) WHERE parent_id IS NOT NULL;
DROP INDEX sessions_ancestry;
CREATE INDEX sessions_ancestry ON sessions (ancestry) WHERE parent_id IS NOT NULL;
DROP INDEX sessions_review_state;
CREATE INDEX sessions_review_state ON sessions (review_state, pk) WHERE review_state <> 'none';

-- +goose Down
DROP INDEX sessions_review_state;
CREATE INDEX sessions_review_state ON sessions (review_state, pk);
DROP INDEX sessions_ancestry;
CREATE INDEX sessions_ancestry ON sessions (ancestry);
DROP INDEX sessions_parent;
CREATE INDEX sessions_parent ON sessions (parent_id, pk);
