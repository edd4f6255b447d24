-- +goose Up
-- event_retention has exactly one row. pruned_through is the highest seq
-- that pruning has deleted: every event at or below it is gone, every event
-- above it is still in the log. A reader whose cursor is below it has missed
-- events and is told so (410 cursor_expired) instead of silently skipping
-- them; the log's head is max(max(seq), pruned_through), so it never goes
-- back to 0 when everything has been pruned.
CREATE TABLE event_retention (
    id             INTEGER PRIMARY KEY CHECK (id = 1),
    pruned_through INTEGER NOT NULL DEFAULT 0 CHECK (pruned_through >= 0)
);
INSERT INTO event_retention (id, pruned_through) VALUES (1, 0);

-- +goose Down
-- A rollback refuses, saying why, rather than lose data or a guarantee
-- (raise() works only in a trigger, hence the temporary one).
CREATE TEMP TABLE down_guard (x INTEGER);
-- +goose StatementBegin
CREATE TEMP TRIGGER down_guard BEFORE INSERT ON down_guard
BEGIN
    SELECT raise(ABORT, 'refusing to roll back 00004_event_retention: events have been pruned, and without the record of how far, a cursor from before the pruning would silently skip events instead of getting 410 cursor_expired');
END;
-- +goose StatementEnd
INSERT INTO down_guard SELECT 1 WHERE (SELECT pruned_through FROM event_retention WHERE id = 1) > 0;
DROP TABLE down_guard;
DROP TABLE event_retention;
