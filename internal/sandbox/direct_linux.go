//go:build linux && (amd64 || arm64)

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// errNoDirect says the kernel refused a thread of its own namespaces
// (root without CAP_SYS_ADMIN, as in most containers): the stage runs
// instead.
var errNoDirect = errors.New("sandbox: no namespaces for a thread")

// directRun is a command started without a stage: the supervisor, when it
// runs as root, confines one of its own threads exactly as the stage
// confines itself (new mount, PID and IPC namespaces, TMPDIR's tmpfs and
// the minimal /dev, capabilities, no_new_privs, Landlock, the seccomp
// filters) and starts the command from that thread, which every one of
// those passes on to the processes it starts. A second Go program's start
// (the stage's exec, its runtime and its threads, and the pipes between
// the two) was a quarter to a third of what the sandbox added to a command.
//
// Only root can do it: a thread may take namespaces of its own with
// unshare(2), but not a user namespace (the kernel allows that only to a
// process with one thread, and a Go program never is one), and without
// one only root may make the others. With --allow-connect the stage still
// runs: its seccomp listener is handed over through the stage's pipes.
//
// The thread stays locked to its goroutine, which never unlocks it, so Go
// ends the thread when the goroutine returns instead of running other
// goroutines on it; Go also makes new threads from a clean template
// thread, never from a locked one, so nothing else inherits the rules.
// The goroutine waits for release before it returns: the command's
// Pdeathsig fires when the thread that started it ends.
type directRun struct {
	pid     int
	code    int // the exit status when the command could not start (pid is 0)
	release chan struct{}
}

// startDirect starts argv (s.argv) the direct way. The private
// directory is being made meanwhile: made says when it is (or why not,
// which is then madeErr, with nothing started). It returns errNoDirect,
// with nothing else done, where unshare refuses; any other error is the
// sandbox's, and nothing ran. When the command could not be started
// (not found, not executable), the reason is on the command's stderr, as
// the stage writes it, and d.code is set.
func startDirect(s stageArgs, o Options, stdio *stdio, made <-chan error) (d *directRun, madeErr, err error) {
	done := make(chan error, 1)
	d = &directRun{release: make(chan struct{})}
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		err := d.confineAndStart(s, o, stdio, made, &madeErr)
		done <- err
		if d.pid > 0 {
			<-d.release
		}
	}()
	err = <-done
	return d, madeErr, err
}

// confineAndStart runs on the locked thread.
func (d *directRun) confineAndStart(s stageArgs, o Options, stdio *stdio, made <-chan error, madeErr *error) error {
	// What needs no private directory is done while it is made. CLONE_NEWNS
	// also gives the thread a working directory of its own (CLONE_FS); the
	// PID namespace is for the thread's children.
	unshared := unix.Unshare(unix.CLONE_NEWNS|unix.CLONE_NEWPID|unix.CLONE_NEWIPC) == nil
	var chdirErr, lookErr error
	var path string
	if unshared && o.Dir != "" {
		// The command's directory, for this thread only: the lookup
		// below and the rules resolve relative paths as the stage would.
		chdirErr = unix.Chdir(o.Dir)
	}
	env := Env(o.Env, s.tmp)
	if unshared && chdirErr == nil {
		path, d.code, lookErr = lookPath(s.argv[0], env)
	}
	progs, progsErr := readFilters(strings.NewReader(seccompPrograms(false)))
	if *madeErr = <-made; *madeErr != nil {
		return nil
	}
	switch {
	case !unshared:
		return errNoDirect
	case chdirErr != nil:
		return fmt.Errorf("sandbox: the working directory: %w", chdirErr)
	case progsErr != nil:
		return fmt.Errorf("sandbox: the seccomp programs: %w", progsErr)
	case lookErr != nil:
		fmt.Fprintln(stdio.files[2], "planserver sandbox:", lookErr)
		return nil
	}
	// The thread ends up in the command's Landlock domain, and Landlock
	// lets a process read the memory of another in its domain: the
	// supervisor's, through /proc/PID/task/TID/mem (and its environ and
	// descriptors). A process that is not dumpable gives those only to a
	// holder of CAP_SYS_PTRACE, which the command never is. The command's
	// own execve makes it dumpable again.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("sandbox: making the supervisor undumpable: %w", err)
	}
	if err := mounts(s); err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	std := [3]int{int(stdio.files[0].Fd()), int(stdio.files[1].Fd()), int(stdio.files[2].Fd())}
	if err := restrict(s, std); err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	if _, err := loadFilters(progs, false); err != nil {
		return fmt.Errorf("sandbox: installing the seccomp filters: %w", err)
	}
	// No descriptor but the three reaches the command: whatever the
	// supervisor's caller left open without close-on-exec is marked so
	// (every descriptor Go opens already is).
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		return fmt.Errorf("sandbox: closing inherited descriptors: %w", err)
	}
	fds := []uintptr{stdio.files[0].Fd(), stdio.files[1].Fd(), stdio.files[2].Fd()}
	// syscall.ForkExec, as for the stage (start says why). Its child
	// makes only calls the filters allow.
	pid, err := syscall.ForkExec(path, s.argv, &syscall.ProcAttr{
		Dir: o.Dir, Env: env, Files: fds,
		Sys: &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL},
	})
	runtime.KeepAlive(stdio)
	if err != nil {
		d.code = ExitCannotRun
		if errors.Is(err, unix.ENOENT) {
			d.code = ExitNotFound
		}
		fmt.Fprintf(stdio.files[2], "planserver sandbox: %s: %v\n", s.argv[0], err)
		return nil
	}
	d.pid = pid
	return nil
}

// canDirect tells whether the direct start applies: root, namespaces
// allowed, and no --allow-connect.
func canDirect(o Options, connect bool) bool {
	return !o.NoNamespaces && !connect && os.Geteuid() == 0 && !stageOnly
}

// stageOnly turns the direct start off, so that the tests run the stage
// as root too (the stage is what every other user runs). No flag or
// environment variable sets it.
var stageOnly = false
