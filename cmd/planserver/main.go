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
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, errUsage) {
			fmt.Fprintln(os.Stderr, "planserver:", err)
		}
		os.Exit(2)
	}
}

// errUsage marks errors whose message the flag package already printed.
var errUsage = errors.New("usage")

const usage = `planserver: sessions with build/plan mode, shared plans and their events over HTTP.

Usage:
  planserver serve [flags]              apply pending migrations, then serve
  planserver migrate up|down|status     manage the database schema
  planserver token create --role R [--session ID] [--name N] [--ttl D]
  planserver token list | revoke NAME   manage bearer tokens (stored hashed)
  planserver backup FILE [--db DB]      write an online, consistent copy of the database
  planserver copy --from DB --to DB     copy a whole database into a new one (SQLite, PostgreSQL)
  planserver version                    print the version

Run 'planserver serve -h' for the flags; each has a PLANSERVER_* environment
equivalent (--max-plan-bytes is PLANSERVER_MAX_PLAN_BYTES).
`

// run is planserver's main, with its inputs and outputs passed in.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return errUsage
	}
	switch args[0] {
	case "serve":
		return serve(ctx, args[1:], getenv, stdout, stderr)
	case "migrate":
		return migrate(ctx, args[1:], getenv, stdout, stderr)
	case "backup":
		return backup(ctx, args[1:], getenv, stdout, stderr)
	case "copy":
		return copyDB(ctx, args[1:], stdout, stderr)
	case "token":
		return token(ctx, args[1:], getenv, stdout, stderr)
	case "version", "--version", "-version":
		fmt.Fprintln(stdout, "planserver", version)
		return nil
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprintf(stderr, "planserver: unknown command %q\n\n%s", args[0], usage)
	return errUsage
}
