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

// SQLite holds the migrations of the embedded SQLite engine.
var SQLite = mustSub(sqliteFS, "sqlite")

func mustSub(f fs.FS, dir string) fs.FS {
	sub, err := fs.Sub(f, dir)
	if err != nil {
		panic(err) // the directory is embedded above
	}
	return sub
}
