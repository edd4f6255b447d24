// Package migrations embeds the goose SQL migrations of each engine, so the
// binary carries its schema and `planserver serve` can migrate any database
// it opens. Versions mean the same schema on every engine.
package migrations

import (
	"embed"
	"io/fs"
)

//go:embed sqlite/*.sql
var sqliteFS embed.FS

//go:embed postgres/*.sql
var postgresFS embed.FS

// SQLite holds the migrations of the embedded SQLite engine.
var SQLite = mustSub(sqliteFS, "sqlite")

// Postgres holds the migrations of PostgreSQL. They begin at version 8
// with a baseline of the whole schema: PostgreSQL support began there.
var Postgres = mustSub(postgresFS, "postgres")

func mustSub(f fs.FS, dir string) fs.FS {
	sub, err := fs.Sub(f, dir)
	if err != nil {
		panic(err) // the directory is embedded above
	}
	return sub
}
