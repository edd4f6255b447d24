-- +goose Up
-- step_leases: the claims on steps whose end has not been reported yet, so
-- that a lease running out is recorded (a step.claim_expired event) when
-- it ends, not when someone next writes the plan. The steps themselves stay
-- in plans.steps; a row here is one lease, (plan, step_id) its step,
-- claimed_by and claim_expires_at as the step holds them. The plans store
-- writes a row whenever a write starts a lease (a claim, a renewal, a
-- whole-plan write that sets a claim) and deletes it when a write ends the
-- lease or when the lapse is reported, in that same transaction: a row
-- present means "not reported yet", so each lease is reported once.
-- step_leases_ends lets the sweeper find the lapsed ones with one index
-- range (and nothing at all when no lease is due).
CREATE TABLE step_leases (
    plan             TEXT NOT NULL,
    step_id          TEXT NOT NULL,
    claimed_by       TEXT NOT NULL,
    claim_expires_at TEXT NOT NULL,
    PRIMARY KEY (plan, step_id)
);
CREATE INDEX step_leases_ends ON step_leases (claim_expires_at);
-- The leases still running at the upgrade; those that ended before it are
-- not reported (they lapsed before anyone could be told in time). Steps
-- that are not valid JSON hold no lease anyone can use.
INSERT OR IGNORE INTO step_leases (plan, step_id, claimed_by, claim_expires_at)
SELECT p.name, json_extract(s.value, '$.id'), json_extract(s.value, '$.claimed_by'),
       json_extract(s.value, '$.claim_expires_at')
FROM plans p, json_each(CASE WHEN json_valid(p.steps) AND json_type(p.steps) = 'array' THEN p.steps ELSE '[]' END) s
WHERE json_extract(s.value, '$.status') = 'in_progress'
  AND json_type(s.value, '$.id') = 'text'
  AND json_type(s.value, '$.claimed_by') = 'text'
  AND json_type(s.value, '$.claim_expires_at') = 'text'
  AND json_extract(s.value, '$.claim_expires_at') > strftime('%Y-%m-%dT%H:%M:%fZ', 'now');

-- +goose Down
-- Only what can be rebuilt is lost: the leases are in plans.steps.
DROP TABLE step_leases;
