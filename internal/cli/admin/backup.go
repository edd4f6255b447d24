package admin

import (
	"context"
	"fmt"
	"io"

	"github.com/planserver/planserver/internal/cli"
	"github.com/planserver/planserver/internal/serveconfig"
	"github.com/spf13/cobra"
)

// BackupCommand is planserver backup FILE: an online, consistent copy of
// the database in a new file, while a server may be serving it.
func BackupCommand() *cobra.Command {
	cfg := serveconfig.New()
	cmd := cli.Help(&cobra.Command{
		Use: "backup FILE",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 || args[0] == "" {
				return cli.Usage(cmd, "name the FILE to write the copy to")
			}
			return cli.ArgsBetween(1, 1, "planserver backup FILE")(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return backup(cmd.Context(), *cfg, args[0], cmd.OutOrStdout())
		},
	}, commandHelp["backup"], cli.EnvFlags, "")
	serveconfig.DBFlag(cmd.Flags(), cfg)
	serveconfig.EnvFlags(cmd.Flags())
	return cmd
}

func backup(ctx context.Context, cfg serveconfig.Config, dest string, stdout io.Writer) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if err := mustExist(cfg.DB); err != nil {
		return err
	}
	d, err := cfg.OpenDB(ctx)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Backup(ctx, dest); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: backed up to %s\n", cfg.DB, dest)
	return nil
}
