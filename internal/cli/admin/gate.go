package admin

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/cli"
	"github.com/planserver/planserver/internal/gates"
	"github.com/planserver/planserver/internal/gates/proxy"
	"github.com/planserver/planserver/internal/serveconfig"
	"github.com/spf13/cobra"
)

// GateAddCommand, GateListCommand and GateRemoveCommand are planserver
// gate add|list|remove: the registry of /mcp/gate/NAME, on the database.
func GateAddCommand() *cobra.Command {
	return gateRegistryCommand("add", "add NAME URL", 2, "give NAME and URL")
}

func GateListCommand() *cobra.Command { return gateRegistryCommand("list", "list", 0, "") }

func GateRemoveCommand() *cobra.Command {
	return gateRegistryCommand("remove", "remove NAME", 1, "give NAME")
}

// gateRegistryCommand is the gate registry's action, taking want
// arguments (missing says how when they are not given).
func gateRegistryCommand(action, use string, want int, missing string) *cobra.Command {
	cfg, readOnly := serveconfig.New(), cli.ReadOnlyTools{}
	cmd := cli.Help(&cobra.Command{
		Use: use,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != want {
				if len(args) > want {
					return cli.Usage(cmd, "unexpected argument %q", args[want])
				}
				return cli.Usage(cmd, "%s", missing)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return gateRegistry(cmd.Context(), action, *cfg, readOnly, args, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}, commandHelp["gate "+action], cli.EnvFlags, "")
	serveconfig.DBFlag(cmd.Flags(), cfg)
	if action == "add" {
		cmd.Flags().Var(readOnly, "read-only", "`tools` of the server to treat as read-only although not annotated so (comma-separated; repeatable)")
	}
	serveconfig.EnvFlags(cmd.Flags())
	return cmd
}

func gateRegistry(ctx context.Context, action string, cfg serveconfig.Config, readOnly cli.ReadOnlyTools, pos []string, stdout, stderr io.Writer) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if action != "add" {
		if err := mustExist(cfg.DB); err != nil {
			return err
		}
	}
	d, err := openAndMigrate(ctx, cfg, "gate "+action)
	if err != nil {
		return err
	}
	defer d.Close()
	store := gates.NewStore(d)
	switch action {
	case "add":
		tools := []string{}
		for t := range readOnly {
			tools = append(tools, t)
		}
		slices.Sort(tools)
		g, created, err := store.Put(ctx, pos[0], api.GateWrite{URL: pos[1], ReadOnlyTools: tools})
		if err != nil {
			return err
		}
		verb := "replaced"
		if created {
			verb = "registered"
		}
		fmt.Fprintf(stderr, "%s gate %q: agents reach %s at /mcp/gate/%s (extra read-only tools: %s)\n",
			verb, g.Name, g.URL, g.Name, proxy.ReadOnlyList(readOnly))
	case "list":
		gates, err := store.List(ctx)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tURL\tREAD-ONLY TOOLS\tUPDATED")
		for _, g := range gates {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", g.Name, g.URL, strings.Join(g.ReadOnlyTools, ","), g.UpdatedAt)
		}
		return tw.Flush()
	case "remove":
		if err := store.Delete(ctx, pos[0]); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "removed gate %q\n", pos[0])
	}
	return nil
}
