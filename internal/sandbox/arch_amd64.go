//go:build linux

package sandbox

import "golang.org/x/sys/unix"

const (
	auditArch = unix.AUDIT_ARCH_X86_64
	// x32Bit marks the x32 ABI's system calls, which share amd64's
	// architecture value but not its numbers: they are refused.
	x32Bit    = 0x40000000
	sysSocket = unix.SYS_SOCKET
	sysIoctl  = unix.SYS_IOCTL
)

// blocked are the system calls that change metadata Landlock does not
// guard (modes, owners, times, extended attributes), and io_uring, whose
// operations (setxattr among them) do not pass through seccomp.
var blocked = []uint32{
	unix.SYS_CHMOD, unix.SYS_FCHMOD, unix.SYS_FCHMODAT, unix.SYS_FCHMODAT2,
	unix.SYS_CHOWN, unix.SYS_FCHOWN, unix.SYS_LCHOWN, unix.SYS_FCHOWNAT,
	unix.SYS_UTIME, unix.SYS_UTIMES, unix.SYS_UTIMENSAT, unix.SYS_FUTIMESAT,
	unix.SYS_SETXATTR, unix.SYS_LSETXATTR, unix.SYS_FSETXATTR, unix.SYS_SETXATTRAT,
	unix.SYS_REMOVEXATTR, unix.SYS_LREMOVEXATTR, unix.SYS_FREMOVEXATTR, unix.SYS_REMOVEXATTRAT,
	unix.SYS_IO_URING_SETUP,
}
