-- +goose Up
-- Version 16 on PostgreSQL: the same schema as ../sqlite/00016 (the leases
-- whose end has not been reported yet), with this engine's types (see
-- 00008_baseline).
CREATE TABLE step_leases (
    plan             TEXT COLLATE "C" NOT NULL,
    step_id          TEXT COLLATE "C" NOT NULL,
    claimed_by       TEXT COLLATE "C" NOT NULL,
    claim_expires_at TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (plan, step_id)
);
CREATE INDEX step_leases_ends ON step_leases (claim_expires_at);
-- The leases still running at the upgrade. A plan whose steps are not a
-- JSON array is skipped (its own subtransaction fails), as on SQLite.
-- +goose StatementBegin
DO $$
DECLARE
    p RECORD;
    now_text TEXT := to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"');
BEGIN
    FOR p IN SELECT name, steps FROM plans LOOP
        BEGIN
            INSERT INTO step_leases (plan, step_id, claimed_by, claim_expires_at)
            SELECT p.name, s->>'id', s->>'claimed_by', s->>'claim_expires_at'
            FROM jsonb_array_elements(p.steps::jsonb) s
            WHERE s->>'status' = 'in_progress'
              AND jsonb_typeof(s->'id') = 'string'
              AND jsonb_typeof(s->'claimed_by') = 'string'
              AND jsonb_typeof(s->'claim_expires_at') = 'string'
              AND (s->>'claim_expires_at') COLLATE "C" > now_text
            ON CONFLICT DO NOTHING;
        EXCEPTION WHEN others THEN
            NULL;
        END;
    END LOOP;
END
$$;
-- +goose StatementEnd

-- +goose Down
-- Only what can be rebuilt is lost: the leases are in plans.steps.
DROP TABLE step_leases;
