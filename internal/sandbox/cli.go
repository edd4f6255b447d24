package sandbox

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// Help is the sandbox command's help; name is how it was invoked
// ("planserver sandbox" or "planserver-sandbox").
func Help(name string) string {
	return strings.ReplaceAll(help, "NAME", name)
}

const help = `Usage: NAME --read-only [--allow-write PATH]... [--project DIR] [--build-scope]
       [--allow-connect host:port,...] [--explain TEXT] -- CMD [ARGS]

Run CMD so that it can read every file and change nothing outside itself
(docs/sandbox.md). Landlock lets it write only /dev/null, its terminal, the
file its output goes to and a private, empty TMPDIR (removed afterwards);
a seccomp allowlist refuses chmod, chown, utimes and extended attributes,
every socket but an anonymous socket pair, and every way of reaching
another process (ptrace, prlimit, renice, affinity, keyrings, System V
IPC); Landlock keeps its signals to its own processes. CMD runs as PID 1
of new PID, IPC and mount namespaces where the kernel allows them, so
every process it starts ends when it does; elsewhere the supervisor kills
what is left. As root it keeps only CAP_DAC_OVERRIDE and
CAP_DAC_READ_SEARCH. TMPDIR (with GOCACHE in it), GIT_OPTIONAL_LOCKS=0,
no pagers, git's fsmonitor off, GOTOOLCHAIN=local, GOPROXY=off,
GOTELEMETRY=off and PYTHONDONTWRITEBYTECODE=1 are set; HOME and the
working directory stay.
When CMD fails, one line on stderr says it ran read-only because the
session is in plan mode, and what to do instead (--explain).

--allow-write opens PATH for writing besides: an absolute path opens
itself; a path or glob relative to --project (default: the working
directory) opens what docs/sandbox.md's rule says (a file its folder, but
a file at the top of the project only itself; a glob its literal folder
prefix; a glob at the top only the existing files it matches), never
anything outside the project. --build-scope says the command runs for a
session in scoped build, so that the line on a failure names the approved
scope instead of plan mode.

--allow-connect opens TCP connections to exactly the listed address and
port pairs (names are resolved once, at the start, and listed in CMD's
/etc/hosts; DNS stays refused), and nothing else: no UDP, no listening,
no TCP Fast Open.

Exit status: CMD's own (128+N when signal N ended it, or ended the
sandbox); 125 when the sandbox cannot run here (Landlock older than ABI 6,
Linux 6.12; no seccomp; for --allow-connect, no seccomp user notification
or pidfd_getfd) or the invocation is wrong, and then CMD never runs; 126
when CMD cannot be executed; 127 when it is not found.
`

// HelpText is what --help prints: Help and the flags.
func HelpText(name string) string {
	var b strings.Builder
	cli(name, []string{"--help"}, &b, io.Discard, Options{})
	return b.String()
}

// CLI runs the sandbox command line (args after the command's name) and
// returns its exit status; help is true when it only printed the help.
// planserver sandbox and planserver-sandbox both call it. Its flags have
// no environment variables: a variable in an agent's environment must not
// widen the sandbox of every command.
func CLI(name string, args []string, stdout, stderr io.Writer) (code int, help bool) {
	return cli(name, args, stdout, stderr, Options{})
}

// cli is CLI with options the command line cannot set (tests force the
// fallback with NoNamespaces).
func cli(name string, args []string, stdout, stderr io.Writer, o Options) (code int, help bool) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	readOnly := fs.Bool("read-only", false, "run CMD read-only (required: the only mode there is)")
	var allow []string
	fs.Func("allow-connect", "comma-separated `host:port` list CMD may open TCP connections to, "+
		"exactly those address and port pairs (default: none)", func(v string) error {
		allow = append(allow, v)
		_, err := ParseEndpoints([]string{v})
		return err
	})
	explain := fs.String("explain", "", "the next step the line on a failure tells the model (`text`; default: put the change in the plan and ask for review)")
	var writes []string
	fs.Func("allow-write", "a `path` or glob CMD may write besides TMPDIR (repeatable; relative ones are relative to --project, "+
		"opened by the rule of docs/sandbox.md)", func(v string) error {
		writes = append(writes, v)
		return nil
	})
	project := fs.String("project", "", "the `dir` relative --allow-write entries are relative to (default: the working directory)")
	scoped := fs.Bool("build-scope", false, "CMD runs for a session in scoped build: the line on a failure says the approved scope limits it")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, Help(name))
			fmt.Fprintln(stdout, "\nFlags:")
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return 0, true
		}
		return usage(name, stderr, flagProblem(err)), false
	}
	argv := fs.Args()
	if !*readOnly {
		return usage(name, stderr, "--read-only is required (it is the only mode)"), false
	}
	if len(argv) == 0 {
		return usage(name, stderr, "no command to run after --"), false
	}
	if len(writes) > 0 {
		base := *project
		if base == "" {
			base = o.Dir
		}
		if base == "" {
			base = "."
		}
		paths, err := WriteTargets(base, writes)
		if err != nil {
			return usage(name, stderr, err.Error()), false
		}
		o.WritePaths = append(o.WritePaths, paths...)
	} else if *project != "" {
		return usage(name, stderr, "--project names where --allow-write entries are; give --allow-write too"), false
	}
	o.AllowConnect, o.Explain, o.Scoped, o.Stdout, o.Stderr = allow, *explain, *scoped, stdout, stderr
	code, err := Run(argv, o)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v; the command did not run\n", name, err)
		return ExitUnavailable, false
	}
	return code, false
}

// usage reports a wrong invocation with the sandbox's own status (125),
// not 2, which the command it wraps could return itself.
func usage(name string, stderr io.Writer, problem string) int {
	fmt.Fprintf(stderr, "%s: %s (see '%s --help'); the command did not run\n", name, problem, name)
	return ExitUnavailable
}

// flagProblem words an error of the flag package, which names flags in
// -single-dash form, in the --double-dash form of the help. The lean
// planserver-sandbox keeps the standard library's flag package (what it
// links is added to every sandboxed command's start-up), so the words are
// rewritten here rather than taken from planserver's command tree.
func flagProblem(err error) string {
	msg := err.Error()
	for _, prefix := range []string{"flag provided but not defined: -", "bad flag syntax: "} {
		if name, ok := strings.CutPrefix(msg, prefix); ok {
			return "unknown flag --" + strings.TrimLeft(name, "-")
		}
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
		return "flag --" + name + " needs a value"
	}
	return strings.Replace(msg, " for flag -", " for flag --", 1)
}
