-- +goose Up
-- What planserver decided about each host tool call, kept until the host
-- reports the run (its after-tool hook) or the record's lifetime ends
-- (sessions.HookDecisionLifetime; the pruner deletes older rows). A report
-- that finds no decision, or a denial, is a tool run nobody judged
-- (tool_call.unjudged). run_key is hooks.RunKeys: the host's id of the
-- call, or a digest of it. In the database, not in memory, so that a
-- report reaching another replica than its decision still finds it.
CREATE TABLE hook_decisions (
    host       TEXT    NOT NULL,
    run_key    TEXT    NOT NULL,
    session_pk INTEGER NOT NULL,
    tool       TEXT    NOT NULL,
    outcome    TEXT    NOT NULL CHECK (outcome IN ('none', 'allow', 'deny', 'rewrite')),
    decided_at TEXT    NOT NULL,
    PRIMARY KEY (host, run_key)
);
CREATE INDEX hook_decisions_decided ON hook_decisions (decided_at);

-- +goose Down
-- The rows are short-lived records of decisions awaiting a report: losing
-- them loses nothing a later version needs.
DROP INDEX hook_decisions_decided;
DROP TABLE hook_decisions;
