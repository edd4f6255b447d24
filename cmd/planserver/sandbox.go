package main

import (
	"os"

	"github.com/planserver/planserver/internal/cli"
	"github.com/planserver/planserver/internal/sandbox"
	"github.com/spf13/cobra"
)

// sandboxCommand is `planserver sandbox --read-only [--allow-connect
// host:port,...] [--explain TEXT] -- CMD [ARGS]`: the same command line as
// the lean planserver-sandbox, read by internal/sandbox, which answers a
// wrong one with its own status (125), never 2, which CMD could return.
func sandboxCommand() *cobra.Command {
	return cli.Help(&cobra.Command{
		Use: "sandbox", DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			code, help := sandbox.CLI("planserver sandbox", args, cmd.OutOrStdout(), cmd.ErrOrStderr())
			if help {
				return nil
			}
			return cli.ExitStatus(code)
		},
	}, sandbox.HelpText("planserver sandbox"), "", "")
}

// sandboxStageCommand is the hidden child of planserver sandbox: it
// returns only when it could not execute the command.
func sandboxStageCommand() *cobra.Command {
	return &cobra.Command{
		Use: sandbox.StageCommand, Hidden: true, DisableFlagParsing: true,
		RunE: func(_ *cobra.Command, args []string) error {
			return cli.ExitStatus(sandbox.Stage(args, os.Stderr))
		},
	}
}
