// Command planserver serves sessions with a user-controlled build/plan mode,
// their plans and reviews, shared named plans and a durable event feed over
// HTTP, stored in SQLite or PostgreSQL. main only wires; run does the work so tests can
// drive the binary's behaviour in-process.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/planserver/planserver/internal/cli"
	"github.com/planserver/planserver/internal/cli/admin"
	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The first signal starts a graceful shutdown; restoring the default
	// handling then lets a second one end the process at once.
	context.AfterFunc(ctx, stop)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	var exit cli.ExitError
	var status cli.ExitStatus
	switch {
	case err == nil:
	case errors.As(err, &status):
		os.Exit(int(status))
	case errors.As(err, &exit):
		fmt.Fprintln(os.Stderr, "planserver:", exit.Err)
		os.Exit(exit.Code)
	case errors.Is(err, cli.ErrUsage):
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "planserver:", err)
		os.Exit(2)
	}
}

const usage = `planserver: sessions with build/plan mode, shared plans and their events over HTTP.

Usage:
  planserver serve [flags]              apply pending migrations, then serve
  planserver migrate up|down|status     manage the database schema
  planserver token create --role R [--session ID] [--name N] [--ttl D]
  planserver token list | revoke NAME   manage bearer tokens (stored hashed)
  planserver backup FILE                write an online, consistent copy of the database
  planserver copy --from DB --to DB     copy a whole database into a new one (SQLite, PostgreSQL)
  planserver healthcheck [--addr A]     exit 0 when a server at A answers /healthz
  planserver gate --session ID -- CMD   put a stdio MCP server behind the plan-mode gate
  planserver gate add NAME URL | list | remove NAME   the HTTP MCP servers of /mcp/gate/NAME
  planserver hook HOST                  a host's hook before every tool call (claude-code, codex, gemini-cli, cursor, opencode)
  planserver hook install|doctor|uninstall HOST   put a host under plan mode (hooks, MCP server, self-test), check it, take it out
  planserver sandbox --read-only [--allow-connect H:P,...] -- CMD   run CMD unable to write
  planserver version                    print the version

Talking to a running server (--server URL, --token T, --json):
  planserver session create|get|list|mode|delete   sessions and their build/plan mode
  planserver session plan show|put|edit | todos    a session's plan and todo list
  planserver plan get|list|put|edit|status|history|diff|delete   shared plans
  planserver review list|show|approve|reject        review the plans of sessions
  planserver steps ready|claim|report               work through a plan's steps
  planserver events [--follow]                      the change log
  planserver webhook create|list|show|update|delete|rotate-secret|deliveries|redeliver
                                                    signed webhook subscriptions (admin)
  planserver signin list|show|revoke                people's sign-ins: list them, end them (admin)

Run 'planserver COMMAND --help' for a command's flags; each has a PLANSERVER_*
environment equivalent (--max-plan-bytes is PLANSERVER_MAX_PLAN_BYTES).
`

// run is planserver's main, with its inputs and outputs passed in.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	root := newRoot(getenv)
	root.SetArgs(args)
	root.SetIn(os.Stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	return root.ExecuteContext(ctx)
}

// newRoot is planserver's command tree: serve here, the admin commands
// from internal/cli/admin, the commands that talk to a running server
// from internal/cli.
func newRoot(getenv func(string) string) *cobra.Command {
	env := cli.Env{Getenv: getenv, Version: version}
	root := cli.Root(&cobra.Command{Use: "planserver", Version: version}, usage, env)
	root.SetVersionTemplate("planserver {{.Version}}\n")
	gate := cli.GateCommand()
	gate.AddCommand(admin.GateAddCommand(), admin.GateListCommand(), admin.GateRemoveCommand())
	hook := cli.HookCommand(env)
	root.AddCommand(serveCommand(env), admin.MigrateCommand(), admin.TokenCommand(), admin.BackupCommand(), admin.CopyCommand(),
		admin.HealthcheckCommand(),
		gate, hook, sandboxCommand(), sandboxStageCommand(), versionCommand(), docsCommand())
	root.AddCommand(cli.APICommands(env)...)
	return root
}

// versionCommand is planserver version.
func versionCommand() *cobra.Command {
	return cli.Help(&cobra.Command{
		Use: "version", Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), "planserver", version)
			return err
		},
	}, "Usage: planserver version\n\nPrint planserver's version.\n", "", "")
}
