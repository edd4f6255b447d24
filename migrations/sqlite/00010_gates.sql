-- +goose Up
-- gates are the streamable-HTTP MCP servers an admin registered
-- (planserver gate add, PUT /v1/gates/{name}) for agents to reach through
-- /mcp/gate/{name}, behind the plan-mode gate. read_only is a JSON array
-- of the tools the operator declared read-only beyond their annotations.
CREATE TABLE gates (
    name       TEXT NOT NULL PRIMARY KEY,
    url        TEXT NOT NULL,
    read_only  TEXT NOT NULL DEFAULT '[]',
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);

-- +goose Down
-- A rollback refuses while gates are registered, saying why, rather than
-- forget them (raise() works only in a trigger, hence the temporary one).
CREATE TEMP TABLE down_guard (x INTEGER);
-- +goose StatementBegin
CREATE TEMP TRIGGER down_guard BEFORE INSERT ON down_guard
BEGIN
    SELECT raise(ABORT, 'refusing to roll back 00010_gates: gates are registered; remove them first (planserver gate remove NAME) if that is what you want');
END;
-- +goose StatementEnd
INSERT INTO down_guard SELECT 1 WHERE EXISTS (SELECT 1 FROM gates);
DROP TABLE down_guard;
DROP TABLE gates;
