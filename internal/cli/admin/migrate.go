package admin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/planserver/planserver/internal/cli"
	"github.com/planserver/planserver/internal/db"
	"github.com/planserver/planserver/internal/serveconfig"
	"github.com/spf13/cobra"
)

// databaseGroup is the group command name (migrate, token) whose actions
// work on the database: its help lists --db and its variable, which each
// action reads for itself.
func databaseGroup(name string) *cobra.Command {
	group := cli.Group(cli.Help(&cobra.Command{Use: name}, commandHelp[name], cli.EnvFlags, ""))
	serveconfig.DBFlag(group.Flags(), serveconfig.New())
	serveconfig.EnvFlags(group.Flags())
	return group
}

// MigrateCommand is planserver migrate up|down|status.
func MigrateCommand() *cobra.Command {
	group := databaseGroup("migrate")
	for _, action := range []string{"up", "down", "status"} {
		cfg := serveconfig.New()
		cmd := cli.Help(&cobra.Command{
			Use: action, Args: cli.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				return migrate(cmd.Context(), action, *cfg, cmd.OutOrStdout())
			},
		}, commandHelp["migrate "+action], cli.EnvFlags, "")
		serveconfig.DBFlag(cmd.Flags(), cfg)
		serveconfig.EnvFlags(cmd.Flags())
		group.AddCommand(cmd)
	}
	return group
}

// migrate runs a migrate action on cfg's database.
func migrate(ctx context.Context, action string, cfg serveconfig.Config, stdout io.Writer) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if action != "up" {
		// Reading or rolling back a database that is not there must not
		// leave an empty one behind.
		if err := mustExist(cfg.DB); err != nil {
			return err
		}
	}
	if action != "status" {
		// A schema change under a running server would pull the tables
		// from under it: refuse while one holds the database.
		lock, err := db.Lock(cfg.DB, "migrate "+action)
		if err != nil {
			return err
		}
		defer lock.Release()
	}
	d, err := cfg.OpenDB(ctx)
	if err != nil {
		return err
	}
	defer d.Close()
	switch action {
	case "up":
		from, to, err := d.MigrateUp(ctx, nil)
		if err != nil {
			return err
		}
		if from == to {
			fmt.Fprintf(stdout, "%s: schema already at version %d\n", d.Path, to)
		} else {
			fmt.Fprintf(stdout, "%s: migrated from version %d to %d\n", d.Path, from, to)
		}
	case "down":
		v, err := d.MigrateDown(ctx, nil)
		if err != nil {
			return downRefusal(err)
		}
		fmt.Fprintf(stdout, "%s: rolled back migration %d\n", d.Path, v)
	case "status":
		st, err := d.MigrateStatus(ctx)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "VERSION\tNAME\tSTATE\tAPPLIED AT")
		for _, m := range st {
			state, at := "pending", ""
			if m.Applied {
				state, at = "applied", m.AppliedAt.UTC().Format(time.RFC3339)
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", m.Version, m.Name, state, at)
		}
		return tw.Flush()
	}
	return nil
}

// downRefusal brings forward the reason a down migration's guard gave for
// refusing (see migrations/*.sql), which goose and SQLite wrap in their
// own words and a result code.
func downRefusal(err error) error {
	msg := err.Error()
	i := strings.Index(msg, "refusing to roll back")
	if i < 0 {
		return err
	}
	return errors.New(sqliteCode.ReplaceAllString(msg[i:], ""))
}

// sqliteCode is the " (1811)" SQLite appends to an error.
var sqliteCode = regexp.MustCompile(` \(\d+\)$`)
