package admin

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/planserver/planserver/internal/auth"
	"github.com/planserver/planserver/internal/cli"
	"github.com/planserver/planserver/internal/serveconfig"
	"github.com/spf13/cobra"
)

// TokenCommand is planserver token create|list|revoke: bearer tokens,
// managed on the database directly, so the first admin token can be made
// before any server runs.
func TokenCommand() *cobra.Command {
	group := databaseGroup("token")
	for _, action := range []string{"create", "list", "revoke"} {
		cfg, in := serveconfig.New(), &auth.CreateInput{}
		cmd := cli.Help(&cobra.Command{
			Use: action, Args: cli.NoArgs,
			RunE: func(cmd *cobra.Command, args []string) error {
				name := ""
				if action == "revoke" {
					name = args[0]
				}
				return token(cmd.Context(), action, *cfg, *in, name, cmd.OutOrStdout(), cmd.ErrOrStderr())
			},
		}, commandHelp["token "+action], cli.EnvFlags, "")
		fs := cmd.Flags()
		serveconfig.DBFlag(fs, cfg)
		switch action {
		case "create":
			fs.StringVar(&in.Role, "role", "", "the token's `role`: admin, agent or viewer (required)")
			fs.StringVar(&in.SessionID, "session", "", "the `session` an agent token is bound to (with its descendants)")
			fs.StringVar(&in.Name, "name", "", "the token's `name`, recorded as the actor of its changes (default: generated)")
			fs.StringVar(&in.TTL, "ttl", "", "`lifetime`, e.g. 24h (default: no expiry)")
		case "revoke":
			cmd.Use = "revoke NAME"
			cmd.Args = func(cmd *cobra.Command, args []string) error {
				if len(args) == 0 || args[0] == "" {
					return cli.Usage(cmd, "name the token to revoke")
				}
				return cli.ArgsBetween(1, 1, "planserver token revoke NAME")(cmd, args)
			}
		}
		serveconfig.EnvFlags(fs)
		group.AddCommand(cmd)
	}
	return group
}

// token runs a token action on cfg's database: create with in, revoke the
// token called name.
func token(ctx context.Context, action string, cfg serveconfig.Config, in auth.CreateInput, name string, stdout, stderr io.Writer) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if action != "create" {
		if err := mustExist(cfg.DB); err != nil {
			return err
		}
	}
	d, err := openAndMigrate(ctx, cfg, "token "+action)
	if err != nil {
		return err
	}
	defer d.Close()
	store := auth.NewStore(d)
	switch action {
	case "create":
		secret, tok, err := store.Create(ctx, in)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, secret)
		scope := ""
		if tok.SessionID != nil {
			scope = fmt.Sprintf(" for session %q and its descendants", *tok.SessionID)
		}
		fmt.Fprintf(stderr, "created %s token %q%s; this is the only time it is shown.\n", tok.Role, tok.Name, scope)
	case "list":
		toks, err := store.List(ctx)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tROLE\tSESSION\tCREATED\tLAST USED\tEXPIRES\tREVOKED")
		for _, t := range toks {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", t.Name, t.Role, cli.OrDash(t.SessionID), t.CreatedAt,
				cli.OrDash(t.LastUsedAt), cli.OrDash(t.ExpiresAt), cli.OrDash(t.RevokedAt))
		}
		return tw.Flush()
	case "revoke":
		tok, err := store.Revoke(ctx, name)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "revoked token %q at %s\n", tok.Name, *tok.RevokedAt)
	}
	return nil
}
