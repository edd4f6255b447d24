//go:build linux && (amd64 || arm64)

package sandbox

import (
	"bufio"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The attacks run through the sandbox's command line three ways (as root,
// as an unprivileged user through a user namespace, and in the fallback
// without namespaces), and each is judged by its effect: the disk byte
// for byte, what loopback listeners saw, a bystander process's state.
// The helper's lines say which call failed how.

// lines parses the helper's output: "what: result" per line.
func lines(out string) map[string]string {
	m := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if k, v, ok := strings.Cut(l, ": "); ok {
			m[k] = v
		}
	}
	return m
}

// allRefused checks that every attempt the helper printed failed, but the
// ones want says are "ok" (or "ok?": may be), and that those want names
// ended as it says.
func allRefused(t *testing.T, name string, res result, want map[string]string) {
	t.Helper()
	got := lines(res.stdout)
	if len(got) == 0 {
		t.Errorf("%s: the helper printed nothing (exit %d, stderr %q)", name, res.code, res.stderr)
	}
	for k, v := range got {
		if v == "ok" && want[k] != "ok" && want[k] != "ok?" {
			t.Errorf("%s: %s succeeded in the sandbox", name, k)
		}
	}
	for k, v := range want {
		if v != "ok?" && got[k] != v {
			t.Errorf("%s: %s: %q, want %s (all: %v)", name, k, got[k], v, got)
		}
	}
}

func TestAttacksOnFiles(t *testing.T) {
	for _, r := range runners(t) {
		t.Run(r.name, func(t *testing.T) {
			dir := r.project(t)
			before := treeHash(t, dir)
			writes := []string{
				`echo x > f`, `echo x > new`, `echo x >> old`, `: > old`,
				`python3 -c "open('f','w')"`, `python3 -c "open('new','w')"`,
				`touch newfile`, `touch old`, `touch -d 2001-01-01 old`,
				`python3 -c "import os; os.utime('old')"`,
				`chmod 777 old`, `chmod -R 700 sub`, `chown 65534 old`, `chgrp 65534 old`,
				`rm old`, `rm -rf sub`, `mv old moved`, `mkdir d`, `rmdir sub`, `mkfifo fifo`,
				`ln -s old link`, `ln old hard`, `truncate -s 0 old`, `cp f copy`, `cp --reflink=always f old`,
				`dd if=f of=old conv=notrunc`,
				`python3 -c "import os; os.setxattr('old', 'user.x', b'1')"`,
				`python3 -c "import os; os.removexattr('old', 'user.planserver')"`,
				`chattr +d old`, `chattr +i old`,
				`git commit --allow-empty -qm second`, `git tag v1`, `git add -A`, `git update-index --refresh`,
				`git stash`, `git checkout -- f`, `git gc`, `git config user.name x`,
				`sh -c 'echo x > child'`,
				`python3 -c "import subprocess; subprocess.run(['sh','-c','echo x > grandchild'], check=True)"`,
				`(echo x > subshell) && true`, `sed -i s/hello/bye/ f`, `find . -name old -delete`,
				`sort -o old f`, `exec 3<>old; echo x >&3`,
				// Through TMPDIR, the one writable place: a hard link or a
				// symbolic link to a project file, or a move into it.
				`ln old "$TMPDIR/h" && echo x >> "$TMPDIR/h"`, `ln -s "$PWD/old" "$TMPDIR/s" && echo x >> "$TMPDIR/s"`,
				`mv old "$TMPDIR/"`,
			}
			for _, w := range writes {
				res := r.sandbox(t, run{dir: dir}, "bash", "-c", w)
				if res.code == 0 {
					t.Errorf("%s: exit 0 in the sandbox, want a failure (stderr %q)", w, res.stderr)
				}
			}
			res := r.sandbox(t, run{dir: dir}, r.helper("setflags", filepath.Join(dir, "old"))...)
			allRefused(t, "setflags", res, map[string]string{"setflags": "ENOTTY", "setflags high": "ENOTTY", "open": "ok", "getflags": "ok"})
			if after := treeHash(t, dir); after != before {
				t.Errorf("the project changed under the sandbox")
			}
			// The same FS_IOC_SETFLAGS outside does change the file, so
			// the check above can fail.
			if out := r.direct(t, run{dir: dir}, r.helper("setflags", filepath.Join(dir, "old"))...); lines(out.stdout)["setflags"] != "ok" {
				t.Errorf("setflags outside the sandbox: %+v", out)
			}
		})
	}
}

func listenTCP(t *testing.T, network, addr string) (string, *atomic.Int32, error) {
	t.Helper()
	ln, err := net.Listen(network, addr)
	if err != nil {
		return "", nil, err
	}
	t.Cleanup(func() { ln.Close() })
	var n atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			c.Close()
		}
	}()
	return ln.Addr().String(), &n, nil
}

func countUnix(t *testing.T, addr string, seen *atomic.Int32) {
	t.Helper()
	ln, err := net.Listen("unix", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			seen.Add(1)
			c.Close()
		}
	}()
}

// datagrams reads what reached the UDP socket within a short wait.
func datagrams(t *testing.T, c *net.UDPConn) int {
	t.Helper()
	n := 0
	buf := make([]byte, 64)
	for {
		_ = c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		if _, _, err := c.ReadFrom(buf); err != nil {
			return n
		}
		n++
	}
}

func TestAttacksOnTheNetwork(t *testing.T) {
	for _, r := range runners(t) {
		t.Run(r.name, func(t *testing.T) {
			dir := r.project(t)
			addr, tcpSeen, err := listenTCP(t, "tcp4", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			_, port, _ := net.SplitHostPort(addr)
			udp, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
			if err != nil {
				t.Fatal(err)
			}
			defer udp.Close()
			uport := strconv.Itoa(udp.LocalAddr().(*net.UDPAddr).Port)
			// A Unix socket the test owns (as a daemon's would be), in a
			// directory the sandboxed user can reach, and an abstract one.
			base, _ := sharedDir(t)
			sockDir, err := os.MkdirTemp(base, "sock-")
			if err != nil {
				t.Fatal(err)
			}
			defer os.RemoveAll(sockDir)
			_ = os.Chmod(sockDir, 0o755)
			sock := filepath.Join(sockDir, "daemon.sock")
			var unixSeen atomic.Int32
			countUnix(t, sock, &unixSeen)
			_ = os.Chmod(sock, 0o777)
			abstract := fmt.Sprintf("@planserver-sandbox-test-%d", os.Getpid())
			countUnix(t, abstract, &unixSeen)

			attempts := [][]string{
				r.helper("connect", addr),
				r.helper("fastopen", addr),
				r.helper("fastopen-connect", addr),
				r.helper("udp", "127.0.0.1:"+uport),
				r.helper("listen"),
				r.helper("unix-connect", sock),
				r.helper("unix-connect", abstract),
				{"bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/" + port + "; echo x >&3"},
				{"bash", "-c", "echo x > /dev/udp/127.0.0.1/" + uport},
				{"python3", "-c", "import socket; socket.create_connection(('127.0.0.1', " + port + ")).send(b'x')"},
				{"python3", "-c", "import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.sendto(b'x', ('127.0.0.1', " + uport + "))"},
				{"python3", "-c", "import socket; s=socket.socket(socket.AF_UNIX); s.connect('" + sock + "')"},
			}
			for _, argv := range attempts {
				res := r.sandbox(t, run{dir: dir}, argv...)
				if argv[0] == r.exe {
					allRefused(t, argv[2], res, nil)
				} else if res.code == 0 {
					t.Errorf("%q: exit 0 in the sandbox", argv)
				}
			}
			// Every other kind of socket: vsock, netlink, packet, raw,
			// MPTCP, and TCP with a high bit the kernel drops.
			for _, s := range [][3]string{
				{"40", "1", "0"},          // AF_VSOCK
				{"16", "3", "0"},          // AF_NETLINK route
				{"17", "3", "0x300"},      // AF_PACKET
				{"2", "3", "255"},         // raw IPv4
				{"2", "1", "262"},         // MPTCP
				{"2", "1", "0"},           // TCP
				{"2", "2", "0"},           // UDP
				{"10", "1", "0"},          // TCP over IPv6
				{"1", "1", "0"},           // AF_UNIX
				{"0x100000011", "3", "0"}, // AF_PACKET with a high bit
			} {
				res := r.sandbox(t, run{dir: dir}, r.helper("socket", s[0], s[1], s[2])...)
				allRefused(t, "socket "+strings.Join(s[:], " "), res, nil)
			}
			res := r.sandbox(t, run{dir: dir}, r.helper("socketpair")...)
			if got := lines(res.stdout); got["socketpair 0x1"] != "ok" || got["socketpair 0x5"] != "ok" ||
				got["socketpair 0x2"] != "EPERM" || got["socketpair 0x100000001"] != "EPERM" {
				t.Errorf("socketpair: stream and seqpacket pairs should work, datagram ones and high bits not: %v", got)
			}
			time.Sleep(100 * time.Millisecond)
			if n := tcpSeen.Load(); n != 0 {
				t.Errorf("the TCP listener accepted %d connections from the sandbox", n)
			}
			if n := datagrams(t, udp); n != 0 {
				t.Errorf("the UDP socket received %d datagrams from the sandbox", n)
			}
			if n := unixSeen.Load(); n != 0 {
				t.Errorf("the Unix sockets accepted %d connections from the sandbox", n)
			}
			// The same outside: the listeners do see them, so the checks
			// above can fail.
			r.direct(t, run{dir: dir}, r.helper("connect", addr)...)
			r.direct(t, run{dir: dir}, r.helper("udp", "127.0.0.1:"+uport)...)
			r.direct(t, run{dir: dir}, r.helper("unix-connect", sock)...)
			time.Sleep(100 * time.Millisecond)
			if tcpSeen.Load() != 1 || datagrams(t, udp) != 1 || unixSeen.Load() != 1 {
				t.Errorf("outside the sandbox: tcp %d, udp?, unix %d; want one each", tcpSeen.Load(), unixSeen.Load())
			}
		})
	}
}

// bystander is a process the test started, as the runner's user, in its
// own process group: the sandboxed command must not change it.
type bystander struct {
	cmd *exec.Cmd
}

func startBystander(t *testing.T, r runner) *bystander {
	t.Helper()
	cmd := exec.Command("sleep", "1000")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: r.cred}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return &bystander{cmd: cmd}
}

// state is everything another process could change about the bystander.
func (b *bystander) state(t *testing.T) string {
	t.Helper()
	pid := b.cmd.Process.Pid
	limits, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", pid))
	if err != nil {
		t.Fatalf("the bystander is gone: %v", err)
	}
	status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	var keep []string
	for _, l := range strings.Split(string(status), "\n") {
		switch {
		case strings.HasPrefix(l, "State:"):
			// Running or sleeping, it is the same; stopped or dead, not.
			f := strings.Fields(l)
			keep = append(keep, fmt.Sprintf("stopped or dead %v", len(f) < 2 || strings.ContainsAny(f[1], "TtZX")))
		case strings.HasPrefix(l, "TracerPid:") || strings.HasPrefix(l, "Cpus_allowed_list:"):
			keep = append(keep, l)
		}
	}
	prio, err := unix.Getpriority(unix.PRIO_PROCESS, pid)
	if err != nil {
		t.Fatal(err)
	}
	ioprio, _, _ := unix.Syscall(unix.SYS_IOPRIO_GET, 1, uintptr(pid), 0)
	policy, _, _ := unix.Syscall(unix.SYS_SCHED_GETSCHEDULER, uintptr(pid), 0, 0)
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(pid, &set); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%s\n%v\npriority %d ioprio %d policy %d cpus %d", limits, keep, prio, ioprio, policy, set.Count())
}

// TestTheSupervisorIsOutOfReach: no process but the command's own lets
// it read its memory or its environment. As root the supervisor
// starts the command from one of its own threads, which is then in the
// command's Landlock domain; Landlock would let the command read the
// supervisor's memory through that thread's /proc entries, and the
// supervisor being undumpable is what refuses it.
func TestTheSupervisorIsOutOfReach(t *testing.T) {
	const script = `
import glob, os
me = os.readlink('/proc/self')
for task in glob.glob('/proc/[0-9]*/task/[0-9]*'):
    if task.split('/')[2] == me:
        continue
    for what in ('mem', 'environ'):
        try:
            if what == 'mem':
                with open(task + '/mem', 'rb') as f:
                    start = int(open(task + '/maps').readline().split('-')[0], 16)
                    f.seek(start)
                    f.read(1)
            else:
                open(task + '/environ', 'rb').read(1)
            print('read', task, what)
        except (OSError, ValueError):
            pass
print('done')
`
	for _, r := range runners(t) {
		t.Run(r.name, func(t *testing.T) {
			res := r.sandbox(t, run{dir: r.project(t)}, "python3", "-c", script)
			if res.code != 0 || !strings.HasSuffix(res.stdout, "done\n") {
				t.Fatalf("exit %d: %s%s", res.code, res.stdout, res.stderr)
			}
			if got := strings.TrimSuffix(res.stdout, "done\n"); got != "" {
				t.Errorf("the command read other processes:\n%s", got)
			}
		})
	}
}

func TestAttacksOnOtherProcesses(t *testing.T) {
	for _, r := range runners(t) {
		t.Run(r.name, func(t *testing.T) {
			dir := r.project(t)
			b := startBystander(t, r)
			before := b.state(t)
			pid := strconv.Itoa(b.cmd.Process.Pid)
			res := r.sandbox(t, run{dir: dir}, r.helper("disturb", pid, pid, "65534")...)
			allRefused(t, "disturb", res, map[string]string{"prlimit": "EPERM", "prlimit high": "EPERM", "setpriority process": "EPERM",
				"setpriority user": "EPERM", "setpriority high": "EPERM", "sched_setaffinity": "EPERM", "ioprio_set user": "EPERM",
				"ptrace attach": "EPERM", "pidfd_open": "ENOSYS"})
			for _, cmd := range []string{
				"renice -n 19 -p " + pid, "taskset -p 1 " + pid, "prlimit --nofile=7:7 --pid " + pid,
				"ionice -c 3 -p " + pid, "kill -STOP " + pid, "kill -KILL " + pid, "kill -KILL -- -" + pid,
			} {
				if res := r.sandbox(t, run{dir: dir}, "bash", "-c", cmd); res.code == 0 {
					t.Errorf("%s: exit 0 in the sandbox", cmd)
				}
			}
			time.Sleep(50 * time.Millisecond)
			if after := b.state(t); after != before {
				t.Errorf("the bystander changed:\n%s\nwas\n%s", after, before)
			}
			// Outside, the same helper does change it.
			r.direct(t, run{dir: dir}, r.helper("disturb", pid, pid, "65534")...)
			if err := b.cmd.Wait(); err == nil {
				t.Errorf("the bystander survived the helper outside the sandbox")
			}
		})
	}
}

func TestAttacksOnSharedState(t *testing.T) {
	for i, r := range runners(t) {
		t.Run(r.name, func(t *testing.T) {
			dir := r.project(t)
			res := r.sandbox(t, run{dir: dir}, r.helper("keys")...)
			allRefused(t, "keys", res, map[string]string{"add_key": "EPERM", "keyctl join": "EPERM", "request_key": "EPERM"})

			key := 0x50530000 + os.Getpid()%0x1000*8 + i
			mq := fmt.Sprintf("/planserver-sandbox-test-%d-%d", os.Getpid(), i)
			res = r.sandbox(t, run{dir: dir}, r.helper("ipc", strconv.Itoa(key), mq)...)
			allRefused(t, "ipc", res, map[string]string{"msgget": "EPERM", "semget": "EPERM", "shmget": "EPERM", "mq_open": "EPERM"})
			for name, nr := range map[string]uintptr{"msgget": unix.SYS_MSGGET, "shmget": unix.SYS_SHMGET} {
				id, _, errno := unix.Syscall(nr, uintptr(key), 0, 0)
				if errno != unix.ENOENT {
					t.Errorf("%s: the sandbox left System V IPC key %#x (id %d, %v)", name, key, id, errno)
				}
			}
			if _, err := os.Stat("/dev/mqueue" + mq); err == nil {
				t.Errorf("the sandbox made the message queue %s", mq)
			}

			res = r.sandbox(t, run{dir: dir}, r.helper("namespaces")...)
			allRefused(t, "namespaces", res, map[string]string{"clone newuser": "EPERM", "clone3": "ENOSYS", "unshare": "EPERM", "setns": "EPERM"})
			if res := r.sandbox(t, run{dir: dir}, "unshare", "-U", "true"); res.code == 0 {
				t.Errorf("unshare -U: exit 0 in the sandbox")
			}
			res = r.sandbox(t, run{dir: dir}, r.helper("kernel")...)
			allRefused(t, "kernel", res, map[string]string{"io_uring_setup": "EPERM", "bpf": "EPERM", "perf_event_open": "EPERM",
				"userfaultfd": "EPERM", "seccomp": "EPERM", "process_vm_writev": "EPERM", "mount": "EPERM", "syslog read": "EPERM",
				"x32 getpid": "ENOSYS"})
		})
	}
}

// pty opens a pseudo-terminal pair: the master and the slave.
func pty(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return m, s
}

// pending is how many bytes wait in the terminal's input queue.
func pending(t *testing.T, slave *os.File) int {
	t.Helper()
	n, err := unix.IoctlGetInt(int(slave.Fd()), unix.TIOCINQ)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestAttacksOnTheTerminal(t *testing.T) {
	for _, r := range runners(t) {
		t.Run(r.name, func(t *testing.T) {
			dir := r.project(t)
			_, slave := pty(t)
			res := r.sandbox(t, run{dir: dir, stdin: slave}, r.helper("tiocsti")...)
			got := lines(res.stdout)
			for _, k := range []string{"tiocsti", "tiocsti high", "tioclinux"} {
				if got[k] == "ok" || got[k] == "" {
					t.Errorf("%s: %q in the sandbox", k, got[k])
				}
			}
			if got["tiocgwinsz"] != "ok" {
				t.Errorf("a terminal query failed in the sandbox: %v (stderr %q)", got, res.stderr)
			}
			if n := pending(t, slave); n != 0 {
				t.Errorf("%d bytes were injected into the terminal's input", n)
			}
			if os.Geteuid() == 0 && r.cred == nil {
				// Root outside may inject: the check above can fail.
				r.direct(t, run{dir: dir, stdin: slave}, r.helper("tiocsti")...)
				if pending(t, slave) == 0 {
					t.Logf("TIOCSTI is off in this kernel (dev.tty.legacy_tiocsti=0): nothing to compare with")
				}
				_ = unix.IoctlSetInt(int(slave.Fd()), unix.TCFLSH, unix.TCIFLUSH)
			}
		})
	}
}

// TestKilledSupervisorParentDeathSignal: the command cannot clear the
// parent death signal that ends it with a supervisor killed by SIGKILL
// (as PID 1 of its namespace it then takes everything it started with
// it), nor make it a signal it may ignore; a red team's command that
// cleared it outlived the supervisor, holding a lock. Where the sandbox
// has namespaces; the fallback is the documented exception.
func TestKilledSupervisorParentDeathSignal(t *testing.T) {
	const script = `
import ctypes, sys, time
libc = ctypes.CDLL(None, use_errno=True)
for sig in (0, 15):
    r = libc.prctl(1, sig, 0, 0, 0)  # PR_SET_PDEATHSIG
    print("pdeathsig", sig, r, ctypes.get_errno(), flush=True)
print("ready", flush=True)
time.sleep(60)
`
	for _, r := range runners(t) {
		if r.fallback {
			continue
		}
		t.Run(r.name, func(t *testing.T) {
			marker := fmt.Sprintf("pdeathsig-%d-%s", os.Getpid(), r.name)
			cmd := r.command(run{dir: r.project(t)}, []string{"python3", "-c", script, marker}, true)
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			var lines []string
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				if lines = append(lines, sc.Text()); sc.Text() == "ready" {
					break
				}
			}
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			want := []string{"pdeathsig 0 -1 1", "pdeathsig 15 -1 1", "ready"} // -1, EPERM
			if strings.Join(lines, "\n") != strings.Join(want, "\n") {
				t.Errorf("the command said %q, want %q", lines, want)
			}
			waitGone(t, "\x00"+marker, "the command outlived its killed supervisor")
		})
	}
}

// processesWith lists the processes whose command line contains marker.
// waitGone waits up to 5 s for every process whose command line holds
// marker to end; the ones left are an error (what, with their pids), and
// are killed so that they outlive no test.
func waitGone(t *testing.T, marker, what string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for len(processesWith(marker)) > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if pids := processesWith(marker); len(pids) != 0 {
		t.Errorf("%s: %v", what, pids)
		for _, p := range pids {
			_ = unix.Kill(p, unix.SIGKILL)
		}
	}
}

func processesWith(marker string) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if strings.Contains(string(cmdline), marker) {
			out = append(out, pid)
		}
	}
	return out
}

// TestNothingOutlivesTheCommand: a detached child holding a lock is gone,
// and the lock free, the moment the sandbox returns; so is TMPDIR.
func TestNothingOutlivesTheCommand(t *testing.T) {
	for i, r := range runners(t) {
		t.Run(r.name, func(t *testing.T) {
			dir := r.project(t)
			lock := filepath.Join(dir, "old")
			marker := fmt.Sprintf("61.%d%d", os.Getpid(), i)
			script := `echo "$TMPDIR"; setsid nohup flock old sleep ` + marker + ` >/dev/null 2>&1 < /dev/null &
for i in $(seq 250); do flock -n old true || { echo held; exit 0; }; sleep 0.02; done; echo never`
			res := r.sandbox(t, run{dir: dir}, "bash", "-c", script)
			out := strings.Fields(res.stdout)
			if res.code != 0 || len(out) != 2 || out[1] != "held" {
				t.Fatalf("the detached child never held the lock: %+v", res)
			}
			f, err := os.Open(lock)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
				t.Errorf("the lock is still held after the sandbox returned: %v", err)
			}
			if pids := processesWith("sleep\x00" + marker); len(pids) != 0 {
				t.Errorf("the detached child outlived the sandbox: %v", pids)
				for _, p := range pids {
					_ = unix.Kill(p, unix.SIGKILL)
				}
			}
			if _, err := os.Stat(out[0]); !os.IsNotExist(err) {
				t.Errorf("TMPDIR %s is still there: %v", out[0], err)
			}
		})
	}
}

// TestReadsWork: reading commands give the same output inside the sandbox
// as outside, and change nothing (the index included).
func TestReadsWork(t *testing.T) {
	python := "python3"
	if _, err := os.Stat("/usr/bin/python3"); err == nil {
		python = "/usr/bin/python3" // reachable by every runner's user
	}
	reads := [][]string{
		{"ls", "-la"},
		{"cat", "f"},
		{"git", "log", "--format=%H %an %s"},
		{"git", "log", "-p"},
		{"git", "diff"},
		{"git", "status"},
		{"git", "status", "--short"},
		{"git", "show", "--stat", "HEAD"},
		{"git", "grep", "needle"},
		{"grep", "-r", "needle", "."},
		{"bash", "-c", "find . -not -path './.git/*' | sort"},
		{"bash", "-c", "sed -n 1p f; awk '{print $1}' f; sort -r f | head -1; ls | xargs echo; cat sub/*.txt | wc -l"},
		{"go", "list", "./..."},
		{"go", "version"},
		{python, "read.py"},
		{"make", "-n", "-f", "/dev/null", "x"},
	}
	if _, err := exec.LookPath("node"); err == nil {
		reads = append(reads, []string{"node", "-e", `console.log(require("fs").readFileSync("sub/g", "utf8"))`})
	}
	if _, err := exec.LookPath("rg"); err == nil {
		reads = append(reads, []string{"rg", "--sort", "path", "needle"})
	}
	if _, err := exec.LookPath("jq"); err == nil {
		reads = append(reads, []string{"bash", "-c", `echo '{"a":1}' | jq .a`})
	}
	for _, r := range runners(t) {
		t.Run(r.name, func(t *testing.T) {
			dir := r.project(t)
			outside := make([]result, len(reads))
			for i, argv := range reads {
				outside[i] = r.direct(t, run{dir: dir}, argv...)
			}
			before := treeHash(t, dir)
			index, _ := os.ReadFile(filepath.Join(dir, ".git", "index"))
			for i, argv := range reads {
				inside := r.sandbox(t, run{dir: dir}, argv...)
				if inside.code != outside[i].code || inside.stdout != outside[i].stdout {
					t.Errorf("%q: inside exit %d %q, outside exit %d %q (stderr inside %q)",
						argv, inside.code, inside.stdout, outside[i].code, outside[i].stdout, inside.stderr)
				}
				if inside.code == 0 && inside.stderr != outside[i].stderr {
					t.Errorf("%q: stderr inside %q, outside %q", argv, inside.stderr, outside[i].stderr)
				}
			}
			if after, _ := os.ReadFile(filepath.Join(dir, ".git", "index")); string(after) != string(index) {
				t.Errorf("the index changed")
			}
			if after := treeHash(t, dir); after != before {
				t.Errorf("reading commands changed the project under the sandbox")
			}
		})
	}
}

// TestAllowConnect: --allow-connect opens exactly the listed address and
// port pairs: not another port, not another loopback address, not IPv6
// loopback, never Fast Open, never UDP, never a listener.
func TestAllowConnect(t *testing.T) {
	for _, r := range runners(t) {
		t.Run(r.name, func(t *testing.T) {
			dir := r.project(t)
			// P on 127.0.0.1 (allowed), and the same port on 127.0.0.2
			// and [::1]; Q on 127.0.0.1.
			var p string
			var seenP, seen2, seen6 *atomic.Int32
			for try := 0; try < 20 && seen2 == nil; try++ {
				addr, n, err := listenTCP(t, "tcp4", "127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				_, p, _ = net.SplitHostPort(addr)
				if _, n2, err := listenTCP(t, "tcp4", "127.0.0.2:"+p); err == nil {
					seenP, seen2 = n, n2
				}
			}
			if seen2 == nil {
				t.Fatal("no port free on both 127.0.0.1 and 127.0.0.2")
			}
			_, seen6, err := listenTCP(t, "tcp6", "[::1]:"+p)
			if err != nil {
				t.Logf("no IPv6 loopback here (%v): [::1] is not tried", err)
			}
			addrQ, seenQ, err := listenTCP(t, "tcp4", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			udp, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
			if err != nil {
				t.Fatal(err)
			}
			defer udp.Close()
			allowed := "127.0.0.1:" + p
			c := run{dir: dir, allow: allowed}
			python := "import socket; socket.create_connection(('%s', %s)).send(b'x')"
			works := [][]string{
				r.helper("connect", allowed),
				{"bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/" + p + "; echo x >&3"},
				{"python3", "-c", fmt.Sprintf(python, "127.0.0.1", p)},
				// From a thread that is not its process's leader: the
				// notification names the thread (the red team found
				// these refused).
				{"python3", "-c", fmt.Sprintf("import sys, threading\nok = []\ndef f():\n    %s\n    ok.append(1)\n"+
					"t = threading.Thread(target=f); t.start(); t.join()\nsys.exit(0 if ok else 1)", fmt.Sprintf(python, "127.0.0.1", p))},
			}
			for _, argv := range works {
				if res := r.sandbox(t, c, argv...); res.code != 0 || strings.Contains(res.stdout, ": E") {
					t.Errorf("%q to an allowed pair: %+v", argv, res)
				}
			}
			named := run{dir: dir, allow: "localhost:" + p}
			if res := r.sandbox(t, named, "python3", "-c", fmt.Sprintf(python, "localhost", p)); res.code != 0 {
				t.Errorf("localhost:%s by name: %+v", p, res)
			}
			fails := [][]string{
				r.helper("connect", addrQ),
				r.helper("connect", "127.0.0.2:"+p),
				r.helper("fastopen", allowed),
				r.helper("fastopen", addrQ),
				r.helper("fastopen-connect", addrQ),
				r.helper("udp", udp.LocalAddr().String()),
				r.helper("listen"),
				r.helper("socket", "2", "2", "0"),
				r.helper("socket", "0x100000011", "3", "0"),
				{"python3", "-c", fmt.Sprintf(python, "127.0.0.2", p)},
			}
			if seen6 != nil {
				fails = append(fails, r.helper("connect", "[::1]:"+p), r.helper("connect", "[::ffff:127.0.0.2]:"+p))
			}
			// TCP sockets may be made; what they may do is the question.
			tcp := map[string]string{"connect socket": "ok?", "fastopen socket": "ok?", "fastopen-connect socket": "ok?", "listen socket": "ok?"}
			for _, argv := range fails {
				res := r.sandbox(t, c, argv...)
				if argv[0] == r.exe {
					allRefused(t, strings.Join(argv[2:], " "), res, tcp)
				} else if res.code == 0 {
					t.Errorf("%q: exit 0", argv)
				}
			}
			got := lines(r.sandbox(t, c, r.helper("connect", addrQ)...).stdout)
			if got["connect"] != "EACCES" {
				t.Errorf("connect to an unlisted port: %v, want EACCES", got)
			}
			time.Sleep(100 * time.Millisecond)
			if n := seenP.Load(); n != int32(len(works)+1) {
				t.Errorf("the allowed listener saw %d connections, want %d", n, len(works)+1)
			}
			if seenQ.Load() != 0 || seen2.Load() != 0 || (seen6 != nil && seen6.Load() != 0) {
				t.Errorf("unlisted listeners saw connections: port Q %d, 127.0.0.2 %d", seenQ.Load(), seen2.Load())
			}
			if n := datagrams(t, udp); n != 0 {
				t.Errorf("the UDP socket received %d datagrams", n)
			}
		})
	}
}

// TestSignalsReachTheCommand: a SIGTERM to the sandbox ends the command
// and everything it started, and the sandbox exits 128+15 at once. The
// signal goes to the command's process group; a command that is PID 1 of
// its namespace and has no handler for it ignores it, so SIGKILL follows
// after the grace.
func TestSignalsReachTheCommand(t *testing.T) {
	for i, r := range runners(t) {
		for j, script := range []string{"sleep M & sleep M", "exec sleep M"} {
			marker := fmt.Sprintf("62.%d%d%d", os.Getpid(), i, j)
			script = strings.ReplaceAll(script, "M", marker)
			t.Run(r.name+"/"+script, func(t *testing.T) {
				dir := r.project(t)
				cmd := r.command(run{dir: dir}, []string{"bash", "-c", script}, true)
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				signalAfterStart(t, cmd, marker, strings.Count(script, "sleep"))
			})
		}
	}
}

func signalAfterStart(t *testing.T, cmd *exec.Cmd, marker string, sleeps int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for len(processesWith("sleep\x00"+marker)) < sleeps && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	begin := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	if code := exitCode(err); code != 128+15 {
		t.Errorf("exit %d after SIGTERM, want 143", code)
	}
	if d := time.Since(begin); d > grace+3*time.Second {
		t.Errorf("the sandbox took %v to end after SIGTERM", d)
	}
	if pids := processesWith("sleep\x00" + marker); len(pids) != 0 {
		t.Errorf("the command's processes outlived the sandbox: %v", pids)
		for _, p := range pids {
			_ = unix.Kill(p, unix.SIGKILL)
		}
	}
}

// TestKilledSupervisor: where the sandbox has namespaces, a supervisor
// killed with SIGKILL (nobody is left to clean up) still leaves nothing
// behind: the command and its children die with it (the stage's parent
// death signal, then the PID namespace), and what they wrote in TMPDIR was
// on a tmpfs of their own mount namespace, gone with it. At most the empty
// directory the tmpfs was mounted on stays.
func TestKilledSupervisor(t *testing.T) {
	for _, r := range runners(t) {
		if r.fallback {
			continue // no namespaces: the documented exception
		}
		t.Run(r.name, func(t *testing.T) {
			marker := fmt.Sprintf("63.%d", os.Getpid())
			dir := r.project(t)
			// TMPDIR beside the project, where the runner's user may
			// write (the unprivileged one cannot reach t.TempDir()).
			tmp := filepath.Join(filepath.Dir(dir), "tmp-"+marker)
			if err := os.Mkdir(tmp, 0o777); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { removeAll(tmp) })
			if err := os.Chmod(tmp, 0o777); err != nil {
				t.Fatal(err)
			}
			cmd := r.command(run{dir: dir}, []string{"bash", "-c",
				`head -c 100000 /dev/zero > "$TMPDIR/big"; echo "$TMPDIR"; sleep ` + marker + ` & sleep ` + marker}, true)
			cmd.Env = append(cmd.Env, "TMPDIR="+tmp)
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			line := make([]byte, 4096)
			n, _ := out.Read(line)
			inside := strings.TrimSpace(string(line[:n]))
			deadline := time.Now().Add(5 * time.Second)
			for len(processesWith("sleep\x00"+marker)) < 2 && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			waitGone(t, "sleep\x00"+marker, "the command's processes outlived a killed supervisor")
			if !strings.HasPrefix(inside, tmp+"/") {
				t.Fatalf("TMPDIR inside was %q, want one under %s", inside, tmp)
			}
			var files []string
			_ = filepath.WalkDir(tmp, func(p string, d fs.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					files = append(files, p)
				}
				return nil
			})
			if len(files) != 0 {
				t.Errorf("files outlived a killed supervisor: %v", files)
			}
		})
	}
}

// TestMinimalDev: with namespaces, the command sees a /dev of its own
// with the few devices reading tools open; the rest (a watchdog that arms
// when opened, the disks, the kernel's log) is not there to open. The
// terminals, /dev/fd, process substitution and /dev/null keep working.
func TestMinimalDev(t *testing.T) {
	for _, r := range runners(t) {
		if r.fallback {
			continue // no mount namespace: the documented exception
		}
		t.Run(r.name, func(t *testing.T) {
			res := r.sandbox(t, run{dir: r.project(t)}, "bash", "-c",
				`ls /dev | tr '\n' ' '; echo; cat <(echo substituted); echo x > /dev/null && echo null; head -c 3 /dev/zero | wc -c; test -e /dev/kmsg || echo no-kmsg`)
			want := "fd full null ptmx pts random shm stderr stdin stdout tty urandom zero \nsubstituted\nnull\n3\nno-kmsg\n"
			if res.code != 0 || res.stdout != want {
				t.Errorf("exit %d\n%s\nwant\n%s\nstderr %s", res.code, res.stdout, want, res.stderr)
			}
		})
	}
}

// TestBadInput: a wrong invocation is 125 with one clear line, and the
// command never runs.
func TestBadInput(t *testing.T) {
	needSandbox(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--read-only"}, "no command to run"},
		{[]string{"--read-only", "--"}, "no command to run"},
		{[]string{"--", "touch", "marker"}, "--read-only is required"},
		{[]string{"--read-only", "--bogus", "--", "touch", "marker"}, "unknown flag --bogus"},
		{[]string{"--read-only", "--allow-connect", "nohost", "--", "touch", "marker"}, `want host:port`},
		{[]string{"--read-only", "--allow-connect", "h:0", "--", "touch", "marker"}, "1 to 65535"},
		{[]string{"--read-only", "--allow-connect", "bad name:80", "--", "touch", "marker"}, "neither an IP address nor a host name"},
		{[]string{"--read-only", "--allow-connect", "[fe80::1%lo]:80", "--", "touch", "marker"}, "zone"},
		{[]string{"--read-only", "--allow-connect"}, "needs a value"},
	} {
		cmd := exec.Command(exe, append([]string{"sandbox"}, c.args...)...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "SANDBOX_TEST_CLI=1")
		res := collect(t, cmd)
		if res.code != ExitUnavailable || !strings.Contains(res.stderr, c.want) || strings.Count(res.stderr, "\n") != 1 ||
			!strings.Contains(res.stderr, "did not run") {
			t.Errorf("%q: exit %d, stderr %q; want 125 and one line with %q", c.args, res.code, res.stderr, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "marker")); !os.IsNotExist(err) {
		t.Errorf("a wrong invocation ran the command")
	}
}

// TestExplainLine: a failing command gets one line saying why writes
// failed and what to do; a succeeding one gets none; --explain replaces
// the next step.
func TestExplainLine(t *testing.T) {
	needSandbox(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	runCLI := func(args ...string) result {
		cmd := exec.Command(exe, append([]string{"sandbox", "--read-only"}, args...)...)
		cmd.Dir = t.TempDir()
		cmd.Env = append(os.Environ(), "SANDBOX_TEST_CLI=1")
		return collect(t, cmd)
	}
	res := runCLI("--", "sh", "-c", "echo x > f")
	if res.code == 0 || strings.Count(res.stderr, "[planserver sandbox]") != 1 ||
		!strings.Contains(res.stderr, "plan mode") || !strings.Contains(res.stderr, DefaultExplain) {
		t.Errorf("a failed write: %+v", res)
	}
	res = runCLI("--explain", "Call ExitPlanMode\nwith the plan.", "--", "false")
	if res.code != 1 || !strings.Contains(res.stderr, "refused. Call ExitPlanMode with the plan.") || strings.Contains(res.stderr, DefaultExplain) {
		t.Errorf("--explain: %+v", res)
	}
	if res := runCLI("--", "true"); res.code != 0 || res.stderr != "" {
		t.Errorf("a command that succeeds: %+v", res)
	}
	if res := runCLI("--", "no-such-command-planserver"); res.code != ExitNotFound || strings.Contains(res.stderr, "[planserver sandbox]") {
		t.Errorf("a missing command (which never ran): %+v", res)
	}
}
