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
DROP TABLE event_retention;
