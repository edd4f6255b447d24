//go:build linux && (amd64 || arm64)

package sandbox

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// grace is how long a signal the supervisor passes on may take to end the
// command before SIGKILL does: PID 1 of a namespace ignores every signal
// it has no handler for.
const grace = time.Second

// supervise is Run's Linux half: everything between the checked options
// and the command's exit status. ran tells whether the command was
// executed (false when the stage refused, with its reason on stderr).
func supervise(argv []string, eps []Endpoint, o Options) (code int, ran bool, err error) {
	// Signals meant for the command (a host's timeout, Ctrl-C) are passed
	// on, not obeyed: the supervisor stays to clean up. Caught before
	// anything is made, so that none ends the supervisor meanwhile.
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	defer signal.Stop(sigs)

	var allowed map[netip.AddrPort]bool
	var hosts []byte
	if len(eps) > 0 {
		if err := seccompActions("user_notif"); err != nil {
			return 0, false, fmt.Errorf("--allow-connect: %w", err)
		}
		if allowed, hosts, err = resolve(eps); err != nil {
			return 0, false, err
		}
	}
	stdio, err := newStdio(o)
	if err != nil {
		return 0, false, err
	}
	defer stdio.close()

	// The private directory (TMPDIR's parent, and the hosts file's) is
	// made while the stage starts, not before: a directory made on a busy
	// disk took as long as the stage's start. Its name is chosen first,
	// as os.MkdirTemp would choose it, and the stage uses the directory
	// only once the seccomp programs came, which are sent after it is
	// made. TMPDIR itself is made where the command runs: by the stage, in
	// the tmpfs it mounts on the private directory, or below for the
	// fallback; one directory fewer to make and remove on the disk.
	s := stageArgs{writes: o.WritePaths, argv: argv, listener: len(eps) > 0}
	for _, e := range eps {
		s.ports = append(s.ports, e.Port)
	}
	var st *started
	var base string
	namespaces := !o.NoNamespaces
	// As root, the command starts without a stage (direct_linux.go).
	tryDirect := canDirect(o, len(eps) > 0)
	var d *directRun
	for tries := 0; ; tries++ {
		base = filepath.Join(os.TempDir(), "planserver-sandbox-"+strconv.FormatUint(uint64(rand.Uint32()), 10))
		s.tmp = filepath.Join(base, "tmp")
		made := make(chan error, 1)
		go func() { made <- makePrivate(base, hosts) }()
		if namespaces {
			s.hosts, s.tmpfs = "", true
			if hosts != nil {
				s.hosts = filepath.Join(base, "hosts")
			}
		}
		var madeErr error
		switch {
		case tryDirect:
			d, madeErr, err = startDirect(s, o, stdio, made)
		case namespaces:
			if st, err = start(s, o, stdio, true); err != nil {
				// No namespaces here (unprivileged user namespaces are
				// off): the fallback, just as tight but for the lifetime
				// rule, which the subreaper keeps instead.
				namespaces, st = false, nil
			}
			fallthrough
		default:
			if madeErr = <-made; madeErr != nil && st != nil {
				_ = unix.Kill(st.pid, unix.SIGKILL)
				_, _ = reap(st.pid)
				st.close()
				st = nil
			}
		}
		if madeErr == nil {
			break
		}
		if errors.Is(madeErr, fs.ErrExist) && tries < 10000 {
			continue // another's name: choose again, as os.MkdirTemp does
		}
		return 0, false, madeErr
	}
	defer removeAll(base)
	if tryDirect {
		switch {
		case errors.Is(err, errNoDirect):
			// Root without CAP_SYS_ADMIN: the stage, which will find
			// namespaces refused too, and take the fallback.
			d = nil
			if st, err = start(s, o, stdio, true); err != nil {
				namespaces, st = false, nil
			}
		case err != nil:
			return 0, false, err
		case d.pid == 0: // not found, not executable: the reason is on stderr
			stdio.started()
			stdio.wait()
			return d.code, false, nil
		default:
			defer close(d.release)
		}
	}
	if !namespaces {
		if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
			return 0, false, fmt.Errorf("sandbox: becoming a child subreaper: %w", err)
		}
		if err := os.Mkdir(s.tmp, 0o700); err != nil {
			return 0, false, fmt.Errorf("sandbox: making the private TMPDIR: %w", err)
		}
		s.hosts, s.tmpfs = "", false
		if st, err = start(s, o, stdio, false); err != nil {
			return 0, false, fmt.Errorf("sandbox: starting the stage: %w", err)
		}
	}
	stdio.started()
	if d != nil {
		return wait(d.pid, stdio, nil, sigs, namespaces)
	}
	defer st.statusR.Close()
	defer st.controlW.Close()
	pid := st.pid
	if _, err := st.controlW.WriteString(seccompPrograms(len(eps) > 0)); err != nil {
		_ = unix.Kill(pid, unix.SIGKILL)
		_, _ = reap(pid)
		stdio.wait() // the stage is gone: its output ends
		return 0, false, fmt.Errorf("sandbox: sending the seccomp programs: %w", err)
	}

	var guard *connectGuard
	for {
		msg, err := st.next()
		if err == io.EOF {
			break // execve closed the status pipe: the command runs
		}
		if err != nil || msg.kind == msgFailed {
			_ = unix.Kill(pid, unix.SIGKILL) // it ends anyway; a broken one too
			_, _ = reap(pid)
			stdio.wait() // the stage is gone: its output ends
			if err != nil {
				return 0, false, fmt.Errorf("sandbox: the stage: %w", err)
			}
			return msg.value, false, nil
		}
		// msgListener: take the listener out of the stage.
		if guard, err = takeListener(pid, msg.value, allowed); err != nil {
			_ = unix.Kill(pid, unix.SIGKILL)
			_, _ = reap(pid)
			stdio.wait() // the stage is gone: its output ends
			return 0, false, err
		}
		defer guard.stop()
		go guard.serve()
		if _, err := st.controlW.Write([]byte{msgGo}); err != nil {
			_ = unix.Kill(pid, unix.SIGKILL)
			_, _ = reap(pid)
			stdio.wait() // the stage is gone: its output ends
			return 0, false, fmt.Errorf("sandbox: starting the command: %w", err)
		}
	}

	return wait(pid, stdio, guard, sigs, namespaces)
}

// wait waits for the command, which runs, passing signals on; then it
// makes sure nothing the command started is left, and returns its exit
// status.
func wait(pid int, stdio *stdio, guard *connectGuard, sigs <-chan os.Signal, namespaces bool) (code int, ran bool, err error) {
	// Wait for the command's end without reaping it, so that its process
	// ID stays its own while signals are passed on.
	var received syscall.Signal
	done, forwarded := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(forwarded)
		var kill <-chan time.Time
		for {
			select {
			case sig := <-sigs:
				n := sig.(syscall.Signal)
				if received == 0 {
					received = n
				}
				_ = unix.Kill(-pid, n) // the command's session and process group
				_ = unix.Kill(pid, n)
				if kill == nil {
					kill = time.After(grace)
				}
			case <-kill:
				_ = unix.Kill(-pid, unix.SIGKILL)
				_ = unix.Kill(pid, unix.SIGKILL)
			case <-done:
				return
			}
		}
	}()
	var info unix.Siginfo
	for {
		if err = unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil); err != unix.EINTR {
			break
		}
	}
	close(done)
	<-forwarded
	ws, werr := reap(pid)
	if err == nil {
		err = werr
	}
	if err != nil {
		return 0, false, fmt.Errorf("sandbox: waiting for the command: %w", err)
	}
	if !namespaces {
		// The PID namespace would have ended them with the command.
		killDescendants()
	}
	if guard != nil {
		guard.stop()
	}
	stdio.wait()
	switch {
	case received != 0:
		return 128 + int(received), true, nil
	case ws.Signaled():
		return 128 + int(ws.Signal()), true, nil
	}
	return ws.ExitStatus(), true, nil
}

// started is a stage that runs, and the pipes to talk with it.
type started struct {
	pid      int
	statusR  *os.File // the stage's messages; EOF once the command runs
	controlW *os.File // the seccomp programs, then the go-ahead (--allow-connect)
}

type message struct {
	kind  byte
	value int
}

// close closes the supervisor's ends of the pipes, for a stage that was
// killed before it was used.
func (st *started) close() {
	_ = st.statusR.Close()
	_ = st.controlW.Close()
}

// makePrivate makes the private directory dir, and in it the hosts file
// of --allow-connect when hosts is not nil (beside TMPDIR, not in it: the
// command cannot change it). A directory that exists is left alone (the
// error is then fs.ErrExist); one made is removed when the rest fails.
func makePrivate(dir string, hosts []byte) error {
	if err := os.Mkdir(dir, 0o700); err != nil {
		return fmt.Errorf("sandbox: making the private TMPDIR: %w", err)
	}
	if hosts != nil {
		if err := os.WriteFile(filepath.Join(dir, "hosts"), hosts, 0o444); err != nil {
			removeAll(dir)
			return fmt.Errorf("sandbox: writing the allowed names: %w", err)
		}
	}
	return nil
}

// next reads the stage's next message: io.EOF once the command runs.
func (st *started) next() (message, error) {
	var b [5]byte
	if _, err := io.ReadFull(st.statusR, b[:1]); err != nil {
		return message{}, err
	}
	switch b[0] {
	case msgFailed:
		if _, err := io.ReadFull(st.statusR, b[1:2]); err != nil {
			return message{}, fmt.Errorf("a short failure report: %w", err)
		}
		return message{msgFailed, int(b[1])}, nil
	case msgListener:
		if _, err := io.ReadFull(st.statusR, b[1:5]); err != nil {
			return message{}, fmt.Errorf("a short listener report: %w", err)
		}
		return message{msgListener, int(binary.LittleEndian.Uint32(b[1:]))}, nil
	}
	return message{}, fmt.Errorf("an unknown report %q", b[0])
}

// start starts the stage: in new PID, IPC and mount namespaces (the
// mount namespace holds TMPDIR's tmpfs, the minimal /dev and, with
// --allow-connect, the /etc/hosts view), and a user namespace that
// maps the caller's IDs to themselves when not root, so that the
// command has no capabilities after execve. Without namespaces, none.
// The stage always leads a new session (TIOCSTI needs the controlling
// terminal, which it then lacks) and dies with the supervisor.
func start(s stageArgs, o Options, stdio *stdio, namespaces bool) (*started, error) {
	statusR, statusW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer statusW.Close()
	controlR, controlW, err := os.Pipe()
	if err != nil {
		statusR.Close()
		return nil, err
	}
	defer controlR.Close()
	files := append(stdio.files[:3:3], statusW, controlR)
	st := &started{statusR: statusR, controlW: controlW}
	// Pdeathsig fires when the thread that forked the stage ends; Go ends
	// a thread only when a goroutine locked to it returns, and none is
	// locked to the supervisor's threads (locking this one made every
	// wake-up slower).
	sys := &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
	if namespaces {
		// A mount namespace of its own, for TMPDIR's tmpfs (and the
		// hosts view of --allow-connect). No network namespace: in plan
		// mode the seccomp filter refuses socket() itself (only an
		// anonymous socketpair is made), which leaves a namespace nothing
		// to hold back, and with --allow-connect the supervisor connects
		// the command's sockets, which must live in its own namespace. A
		// new one cost about half a millisecond a command, and the kernel
		// tears it down afterwards on a worker, beside the next command
		// (docs/benchmarks.md).
		sys.Cloneflags = unix.CLONE_NEWPID | unix.CLONE_NEWIPC | unix.CLONE_NEWNS
		if uid, gid := os.Geteuid(), os.Getegid(); uid != 0 {
			sys.Cloneflags |= unix.CLONE_NEWUSER
			sys.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
			sys.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
			// The stage's own execve would drop the capabilities the new
			// user namespace gives it; it needs these two (to mount the
			// hosts view, to empty the bounding set) and drops them,
			// ambient ones included, before it executes the command.
			sys.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_SETPCAP}
		}
	}
	fds := make([]uintptr, len(files))
	for i, f := range files {
		fds[i] = f.Fd()
	}
	// syscall.ForkExec, not os.StartProcess: the os package forks a
	// child of its own once per process to see whether pidfds work, a
	// cost every sandboxed command would pay.
	st.pid, err = syscall.ForkExec(o.Exe, append([]string{o.Exe}, s.encode()...), &syscall.ProcAttr{
		Dir: o.Dir, Env: Env(o.Env, s.tmp), Files: fds, Sys: sys,
	})
	if err != nil {
		statusR.Close()
		controlW.Close()
		return nil, err
	}
	return st, nil
}

// reap waits for the stage to end and collects it.
func reap(pid int) (syscall.WaitStatus, error) {
	for {
		var ws syscall.WaitStatus
		_, err := syscall.Wait4(pid, &ws, 0, nil)
		if err != syscall.EINTR {
			return ws, err
		}
	}
}

// resolve turns the endpoints into the exact address and port pairs
// allowed (IPv4-mapped IPv6 addresses as IPv4), resolving names once, and
// the hosts file that lets the command find those names (and localhost)
// without DNS.
func resolve(eps []Endpoint) (map[netip.AddrPort]bool, []byte, error) {
	allowed := map[netip.AddrPort]bool{}
	var hosts strings.Builder
	hosts.WriteString("# planserver sandbox: the names --allow-connect allows\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n")
	for _, e := range eps {
		if a, err := netip.ParseAddr(e.Host); err == nil {
			allowed[netip.AddrPortFrom(a.Unmap(), e.Port)] = true
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", e.Host)
		cancel()
		if err != nil {
			return nil, nil, fmt.Errorf("--allow-connect %s: resolving %s: %w", e, e.Host, err)
		}
		for _, a := range addrs {
			a = a.Unmap().WithZone("")
			allowed[netip.AddrPortFrom(a, e.Port)] = true
			fmt.Fprintf(&hosts, "%s\t%s\n", a, e.Host)
		}
	}
	return allowed, []byte(hosts.String()), nil
}

// killDescendants ends every process the command left behind, for the
// fallback without a PID namespace: the supervisor is their subreaper,
// so each orphan becomes its child; it kills its children and reaps them
// until none is left.
func killDescendants() {
	for {
		for _, pid := range children() {
			_ = unix.Kill(pid, unix.SIGKILL)
		}
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
		switch {
		case err == unix.ECHILD:
			return
		case err == nil && pid == 0:
			time.Sleep(time.Millisecond) // killed, not yet dead
		}
	}
}

// children lists the supervisor's child processes.
func children() []int {
	var out []int
	tasks, _ := filepath.Glob("/proc/self/task/*/children")
	for _, t := range tasks {
		data, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(data)) {
			if pid, err := strconv.Atoi(f); err == nil {
				out = append(out, pid)
			}
		}
	}
	return out
}

// stdio are the command's standard streams: the caller's files as they
// are, anything else through a pipe and a goroutine.
type stdio struct {
	files   [3]*os.File
	child   []*os.File // the pipe ends the command holds: closed once it started
	parent  []*os.File // the ends the copies use
	outputs sync.WaitGroup
}

func newStdio(o Options) (*stdio, error) {
	s := &stdio{}
	fail := func(err error) (*stdio, error) {
		s.close()
		return nil, fmt.Errorf("sandbox: a pipe for the command: %w", err)
	}
	in := o.Stdin
	if in == nil {
		in = os.Stdin
	}
	if f, ok := in.(*os.File); ok {
		s.files[0] = f
	} else {
		r, w, err := os.Pipe()
		if err != nil {
			return fail(err)
		}
		s.files[0], s.child, s.parent = r, append(s.child, r), append(s.parent, w)
		go func() {
			_, _ = io.Copy(w, in)
			_ = w.Close()
		}()
	}
	for i, out := range []io.Writer{o.Stdout, o.Stderr} {
		if out == nil {
			out = []io.Writer{os.Stdout, os.Stderr}[i]
		}
		if f, ok := out.(*os.File); ok {
			s.files[i+1] = f
			continue
		}
		r, w, err := os.Pipe()
		if err != nil {
			return fail(err)
		}
		s.files[i+1], s.child, s.parent = w, append(s.child, w), append(s.parent, r)
		s.outputs.Add(1)
		go func() {
			defer s.outputs.Done()
			_, _ = io.Copy(out, r)
		}()
	}
	return s, nil
}

// started closes the ends the command holds, so that output ends when
// the command's processes are gone.
func (s *stdio) started() {
	for _, f := range s.child {
		_ = f.Close()
	}
	s.child = nil
}

// wait waits until the copies of stdout and stderr are done.
func (s *stdio) wait() { s.outputs.Wait() }

func (s *stdio) close() {
	s.started()
	for _, f := range s.parent {
		_ = f.Close()
	}
}
