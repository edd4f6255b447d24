package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/planserver/planserver/internal/auth"
)

// token manages bearer tokens on the database directly, so the first admin
// token can be made before any server runs.
func token(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "usage: planserver token create|list|revoke [flags]")
		return errUsage
	}
	action, args := args[0], args[1:]
	var cfg config
	fs := flagSet("token "+action, &cfg, false, stderr)
	var in auth.CreateInput
	if action == "create" {
		fs.StringVar(&in.Role, "role", "", "admin, agent or viewer (required)")
		fs.StringVar(&in.SessionID, "session", "", "the session an agent token is bound to (with its descendants)")
		fs.StringVar(&in.Name, "name", "", "the token's name, recorded as the actor of its changes (default: generated)")
		fs.StringVar(&in.TTL, "ttl", "", "lifetime, e.g. 24h (default: no expiry)")
	}
	var revokeName string
	if err := parseTokenFlags(fs, action, args, getenv, &revokeName); err != nil {
		return err
	}
	if err := cfg.validate(); err != nil {
		return err
	}
	d, err := openAndMigrate(ctx, cfg, stderr)
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
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", t.Name, t.Role, orDash(t.SessionID), t.CreatedAt,
				orDash(t.LastUsedAt), orDash(t.ExpiresAt), orDash(t.RevokedAt))
		}
		return tw.Flush()
	case "revoke":
		tok, err := store.Revoke(ctx, revokeName)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "revoked token %q at %s\n", tok.Name, *tok.RevokedAt)
	}
	return nil
}

// parseTokenFlags parses a token subcommand's flags; revoke takes the
// token's name as its one argument.
func parseTokenFlags(fs *flag.FlagSet, action string, args []string, getenv func(string) string, name *string) error {
	switch action {
	case "create", "list":
		return parseFlags(fs, args, getenv)
	case "revoke":
		if len(args) == 0 || args[0] == "" || args[0][0] == '-' {
			fmt.Fprintln(fs.Output(), "usage: planserver token revoke NAME [--db FILE]")
			return errUsage
		}
		*name = args[0]
		return parseFlags(fs, args[1:], getenv)
	}
	fmt.Fprintf(fs.Output(), "planserver token: unknown action %q: want create, list or revoke\n", action)
	return errUsage
}

func orDash(s *string) string {
	if s == nil {
		return "-"
	}
	return *s
}
