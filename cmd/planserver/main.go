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

	"github.com/planserver/planserver/internal/cliflag"
	"github.com/planserver/planserver/internal/sandbox"
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
	var exit exitError
	var status exitStatus
	switch {
	case err == nil:
	case errors.As(err, &status):
		os.Exit(int(status))
	case errors.As(err, &exit):
		fmt.Fprintln(os.Stderr, "planserver:", exit.err)
		os.Exit(exit.code)
	case errors.Is(err, errUsage):
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "planserver:", err)
		os.Exit(2)
	}
}

// errUsage marks errors whose message was printed already (a wrong flag or
// argument): exit 2 without another line.
var errUsage = errors.New("usage")

// errHelp marks a --help that was answered: exit 0.
var errHelp = errors.New("help")

// exitError is an error that exits with a code of its own (healthcheck's
// 1 for unhealthy, which HEALTHCHECK tells apart from 2 for misuse).
type exitError struct {
	code int
	err  error
}

func (e exitError) Error() string { return e.err.Error() }

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
	if err := dispatch(ctx, args, getenv, stdout, stderr); !errors.Is(err, errHelp) {
		return err
	}
	return nil
}

func dispatch(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
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
	case "healthcheck":
		return healthcheck(ctx, args[1:], getenv, stdout, stderr)
	case "session", "plan", "review", "steps", "events", "webhook", "signin":
		return apiCommand(ctx, args, getenv, os.Stdin, stdout, stderr)
	case "hook":
		// A host's hook: its input on stdin, the host's output on stdout.
		return hookCommand(ctx, args[1:], getenv, os.Stdin, stdout, stderr)
	case "gate":
		// The stdio proxy speaks MCP on the process's own stdin and stdout.
		return gate(ctx, args[1:], getenv, os.Stdin, stdout, stderr)
	case "sandbox":
		return sandboxCmd(args[1:], stdout, stderr)
	case sandbox.StageCommand:
		return sandboxStage(args[1:])
	case "docs":
		// Not in the usage: it writes docs/cli.md (make docs).
		return docsCommand(ctx, args[1:], stdout, stderr)
	case "version", "--version", "-version":
		fmt.Fprintln(stdout, "planserver", version)
		return nil
	case "help", "-h", "--help", "-help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	if near := suggest(args[0], commands); near != "" {
		fmt.Fprintf(stderr, "planserver: unknown command %q: did you mean %s? (see 'planserver --help')\n", args[0], near)
		return errUsage
	}
	fmt.Fprintf(stderr, "planserver: unknown command %q (see 'planserver --help')\n", args[0])
	return errUsage
}

// commands are the names dispatch knows, for suggestions.
var commands = []string{"serve", "migrate", "backup", "copy", "token", "healthcheck", "session", "plan", "review", "steps",
	"events", "webhook", "signin", "hook", "gate", "sandbox", "version", "help"}

// suggest returns the known name nearest to name when it is a likely typo
// (at most two edits away, and fewer than half its letters), else "".
func suggest(name string, known []string) string {
	best, bestD := "", 3
	for _, k := range known {
		if d := editDistance(name, k); d < bestD && d*2 < len(k) {
			best, bestD = k, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, with a swap
// of two neighbours counting once (sesion, sesison).
func editDistance(a, b string) int {
	prev2, prev, cur := make([]int, len(b)+1), make([]int, len(b)+1), make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

// isHelp reports whether arg asks for help rather than naming an action.
func isHelp(arg string) bool { return cliflag.IsHelp(arg) }
