//go:build linux && (amd64 || arm64)

package sandbox

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"unsafe"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

func available() (int, error) {
	abi, err := landlockABI()
	if err != nil {
		return abi, err
	}
	if err := seccompActions("errno", "allow"); err != nil {
		return abi, err
	}
	return abi, nil
}

// The kernel probes, variables so that a test can stand for a kernel that
// lacks a feature (TestMissingKernelFeature): this one cannot be made to.
var (
	landlockVersion    = ll.LandlockGetABIVersion
	seccompActionsFile = "/proc/sys/kernel/seccomp/actions_avail"
)

// landlockABI is the kernel's Landlock ABI, or why it is not enough.
func landlockABI() (int, error) {
	abi, err := landlockVersion()
	if err != nil {
		return 0, fmt.Errorf("%w: Landlock is not enabled in this kernel (%v); it needs Linux 6.12 or later with lsm=landlock", ErrUnavailable, err)
	}
	if abi < MinABI {
		return abi, fmt.Errorf("%w: the kernel's Landlock ABI is %d, and scoping signals and abstract Unix sockets to the sandbox needs ABI %d (Linux 6.12)", ErrUnavailable, abi, MinABI)
	}
	return abi, nil
}

// seccompActions checks that the kernel's seccomp filters can return each
// of the actions.
func seccompActions(actions ...string) error {
	avail, err := os.ReadFile(seccompActionsFile)
	if err != nil {
		return fmt.Errorf("%w: the kernel has no seccomp filters (%v)", ErrUnavailable, err)
	}
	have := strings.Fields(string(avail))
	for _, a := range actions {
		found := false
		for _, h := range have {
			found = found || h == a
		}
		if !found {
			return fmt.Errorf("%w: the kernel's seccomp filters cannot return %s", ErrUnavailable, a)
		}
	}
	return nil
}

// config is the widest set of rights go-landlock knows, downgraded to what
// the kernel has: available() already refused kernels below MinABI, so
// writes, truncation, device ioctls, TCP and the scopes are always
// covered (and UDP and pathname Unix sockets on kernels that restrict
// them, with no rule allowing either).
var config = landlock.V11.BestEffort()

// The stage's descriptors from the supervisor, after stdin, stdout and
// stderr.
const (
	statusFD  = 3 // the stage's reports; execve closes it, which says the command started
	controlFD = 4 // the supervisor's: the seccomp programs, then the go-ahead (--listener only)
)

// Status messages on statusFD: msgFailed and the exit status (the reason
// is on stderr); msgListener and the listener's descriptor number.
const (
	msgFailed   = 'E'
	msgListener = 'L'
	msgGo       = 'G'
)

// stage applies the rules to the calling thread and executes the command
// there. It returns only when something failed, with the status to exit
// with.
func stage(s stageArgs, stderr io.Writer) int {
	// Landlock, seccomp and capabilities bind the calling thread (and what
	// it executes), so the goroutine stays on it until execve; it is
	// never unlocked.
	runtime.LockOSThread()
	fail := func(code int, err error) int {
		fmt.Fprintln(stderr, "planserver sandbox:", err)
		_, _ = unix.Write(statusFD, []byte{msgFailed, byte(code)})
		return code
	}
	// The supervisor checked seccomp; a kernel without it fails below.
	if _, err := landlockABI(); err != nil {
		return fail(ExitUnavailable, err)
	}
	// The supervisor sends the seccomp programs once it has made the
	// private directory (it does so while this process starts), so
	// nothing before this line may use s.tmp, its parent or s.hosts.
	progs, err := readFilters(fdReader(controlFD))
	if err != nil {
		return fail(ExitUnavailable, fmt.Errorf("reading the seccomp programs: %w", err))
	}
	if s.tmpfs || s.hosts != "" {
		if err := mounts(s); err != nil {
			return fail(ExitUnavailable, err)
		}
	}
	path, code, err := lookPath(s.argv[0], os.Environ())
	if err != nil {
		return fail(code, err)
	}
	if err := restrict(s, [3]int{0, 1, 2}); err != nil {
		return fail(ExitUnavailable, err)
	}
	listener, err := loadFilters(progs, s.listener)
	if err != nil {
		return fail(ExitUnavailable, fmt.Errorf("installing the seccomp filters: %w", err))
	}
	if s.listener {
		// The supervisor copies the listener out of this process with
		// pidfd_getfd, which proves it may do the same with the
		// command's sockets, then says go.
		msg := []byte{msgListener, 0, 0, 0, 0}
		binary.LittleEndian.PutUint32(msg[1:], uint32(listener))
		if _, err := unix.Write(statusFD, msg); err != nil {
			return fail(ExitUnavailable, fmt.Errorf("reporting the seccomp listener: %w", err))
		}
		var b [1]byte
		if _, err := io.ReadFull(fdReader(controlFD), b[:]); err != nil || b[0] != msgGo {
			return ExitUnavailable // the supervisor says why
		}
		_ = unix.Close(listener)
	}
	// No descriptor but stdin, stdout and stderr reaches the command:
	// whatever the supervisor's own caller left open without
	// close-on-exec is closed by execve (and so is the status pipe,
	// which tells the supervisor that the command runs). Marked, not
	// closed, under the Go runtime's feet.
	if err := unix.CloseRange(statusFD, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		return fail(ExitUnavailable, fmt.Errorf("closing inherited descriptors: %w", err))
	}
	err = unix.Exec(path, s.argv, os.Environ())
	code = ExitCannotRun
	if errors.Is(err, unix.ENOENT) {
		code = ExitNotFound
	}
	return fail(code, fmt.Errorf("%s: %w", s.argv[0], err))
}

// restrict applies the Landlock rules to the calling thread, after
// dropping its capabilities (but keptCaps) and setting no_new_privs,
// which Landlock and seccomp need: what the thread executes, and every
// process that starts, inherits them. std are the descriptors of the
// command's standard streams, for terminals.
func restrict(s stageArgs, std [3]int) error {
	rules := []landlock.Rule{
		landlock.RODirs("/"),
		landlock.RWDirs(s.tmp).WithRefer(),
		landlock.RWFiles("/dev/null"),
		landlock.RWFiles(terminals(std)...).WithIoctlDev().IgnoreIfMissing(),
	}
	for _, w := range s.writes {
		if fi, err := os.Stat(w); err == nil && fi.IsDir() {
			rules = append(rules, landlock.RWDirs(w).WithRefer())
		} else {
			rules = append(rules, landlock.RWFiles(w))
		}
	}
	// Defence in depth: connect() never runs in the command's process with
	// --allow-connect (the supervisor makes it), and never at all without.
	// No rule ever allows a TCP bind.
	for _, p := range s.ports {
		rules = append(rules, landlock.ConnectTCP(p))
	}
	fd, flags, err := config.NewRulesetFD(rules...)
	if err != nil {
		return fmt.Errorf("building the Landlock rules: %w", err)
	}
	if fd < 0 {
		return fmt.Errorf("%w: Landlock enforces nothing on this kernel", ErrUnavailable)
	}
	defer unix.Close(fd)
	if err := dropCapabilities(); err != nil {
		return fmt.Errorf("dropping capabilities: %w", err)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("setting no_new_privs: %w", err)
	}
	if err := ll.LandlockRestrictSelf(fd, flags); err != nil {
		return fmt.Errorf("enforcing the Landlock rules: %w", err)
	}
	return nil
}

// loadFilters installs the seccomp programs, the argument filters first
// and the main one last: the main one refuses seccomp() itself. With
// listener, the main filter sends connect() to a listener whose
// descriptor is returned. The library's own loader passes no
// SECCOMP_FILTER_FLAG_NEW_LISTENER and returns no descriptor, hence this.
func loadFilters(progs [][]unix.SockFilter, listener bool) (int, error) {
	fd := -1
	for i := len(progs) - 1; i >= 0; i-- {
		p := progs[i]
		flags := uintptr(0)
		if i == 0 && listener {
			flags = unix.SECCOMP_FILTER_FLAG_NEW_LISTENER
		}
		fprog := unix.SockFprog{Len: uint16(len(p)), Filter: &p[0]}
		r, _, errno := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, flags, uintptr(unsafe.Pointer(&fprog)))
		runtime.KeepAlive(p)
		if errno != 0 {
			return -1, errno
		}
		if flags != 0 {
			fd = int(r)
		}
	}
	return fd, nil
}

// readFilters reads the seccomp programs: a count, then each program's
// length and its instructions (struct sock_filter), in native byte order.
func readFilters(r io.Reader) ([][]unix.SockFilter, error) {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, err
	}
	count := binary.NativeEndian.Uint32(n[:])
	if count == 0 || count > 4 {
		return nil, fmt.Errorf("%d programs", count)
	}
	progs := make([][]unix.SockFilter, count)
	for i := range progs {
		if _, err := io.ReadFull(r, n[:]); err != nil {
			return nil, err
		}
		size := binary.NativeEndian.Uint32(n[:])
		if size == 0 || size > unix.BPF_MAXINSNS {
			return nil, fmt.Errorf("a program of %d instructions", size)
		}
		raw := make([]byte, 8*size)
		if _, err := io.ReadFull(r, raw); err != nil {
			return nil, err
		}
		progs[i] = make([]unix.SockFilter, size)
		for j := range progs[i] {
			b := raw[8*j:]
			progs[i][j] = unix.SockFilter{Code: binary.NativeEndian.Uint16(b), Jt: b[2], Jf: b[3], K: binary.NativeEndian.Uint32(b[4:])}
		}
	}
	return progs, nil
}

// seccompPrograms are the seccomp programs the supervisor sends the stage,
// as readFilters reads them: internal/sandbox/seccomppolicy's, assembled
// when the policy changes and carried as a table (seccomp_linux_*.go), so
// that no sandboxed command waits for their assembly. connect tells
// whether --allow-connect is in force. go-seccomp-bpf assembles for the
// architecture it runs on only, so go generate rewrites this
// architecture's table; on amd64, arm64's is rewritten under qemu-user:
//
//	GOARCH=arm64 go test -c -o /tmp/sandbox.test . && qemu-aarch64-static /tmp/sandbox.test -test.run TestSeccompProgramsAreCurrent -update
//
//go:generate go test -run TestSeccompProgramsAreCurrent -update .
func seccompPrograms(connect bool) string {
	if connect {
		return seccompTables[1]
	}
	return seccompTables[0]
}

// encodeFilters is what readFilters reads (seccompPrograms' table is
// made with it).
func encodeFilters(progs [][]unix.SockFilter) []byte {
	out := binary.NativeEndian.AppendUint32(nil, uint32(len(progs)))
	for _, p := range progs {
		out = binary.NativeEndian.AppendUint32(out, uint32(len(p)))
		for _, in := range p {
			out = binary.NativeEndian.AppendUint16(out, in.Code)
			out = append(out, in.Jt, in.Jf)
			out = binary.NativeEndian.AppendUint32(out, in.K)
		}
	}
	return out
}

// fdReader reads a blocking descriptor with raw reads: the stage's
// control pipe, which the os package would put in the poller.
type fdReader int

func (fd fdReader) Read(b []byte) (int, error) {
	for {
		n, err := unix.Read(int(fd), b)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return 0, err
		case n == 0 && len(b) > 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

// mounts makes the stage's own mount namespace: its mounts become slaves
// first, so nothing propagates out. With --allow-connect, the
// supervisor's hosts file (the allowed names and their addresses) is
// mounted on /etc/hosts, so that the command finds the names without
// DNS, which stays refused. TMPDIR is made in a private tmpfs mounted on
// its parent, the supervisor's directory (which the tmpfs then hides,
// the hosts file included, so that is mounted first), so that what the
// command writes there is gone when its namespaces are, even where
// nobody is left to remove it (the supervisor killed with SIGKILL), and
// fills memory up to tmpfsSize, never the disk.
func mounts(s stageArgs) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_SLAVE, ""); err != nil {
		return fmt.Errorf("making the mount namespace private: %w", err)
	}
	if s.hosts != "" {
		if err := unix.Mount(s.hosts, "/etc/hosts", "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("mounting the allowed names on /etc/hosts: %w", err)
		}
	}
	if s.tmpfs {
		opts := fmt.Sprintf("mode=0700,size=%d,uid=%d,gid=%d", tmpfsSize, os.Getuid(), os.Getgid())
		if err := unix.Mount("tmpfs", filepath.Dir(s.tmp), "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
			return fmt.Errorf("mounting a private tmpfs for TMPDIR: %w", err)
		}
		// Exactly 0700, whatever the umask.
		if err := unix.Mkdir(s.tmp, 0o700); err != nil {
			return fmt.Errorf("making TMPDIR in its tmpfs: %w", err)
		}
		if err := unix.Chmod(s.tmp, 0o700); err != nil {
			return fmt.Errorf("making TMPDIR in its tmpfs: %w", err)
		}
		if err := minimalDev(); err != nil {
			return err
		}
	}
	return nil
}

// devNodes are the devices a reading tool opens; minimalDev shows the
// command these and nothing else of /dev. Opening other devices can change
// the machine even read-only (a watchdog arms when opened, and root, which
// owns them, needs no capability to open them), and reading a disk or the
// kernel's log is no part of planning.
var devNodes = []string{"null", "zero", "full", "random", "urandom", "tty"}

// minimalDev mounts a small tmpfs on /dev in the stage's mount namespace
// with devNodes bound into it from the real /dev, the terminals
// (/dev/pts, so that a command's own terminal can be reopened), the
// /dev/fd and standard-stream links, and an empty /dev/shm: bubblewrap's
// --dev, in a few calls.
func minimalDev() error {
	// Descriptors of what to keep, opened before the tmpfs hides them:
	// each is bound from its /proc/self/fd link afterwards.
	keep := map[string]int{}
	for _, name := range append([]string{"pts"}, devNodes...) {
		fd, err := unix.Open("/dev/"+name, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			continue // a machine without /dev/tty, say
		}
		defer unix.Close(fd)
		keep[name] = fd
	}
	if err := unix.Mount("tmpfs", "/dev", "tmpfs", unix.MS_NOSUID|unix.MS_NOEXEC, "mode=0755,size=64k"); err != nil {
		return fmt.Errorf("mounting a minimal /dev: %w", err)
	}
	for name, fd := range keep {
		target := "/dev/" + name
		var err error
		if name == "pts" {
			err = unix.Mkdir(target, 0o755)
		} else {
			var f int
			if f, err = unix.Open(target, unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o666); err == nil {
				_ = unix.Close(f)
			}
		}
		if err == nil {
			err = unix.Mount(fmt.Sprintf("/proc/self/fd/%d", fd), target, "", unix.MS_BIND|unix.MS_REC, "")
		}
		if err != nil {
			return fmt.Errorf("binding /dev/%s into the minimal /dev: %w", name, err)
		}
	}
	for link, to := range map[string]string{"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1",
		"stderr": "/proc/self/fd/2", "ptmx": "pts/ptmx"} {
		if err := unix.Symlink(to, "/dev/"+link); err != nil {
			return fmt.Errorf("linking /dev/%s: %w", link, err)
		}
	}
	if err := unix.Mkdir("/dev/shm", 0o1777); err != nil {
		return fmt.Errorf("making /dev/shm: %w", err)
	}
	return nil
}

// tmpfsSize bounds TMPDIR's tmpfs: room for a build's temporary files and
// a Go build cache of a small module, no more.
const tmpfsSize = 1 << 30

// keptCaps are the capabilities a root command keeps: reading any file
// and directory still works, and Landlock still refuses every write.
const keptCaps = 1<<unix.CAP_DAC_OVERRIDE | 1<<unix.CAP_DAC_READ_SEARCH

// dropCapabilities leaves the thread keptCaps (of those it has) in its
// permitted and effective sets and clears the inheritable and ambient
// ones; with CAP_SETPCAP it also empties the bounding set but for
// keptCaps, so that root gets nothing more back at execve. A process
// that is not root in its user namespace loses every capability at
// execve anyway, and no_new_privs keeps file capabilities from adding
// any.
func dropCapabilities() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return err
	}
	effective := uint64(data[0].Effective) | uint64(data[1].Effective)<<32
	if effective&(1<<unix.CAP_SETPCAP) != 0 {
		for c := 0; c < 64; c++ {
			if keptCaps&(1<<c) != 0 {
				continue
			}
			err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0)
			if err == unix.EINVAL {
				break // past the kernel's last capability
			}
			if err != nil {
				return fmt.Errorf("bounding set: %w", err)
			}
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("ambient set: %w", err)
	}
	keep := (uint64(data[0].Permitted) | uint64(data[1].Permitted)<<32) & keptCaps
	data[0] = unix.CapUserData{Effective: uint32(keep), Permitted: uint32(keep)}
	data[1] = unix.CapUserData{Effective: uint32(keep >> 32), Permitted: uint32(keep >> 32)}
	return unix.Capset(&hdr, &data[0])
}

// terminals are the terminal devices the command may open for writing
// (/dev/tty and the terminal its standard streams are on, if any), and the
// regular files its stdout and stderr already write to, so that
// /dev/stdout and /dev/stderr can be reopened: the command can write
// there through its descriptors anyway. A path is named only while it
// still is the descriptor's file and the stage can reach it.
func terminals(std [3]int) []string {
	paths := []string{"/dev/tty"}
	for i, fd := range std {
		p, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd))
		if err != nil || !strings.HasPrefix(p, "/") {
			continue
		}
		var st, byPath unix.Stat_t
		if unix.Fstat(fd, &st) != nil || unix.Stat(p, &byPath) != nil || st.Dev != byPath.Dev || st.Ino != byPath.Ino {
			continue
		}
		switch {
		case strings.HasPrefix(p, "/dev/pts/") || strings.HasPrefix(p, "/dev/tty"):
			paths = append(paths, p)
		case i > 0 && st.Mode&unix.S_IFMT == unix.S_IFREG:
			paths = append(paths, p)
		}
	}
	return paths
}

// lookPath finds argv0 like a shell, in the PATH of env (the command's
// environment, which the supervisor's own may not be), relative paths
// from the calling thread's working directory: 127 when missing, 126 when
// found but not executable. It is exec.LookPath with the PATH given.
func lookPath(argv0 string, env []string) (string, int, error) {
	path, err := findInPath(argv0, env)
	if err == nil {
		return path, 0, nil
	}
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
		return "", ExitNotFound, fmt.Errorf("%s: command not found", argv0)
	}
	return "", ExitCannotRun, fmt.Errorf("%s: %v", argv0, err)
}

func findInPath(file string, env []string) (string, error) {
	if strings.Contains(file, "/") {
		if err := executable(file); err != nil {
			return "", &exec.Error{Name: file, Err: err}
		}
		return file, nil
	}
	pathList := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			pathList = v // the last one, as getenv in the command finds it
		}
	}
	for _, dir := range filepath.SplitList(pathList) {
		if dir == "" {
			dir = "."
		}
		path := filepath.Join(dir, file)
		if executable(path) == nil {
			if !filepath.IsAbs(path) {
				return "", &exec.Error{Name: file, Err: exec.ErrDot}
			}
			return path, nil
		}
	}
	return "", &exec.Error{Name: file, Err: exec.ErrNotFound}
}

// executable is exec.LookPath's test: a file that is not a directory
// and that the caller may execute.
func executable(file string) error {
	fi, err := os.Stat(file)
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return syscall.EISDIR
	}
	if err := syscall.Access(file, 1 /* X_OK */); err != nil {
		if err != syscall.ENOSYS && err != syscall.EPERM {
			return err
		}
		if fi.Mode()&0o111 == 0 {
			return fs.ErrPermission
		}
	}
	return nil
}
