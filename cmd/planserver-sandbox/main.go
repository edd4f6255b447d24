// Command planserver-sandbox is the lean form of planserver sandbox: in
// plan mode a hook runs every shell command through it, so its start-up
// is added to every command. It links internal/sandbox, the two kernel
// libraries that package uses and a small part of the standard library
// (no net/http, no database drivers, no shell parser), and does exactly
// what planserver sandbox does, with the same flags and exit statuses
// (docs/sandbox.md). Its stage, the re-executed child that applies the
// rules and executes the command, is this binary's own hidden
// subcommand.
//
//	planserver-sandbox --read-only [--allow-connect host:port,...] [--explain TEXT] -- CMD [ARGS]
package main

import (
	"os"

	"github.com/planserver/planserver/internal/sandbox"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == sandbox.StageCommand {
		os.Exit(sandbox.Stage(os.Args[2:], os.Stderr))
	}
	code, _ := sandbox.CLI("planserver-sandbox", os.Args[1:], os.Stdout, os.Stderr)
	os.Exit(code)
}
