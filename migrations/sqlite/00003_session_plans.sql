-- +goose Up
-- session_plans holds each session's one Markdown plan (write_session_plan).
-- revision is the plan's own, independent of the session's: a human
-- approves the plan revision they read. Deleting a session deletes its plan.
CREATE TABLE session_plans (
    session_id TEXT    PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
    content    TEXT    NOT NULL,
    author     TEXT    NOT NULL DEFAULT '',
    revision   INTEGER NOT NULL,
    created_at TEXT    NOT NULL,
    updated_at TEXT    NOT NULL
);

-- session_todos holds each session's todo list (todo_write), replaced as a
-- whole: todos is a JSON array of {id, content, status}.
CREATE TABLE session_todos (
    session_id TEXT    PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
    todos      TEXT    NOT NULL DEFAULT '[]',
    revision   INTEGER NOT NULL,
    updated_at TEXT    NOT NULL
);

-- +goose Down
-- A rollback refuses, saying why, rather than lose data or a guarantee
-- (raise() works only in a trigger, hence the temporary one).
CREATE TEMP TABLE down_guard (x INTEGER);
-- +goose StatementBegin
CREATE TEMP TRIGGER down_guard BEFORE INSERT ON down_guard
BEGIN
    SELECT raise(ABORT, 'refusing to roll back 00003_session_plans: session plans or todo lists hold rows, which it would delete; back up and delete them first if that is what you want');
END;
-- +goose StatementEnd
INSERT INTO down_guard SELECT 1 WHERE EXISTS (SELECT 1 FROM session_plans) OR EXISTS (SELECT 1 FROM session_todos);
DROP TABLE down_guard;
DROP TABLE session_todos;
DROP TABLE session_plans;
