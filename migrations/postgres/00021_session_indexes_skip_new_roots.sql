-- +goose Up
-- Version 21 on PostgreSQL: as ../sqlite/00021, the indexes of children,
-- descendants and reviews hold no entry for a root without a review, the
-- session most creates make.
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
