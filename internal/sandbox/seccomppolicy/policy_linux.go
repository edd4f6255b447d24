//go:build linux && (amd64 || arm64)

// Package seccomppolicy owns the seccomp half of planserver's sandbox:
// which system calls a sandboxed command may make, with which arguments,
// and their assembly (with go-seccomp-bpf) into the programs the stage
// loads. internal/sandbox carries the assembled programs as a generated
// table (seccomp_linux_*.go there, which its TestSeccompProgramsAreCurrent
// keeps equal to Programs), so that neither the assembly nor the
// library's system-call tables, which initialise in every process that
// links them, cost a sandboxed command's start-up anything.
package seccomppolicy

import (
	"fmt"
	"maps"
	"slices"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// The seccomp half of the sandbox is an allowlist: a system call that is
// not named here fails with ENOSYS, as on a kernel that lacks it, so that
// programs fall back from new calls (clone3, the pidfd calls) to old
// ones. The calls known to be dangerous fail with EPERM instead, which
// reads better. Names missing on an architecture (arm64 has only the
// *at forms of the path calls) are skipped; TestPolicyNamesExist keeps
// the lists free of typos.
//
// Where a call is allowed only with some arguments, the main filter
// allows it and a second filter judges its arguments (argFilters); the
// kernel runs both and the stricter answer wins, so the second can only
// refuse. go-seccomp-bpf assembles each call's argument rule as a program
// of its own (one call, default allow), and jumpTable puts them behind a
// dispatch on the call's number. One program for several such calls would
// be wrong: when the library's conditions fail they leave an argument,
// not the call's number, in the accumulator, and the checks after them
// compare that argument with call numbers, so a call whose argument
// happened to equal the next call's number would be judged by the next
// call's rule. A filter for each call would be right but slower: every
// judged call would run all of them, and each is compiled at start.

// allowed are the calls any reading tool may make. Files: Landlock decides
// what may be written, created, removed or renamed, so the path calls
// are here; the metadata calls it does not guard are in metadata.
// Processes: signals (kill, tgkill, rt_sigqueueinfo, F_SETOWN) reach only
// the sandbox's own processes, by Landlock's scoping and the PID
// namespace. Sockets: only what argFilters lets socket() and socketpair()
// make exists, so reading from and shutting down a socket are harmless.
var allowed = []string{
	// The hottest first (the kernel caches allowed numbers anyway).
	"read", "write", "close", "fstat", "newfstatat", "fstatat", "statx", "openat", "lseek", "mmap", "munmap",
	"mprotect", "brk", "futex", "getdents64", "pread64", "readv", "writev", "rt_sigaction", "rt_sigprocmask",
	"rt_sigreturn", "epoll_pwait", "epoll_wait", "epoll_ctl", "nanosleep", "clock_nanosleep", "clock_gettime",

	// Files and directories.
	"open", "openat2", "stat", "lstat", "access", "faccessat", "faccessat2", "readlink", "readlinkat",
	"getdents", "getcwd", "chdir", "fchdir", "umask", "creat", "mkdir", "mkdirat", "rmdir", "unlink", "unlinkat",
	"rename", "renameat", "renameat2", "link", "linkat", "symlink", "symlinkat", "mknod", "mknodat",
	"truncate", "ftruncate", "fallocate", "pwrite64", "preadv", "pwritev", "preadv2", "pwritev2",
	"sendfile", "copy_file_range", "splice", "tee", "vmsplice", "fsync", "fdatasync", "sync", "syncfs",
	"sync_file_range", "fadvise64", "readahead", "statfs", "fstatfs", "flock", "dup", "dup2", "dup3",
	"pipe", "pipe2", "close_range", "memfd_create", "cachestat",
	"getxattr", "lgetxattr", "fgetxattr", "getxattrat", "listxattr", "llistxattr", "flistxattr", "listxattrat",
	"inotify_init", "inotify_init1", "inotify_add_watch", "inotify_rm_watch", "statmount", "listmount",

	// Memory.
	"mremap", "msync", "mincore", "madvise", "mlock", "mlock2", "munlock", "mlockall", "munlockall",
	"mbind", "set_mempolicy", "get_mempolicy", "set_mempolicy_home_node", "pkey_mprotect", "pkey_alloc",
	"pkey_free", "membarrier", "map_shadow_stack", "mseal", "remap_file_pages",

	// Signals, time, waiting.
	"rt_sigpending", "rt_sigtimedwait", "rt_sigsuspend", "rt_sigqueueinfo", "rt_tgsigqueueinfo", "sigaltstack",
	"kill", "tkill", "tgkill", "pause", "alarm", "signalfd", "signalfd4", "restart_syscall",
	"gettimeofday", "time", "clock_getres", "getitimer", "setitimer", "times",
	"timer_create", "timer_settime", "timer_gettime", "timer_getoverrun", "timer_delete",
	"timerfd_create", "timerfd_settime", "timerfd_gettime",
	"poll", "ppoll", "select", "pselect6", "epoll_create", "epoll_create1", "epoll_pwait2", "eventfd", "eventfd2",
	"futex_waitv", "futex_wake", "futex_wait", "futex_requeue",

	// The process itself and its children.
	"fork", "vfork", "execve", "execveat", "exit", "exit_group", "wait4", "waitid",
	"set_tid_address", "set_robust_list", "get_robust_list", "rseq", "arch_prctl", "personality",
	"set_thread_area", "get_thread_area", "sched_yield", "sched_getaffinity", "sched_getparam",
	"sched_getscheduler", "sched_getattr", "sched_get_priority_max", "sched_get_priority_min",
	"sched_rr_get_interval", "getpriority", "ioprio_get", "getcpu", "getrlimit", "setrlimit", "getrusage",
	"capget", "capset", "getrandom", "uname", "sysinfo",
	"getpid", "getppid", "gettid", "getuid", "geteuid", "getgid", "getegid", "getgroups", "getresuid",
	"getresgid", "getpgrp", "getpgid", "getsid", "setpgid", "setsid", "setuid", "setgid", "setreuid",
	"setregid", "setresuid", "setresgid", "setfsuid", "setfsgid", "setgroups",
	"landlock_create_ruleset", "landlock_add_rule", "landlock_restrict_self", "lsm_get_self_attr", "lsm_list_modules",

	// Sockets that exist.
	"recvfrom", "recvmsg", "recvmmsg", "getsockname", "getpeername", "getsockopt", "shutdown",
}

// metadata are the calls that change what Landlock does not guard: modes,
// owners, times and extended attributes. They fail with EPERM everywhere,
// TMPDIR included.
var metadata = []string{
	"chmod", "fchmod", "fchmodat", "fchmodat2", "chown", "fchown", "lchown", "fchownat",
	"utime", "utimes", "utimensat", "futimesat",
	"setxattr", "lsetxattr", "fsetxattr", "setxattrat", "removexattr", "lremovexattr", "fremovexattr", "removexattrat",
}

// refused are the calls known to reach beyond the command's own processes
// and files; they fail with EPERM. Others, not named anywhere, fail with
// ENOSYS: clone3 (libc falls back to clone, whose namespace flags
// argFilters judges), and pidfd_open, pidfd_getfd and pidfd_send_signal
// (Go and libuv fall back to plain process IDs).
var refused = []string{
	// Other processes: tracing, their memory, comparing their files.
	"ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "migrate_pages", "move_pages",
	"process_madvise", "process_mrelease",
	// Shared state with processes outside: keyrings, System V IPC, POSIX
	// message queues.
	"keyctl", "add_key", "request_key",
	"msgget", "msgsnd", "msgrcv", "msgctl", "semget", "semop", "semctl", "semtimedop",
	"shmget", "shmat", "shmdt", "shmctl",
	"mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive", "mq_notify", "mq_getsetattr",
	// Namespaces and mounts.
	"unshare", "setns", "mount", "umount2", "pivot_root", "chroot", "fsopen", "fsconfig", "fsmount",
	"fspick", "open_tree", "open_tree_attr", "move_mount", "mount_setattr",
	// Calls that bypass seccomp or reach into the kernel.
	"io_uring_setup", "io_uring_enter", "io_uring_register", "bpf", "perf_event_open", "userfaultfd",
	"fanotify_init", "fanotify_mark", "seccomp",
	// The system: kernels, modules, power, swap, accounting, quotas,
	// handles that skip path checks, the clock, the host name, the
	// security modules, I/O ports, the kernel log's destructive reads.
	"kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module", "reboot",
	"swapon", "swapoff", "acct", "quotactl", "quotactl_fd", "name_to_handle_at", "open_by_handle_at",
	"settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "sethostname", "setdomainname",
	"lsm_set_self_attr", "iopl", "ioperm", "modify_ldt", "vhangup", "uselib", "lookup_dcookie", "nfsservctl",
	// Sockets: nothing listens, nothing is accepted.
	"bind", "listen", "accept", "accept4",
}

// Arguments of the calls argFilters judges.
const (
	// cloneNewFlags are clone's namespace flags: a new user namespace
	// would give the command capabilities again. clone passes its flags in
	// the low 32 bits, which the kernel reads.
	cloneNewFlags = unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC |
		unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET
	// syslog's reading actions: read all, size unread, size of buffer
	// (SYSLOG_ACTION_READ consumes the messages; it is refused).
	syslogReadAll, syslogSizeUnread, syslogSizeBuffer = 3, 9, 10
)

// ioctls are the requests a reading tool makes (terminal queries and
// modes, descriptor flags, how much is buffered, a file's flags and
// layout). Every other request fails with ENOTTY, as for a device that
// does not know it: file ioctls can change things through a read-only
// descriptor (chattr's FS_IOC_SETFLAGS, FS_IOC_ENABLE_VERITY,
// FS_IOC_SET_ENCRYPTION_POLICY), and TIOCSTI and TIOCLINUX inject
// keystrokes.
var ioctls = []uint64{
	unix.TCGETS, unix.TCSETS, unix.TCSETSW, unix.TCSETSF, unix.TCGETS2, unix.TIOCGWINSZ,
	unix.TIOCGPGRP, unix.TIOCSPGRP, unix.TIOCGSID, unix.TIOCOUTQ, unix.TIOCGPTN, unix.TIOCGETD,
	fionread, fionbio, fioclex, fionclex, fioasync,
	unix.FS_IOC_GETFLAGS, fsIoc32Getflags, fsIocGetversion, fsIocFsgetxattr, figetbsz, fsIocFiemap,
}

// Requests x/sys/unix does not name (asm-generic values, the same on
// amd64 and arm64).
const (
	fionread        = 0x541b
	fionbio         = 0x5421
	fionclex        = 0x5450
	fioclex         = 0x5451
	fioasync        = 0x5452
	figetbsz        = 0x2
	fsIoc32Getflags = 0x80046601
	fsIocGetversion = 0x80087601
	fsIocFsgetxattr = 0x801c581f
	fsIocFiemap     = 0xc020660b
)

// fcntls are the fcntl commands allowed. F_SETLEASE (a lease makes other
// processes' opens wait) and the write-hint setters (they change the
// inode through a read-only descriptor) are not.
var fcntls = []uint64{
	unix.F_DUPFD, unix.F_GETFD, unix.F_SETFD, unix.F_GETFL, unix.F_SETFL, unix.F_GETLK, unix.F_SETLK,
	unix.F_SETLKW, unix.F_SETOWN, unix.F_GETOWN, unix.F_SETSIG, unix.F_GETSIG, unix.F_SETOWN_EX,
	unix.F_GETOWN_EX, unix.F_OFD_GETLK, unix.F_OFD_SETLK, unix.F_OFD_SETLKW, unix.F_GETLEASE,
	unix.F_NOTIFY, 1027 /* F_DUPFD_QUERY */, 1028 /* F_CREATED_QUERY */, unix.F_DUPFD_CLOEXEC,
	unix.F_SETPIPE_SZ, unix.F_GETPIPE_SZ, unix.F_ADD_SEALS, unix.F_GET_SEALS, unix.F_GET_RW_HINT,
	unix.F_GET_FILE_RW_HINT,
}

// sockopts are the setsockopt options allowed by level; a nil list
// allows every option of its level. TCP_FASTOPEN_CONNECT (whose connect
// sends nothing until the first write, which then connects without a
// connect() to judge), TCP_FASTOPEN, TCP_REPAIR and TCP_ULP are not.
var sockopts = map[uint64][]uint64{
	unix.SOL_SOCKET: nil,
	unix.IPPROTO_TCP: {unix.TCP_NODELAY, unix.TCP_MAXSEG, unix.TCP_KEEPIDLE, unix.TCP_KEEPINTVL, unix.TCP_KEEPCNT,
		unix.TCP_LINGER2, unix.TCP_QUICKACK, unix.TCP_CONGESTION, unix.TCP_USER_TIMEOUT, unix.TCP_NOTSENT_LOWAT},
	unix.IPPROTO_IP:   {unix.IP_TOS, unix.IP_TTL},
	unix.IPPROTO_IPV6: {unix.IPV6_V6ONLY, unix.IPV6_TCLASS, unix.IPV6_UNICAST_HOPS},
}

// withFlags are a socket type alone and with SOCK_CLOEXEC, SOCK_NONBLOCK
// and both: socket()'s type argument carries them.
func withFlags(types ...uint64) []uint64 {
	var out []uint64
	for _, t := range types {
		out = append(out, t, t|unix.SOCK_CLOEXEC, t|unix.SOCK_NONBLOCK, t|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK)
	}
	return out
}

// Conditions, written so that a 64-bit argument the kernel truncates to
// 32 bits (ioctl's request, socket's domain and type, a pid) cannot slip
// past: a value is allowed only when all 64 bits equal an allowed value
// (notIn), and a flag test (bitsSet) reads only bits of the low word.
// "Refuse unless equal" is never written, since TIOCSTI|1<<32 differs
// from TIOCSTI in 64 bits and reaches the kernel as TIOCSTI.

// notIn is true when argument arg equals none of values in all 64 bits.
func notIn(arg uint32, values ...uint64) seccomp.ArgumentConditions {
	var c seccomp.ArgumentConditions
	for _, v := range values {
		c = append(c, seccomp.Condition{Argument: arg, Operation: seccomp.NotEqual, Value: v})
	}
	return c
}

func equal(arg uint32, v uint64) seccomp.Condition {
	return seccomp.Condition{Argument: arg, Operation: seccomp.Equal, Value: v}
}

func bitsSet(arg uint32, mask uint64) seccomp.ArgumentConditions {
	if mask>>32 != 0 {
		panic("sandbox: a flag test must read the low word only")
	}
	return seccomp.ArgumentConditions{{Argument: arg, Operation: seccomp.BitsSet, Value: mask}}
}

// refusal is one argFilters entry: call fails with errno when any of the
// condition sets holds (each set is an AND of its conditions).
type refusal struct {
	call  string
	errno unix.Errno
	when  []seccomp.ArgumentConditions
}

// argFilters are the calls allowed only with some arguments.
func argFilters(connect bool) []refusal {
	var socketopt []seccomp.ArgumentConditions
	levels := slices.Sorted(maps.Keys(sockopts))
	for _, level := range levels {
		if opts := sockopts[level]; opts != nil {
			socketopt = append(socketopt, append(seccomp.ArgumentConditions{equal(1, level)}, notIn(2, opts...)...))
		}
	}
	socketopt = append(socketopt, notIn(1, levels...))
	r := []refusal{
		{"ioctl", unix.ENOTTY, []seccomp.ArgumentConditions{notIn(1, ioctls...)}},
		{"fcntl", unix.EPERM, []seccomp.ArgumentConditions{notIn(1, fcntls...)}},
		{"clone", unix.EPERM, []seccomp.ArgumentConditions{bitsSet(0, cloneNewFlags)}},
		// Anonymous Unix socket pairs: a stream or seqpacket socket
		// ignores or refuses a destination address, so sendmsg cannot
		// reach a named socket through it (a datagram one could).
		{"socketpair", unix.EPERM, []seccomp.ArgumentConditions{
			notIn(0, unix.AF_UNIX), notIn(1, withFlags(unix.SOCK_STREAM, unix.SOCK_SEQPACKET)...), notIn(2, 0),
		}},
		// Other processes: only the caller itself (pid 0).
		{"prlimit64", unix.EPERM, []seccomp.ArgumentConditions{notIn(0, 0)}},
		{"sched_setaffinity", unix.EPERM, []seccomp.ArgumentConditions{notIn(0, 0)}},
		{"sched_setscheduler", unix.EPERM, []seccomp.ArgumentConditions{notIn(0, 0)}},
		{"sched_setparam", unix.EPERM, []seccomp.ArgumentConditions{notIn(0, 0)}},
		{"sched_setattr", unix.EPERM, []seccomp.ArgumentConditions{notIn(0, 0)}},
		{"setpriority", unix.EPERM, []seccomp.ArgumentConditions{notIn(0, unix.PRIO_PROCESS), notIn(1, 0)}},
		{"ioprio_set", unix.EPERM, []seccomp.ArgumentConditions{notIn(0, 1 /* IOPRIO_WHO_PROCESS */), notIn(1, 0)}},
		// The command's parent death signal is what ends it with a
		// supervisor killed by SIGKILL (PID 1 of its namespace, it takes
		// every process it started with it): it may set that signal to
		// SIGKILL (Go's ForkExec does, in the direct start's child), not
		// clear it or make it one it can ignore. Every other prctl is
		// allowed. The kernel reads the option's low 32 bits only, so an
		// option with any high bit set is refused: PR_SET_PDEATHSIG|1<<32
		// would not equal the one judged.
		{"prctl", unix.EPERM, []seccomp.ArgumentConditions{
			{{Argument: 0, Operation: seccomp.GreaterThan, Value: 0xffffffff}},
			append(seccomp.ArgumentConditions{equal(0, unix.PR_SET_PDEATHSIG)}, notIn(1, uint64(unix.SIGKILL))...),
		}},
		// TCP Fast Open connects without connect(): refused.
		{"sendto", unix.EPERM, []seccomp.ArgumentConditions{bitsSet(3, unix.MSG_FASTOPEN)}},
		{"sendmsg", unix.EPERM, []seccomp.ArgumentConditions{bitsSet(2, unix.MSG_FASTOPEN)}},
		{"sendmmsg", unix.EPERM, []seccomp.ArgumentConditions{bitsSet(3, unix.MSG_FASTOPEN)}},
		{"setsockopt", unix.EPERM, socketopt},
		{"syslog", unix.EPERM, []seccomp.ArgumentConditions{notIn(0, syslogReadAll, syslogSizeUnread, syslogSizeBuffer)}},
	}
	if connect {
		// TCP over IPv4 and IPv6 only: no UDP, raw, packet, MPTCP.
		r = append(r, refusal{"socket", unix.EPERM, []seccomp.ArgumentConditions{
			notIn(0, unix.AF_INET, unix.AF_INET6), notIn(1, withFlags(unix.SOCK_STREAM)...), notIn(2, 0, unix.IPPROTO_TCP),
		}})
	}
	return r
}

// errnoAction is SECCOMP_RET_ERRNO with errno. go-seccomp-bpf names only
// the plain ERRNO action (which it turns into EPERM) but passes others
// through.
func errnoAction(e unix.Errno) seccomp.Action { return seccomp.ActionErrno | seccomp.Action(e) }

// defaultSentinel stands for the main filter's default action, ENOSYS,
// which go-seccomp-bpf does not accept as a default (it validates the
// default against its named actions): the filter is assembled with TRACE
// and every TRACE it returns is rewritten. Nothing else uses TRACE, and
// without a tracer the kernel answers TRACE with ENOSYS too.
const defaultSentinel = seccomp.ActionTrace

// Programs returns the seccomp programs for the command on the
// architecture info, the main one first: connect tells whether
// --allow-connect is in force (connect() then goes to the supervisor, and
// socket() may make TCP sockets). The argument values are x/sys/unix's,
// which are the same on amd64 and arm64 (asm-generic), so either
// architecture's programs can be assembled on the other.
//
// The main program is go-seccomp-bpf's too, assembled in slices of 64
// call numbers behind a jump table (jumpTable), not as one list: the
// library checks a program's calls one after another, and the kernel
// runs the whole program once for each call number when it loads it (to
// cache the calls it always allows), so a list of 400 checks made
// loading cost a third of a millisecond, on every sandboxed command.
func Programs(info *arch.Info, connect bool) ([][]unix.SockFilter, error) {
	conditional := argFilters(connect)
	var judged []string
	for _, r := range conditional {
		judged = append(judged, r.call)
	}
	deny := slices.Clone(refused)
	if !connect {
		deny = append(deny, "socket", "connect")
	}
	answers := []struct {
		action seccomp.Action
		names  []string
	}{
		{seccomp.ActionAllow, append(slices.Clone(allowed), judged...)},
		{errnoAction(unix.EPERM), append(slices.Clone(metadata), deny...)},
	}
	if connect {
		answers = append(answers, struct {
			action seccomp.Action
			names  []string
		}{seccomp.ActionUserNotify, []string{"connect"}})
	}
	const slice = 64
	var entries []jump
	for lo := 0; lo <= maxNumber(info); lo += slice {
		var groups []seccomp.SyscallGroup
		for _, a := range answers {
			var in []string
			for _, n := range a.names {
				if nr, ok := info.SyscallNames[n]; ok && nr >= lo && nr < lo+slice {
					in = append(in, n)
				}
			}
			if len(in) > 0 {
				groups = append(groups, seccomp.SyscallGroup{Names: in, Action: a.action})
			}
		}
		if len(groups) == 0 {
			continue
		}
		body, err := assemble(seccomp.Policy{DefaultAction: defaultSentinel, Syscalls: groups})
		if err != nil {
			return nil, fmt.Errorf("assembling the seccomp allowlist: %w", err)
		}
		entries = append(entries, jump{below: uint32(lo + slice), body: body})
	}
	main, err := jumpTable(info, entries, uint32(errnoAction(unix.ENOSYS)))
	if err != nil {
		return nil, err
	}
	args, err := argProgram(info, conditional)
	if err != nil {
		return nil, err
	}
	return [][]unix.SockFilter{main, args}, nil
}

// argProgram is the argument rules' program: each call's rule assembled
// alone (one call, default allow), behind a jump table on the numbers.
func argProgram(info *arch.Info, rules []refusal) ([]unix.SockFilter, error) {
	var entries []jump
	for _, r := range rules {
		g := seccomp.SyscallGroup{Action: errnoAction(r.errno)}
		for _, c := range r.when {
			g.NamesWithCondtions = append(g.NamesWithCondtions, seccomp.NameWithConditions{Name: r.call, Conditions: c})
		}
		body, err := assemble(seccomp.Policy{DefaultAction: seccomp.ActionAllow, Syscalls: []seccomp.SyscallGroup{g}})
		if err != nil {
			return nil, fmt.Errorf("assembling the seccomp rule for %s: %w", r.call, err)
		}
		nr, ok := info.SyscallNames[r.call]
		if !ok {
			return nil, fmt.Errorf("no call %s on %s", r.call, info.Name)
		}
		entries = append(entries, jump{equal: true, below: uint32(nr), body: body})
	}
	return jumpTable(info, entries, unix.SECCOMP_RET_ALLOW)
}

func maxNumber(info *arch.Info) int {
	m := 0
	for nr := range info.SyscallNumbers {
		m = max(m, nr)
	}
	return m
}

// jump is one entry of a jump table: body runs for the call numbers
// below below (the entries in ascending order), or with equal for that
// number only.
type jump struct {
	equal bool
	below uint32
	body  []unix.SockFilter
}

// jumpTable is a program that checks the architecture, then jumps on the
// call's number to the first entry that takes it, and returns otherwise
// for anything else (a foreign architecture, an x32 call, a number no
// entry takes). Each body is a program as go-seccomp-bpf assembles it: it
// loads what it needs itself, its jumps are relative and stay inside it,
// and it ends in returns, so it runs unchanged wherever it is placed.
// go-seccomp-bpf has no such dispatch, hence this: a few instructions of
// our own before the library's.
func jumpTable(info *arch.Info, entries []jump, otherwise uint32) ([]unix.SockFilter, error) {
	ld := func(off uint32) unix.SockFilter {
		return unix.SockFilter{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: off}
	}
	ret := unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: otherwise}
	// ld arch; jeq native: +1 : +0; ret; ld nr; [jge x32: +0 : +1; ret]
	prog := []unix.SockFilter{
		ld(4), // seccomp_data.arch
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: uint32(info.ID), Jt: 1},
		ret,
		ld(0), // seccomp_data.nr
	}
	if info.ID == arch.X86_64.ID {
		prog = append(prog, unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K, K: uint32(arch.X32.SeccompMask), Jf: 1}, ret)
	}
	// Each entry: a test that skips the next instruction unless the entry
	// takes the number (jeq nr: +0 : +1, or jge below: +1 : +0), then
	// ja to its body. After them: ret; then the bodies.
	table := len(prog)
	start := table + 2*len(entries) + 1
	for i, e := range entries {
		test := unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K, K: e.below, Jt: 1}
		if e.equal {
			test = unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: e.below, Jf: 1}
		}
		ja := table + 2*i + 1 // a jump counts from the instruction after it
		prog = append(prog, test, unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JA, K: uint32(start - ja - 1)})
		start += len(e.body)
	}
	prog = append(prog, ret)
	for _, e := range entries {
		prog = append(prog, e.body...)
	}
	if len(prog) > unix.BPF_MAXINSNS {
		return nil, fmt.Errorf("a seccomp program of %d instructions, more than %d", len(prog), unix.BPF_MAXINSNS)
	}
	return prog, nil
}

func assemble(p seccomp.Policy) ([]unix.SockFilter, error) {
	insts, err := p.Assemble()
	if err != nil {
		return nil, err
	}
	for i, in := range insts {
		if r, ok := in.(bpf.RetConstant); ok && r.Val == uint32(defaultSentinel) {
			insts[i] = bpf.RetConstant{Val: uint32(errnoAction(unix.ENOSYS))}
		}
	}
	raw, err := bpf.Assemble(insts)
	if err != nil {
		return nil, err
	}
	out := make([]unix.SockFilter, len(raw))
	for i, r := range raw {
		out[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	return out, nil
}
