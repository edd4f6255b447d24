package sandbox

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode"
)

// Options configures Run.
type Options struct {
	// AllowConnect lists host:port entries (see ParseEndpoints) the
	// command may open TCP connections to, exactly those address and port
	// pairs (names are resolved once, before the command starts); empty
	// refuses every socket but an anonymous socketpair.
	AllowConnect []string
	// WritePaths are files or directories, besides TMPDIR, the command may
	// write (create, remove, rename in) through Landlock; each must exist.
	// Metadata (modes, owners, times, extended attributes) stays refused
	// everywhere. The CLI sets none: it is for paths a person approved.
	WritePaths []string
	// Explain is the next step the one line on stderr tells the model
	// when the command fails (see explainLine); empty is a default that
	// names no tool.
	Explain string
	// Scoped says the command runs for a session in scoped build, with
	// the approved scope's WritePaths and AllowConnect: the line on a
	// failure says the scope, not plan mode, limited it.
	Scoped bool
	// Exe is the program re-executed as the stage with StageCommand as
	// its first argument; empty means the running executable.
	Exe string
	// Env is the command's environment before the sandbox's changes;
	// nil means os.Environ().
	Env []string
	// Dir is the working directory; empty means the current one.
	Dir string
	// Stdin, Stdout and Stderr default to the process's own. An *os.File
	// is handed to the command as it is; anything else is copied through
	// a pipe.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// NoNamespaces makes Run use the fallback it takes where the kernel
	// refuses new namespaces (unprivileged user namespaces turned off):
	// the supervisor as a child subreaper that kills every process left
	// when the command ends. The other rules stay as they are. For tests;
	// no flag or environment variable sets it. In that mode Run reaps
	// every child of the calling process, so nothing else in it may start
	// child processes meanwhile (the CLI starts none).
	NoNamespaces bool
}

// Run runs argv in the sandbox and returns its exit status: the command's
// own, 128+N when a signal N ended it (or ended the supervisor, which
// then ended the command), or one of ExitUnavailable, ExitCannotRun and
// ExitNotFound (with a line on Stderr). When the command ran and failed,
// one line on Stderr says it ran in the read-only sandbox (explainLine).
// The error is set only when the sandbox itself could not be set up;
// nothing ran then.
func Run(argv []string, o Options) (int, error) {
	if len(argv) == 0 {
		return ExitUnavailable, errors.New("sandbox: no command to run")
	}
	eps, err := ParseEndpoints(o.AllowConnect)
	if err != nil {
		return ExitUnavailable, err
	}
	for _, p := range o.WritePaths {
		if !filepath.IsAbs(p) {
			return ExitUnavailable, fmt.Errorf("sandbox: write path %q is not absolute", p)
		}
		if _, err := os.Stat(p); err != nil {
			return ExitUnavailable, fmt.Errorf("sandbox: write path: %w", err)
		}
	}
	if strings.ContainsFunc(o.Explain, func(r rune) bool { return r == 0 }) {
		return ExitUnavailable, errors.New("sandbox: --explain has a NUL byte")
	}
	if _, err := Available(); err != nil {
		return ExitUnavailable, err
	}
	if o.Exe == "" {
		if o.Exe, err = os.Executable(); err != nil {
			return ExitUnavailable, fmt.Errorf("sandbox: finding the program's own executable: %w", err)
		}
	}
	if o.Env == nil {
		o.Env = os.Environ()
	}
	if o.Stderr == nil {
		o.Stderr = os.Stderr
	}
	code, ran, err := supervise(argv, eps, o)
	if err != nil {
		return ExitUnavailable, err
	}
	if ran && code != 0 {
		fmt.Fprintln(o.Stderr, explainLine(code, o.Explain, o.Scoped))
	}
	return code, nil
}

// DefaultExplain is the next step explainLine gives when Options.Explain
// is empty: it names no host's tool.
const DefaultExplain = "Do not look for a way around it: put what you would change in the plan, and ask the user to review the plan."

// DefaultScopedExplain is DefaultExplain in scoped build.
const DefaultScopedExplain = "Do not look for a way around it: to change more, add it to the scope block of the plan, and ask the user to review the plan again."

// explainLine is the one line that tells the model why its command may
// have failed: the run was read-only because the session is in plan mode
// (or, scoped, limited to the approved scope), and what to do instead.
// next (the host's own next step, --explain) is folded onto one line and
// cut at 500 bytes.
func explainLine(code int, next string, scoped bool) string {
	next = strings.Join(strings.FieldsFunc(next, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }), " ")
	if next == "" {
		next = DefaultExplain
	}
	if len(next) > 500 {
		next = strings.ToValidUTF8(next[:500], "") + "…"
	}
	if scoped {
		if next == DefaultExplain {
			next = DefaultScopedExplain
		}
		return fmt.Sprintf("[planserver sandbox] exit status %d: this command ran in planserver's sandbox, which lets it write only "+
			"the files of the plan's approved scope and connect only to the network the scope names; everything else is refused. %s", code, next)
	}
	return fmt.Sprintf("[planserver sandbox] exit status %d: this command ran in planserver's read-only sandbox because the session is in plan mode; "+
		"writing files and connecting to the network are refused. %s", code, next)
}

// removeAll removes the private directory, also where the command left a
// directory without permissions (mkdir -m 0 needs no chmod).
func removeAll(dir string) {
	if os.RemoveAll(dir) == nil {
		return
	}
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if d != nil && d.IsDir() {
			_ = os.Chmod(path, 0o700)
		}
		return nil
	})
	_ = os.RemoveAll(dir)
}

// Stage is the child half of Run: args are what follows StageCommand.
// It applies the rules to its own thread and executes the command in
// place, so it returns only on failure, with the exit status to use; the
// reason is written to stderr.
func Stage(args []string, stderr io.Writer) int {
	s, err := parseStage(args)
	if err != nil {
		fmt.Fprintln(stderr, "planserver sandbox:", err)
		return ExitUnavailable
	}
	return stage(s, stderr)
}

// stageArgs is what the supervisor tells the stage.
type stageArgs struct {
	tmp      string   // TMPDIR, writable
	ports    []uint16 // TCP ports Landlock lets connect() reach
	writes   []string // more writable paths (Options.WritePaths)
	hosts    string   // a file to mount on /etc/hosts; "" for none
	tmpfs    bool     // TMPDIR is made in a private tmpfs on its parent, in the stage's own mount namespace
	listener bool     // connect() goes to the supervisor (--allow-connect)
	argv     []string
}

func (s stageArgs) encode() []string {
	out := []string{StageCommand, "--tmpdir", s.tmp}
	for _, p := range s.ports {
		out = append(out, "--port", strconv.Itoa(int(p)))
	}
	for _, w := range s.writes {
		out = append(out, "--write", w)
	}
	if s.hosts != "" {
		out = append(out, "--hosts", s.hosts)
	}
	if s.tmpfs {
		out = append(out, "--tmpfs")
	}
	if s.listener {
		out = append(out, "--listener")
	}
	return append(append(out, "--"), s.argv...)
}

func parseStage(args []string) (stageArgs, error) {
	var s stageArgs
	value := func(i int) (string, error) {
		if i+1 >= len(args) {
			return "", fmt.Errorf("stage: %s needs a value", args[i])
		}
		return args[i+1], nil
	}
	for i := 0; i < len(args); i++ {
		switch a := args[i]; a {
		case "--tmpdir", "--port", "--write", "--hosts":
			v, err := value(i)
			if err != nil {
				return s, err
			}
			i++
			switch a {
			case "--tmpdir":
				s.tmp = v
			case "--write":
				s.writes = append(s.writes, v)
			case "--hosts":
				s.hosts = v
			case "--port":
				n, err := strconv.ParseUint(v, 10, 16)
				if err != nil || n == 0 {
					return s, fmt.Errorf("stage: bad port %q", v)
				}
				s.ports = append(s.ports, uint16(n))
			}
		case "--listener":
			s.listener = true
		case "--tmpfs":
			s.tmpfs = true
		case "--":
			s.argv = args[i+1:]
			if s.tmp == "" || !filepath.IsAbs(s.tmp) {
				return s, errors.New("stage: --tmpdir must be an absolute path")
			}
			if len(s.argv) == 0 {
				return s, errors.New("stage: no command to run")
			}
			return s, nil
		default:
			return s, fmt.Errorf("stage: unexpected argument %q", a)
		}
	}
	return s, errors.New("stage: no command to run (missing --)")
}
