//go:build linux && (amd64 || arm64)

package seccomppolicy

import (
	"encoding/binary"
	"fmt"
	"slices"
	"testing"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// The seccomp programs are run here in x/net/bpf's virtual machine, call
// by call, as the kernel runs them: every program, the strictest answer
// wins. It catches a wrong jump in the jump tables as surely as a wrong
// rule.

// callData is struct seccomp_data as the virtual machine reads it: it
// loads 32-bit words in network byte order, so each word is stored so;
// the offsets are the kernel's (an argument's low word first, as on
// amd64 and arm64).
func callData(archID uint32, nr uint32, args ...uint64) []byte {
	b := make([]byte, 64)
	binary.BigEndian.PutUint32(b[0:], nr)
	binary.BigEndian.PutUint32(b[4:], archID)
	for i, a := range args {
		binary.BigEndian.PutUint32(b[16+8*i:], uint32(a))
		binary.BigEndian.PutUint32(b[20+8*i:], uint32(a>>32))
	}
	return b
}

// verdict runs every program on the call and returns the strictest answer
// (the kernel compares the actions as signed numbers: lower is stricter).
func verdict(t *testing.T, progs [][]unix.SockFilter, data []byte) uint32 {
	t.Helper()
	best := uint32(unix.SECCOMP_RET_ALLOW)
	for _, p := range progs {
		raw := make([]bpf.RawInstruction, len(p))
		for i, in := range p {
			raw[i] = bpf.RawInstruction{Op: in.Code, Jt: in.Jt, Jf: in.Jf, K: in.K}
		}
		insts, ok := bpf.Disassemble(raw)
		if !ok {
			t.Fatalf("a program does not disassemble")
		}
		vm, err := bpf.NewVM(insts)
		if err != nil {
			t.Fatalf("a program the virtual machine refuses: %v", err)
		}
		r, err := vm.Run(data)
		if err != nil {
			t.Fatal(err)
		}
		if ret := uint32(r); int32(ret&unix.SECCOMP_RET_ACTION_FULL) < int32(best&unix.SECCOMP_RET_ACTION_FULL) {
			best = ret
		}
	}
	return best
}

func name(ret uint32) string {
	switch ret & unix.SECCOMP_RET_ACTION_FULL {
	case unix.SECCOMP_RET_ALLOW:
		return "allow"
	case unix.SECCOMP_RET_USER_NOTIF:
		return "notify"
	case unix.SECCOMP_RET_ERRNO:
		return unix.ErrnoName(unix.Errno(ret & unix.SECCOMP_RET_DATA))
	}
	return fmt.Sprintf("%#x", ret)
}

func TestPolicyNamesExist(t *testing.T) {
	known := map[string]bool{}
	for _, a := range []*arch.Info{arch.X86_64, arch.AARCH64} {
		for n := range a.SyscallNames {
			known[n] = true
		}
	}
	lists := map[string][]string{"allowed": allowed, "metadata": metadata, "refused": refused}
	for _, r := range argFilters(true) {
		lists["argFilters"] = append(lists["argFilters"], r.call)
	}
	where := map[string]string{}
	for list, names := range lists {
		for _, n := range names {
			if !known[n] {
				t.Errorf("%s names %q, a call neither amd64 nor arm64 has", list, n)
			}
			if other, ok := where[n]; ok {
				t.Errorf("%q is in %s and in %s", n, list, other)
			}
			where[n] = list
		}
	}
}

func TestPolicy(t *testing.T) {
	info, err := arch.GetInfo("")
	if err != nil {
		t.Fatal(err)
	}
	judged := map[string]bool{}
	for _, r := range argFilters(true) {
		judged[r.call] = true
	}
	nr := func(n string) uint32 {
		v, ok := info.SyscallNames[n]
		if !ok {
			t.Fatalf("no call %s here", n)
		}
		return uint32(v)
	}
	for _, connect := range []bool{false, true} {
		progs, err := Programs(info, connect)
		if err != nil {
			t.Fatal(err)
		}
		call := func(n string, args ...uint64) string {
			return name(verdict(t, progs, callData(uint32(info.ID), nr(n), args...)))
		}
		// Every call of the architecture, with harmless arguments.
		for n, num := range info.SyscallNames {
			want := "ENOSYS"
			switch {
			case n == "connect" && connect:
				want = "notify"
			case n == "socket" && connect:
				want = "EPERM" // domain 0
			case n == "socket" || n == "connect" || slices.Contains(metadata, n) || slices.Contains(refused, n):
				want = "EPERM"
			case slices.Contains(allowed, n):
				want = "allow"
			case judged[n]:
				continue // below
			}
			if got := name(verdict(t, progs, callData(uint32(info.ID), uint32(num)))); got != want {
				t.Errorf("connect=%v: %s (%d): %s, want %s", connect, n, num, got, want)
			}
		}
		const hi = 1 << 32
		for _, c := range []struct {
			call string
			args []uint64
			want string
		}{
			{"ioctl", []uint64{0, unix.TCGETS}, "allow"},
			{"ioctl", []uint64{0, unix.TIOCGWINSZ}, "allow"},
			{"ioctl", []uint64{0, unix.TIOCSTI}, "ENOTTY"},
			{"ioctl", []uint64{0, unix.TIOCSTI | hi}, "ENOTTY"},
			{"ioctl", []uint64{0, unix.TCGETS | hi}, "ENOTTY"},
			{"ioctl", []uint64{0, unix.FS_IOC_SETFLAGS}, "ENOTTY"},
			{"ioctl", []uint64{0, uint64(nr("fcntl"))}, "ENOTTY"}, // an argument equal to another judged call's number
			{"ioctl", []uint64{0, uint64(nr("read"))}, "ENOTTY"},
			{"fcntl", []uint64{0, unix.F_GETFL}, "allow"},
			{"fcntl", []uint64{0, unix.F_SETLEASE}, "EPERM"},
			{"fcntl", []uint64{0, unix.F_GETFL | hi}, "EPERM"},
			{"clone", []uint64{uint64(unix.SIGCHLD)}, "allow"},
			{"clone", []uint64{unix.CLONE_VM | unix.CLONE_THREAD | unix.CLONE_SIGHAND}, "allow"},
			{"clone", []uint64{unix.CLONE_NEWUSER | uint64(unix.SIGCHLD)}, "EPERM"},
			{"clone", []uint64{unix.CLONE_NEWNET | hi}, "EPERM"},
			{"socketpair", []uint64{unix.AF_UNIX, unix.SOCK_STREAM | unix.SOCK_CLOEXEC, 0}, "allow"},
			{"socketpair", []uint64{unix.AF_UNIX, unix.SOCK_DGRAM, 0}, "EPERM"},
			{"socketpair", []uint64{unix.AF_UNIX | hi, unix.SOCK_STREAM, 0}, "EPERM"},
			{"prlimit64", []uint64{0, unix.RLIMIT_NOFILE}, "allow"},
			{"prlimit64", []uint64{1234, unix.RLIMIT_NOFILE}, "EPERM"},
			{"prlimit64", []uint64{hi, unix.RLIMIT_NOFILE}, "EPERM"},
			{"setpriority", []uint64{unix.PRIO_PROCESS, 0, 10}, "allow"},
			{"setpriority", []uint64{unix.PRIO_PROCESS, 1234, 10}, "EPERM"},
			{"setpriority", []uint64{unix.PRIO_USER, 0, 10}, "EPERM"},
			{"setpriority", []uint64{unix.PRIO_PROCESS | hi, 0, 10}, "EPERM"},
			{"sched_setaffinity", []uint64{0}, "allow"},
			{"sched_setaffinity", []uint64{1234}, "EPERM"},
			{"ioprio_set", []uint64{1, 0}, "allow"},
			{"ioprio_set", []uint64{3, 0}, "EPERM"},
			{"sendto", []uint64{3, 0, 1, unix.MSG_NOSIGNAL}, "allow"},
			{"sendto", []uint64{3, 0, 1, unix.MSG_FASTOPEN}, "EPERM"},
			{"sendto", []uint64{3, 0, 1, unix.MSG_FASTOPEN | hi}, "EPERM"},
			{"sendmsg", []uint64{3, 0, unix.MSG_FASTOPEN}, "EPERM"},
			{"sendmmsg", []uint64{3, 0, 1, unix.MSG_FASTOPEN}, "EPERM"},
			{"setsockopt", []uint64{3, unix.SOL_SOCKET, unix.SO_KEEPALIVE}, "allow"},
			{"setsockopt", []uint64{3, unix.IPPROTO_TCP, unix.TCP_NODELAY}, "allow"},
			{"setsockopt", []uint64{3, unix.IPPROTO_TCP, unix.TCP_FASTOPEN_CONNECT}, "EPERM"},
			{"setsockopt", []uint64{3, unix.IPPROTO_TCP | hi, unix.TCP_FASTOPEN_CONNECT}, "EPERM"},
			{"setsockopt", []uint64{3, unix.IPPROTO_TCP, unix.TCP_FASTOPEN_CONNECT | hi}, "EPERM"},
			{"setsockopt", []uint64{3, unix.SOL_IP, unix.IP_TRANSPARENT}, "EPERM"},
			{"prctl", []uint64{unix.PR_SET_NAME, 0}, "allow"},
			{"prctl", []uint64{unix.PR_SET_PDEATHSIG, uint64(unix.SIGKILL)}, "allow"},
			{"prctl", []uint64{unix.PR_SET_PDEATHSIG, 0}, "EPERM"},
			{"prctl", []uint64{unix.PR_SET_PDEATHSIG, uint64(unix.SIGTERM)}, "EPERM"},
			{"prctl", []uint64{unix.PR_SET_PDEATHSIG, uint64(unix.SIGKILL) | hi}, "EPERM"},
			{"prctl", []uint64{unix.PR_SET_PDEATHSIG | hi, 0}, "EPERM"},
			{"prctl", []uint64{unix.PR_SET_NAME | hi, 0}, "EPERM"},
			{"syslog", []uint64{3}, "allow"},
			{"syslog", []uint64{2}, "EPERM"},
		} {
			if got := call(c.call, c.args...); got != c.want {
				t.Errorf("connect=%v: %s%#x: %s, want %s", connect, c.call, c.args, got, c.want)
			}
		}
		socketWant := map[bool]string{false: "EPERM", true: "allow"}[connect]
		if got := call("socket", unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0); got != socketWant {
			t.Errorf("connect=%v: a TCP socket: %s, want %s", connect, got, socketWant)
		}
		for _, args := range [][]uint64{
			{unix.AF_INET, unix.SOCK_DGRAM, 0}, {unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_MPTCP},
			{unix.AF_PACKET | hi, unix.SOCK_RAW, 0}, {unix.AF_INET | hi, unix.SOCK_STREAM, 0},
			{unix.AF_INET, unix.SOCK_STREAM | hi, 0}, {unix.AF_UNIX, unix.SOCK_STREAM, 0}, {unix.AF_VSOCK, unix.SOCK_STREAM, 0},
			{unix.AF_NETLINK, unix.SOCK_RAW, 0}, {unix.AF_INET6, unix.SOCK_RAW, unix.IPPROTO_TCP},
		} {
			if got := call("socket", args...); got != "EPERM" {
				t.Errorf("connect=%v: socket%#x: %s, want EPERM", connect, args, got)
			}
		}
		// A foreign architecture (i386 through int 0x80, 32-bit ARM) and
		// x32 calls (an unknown number elsewhere): ENOSYS, whatever they
		// ask.
		for _, data := range [][]byte{
			callData(uint32(arch.I386.ID), 0), callData(uint32(arch.I386.ID), 20),
			callData(uint32(arch.ARM.ID), nr("read")), callData(uint32(info.ID), nr("read")|0x40000000),
			callData(uint32(info.ID), nr("ioctl")|0x40000000, 0, unix.TIOCSTI),
		} {
			if got := name(verdict(t, progs, data)); got != "ENOSYS" {
				t.Errorf("connect=%v: a foreign call %x: %s, want ENOSYS", connect, data[:8], got)
			}
		}
	}
}

// TestArgumentRulesStayApart: two argument rules where the first call's
// allowed argument equals the second call's number. go-seccomp-bpf's own
// program for both judges the first call by the second call's rule (its
// conditions leave the argument where the number was); argProgram's jump
// table keeps each rule to its own call.
func TestArgumentRulesStayApart(t *testing.T) {
	info, err := arch.GetInfo("")
	if err != nil {
		t.Fatal(err)
	}
	second := uint64(info.SyscallNames["fcntl"])
	rules := []refusal{
		{"ioctl", unix.ENOTTY, []seccomp.ArgumentConditions{notIn(1, second)}},
		{"fcntl", unix.EPERM, []seccomp.ArgumentConditions{notIn(0, 1<<40)}}, // always refused
	}
	ioctl := callData(uint32(info.ID), uint32(info.SyscallNames["ioctl"]), 3, second)
	prog, err := argProgram(info, rules)
	if err != nil {
		t.Fatal(err)
	}
	if got := name(verdict(t, [][]unix.SockFilter{prog}, ioctl)); got != "allow" {
		t.Errorf("ioctl with its allowed argument: %s, want allow", got)
	}
	fcntl := callData(uint32(info.ID), uint32(second), 3, 0)
	if got := name(verdict(t, [][]unix.SockFilter{prog}, fcntl)); got != "EPERM" {
		t.Errorf("fcntl: %s, want EPERM", got)
	}
	var groups []seccomp.SyscallGroup
	for _, r := range rules {
		g := seccomp.SyscallGroup{Action: errnoAction(r.errno)}
		for _, c := range r.when {
			g.NamesWithCondtions = append(g.NamesWithCondtions, seccomp.NameWithConditions{Name: r.call, Conditions: c})
		}
		groups = append(groups, g)
	}
	one, err := assemble(seccomp.Policy{DefaultAction: seccomp.ActionAllow, Syscalls: groups})
	if err != nil {
		t.Fatal(err)
	}
	if got := name(verdict(t, [][]unix.SockFilter{one}, ioctl)); got == "allow" {
		t.Logf("go-seccomp-bpf now keeps conditional calls apart in one program: argProgram's jump table could go")
	}
}
