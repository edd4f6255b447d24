package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

func migrate(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "usage: planserver migrate up|down|status [--db FILE]")
		return errUsage
	}
	action := args[0]
	var cfg config
	if err := parseFlags(flagSet("migrate "+action, &cfg, false, stderr), args[1:], getenv); err != nil {
		return err
	}
	if err := cfg.validate(); err != nil {
		return err
	}
	d, err := openDB(ctx, cfg)
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
			return err
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
	default:
		fmt.Fprintf(stderr, "planserver migrate: unknown action %q: want up, down or status\n", action)
		return errUsage
	}
	return nil
}
