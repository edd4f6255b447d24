-- +goose Up
-- Version 24 on PostgreSQL: as ../sqlite/00024, the decisions about host
-- tool calls awaiting the host's report of the run.
CREATE TABLE hook_decisions (
    host       TEXT    COLLATE "C" NOT NULL,
    run_key    TEXT    COLLATE "C" NOT NULL,
    session_pk BIGINT  NOT NULL,
    tool       TEXT    COLLATE "C" NOT NULL,
    outcome    TEXT    COLLATE "C" NOT NULL CHECK (outcome IN ('none', 'allow', 'deny', 'rewrite')),
    decided_at TEXT    COLLATE "C" NOT NULL,
    PRIMARY KEY (host, run_key)
);
CREATE INDEX hook_decisions_decided ON hook_decisions (decided_at);

-- +goose Down
DROP INDEX hook_decisions_decided;
DROP TABLE hook_decisions;
