//go:build linux && (amd64 || arm64)

package sandbox

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The exact host:port rule. With --allow-connect, the command's connect()
// calls stop in the kernel (SECCOMP_RET_USER_NOTIF) until the supervisor
// answers. The supervisor reads the address from the command's memory,
// and when it is an allowed (address, port) pair it makes the connection
// itself, on the command's own socket (pidfd_getfd shares the open file
// description, so a non-blocking socket gets EINPROGRESS and completes as
// usual) and with its own copy of the address, so that a thread that
// rewrites the address after the check changes nothing. Every other
// connect() fails with EACCES, and the command's process never runs
// connect() itself. go-seccomp-bpf only assembles filters; it has no
// listener, hence this code.

// seccompData, seccompNotif and seccompNotifResp are the kernel's
// struct seccomp_data, seccomp_notif and seccomp_notif_resp
// (include/uapi/linux/seccomp.h), which x/sys/unix does not define.
type seccompData struct {
	Nr   int32
	Arch uint32
	IP   uint64
	Args [6]uint64
}

type seccompNotif struct {
	ID    uint64
	Pid   uint32
	Flags uint32
	Data  seccompData
}

type seccompNotifResp struct {
	ID    uint64
	Val   int64
	Error int32
	Flags uint32
}

// maxSockaddr is sizeof(struct sockaddr_storage): the kernel refuses a
// longer address with EINVAL.
const maxSockaddr = 128

type connectGuard struct {
	listener int
	allowed  map[netip.AddrPort]bool
	cancelR  int // readable once stop is called
	cancelW  int
	served   chan struct{}
	answers  sync.WaitGroup // answers in flight use the listener
	once     sync.Once
}

// takeListener copies the seccomp listener (descriptor fd of the stage,
// process pid) into the supervisor. pidfd_getfd needs the same ptrace
// access that reading the command's memory and taking its sockets will:
// where the kernel refuses it (kernel.yama.ptrace_scope 3, for one), the
// exact host:port rule cannot be kept, and nothing runs.
func takeListener(pid, fd int, allowed map[netip.AddrPort]bool) (*connectGuard, error) {
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return nil, fmt.Errorf("%w: --allow-connect needs pidfd_open (Linux 5.3): %v", ErrUnavailable, err)
	}
	defer unix.Close(pidfd)
	l, err := unix.PidfdGetfd(pidfd, fd, 0)
	if err != nil {
		return nil, fmt.Errorf("%w: --allow-connect needs to take the sandboxed command's sockets with pidfd_getfd, "+
			"which the kernel refused (%v): is ptrace forbidden (kernel.yama.ptrace_scope)?", ErrUnavailable, err)
	}
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		unix.Close(l)
		return nil, err
	}
	return &connectGuard{listener: l, allowed: allowed, cancelR: p[0], cancelW: p[1], served: make(chan struct{})}, nil
}

// serve answers notifications until stop.
func (g *connectGuard) serve() {
	defer close(g.served)
	fds := []unix.PollFd{{Fd: int32(g.listener), Events: unix.POLLIN}, {Fd: int32(g.cancelR), Events: unix.POLLIN}}
	for {
		fds[0].Revents, fds[1].Revents = 0, 0
		if _, err := unix.Poll(fds, -1); err != nil {
			if err == unix.EINTR {
				continue
			}
			return
		}
		if fds[1].Revents != 0 {
			return
		}
		if fds[0].Revents&unix.POLLIN == 0 {
			return // POLLHUP: no process uses the filter any more
		}
		var req seccompNotif // the kernel wants it zeroed
		if err := g.ioctl(unix.SECCOMP_IOCTL_NOTIF_RECV, unsafe.Pointer(&req)); err != nil {
			continue // ENOENT: the caller went away; EINTR
		}
		g.answers.Add(1)
		go g.answer(req)
	}
}

// stop ends serve. The listener is closed once the answers in flight are
// sent (a connection the supervisor makes may take a while): closed
// earlier, its number could name another file by then.
func (g *connectGuard) stop() {
	g.once.Do(func() {
		_, _ = unix.Write(g.cancelW, []byte{1})
		<-g.served
		unix.Close(g.cancelR)
		unix.Close(g.cancelW)
		go func() {
			g.answers.Wait()
			unix.Close(g.listener)
		}()
	})
}

func (g *connectGuard) ioctl(req uint, arg unsafe.Pointer) error {
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(g.listener), uintptr(req), uintptr(arg))
	if errno != 0 {
		return errno
	}
	return nil
}

// answer makes or refuses one connect() and tells the kernel the result.
func (g *connectGuard) answer(req seccompNotif) {
	defer g.answers.Done()
	resp := seccompNotifResp{ID: req.ID}
	if errno := g.connect(req); errno != 0 {
		resp.Error = -int32(errno)
	}
	_ = g.ioctl(unix.SECCOMP_IOCTL_NOTIF_SEND, unsafe.Pointer(&resp)) // ENOENT: the caller went away
}

// valid reports whether the notification's caller still waits, so that
// its process ID (read or opened before) is still the caller's.
func (g *connectGuard) valid(id uint64) bool {
	return g.ioctl(unix.SECCOMP_IOCTL_NOTIF_ID_VALID, unsafe.Pointer(&id)) == nil
}

func (g *connectGuard) connect(req seccompNotif) unix.Errno {
	if req.Data.Nr != unix.SYS_CONNECT {
		return unix.EACCES
	}
	// The kernel reads the descriptor and the length as 32-bit ints.
	fd, size := int(int32(req.Data.Args[0])), int(int32(req.Data.Args[2]))
	if size < 2 || size > maxSockaddr {
		return unix.EINVAL
	}
	addr := make([]byte, size)
	n, err := unix.ProcessVMReadv(int(req.Pid), iov(addr),
		[]unix.RemoteIovec{{Base: uintptr(req.Data.Args[1]), Len: size}}, 0)
	if err != nil || n != size {
		return unix.EFAULT
	}
	if !g.valid(req.ID) {
		return unix.EACCES
	}
	pidfd, err := threadPidfd(int(req.Pid))
	if err != nil {
		return unix.EACCES
	}
	defer unix.Close(pidfd)
	if !g.valid(req.ID) {
		return unix.EACCES // the process ID names another process now
	}
	sock, err := unix.PidfdGetfd(pidfd, fd, 0)
	if err != nil {
		if err == unix.EBADF {
			return unix.EBADF
		}
		return unix.EACCES
	}
	defer unix.Close(sock)
	domain, err := unix.GetsockoptInt(sock, unix.SOL_SOCKET, unix.SO_DOMAIN)
	if err != nil {
		return unix.ENOTSOCK
	}
	typ, _ := unix.GetsockoptInt(sock, unix.SOL_SOCKET, unix.SO_TYPE)
	proto, _ := unix.GetsockoptInt(sock, unix.SOL_SOCKET, unix.SO_PROTOCOL)
	if (domain != unix.AF_INET && domain != unix.AF_INET6) || typ != unix.SOCK_STREAM || proto != unix.IPPROTO_TCP {
		return unix.EACCES
	}
	ap, ok := sockaddrAddrPort(addr)
	if !ok || !g.allowed[ap] {
		return unix.EACCES
	}
	_, _, errno := unix.Syscall(unix.SYS_CONNECT, uintptr(sock), uintptr(unsafe.Pointer(&addr[0])), uintptr(size))
	runtime.KeepAlive(addr)
	return errno
}

// threadPidfd opens a pidfd for the thread that called connect(): the
// notification names the thread, and a thread that is not its process's
// leader (any Go or Java program's, a threaded client's) has no pidfd of
// its own before PIDFD_THREAD (Linux 6.9); there, the pidfd of its
// process (the leader, read from /proc) serves as well, since the threads
// share their descriptors. The caller checks afterwards that the
// notification is still valid, so the ID still names that thread.
func threadPidfd(tid int) (int, error) {
	fd, err := unix.PidfdOpen(tid, unix.PIDFD_THREAD)
	if err == nil {
		return fd, nil
	}
	status, rerr := os.ReadFile(fmt.Sprintf("/proc/%d/status", tid))
	if rerr != nil {
		return -1, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "Tgid:"); ok {
			tgid, perr := strconv.Atoi(strings.TrimSpace(v))
			if perr != nil {
				return -1, err
			}
			return unix.PidfdOpen(tgid, 0)
		}
	}
	return -1, err
}

// sockaddrAddrPort reads an IPv4 or IPv6 socket address (native byte
// order family, then the port and address in network order), with
// IPv4-mapped IPv6 addresses as IPv4. An IPv6 address with a scope (a
// link-local one on some interface) is not read.
func sockaddrAddrPort(b []byte) (netip.AddrPort, bool) {
	family := binary.NativeEndian.Uint16(b)
	switch {
	case family == unix.AF_INET && len(b) >= unix.SizeofSockaddrInet4:
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[4:8])), binary.BigEndian.Uint16(b[2:4])), true
	case family == unix.AF_INET6 && len(b) >= unix.SizeofSockaddrInet6:
		if binary.NativeEndian.Uint32(b[24:28]) != 0 {
			return netip.AddrPort{}, false
		}
		return netip.AddrPortFrom(netip.AddrFrom16([16]byte(b[8:24])).Unmap(), binary.BigEndian.Uint16(b[2:4])), true
	}
	return netip.AddrPort{}, false
}

func iov(b []byte) []unix.Iovec {
	v := unix.Iovec{Base: &b[0]}
	v.SetLen(len(b))
	return []unix.Iovec{v}
}
