package main

import (
	"fmt"
	"io"
	"os"

	"github.com/planserver/planserver/internal/sandbox"
)

// exitStatus ends planserver with a status and no message: the sandboxed
// command's own exit status, passed on unchanged.
type exitStatus int

func (e exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// sandboxCmd is `planserver sandbox --read-only [--allow-connect
// host:port,...] [--explain TEXT] -- CMD [ARGS]`: the same command line as
// the lean planserver-sandbox, in internal/sandbox.
func sandboxCmd(args []string, stdout, stderr io.Writer) error {
	code, help := sandbox.CLI("planserver sandbox", args, stdout, stderr)
	if help {
		return errHelp
	}
	return exitStatus(code)
}

// sandboxStage is the hidden child of planserver sandbox: it returns only
// when it could not execute the command.
func sandboxStage(args []string) error {
	return exitStatus(sandbox.Stage(args, os.Stderr))
}
