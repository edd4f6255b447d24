package main

import (
	"context"
	"fmt"
	"io"

	"github.com/planserver/planserver/internal/hookcmd"
)

// hookCommand is planserver hook: the hook itself, or install, uninstall
// and doctor.
func hookCommand(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 || isHelp(args[0]) {
		fmt.Fprint(stdout, hookcmd.Usage)
		if len(args) == 0 {
			return errUsage
		}
		return errHelp
	}
	switch args[0] {
	case "install", "uninstall", "doctor":
		return hookInstall(ctx, args[0], args[1:], getenv, stdout, stderr)
	}
	for _, a := range args[1:] {
		if isHelp(a) {
			fmt.Fprint(stdout, hookcmd.Usage)
			return errHelp
		}
	}
	hookcmd.Run(ctx, args[0], args[1:], getenv, stdin, stdout, stderr)
	return nil
}
