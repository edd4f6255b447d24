-- +goose Up
-- Version 10 on PostgreSQL: the same schema as ../sqlite/00010 (the
-- registered MCP servers behind /mcp/gate/{name}), with this engine's
-- types (see 00008_baseline).
CREATE TABLE gates (
    name       TEXT COLLATE "C" PRIMARY KEY,
    url        TEXT COLLATE "C" NOT NULL,
    read_only  TEXT COLLATE "C" NOT NULL DEFAULT '[]',
    created_at TEXT COLLATE "C" NOT NULL,
    updated_at TEXT COLLATE "C" NOT NULL
);

-- +goose Down
-- A rollback refuses while gates are registered, saying why, rather than
-- forget them.
-- +goose StatementBegin
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM gates) THEN
        RAISE EXCEPTION 'refusing to roll back 00010_gates: gates are registered; remove them first (planserver gate remove NAME) if that is what you want';
    END IF;
END
$$;
-- +goose StatementEnd
DROP TABLE gates;
