package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/planserver/planserver/internal/db"
)

const copyUsage = `usage: planserver copy --from DB --to DB

Copies a whole planserver database into a new, empty one, between engines or
not: a SQLite file (planserver.db) or a PostgreSQL URL (postgres://...).
Sessions, plans with their history, steps, reports, todos, reviews, events
with their seqs, tokens and revision floors keep their keys, so ETags, event
cursors and tokens held by clients go on working against the copy. The
target is migrated to the source's schema version first; a target that holds
any data is refused. The source is read in one snapshot and may be serving
meanwhile, but writes made after the copy began are not in the copy: stop
the servers first when moving for good.

  planserver copy --from planserver.db --to postgres://planserver@db/planserver
  planserver copy --from postgres://planserver@db/planserver --to backup.db
`

// copyDB is planserver copy.
func copyDB(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("planserver copy", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, copyUsage) }
	from := fs.String("from", "", "the database to copy: a SQLite file or a postgres:// URL")
	to := fs.String("to", "", "the new, empty database to copy into: a SQLite file or a postgres:// URL")
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	if *from == "" || *to == "" || fs.NArg() > 0 {
		fmt.Fprint(stderr, copyUsage)
		return errUsage
	}
	if !db.IsPostgres(*from) {
		// Opening a SQLite path creates the file: a typo must not copy
		// an empty database.
		if _, err := os.Stat(*from); err != nil {
			return fmt.Errorf("copy from %s: %w", *from, err)
		}
	}
	src, err := db.Open(ctx, *from, db.Options{})
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := db.Open(ctx, *to, db.Options{})
	if err != nil {
		return err
	}
	defer dst.Close()
	stats, err := db.Copy(ctx, src, dst, stdout)
	if errors.Is(err, db.ErrTargetNotEmpty) {
		return err
	}
	if err != nil {
		return fmt.Errorf("copy %s to %s: %w (no rows were written to the target)", src.Path, dst.Path, err)
	}
	var total int64
	for _, t := range stats.Tables {
		total += stats.Rows[t]
	}
	fmt.Fprintf(stdout, "%s: copied %d rows to %s\n", src.Path, total, dst.Path)
	return nil
}
