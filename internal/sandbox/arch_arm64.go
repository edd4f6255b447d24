//go:build linux

package sandbox

import "golang.org/x/sys/unix"

const (
	auditArch = unix.AUDIT_ARCH_AARCH64
	x32Bit    = 0 // arm64 has no second ABI with other numbers
	sysSocket = unix.SYS_SOCKET
	sysIoctl  = unix.SYS_IOCTL
)

// blocked are the system calls that change metadata Landlock does not
// guard (modes, owners, times, extended attributes), and io_uring, whose
// operations (setxattr among them) do not pass through seccomp. arm64 has
// only the *at forms of the path calls.
var blocked = []uint32{
	unix.SYS_FCHMOD, unix.SYS_FCHMODAT, unix.SYS_FCHMODAT2,
	unix.SYS_FCHOWN, unix.SYS_FCHOWNAT,
	unix.SYS_UTIMENSAT,
	unix.SYS_SETXATTR, unix.SYS_LSETXATTR, unix.SYS_FSETXATTR, unix.SYS_SETXATTRAT,
	unix.SYS_REMOVEXATTR, unix.SYS_LREMOVEXATTR, unix.SYS_FREMOVEXATTR, unix.SYS_REMOVEXATTRAT,
	unix.SYS_IO_URING_SETUP,
}
