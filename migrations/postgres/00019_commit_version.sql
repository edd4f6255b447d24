-- +goose Up
-- Version 19 on PostgreSQL: commit_version counts the commits of every
-- replica. Each group commit adds one to it inside its transaction
-- (internal/db's committer), so the number moves exactly when a commit
-- becomes visible, and a replica that reads it unchanged knows that no
-- write committed in between: its answer cache (internal/http) serves
-- again only while it is so (DB.Version). One row, always id 1.
CREATE TABLE commit_version (
    id      INTEGER PRIMARY KEY CHECK (id = 1),
    version BIGINT  NOT NULL
);
INSERT INTO commit_version (id, version) VALUES (1, 0);

-- +goose Down
DROP TABLE commit_version;
