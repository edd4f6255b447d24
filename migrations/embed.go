// Package migrations embeds the goose SQL migrations, so the binary carries
// its schema and `planserver serve` can migrate any database it opens.
package migrations

import "embed"

// FS holds every *.sql migration in this directory.
//
//go:embed *.sql
var FS embed.FS
