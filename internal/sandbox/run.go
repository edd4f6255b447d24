package sandbox

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Options configures Run.
type Options struct {
	// AllowConnect lists host:port entries the command may connect to
	// over TCP (see ParseAllowConnect); empty refuses every connection.
	AllowConnect []string
	// Exe is the program re-executed as the stage with StageCommand as
	// its first argument; empty means the running executable.
	Exe string
	// Env is the command's environment before the sandbox's changes;
	// nil means os.Environ().
	Env []string
	// Dir is the working directory; empty means the current one.
	Dir string
	// Stdin, Stdout and Stderr default to the process's own.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
}

// quietEnv are the switches that keep reading tools from writing caches
// (which would fail in the sandbox anyway): set, never a write path opened.
var quietEnv = []string{
	"GOTELEMETRY=off",           // go: no telemetry counters under $HOME
	"GIT_OPTIONAL_LOCKS=0",      // git status: no index refresh
	"PYTHONDONTWRITEBYTECODE=1", // python: no __pycache__
}

// Env returns base with TMPDIR set to tmp and the quiet-cache switches
// set; everything else (HOME included) is kept.
func Env(base []string, tmp string) []string {
	set := map[string]string{"TMPDIR": tmp}
	order := []string{"TMPDIR"}
	for _, kv := range quietEnv {
		k, v, _ := strings.Cut(kv, "=")
		set[k] = v
		order = append(order, k)
	}
	out := make([]string, 0, len(base)+len(order))
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := set[k]; ok {
			continue
		}
		out = append(out, kv)
	}
	for _, k := range order {
		out = append(out, k+"="+set[k])
	}
	return out
}

// Run runs argv in the sandbox and returns its exit status: the command's
// own, 128+N when a signal N ended it, or one of ExitUnavailable,
// ExitCannotRun and ExitNotFound (with a line on Stderr). The error is
// set only when the sandbox itself failed; nothing ran then.
func Run(argv []string, o Options) (int, error) {
	if len(argv) == 0 {
		return ExitUnavailable, errors.New("sandbox: no command to run")
	}
	ports, err := ParseAllowConnect(o.AllowConnect)
	if err != nil {
		return ExitUnavailable, err
	}
	if _, err := Available(); err != nil {
		return ExitUnavailable, err
	}
	exe := o.Exe
	if exe == "" {
		if exe, err = os.Executable(); err != nil {
			return ExitUnavailable, fmt.Errorf("sandbox: finding planserver's own executable: %w", err)
		}
	}
	tmp, err := os.MkdirTemp("", "planserver-sandbox-")
	if err != nil {
		return ExitUnavailable, fmt.Errorf("sandbox: making the private TMPDIR: %w", err)
	}
	defer removeAll(tmp)
	portList := make([]string, len(ports))
	for i, p := range ports {
		portList[i] = strconv.Itoa(int(p))
	}
	stageArgs := append([]string{StageCommand, "--tmpdir", tmp, "--ports", strings.Join(portList, ","), "--"}, argv...)
	cmd := exec.Command(exe, stageArgs...)
	env := o.Env
	if env == nil {
		env = os.Environ()
	}
	cmd.Env = Env(env, tmp)
	cmd.Dir = o.Dir
	cmd.Stdin, cmd.Stdout, cmd.Stderr = or(o.Stdin, io.Reader(os.Stdin)), orW(o.Stdout, os.Stdout), orW(o.Stderr, os.Stderr)

	// The parent stays alive to remove TMPDIR: signals meant for the
	// command (a hook's timeout, Ctrl-C) are passed on, not obeyed.
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	defer signal.Stop(sigs)
	if err := cmd.Start(); err != nil {
		return ExitUnavailable, fmt.Errorf("sandbox: starting the stage: %w", err)
	}
	done := make(chan struct{})
	go func() {
		for {
			select {
			case s := <-sigs:
				_ = cmd.Process.Signal(s)
			case <-done:
				return
			}
		}
	}()
	err = cmd.Wait()
	close(done)
	if err == nil {
		return 0, nil
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		return ExitUnavailable, fmt.Errorf("sandbox: waiting for the command: %w", err)
	}
	if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal()), nil
	}
	return exit.ExitCode(), nil
}

func or(r, def io.Reader) io.Reader {
	if r == nil {
		return def
	}
	return r
}

func orW(w io.Writer, def *os.File) io.Writer {
	if w == nil {
		return def
	}
	return w
}

// removeAll removes the private TMPDIR, also where the command left a
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
// It applies the Landlock rules and the seccomp filter to its own thread
// and executes the command in place, so it returns only on failure, with
// the exit status to use; the reason is written to stderr.
func Stage(args []string, stderr io.Writer) int {
	tmp, ports, argv, err := parseStage(args)
	if err != nil {
		fmt.Fprintln(stderr, "planserver sandbox:", err)
		return ExitUnavailable
	}
	code, err := stage(tmp, ports, argv)
	if err != nil {
		fmt.Fprintln(stderr, "planserver sandbox:", err)
	}
	return code
}

func parseStage(args []string) (tmp string, ports []uint16, argv []string, err error) {
	for i := 0; i < len(args); i++ {
		switch args[i] {
		case "--tmpdir":
			if i+1 >= len(args) {
				return "", nil, nil, errors.New("stage: --tmpdir needs a value")
			}
			i++
			tmp = args[i]
		case "--ports":
			if i+1 >= len(args) {
				return "", nil, nil, errors.New("stage: --ports needs a value")
			}
			i++
			for _, p := range strings.Split(args[i], ",") {
				if p == "" {
					continue
				}
				n, err := strconv.ParseUint(p, 10, 16)
				if err != nil || n == 0 {
					return "", nil, nil, fmt.Errorf("stage: bad port %q", p)
				}
				ports = append(ports, uint16(n))
			}
		case "--":
			argv = args[i+1:]
			if tmp == "" || !filepath.IsAbs(tmp) {
				return "", nil, nil, errors.New("stage: --tmpdir must be an absolute path")
			}
			if len(argv) == 0 {
				return "", nil, nil, errors.New("stage: no command to run")
			}
			return tmp, ports, argv, nil
		default:
			return "", nil, nil, fmt.Errorf("stage: unexpected argument %q", args[i])
		}
	}
	return "", nil, nil, errors.New("stage: no command to run (missing --)")
}

// lookPath finds argv0 like a shell: 127 when missing, 126 when found but
// not executable.
func lookPath(argv0 string) (string, int, error) {
	path, err := exec.LookPath(argv0)
	if err == nil {
		return path, 0, nil
	}
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
		return "", ExitNotFound, fmt.Errorf("%s: command not found", argv0)
	}
	return "", ExitCannotRun, fmt.Errorf("%s: %v", argv0, err)
}
