// Command planserver-hook is the command form of host hooks, lean: it does
// exactly what planserver hook HOST does (internal/hookcmd), without the
// server's packages. A host starts the hook once per tool call, and
// planserver's own start-up (its database drivers, schemas, metrics and
// tracing initialise before main runs) costs tens of milliseconds, which
// every tool call would pay; this binary links only the hook's adapters,
// the shell classifier and an HTTP client. planserver hook install writes
// it into the host's settings when it sits next to planserver.
//
//	planserver-hook HOST [--server URL] [--token-file FILE] [--session ID | --parent ID] [--timeout D]
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/planserver/planserver/internal/cliflag"
	"github.com/planserver/planserver/internal/hookcmd"
)

func main() {
	args := os.Args[1:]
	if len(args) == 0 || cliflag.IsHelp(args[0]) || (len(args) > 1 && anyHelp(args[1:])) {
		fmt.Print(hookcmd.Usage)
		if len(args) == 0 {
			os.Exit(2)
		}
		return
	}
	if args[0] == "install" || args[0] == "uninstall" {
		fmt.Fprintf(os.Stderr, "planserver-hook: %s is planserver's: run planserver hook %s HOST\n", args[0], args[0])
		os.Exit(2)
	}
	hookcmd.Run(context.Background(), args[0], args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr)
}

func anyHelp(args []string) bool {
	for _, a := range args {
		if cliflag.IsHelp(a) {
			return true
		}
	}
	return false
}
