package admin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/planserver/planserver/internal/cli"
	"github.com/planserver/planserver/internal/db"
	"github.com/spf13/cobra"
)

const copyUsage = `usage: planserver copy --from DB --to DB [--replace-nul]

Copies a whole planserver database into a new, empty one, between engines or
not: a SQLite file (planserver.db) or a PostgreSQL URL (postgres://...).
Sessions, plans with their history, steps, reports, todos, reviews, events
with their seqs, tokens and revision floors keep their keys, so ETags, event
cursors and tokens held by clients go on working against the copy. The
target is migrated to the source's schema version first; a target that holds
any data is refused. The source is read in one snapshot and may be serving
meanwhile, but writes made after the copy began are not in the copy: stop
the servers first when moving for good.

PostgreSQL cannot store the NUL character (U+0000), which planserver now
refuses in every text but older SQLite databases may hold: a copy to
PostgreSQL reads the whole source first and, if any row holds one, lists
those rows and writes nothing. --replace-nul copies them with each NUL
replaced by U+FFFD (the replacement character), and says how many.

  planserver copy --from planserver.db --to postgres://planserver@db/planserver
  planserver copy --from postgres://planserver@db/planserver --to backup.db
`

// CopyCommand is planserver copy. Its flags have no environment
// variables: a stray PLANSERVER_TO must never pick a copy's target. A
// wrong invocation is answered with the whole usage.
func CopyCommand() *cobra.Command {
	var from, to string
	var replaceNUL bool
	cmd := cli.Help(&cobra.Command{
		Use: "copy",
		Args: func(cmd *cobra.Command, args []string) error {
			if from == "" || to == "" || len(args) > 0 {
				fmt.Fprint(cmd.ErrOrStderr(), copyUsage)
				return cli.ErrUsage
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			return copyDB(cmd.Context(), from, to, replaceNUL, cmd.OutOrStdout())
		},
	}, copyUsage, cli.PlainFlags, "")
	cmd.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		fmt.Fprintln(cmd.ErrOrStderr(), cli.FlagProblem(err))
		fmt.Fprint(cmd.ErrOrStderr(), copyUsage)
		return cli.ErrUsage
	})
	fs := cmd.Flags()
	fs.StringVar(&from, "from", "", "the database to copy: a SQLite `file` or a postgres:// URL")
	fs.StringVar(&to, "to", "", "the new, empty database to copy into: a SQLite `file` or a postgres:// URL")
	fs.BoolVar(&replaceNUL, "replace-nul", false, "replace each NUL character (U+0000) in text copied to PostgreSQL, which cannot store it, with U+FFFD; "+
		"without it a source holding NULs is refused, listing its rows, before anything is written")
	return cmd
}

// copyDB copies the database from into the new database to.
func copyDB(ctx context.Context, from, to string, replaceNUL bool, stdout io.Writer) error {
	if db.IsFile(from) {
		// Opening a SQLite path creates the file: a typo must not copy
		// an empty database.
		if _, err := os.Stat(from); err != nil {
			return fmt.Errorf("copy from %s: %w", from, err)
		}
	}
	src, err := db.Open(ctx, from, db.Options{})
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := db.Open(ctx, to, db.Options{})
	if err != nil {
		return err
	}
	defer dst.Close()
	stats, err := db.CopyWith(ctx, src, dst, stdout, db.CopyOptions{ReplaceNUL: replaceNUL})
	if errors.Is(err, db.ErrTargetNotEmpty) || errors.Is(err, db.ErrNUL) {
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
