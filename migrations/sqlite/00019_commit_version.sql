-- +goose Up
-- Version 19 changes nothing on SQLite. On PostgreSQL it adds
-- commit_version, the count of every replica's commits; a SQLite database
-- has one writing process, whose own commit generation serves the same
-- purpose (DB.Version). The version exists here so that a version number
-- means one schema on every engine.
SELECT 1;

-- +goose Down
SELECT 1;
