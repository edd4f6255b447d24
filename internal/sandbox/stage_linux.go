//go:build linux && (amd64 || arm64)

package sandbox

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"syscall"
	"unsafe"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

func available() (int, error) {
	abi, err := ll.LandlockGetABIVersion()
	if err != nil {
		return 0, fmt.Errorf("%w: Landlock is not enabled in this kernel (%v); it needs Linux 6.7 or later with lsm=landlock", ErrUnavailable, err)
	}
	if abi < MinABI {
		return abi, fmt.Errorf("%w: the kernel's Landlock ABI is %d, and restricting TCP connections needs ABI %d (Linux 6.7)", ErrUnavailable, abi, MinABI)
	}
	return abi, nil
}

// config is the widest set of rights go-landlock knows, downgraded to what
// the kernel has: available() already refused kernels below MinABI, so
// writes, truncation and TCP are always covered.
var config = landlock.V11.BestEffort()

// stage applies the rules to the calling thread and executes argv there.
// It returns only when something failed, with the status to exit with.
func stage(tmp string, ports []uint16, argv []string) (int, error) {
	if _, err := available(); err != nil {
		return ExitUnavailable, err
	}
	path, code, err := lookPath(argv[0])
	if err != nil {
		return code, err
	}
	rules := []landlock.Rule{
		landlock.RODirs("/"),
		landlock.RWDirs(tmp).WithRefer(),
		landlock.RWFiles("/dev/null"),
		landlock.RWFiles(terminals()...).IgnoreIfMissing(),
	}
	for _, p := range ports {
		rules = append(rules, landlock.ConnectTCP(p))
	}
	if len(ports) > 0 {
		// Kernels with Landlock ABI 10 restrict UDP as well: an allowed
		// host must still be found by name.
		rules = append(rules, landlock.ConnectSendUDP(53))
	}
	fd, flags, err := config.NewRulesetFD(rules...)
	if err != nil {
		return ExitUnavailable, fmt.Errorf("building the Landlock rules: %w", err)
	}
	if fd < 0 {
		return ExitUnavailable, fmt.Errorf("%w: Landlock enforces nothing on this kernel", ErrUnavailable)
	}
	// Landlock and seccomp bind the calling thread (and what it executes),
	// so the goroutine stays on it until execve; it is never unlocked.
	runtime.LockOSThread()
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return ExitUnavailable, fmt.Errorf("setting no_new_privs: %w", err)
	}
	if err := ll.LandlockRestrictSelf(fd, flags); err != nil {
		return ExitUnavailable, fmt.Errorf("enforcing the Landlock rules: %w", err)
	}
	_ = unix.Close(fd)
	if err := installSeccomp(); err != nil {
		return ExitUnavailable, fmt.Errorf("installing the seccomp filter: %w", err)
	}
	err = syscall.Exec(path, argv, os.Environ())
	return ExitCannotRun, fmt.Errorf("%s: %w", argv[0], err)
}

// terminals are the terminal devices the command may open for writing
// (/dev/tty and the terminal its standard streams are on, if any), and the
// regular files its stdout and stderr already write to, so that
// /dev/stdout and /dev/stderr can be reopened: the command can write
// there through its descriptors anyway.
func terminals() []string {
	paths := []string{"/dev/tty"}
	for fd := 0; fd <= 2; fd++ {
		p, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd))
		if err != nil {
			continue
		}
		switch {
		case strings.HasPrefix(p, "/dev/pts/") || strings.HasPrefix(p, "/dev/tty"):
			paths = append(paths, p)
		case fd > 0 && strings.HasPrefix(p, "/"):
			var st unix.Stat_t
			if unix.Fstat(fd, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG {
				paths = append(paths, p)
			}
		}
	}
	return paths
}

// privileged are the calls a process with capabilities (root) could use
// to change the disk or the system around Landlock: modules, kexec, BPF,
// swap, process accounting, mounts, the clock and the host name.
var privileged = []uint32{
	unix.SYS_INIT_MODULE, unix.SYS_FINIT_MODULE, unix.SYS_DELETE_MODULE, unix.SYS_KEXEC_LOAD, unix.SYS_KEXEC_FILE_LOAD,
	unix.SYS_BPF, unix.SYS_SWAPON, unix.SYS_SWAPOFF, unix.SYS_ACCT, unix.SYS_REBOOT,
	unix.SYS_MOUNT, unix.SYS_UMOUNT2, unix.SYS_PIVOT_ROOT, unix.SYS_FSOPEN, unix.SYS_FSMOUNT, unix.SYS_MOVE_MOUNT,
	unix.SYS_OPEN_TREE, unix.SYS_MOUNT_SETATTR, unix.SYS_FSCONFIG, unix.SYS_FSPICK,
	unix.SYS_SETTIMEOFDAY, unix.SYS_CLOCK_SETTIME, unix.SYS_CLOCK_ADJTIME, unix.SYS_ADJTIMEX,
	unix.SYS_SETHOSTNAME, unix.SYS_SETDOMAINNAME, unix.SYS_QUOTACTL, unix.SYS_NAME_TO_HANDLE_AT, unix.SYS_OPEN_BY_HANDLE_AT,
}

// Offsets in struct seccomp_data.
const (
	offNr   = 0
	offArch = 4
	offArgs = 16 // args[i] at offArgs+8*i; the low 32 bits come first (little-endian)
)

// Ioctl requests that change inode flags or attributes (chattr).
const (
	fsIocSetflags   = 0x40086602
	fsIoc32Setflags = 0x40046602
	fsIocFssetxattr = 0x401c5820
	fsIocSetversion = 0x40087602
)

// filter builds the seccomp program: a foreign architecture (or x32 on
// amd64) kills the process, since its system call numbers differ; the
// metadata calls fail with EPERM, and so do the calls only a privileged
// process could use to write around Landlock (for a sandbox run as root);
// socket() fails for AF_UNIX (a daemon's socket, such as Docker's, would
// be a way out), for MPTCP (which Landlock's TCP rules do not cover) and
// for raw and packet sockets (hand-made TCP); ioctl fails for chattr's
// requests.
func filter() []unix.SockFilter {
	const (
		retAllow = unix.SECCOMP_RET_ALLOW
		retEPERM = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
		retKill  = unix.SECCOMP_RET_KILL_PROCESS
	)
	ld := func(off uint32) unix.SockFilter {
		return unix.SockFilter{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: off}
	}
	ret := func(k uint32) unix.SockFilter { return unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: k} }
	// jeq jumps over skip instructions when A == k.
	jeq := func(k uint32, jt, jf uint8) unix.SockFilter {
		return unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: k, Jt: jt, Jf: jf}
	}
	jge := func(k uint32, jt, jf uint8) unix.SockFilter {
		return unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K, K: k, Jt: jt, Jf: jf}
	}
	prog := []unix.SockFilter{
		ld(offArch),
		jeq(auditArch, 1, 0),
		ret(retKill),
		ld(offNr),
	}
	if x32Bit != 0 {
		prog = append(prog, jge(x32Bit, 0, 1), ret(retKill))
	}
	for _, nr := range blocked {
		prog = append(prog, jeq(nr, 0, 1), ret(retEPERM))
	}
	for _, nr := range privileged {
		prog = append(prog, jeq(nr, 0, 1), ret(retEPERM))
	}
	// socket(domain, type, protocol)
	and := unix.SockFilter{Code: unix.BPF_ALU | unix.BPF_AND | unix.BPF_K, K: 0xf} // the type without its flags
	prog = append(prog,
		jeq(sysSocket, 0, 10),
		ld(offArgs),
		jeq(unix.AF_UNIX, 7, 0),
		jeq(unix.AF_PACKET, 6, 0),
		ld(offArgs+8),
		and,
		jeq(unix.SOCK_RAW, 3, 0),
		ld(offArgs+16),
		jeq(unix.IPPROTO_MPTCP, 1, 0),
		ret(retAllow),
		ret(retEPERM),
	)
	// ioctl(fd, request, …)
	prog = append(prog,
		jeq(sysIoctl, 0, 6),
		ld(offArgs+8),
		jeq(fsIocSetflags, 3, 0),
		jeq(fsIoc32Setflags, 2, 0),
		jeq(fsIocFssetxattr, 1, 0),
		jeq(fsIocSetversion, 0, 1),
		ret(retEPERM),
	)
	return append(prog, ret(retAllow))
}

func installSeccomp() error {
	prog := filter()
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	_, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&fprog)))
	runtime.KeepAlive(prog)
	if errno != 0 {
		return errno
	}
	return nil
}
