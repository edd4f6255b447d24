//go:build linux && (amd64 || arm64)

package sandbox

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// helperCommand makes the test binary the attack helper: the system calls
// an attacker would make, each raw (no library retries or fallbacks),
// run inside the sandbox. It prints one line per attempt, "what: ok" or
// "what: ERRNO", and exits 0; the tests check the effects, and the lines
// say which call a failure came from.
const helperCommand = "sandbox-test-helper"

// hi is a bit of an argument's high word: the kernel drops it for 32-bit
// arguments (ioctl's request, socket's domain and type, a pid), while a
// seccomp filter sees all 64 bits.
const hi = 1 << 32

func helper(args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "helper: name an attack")
		return 2
	}
	say := func(what string, err error) {
		res := "ok"
		if err != nil {
			res = errName(err)
		}
		fmt.Printf("%s: %s\n", what, res)
	}
	arg := func(i int) string {
		if i+1 < len(args) {
			return args[i+1]
		}
		return ""
	}
	num := func(i int) int {
		n, err := strconv.ParseInt(arg(i), 0, 64)
		if err != nil {
			fmt.Fprintf(os.Stderr, "helper: argument %d: %v\n", i, err)
			os.Exit(2)
		}
		return int(n)
	}
	switch args[0] {
	case "connect", "fastopen", "fastopen-connect", "udp":
		ap := netip.MustParseAddrPort(arg(0))
		typ := unix.SOCK_STREAM
		if args[0] == "udp" {
			typ = unix.SOCK_DGRAM
		}
		fd, err := socket(family(ap), typ, 0)
		say(args[0]+" socket", err)
		if err != nil {
			return 0
		}
		sa, size := sockaddr(ap)
		msg := []byte("x")
		switch args[0] {
		case "connect":
			err = rawErr(unix.SYS_CONNECT, uintptr(fd), uintptr(unsafe.Pointer(&sa[0])), uintptr(size))
			if err == nil {
				_, err = unix.Write(fd, msg)
			}
		case "fastopen", "udp":
			flags := uintptr(0)
			if args[0] == "fastopen" {
				flags = unix.MSG_FASTOPEN
			}
			err = rawErr6(unix.SYS_SENDTO, uintptr(fd), uintptr(unsafe.Pointer(&msg[0])), 1, flags, uintptr(unsafe.Pointer(&sa[0])), uintptr(size))
		case "fastopen-connect":
			err = unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_FASTOPEN_CONNECT, 1)
			say("fastopen-connect setsockopt", err)
			err = rawErr(unix.SYS_CONNECT, uintptr(fd), uintptr(unsafe.Pointer(&sa[0])), uintptr(size))
			if err == nil || err == unix.EINPROGRESS {
				_, err = unix.Write(fd, msg)
			}
		}
		say(args[0], err)
	case "listen":
		fd, err := socket(unix.AF_INET, unix.SOCK_STREAM, 0)
		say("listen socket", err)
		if err == nil {
			err = unix.Listen(fd, 1)
			say("listen", err)
		}
	case "socket":
		_, err := socket(num(0), num(1), num(2))
		say(fmt.Sprintf("socket %s %s %s", arg(0), arg(1), arg(2)), err)
	case "unix-connect":
		fd, err := socket(unix.AF_UNIX, unix.SOCK_STREAM, 0)
		say("unix socket", err)
		if err == nil {
			err = unix.Connect(fd, &unix.SockaddrUnix{Name: arg(0)})
			say("unix connect", err)
		}
	case "socketpair":
		var fds [2]int32
		for _, typ := range []int{unix.SOCK_STREAM, unix.SOCK_SEQPACKET, unix.SOCK_DGRAM, unix.SOCK_STREAM | hi} {
			err := rawErr(unix.SYS_SOCKETPAIR, unix.AF_UNIX, uintptr(typ), 0, uintptr(unsafe.Pointer(&fds)))
			say(fmt.Sprintf("socketpair %#x", typ), err)
		}
	case "disturb":
		pid, pgid, uid := num(0), num(1), num(2)
		lim := unix.Rlimit{Cur: 7, Max: 7}
		say("prlimit", rawErr(unix.SYS_PRLIMIT64, uintptr(pid), unix.RLIMIT_NOFILE, uintptr(unsafe.Pointer(&lim)), 0))
		say("prlimit high", rawErr(unix.SYS_PRLIMIT64, uintptr(pid|hi), unix.RLIMIT_NOFILE, uintptr(unsafe.Pointer(&lim)), 0))
		say("setpriority process", rawErr(unix.SYS_SETPRIORITY, unix.PRIO_PROCESS, uintptr(pid), 19))
		say("setpriority group", rawErr(unix.SYS_SETPRIORITY, unix.PRIO_PGRP, uintptr(pgid), 19))
		say("setpriority user", rawErr(unix.SYS_SETPRIORITY, unix.PRIO_USER, uintptr(uid), 19))
		say("setpriority high", rawErr(unix.SYS_SETPRIORITY, unix.PRIO_PROCESS|hi, uintptr(pid), 19))
		var set unix.CPUSet
		set.Set(0)
		say("sched_setaffinity", rawErr(unix.SYS_SCHED_SETAFFINITY, uintptr(pid), unsafe.Sizeof(set), uintptr(unsafe.Pointer(&set))))
		param := struct{ prio int32 }{0}
		say("sched_setscheduler", rawErr(unix.SYS_SCHED_SETSCHEDULER, uintptr(pid), 5 /* SCHED_IDLE */, uintptr(unsafe.Pointer(&param))))
		const ioprioIdle = 3 << 13
		say("ioprio_set process", rawErr(unix.SYS_IOPRIO_SET, 1, uintptr(pid), ioprioIdle))
		say("ioprio_set group", rawErr(unix.SYS_IOPRIO_SET, 2, uintptr(pgid), ioprioIdle))
		say("ioprio_set user", rawErr(unix.SYS_IOPRIO_SET, 3, uintptr(uid), ioprioIdle))
		say("ptrace attach", rawErr(unix.SYS_PTRACE, unix.PTRACE_ATTACH, uintptr(pid), 0))
		say("ptrace seize", rawErr(unix.SYS_PTRACE, unix.PTRACE_SEIZE, uintptr(pid), 0))
		say("pidfd_open", rawErr(unix.SYS_PIDFD_OPEN, uintptr(pid), 0))
		say("kill", unix.Kill(pid, unix.SIGKILL))
		say("kill group", unix.Kill(-pgid, unix.SIGKILL))
		say("tgkill", rawErr(unix.SYS_TGKILL, uintptr(pid), uintptr(pid), uintptr(unix.SIGKILL)))
	case "keys":
		typ, desc, payload := []byte("user\x00"), []byte("planserver-sandbox-test\x00"), []byte("x")
		say("add_key", rawErr6(unix.SYS_ADD_KEY, uintptr(unsafe.Pointer(&typ[0])), uintptr(unsafe.Pointer(&desc[0])),
			uintptr(unsafe.Pointer(&payload[0])), 1, uintptr(0xfffffffd) /* KEY_SPEC_SESSION_KEYRING */, 0))
		say("keyctl join", rawErr(unix.SYS_KEYCTL, unix.KEYCTL_JOIN_SESSION_KEYRING, 0))
		say("request_key", rawErr(unix.SYS_REQUEST_KEY, uintptr(unsafe.Pointer(&typ[0])), uintptr(unsafe.Pointer(&desc[0])), 0, 0))
	case "ipc":
		key := uintptr(num(0))
		say("msgget", rawErr(unix.SYS_MSGGET, key, unix.IPC_CREAT|0o600, 0))
		say("semget", rawErr(unix.SYS_SEMGET, key, 1, unix.IPC_CREAT|0o600))
		say("shmget", rawErr(unix.SYS_SHMGET, key, 4096, unix.IPC_CREAT|0o600))
		name := []byte(arg(1) + "\x00")
		say("mq_open", rawErr6(unix.SYS_MQ_OPEN, uintptr(unsafe.Pointer(&name[0])), unix.O_CREAT|unix.O_RDWR, 0o600, 0, 0, 0))
	case "setflags":
		// chattr +d through a read-only descriptor: FS_IOC_SETFLAGS,
		// plain and with a high bit the kernel drops.
		fd, err := unix.Open(arg(0), unix.O_RDONLY, 0)
		say("open", err)
		if err != nil {
			return 0
		}
		var flags uint32
		say("getflags", rawErr(unix.SYS_IOCTL, uintptr(fd), unix.FS_IOC_GETFLAGS, uintptr(unsafe.Pointer(&flags))))
		flags |= 0x40 // FS_NODUMP_FL
		say("setflags", rawErr(unix.SYS_IOCTL, uintptr(fd), unix.FS_IOC_SETFLAGS, uintptr(unsafe.Pointer(&flags))))
		say("setflags high", rawErr(unix.SYS_IOCTL, uintptr(fd), unix.FS_IOC_SETFLAGS|hi, uintptr(unsafe.Pointer(&flags))))
	case "tiocsti":
		c := byte('x')
		say("tiocsti", rawErr(unix.SYS_IOCTL, 0, unix.TIOCSTI, uintptr(unsafe.Pointer(&c))))
		say("tiocsti high", rawErr(unix.SYS_IOCTL, 0, unix.TIOCSTI|hi, uintptr(unsafe.Pointer(&c))))
		sub := []byte{2, 0, 0, 0, 0, 0} // TIOCL_PASTESEL
		say("tioclinux", rawErr(unix.SYS_IOCTL, 0, unix.TIOCLINUX, uintptr(unsafe.Pointer(&sub[0]))))
		var ws unix.Winsize
		say("tiocgwinsz", rawErr(unix.SYS_IOCTL, 0, unix.TIOCGWINSZ, uintptr(unsafe.Pointer(&ws))))
	case "namespaces":
		// clone with CLONE_NEWUSER: a child that got through exits at
		// once, without running Go code.
		pid, _, errno := unix.RawSyscall6(unix.SYS_CLONE, unix.CLONE_NEWUSER|uintptr(unix.SIGCHLD), 0, 0, 0, 0, 0)
		if errno == 0 && pid == 0 {
			unix.RawSyscall(unix.SYS_EXIT_GROUP, 0, 0, 0)
		}
		say("clone newuser", errnoErr(errno))
		if errno == 0 {
			var ws unix.WaitStatus
			_, _ = unix.Wait4(int(pid), &ws, 0, nil)
		}
		say("clone3", rawErr(unix.SYS_CLONE3, 0, 0))
		say("unshare", rawErr(unix.SYS_UNSHARE, unix.CLONE_NEWUSER|unix.CLONE_NEWNET, 0))
		say("setns", rawErr(unix.SYS_SETNS, 0, 0))
	case "kernel":
		say("io_uring_setup", rawErr(unix.SYS_IO_URING_SETUP, 1, 0))
		say("bpf", rawErr(unix.SYS_BPF, 0, 0, 0))
		say("perf_event_open", rawErr6(unix.SYS_PERF_EVENT_OPEN, 0, 0, ^uintptr(0), ^uintptr(0), 0, 0))
		say("userfaultfd", rawErr(unix.SYS_USERFAULTFD, 0))
		say("seccomp", rawErr(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_NEW_LISTENER, 0))
		say("process_vm_writev", rawErr6(unix.SYS_PROCESS_VM_WRITEV, 1, 0, 0, 0, 0, 0))
		say("mount", rawErr6(unix.SYS_MOUNT, 0, 0, 0, 0, 0, 0))
		say("syslog read", rawErr(unix.SYS_SYSLOG, 2 /* SYSLOG_ACTION_READ */, 0, 0))
		say("x32 getpid", rawErr(0x40000000|unix.SYS_GETPID, 0, 0))
	default:
		fmt.Fprintf(os.Stderr, "helper: unknown attack %q\n", args[0])
		return 2
	}
	return 0
}

func socket(domain, typ, proto int) (int, error) {
	fd, _, errno := unix.RawSyscall(unix.SYS_SOCKET, uintptr(domain), uintptr(typ), uintptr(proto))
	return int(fd), errnoErr(errno)
}

func family(ap netip.AddrPort) int {
	if ap.Addr().Is4() {
		return unix.AF_INET
	}
	return unix.AF_INET6
}

// sockaddr is ap as struct sockaddr_in or sockaddr_in6.
func sockaddr(ap netip.AddrPort) ([]byte, int) {
	if ap.Addr().Is4() {
		b := make([]byte, unix.SizeofSockaddrInet4)
		binary.NativeEndian.PutUint16(b, unix.AF_INET)
		binary.BigEndian.PutUint16(b[2:], ap.Port())
		a := ap.Addr().As4()
		copy(b[4:], a[:])
		return b, len(b)
	}
	b := make([]byte, unix.SizeofSockaddrInet6)
	binary.NativeEndian.PutUint16(b, unix.AF_INET6)
	binary.BigEndian.PutUint16(b[2:], ap.Port())
	a := ap.Addr().As16()
	copy(b[8:], a[:])
	return b, len(b)
}

func rawErr(nr uintptr, a ...uintptr) error {
	var args [6]uintptr
	copy(args[:], a)
	_, _, errno := unix.Syscall6(nr, args[0], args[1], args[2], args[3], args[4], args[5])
	return errnoErr(errno)
}

func rawErr6(nr, a1, a2, a3, a4, a5, a6 uintptr) error {
	return rawErr(nr, a1, a2, a3, a4, a5, a6)
}

func errnoErr(e unix.Errno) error {
	if e == 0 {
		return nil
	}
	return e
}

// errName is an errno's symbol (EPERM), else the error's text.
func errName(err error) string {
	if e, ok := err.(unix.Errno); ok {
		if n := unix.ErrnoName(e); n != "" {
			return n
		}
	}
	return strings.ReplaceAll(err.Error(), " ", "_")
}
