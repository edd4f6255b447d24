package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/planserver/planserver/internal/cliflag"
	"github.com/planserver/planserver/internal/sandbox"
)

// exitStatus ends planserver with a status and no message: the sandboxed
// command's own exit status, passed on unchanged.
type exitStatus int

func (e exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// sandboxCmd is `planserver sandbox --read-only [--allow-connect
// host:port,...] -- CMD [ARGS]`. Its flags have no environment
// variables: a variable in the agent's environment must not widen the
// sandbox of every command.
func sandboxCmd(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("planserver sandbox", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	readOnly := fs.Bool("read-only", false, "run CMD read-only (required: the only mode there is)")
	var allow []string
	fs.Func("allow-connect", "comma-separated `host:port` list CMD may open TCP connections to "+
		"(Landlock matches the port on any host; default: none)", func(v string) error {
		allow = append(allow, v)
		_, err := sandbox.ParseAllowConnect([]string{v})
		return err
	})
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, sandboxHelp)
			fmt.Fprintln(stdout, "\nFlags:")
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return errHelp
		}
		return sandboxUsage(stderr, cliflag.ErrorText(err))
	}
	argv := fs.Args()
	if !*readOnly {
		return sandboxUsage(stderr, "--read-only is required (it is the only mode)")
	}
	if len(argv) == 0 {
		return sandboxUsage(stderr, "no command to run after --")
	}
	code, err := sandbox.Run(argv, sandbox.Options{AllowConnect: allow})
	if err != nil {
		fmt.Fprintln(stderr, "planserver sandbox:", err)
		fmt.Fprintln(stderr, "planserver sandbox: refusing to run the command without the sandbox")
		return exitStatus(sandbox.ExitUnavailable)
	}
	return exitStatus(code)
}

// sandboxUsage reports a wrong invocation with the sandbox's own status
// (125), not 2, which the command it wraps could return itself.
func sandboxUsage(stderr io.Writer, problem string) error {
	fmt.Fprintf(stderr, "planserver sandbox: %s (see 'planserver sandbox --help')\n", problem)
	return exitStatus(sandbox.ExitUnavailable)
}

// sandboxStage is the hidden child of planserver sandbox: it returns only
// when it could not execute the command.
func sandboxStage(args []string) error {
	return exitStatus(sandbox.Stage(args, os.Stderr))
}

const sandboxHelp = `Usage: planserver sandbox --read-only [--allow-connect host:port,...] -- CMD [ARGS]

Run CMD so that it can read every file and write none: Landlock allows
writing only /dev/null, the terminal and a private, empty TMPDIR (removed
afterwards), and refuses TCP connections except to --allow-connect; a
seccomp filter refuses chmod, chown, utimes, extended attributes, Unix
sockets and io_uring. CMD's children inherit all of it. HOME and the
working directory stay; TMPDIR, GOTELEMETRY=off, GIT_OPTIONAL_LOCKS=0 and
PYTHONDONTWRITEBYTECODE=1 are set.

Exit status: CMD's own (128+N when signal N ended it); 125 when the
sandbox cannot run here (Landlock missing or older than ABI 4, Linux 6.7)
or the invocation is wrong, and then CMD never runs; 126 when CMD cannot
be executed; 127 when it is not found.
`
