-- +goose Up
-- Version 11 on PostgreSQL: as ../sqlite/00011, fewer index entries per
-- write. Every change appends an event, so each index on events is work in
-- every commit: events_time goes (retention by age walks the log from its
-- oldest event in seq order, events.Prune), and events_plan holds only the
-- events of a shared plan (every read through it names one). plan_contents
-- stays as it is: a heap and its key are how PostgreSQL stores any table.
DROP INDEX events_time;
DROP INDEX events_plan;
CREATE INDEX events_plan ON events (plan, seq) WHERE plan IS NOT NULL;

-- +goose Down
DROP INDEX events_plan;
CREATE INDEX events_plan ON events (plan, seq);
CREATE INDEX events_time ON events (time);
