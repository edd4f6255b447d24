package attacks

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// scene is one case's world: a throwaway git repository (the working
// directory), a directory outside it, a HOME, loopback sockets that count
// what reaches them, and a bystander process.
type scene struct {
	t     *testing.T
	srv   *server
	root  string // repo, out, home and tmp live here; it is snapshotted whole
	repo  string
	out   string
	home  string
	tmp   string
	token string // in every process's environment, to find what is left behind

	tcp4, tcp6 net.Listener
	tcpPort    int
	udp4, udp6 net.PacketConn
	udpPort    int
	sock       net.Listener
	sockPath   string
	dgram      net.PacketConn
	abstract   net.Listener
	abstractN  string
	reached    atomic.Int64
	reachedBy  sync.Map // what reached which socket, for the report

	bystander *exec.Cmd
	byState   string
}

func newScene(t *testing.T, srv *server) *scene {
	t.Helper()
	var tok [6]byte
	_, _ = rand.Read(tok[:])
	e := &scene{t: t, srv: srv, token: "attack-" + hex.EncodeToString(tok[:])}
	e.root = t.TempDir()
	e.repo = filepath.Join(e.root, "repo")
	e.out = filepath.Join(e.root, "out")
	e.home = filepath.Join(e.root, "home")
	e.tmp = filepath.Join(e.root, "tmp")
	if out, err := exec.Command("cp", "-a", template, e.repo).CombinedOutput(); err != nil {
		t.Fatalf("copy the repository: %v: %s", err, out)
	}
	for _, d := range []string{e.out, e.home, e.tmp} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(e.out, "lockfile"), []byte("lock\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.listen(t)
	e.startBystander(t)
	t.Cleanup(e.close)
	return e
}

// listen opens the sockets an attack might reach: TCP on 127.0.0.1 and
// ::1 (one port), UDP likewise, a Unix stream and datagram socket, and an
// abstract one. Each counts what reaches it.
func (e *scene) listen(t *testing.T) {
	var err error
	for tries := 0; ; tries++ {
		e.tcp4, err = net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		e.tcpPort = e.tcp4.Addr().(*net.TCPAddr).Port
		if e.tcp6, err = net.Listen("tcp6", fmt.Sprintf("[::1]:%d", e.tcpPort)); err == nil || tries > 20 {
			break
		}
		e.tcp4.Close()
	}
	if err := enableFastOpen(e.tcp4); err != nil {
		t.Logf("TCP Fast Open not enabled on the listener: %v", err)
	}
	e.udp4, err = net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e.udpPort = e.udp4.LocalAddr().(*net.UDPAddr).Port
	e.udp6, _ = net.ListenPacket("udp6", fmt.Sprintf("[::1]:%d", e.udpPort))
	sockDir, err := os.MkdirTemp("", "attack-sock")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	e.sockPath = filepath.Join(sockDir, "s")
	if e.sock, err = net.Listen("unix", e.sockPath); err != nil {
		t.Fatal(err)
	}
	if e.dgram, err = net.ListenPacket("unixgram", e.sockPath+".dgram"); err != nil {
		t.Fatal(err)
	}
	e.abstractN = "planserver-" + e.token
	if e.abstract, err = net.Listen("unix", "@"+e.abstractN); err != nil {
		t.Fatal(err)
	}
	for name, ln := range map[string]net.Listener{"TCP 127.0.0.1": e.tcp4, "TCP ::1": e.tcp6, "Unix socket": e.sock, "abstract socket": e.abstract} {
		if ln == nil {
			continue
		}
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				e.note(name, "a connection")
				_ = c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
				buf := make([]byte, 64)
				if n, _ := c.Read(buf); n > 0 {
					e.note(name, fmt.Sprintf("data %q", buf[:n]))
				}
				c.Close()
			}
		}()
	}
	for name, pc := range map[string]net.PacketConn{"UDP 127.0.0.1": e.udp4, "UDP ::1": e.udp6, "Unix datagram socket": e.dgram} {
		if pc == nil {
			continue
		}
		go func() {
			buf := make([]byte, 2048)
			for {
				n, _, err := pc.ReadFrom(buf)
				if err != nil {
					return
				}
				e.note(name, fmt.Sprintf("a datagram %q", buf[:min(n, 64)]))
			}
		}()
	}
}

func (e *scene) note(socket, what string) {
	e.reached.Add(1)
	v, _ := e.reachedBy.LoadOrStore(socket, &[]string{})
	list := v.(*[]string)
	*list = append(*list, what)
}

// enableFastOpen lets the listener take data in the SYN, so a Fast Open
// attempt that got out would deliver its bytes.
func enableFastOpen(ln net.Listener) error {
	raw, err := ln.(*net.TCPListener).SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	err = raw.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_FASTOPEN, 16) })
	if err != nil {
		return err
	}
	return serr
}

// startBystander starts a process the attack must not touch.
func (e *scene) startBystander(t *testing.T) {
	e.bystander = exec.Command("bash", "-c", "exec -a planserver-attack-bystander sleep 600")
	if err := e.bystander.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait for the exec, so its state is the sleep's, not bash's.
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", e.bystander.Process.Pid))
		if bytes.HasPrefix(cmdline, []byte("planserver-attack-bystander")) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	e.byState = processState(e.bystander.Process.Pid)
}

// processState is what an attack could change of a process: alive and not
// stopped, its limits, nice value, affinity, I/O priority and OOM score.
func processState(pid int) string {
	var b strings.Builder
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "gone: " + err.Error()
	}
	f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	// After the name: state(0) ... priority(15) nice(16).
	state := "alive"
	switch f[0] {
	case "T", "t":
		state = "stopped"
	case "Z", "X":
		state = "dead"
	}
	fmt.Fprintf(&b, "%s, nice %s\n", state, f[16])
	limits, _ := os.ReadFile(fmt.Sprintf("/proc/%d/limits", pid))
	b.Write(limits)
	status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, l := range strings.Split(string(status), "\n") {
		if strings.HasPrefix(l, "Cpus_allowed_list") || strings.HasPrefix(l, "Mems_allowed_list") {
			b.WriteString(l + "\n")
		}
	}
	prio, _, errno := unix.Syscall(unix.SYS_IOPRIO_GET, 1, uintptr(pid), 0)
	fmt.Fprintf(&b, "ioprio %d %v\n", prio, errno)
	oom, _ := os.ReadFile(fmt.Sprintf("/proc/%d/oom_score_adj", pid))
	fmt.Fprintf(&b, "oom_score_adj %s", oom)
	return b.String()
}

func (e *scene) close() {
	for _, c := range []interface{ Close() error }{e.tcp4, e.tcp6, e.udp4, e.udp6, e.sock, e.dgram, e.abstract} {
		if c != nil && !isNilCloser(c) {
			c.Close()
		}
	}
	if e.bystander != nil && e.bystander.Process != nil {
		_ = e.bystander.Process.Kill()
		_ = e.bystander.Wait()
	}
	e.killLeftovers()
	// Let t.TempDir's removal through a directory an attack left without
	// permissions.
	_ = filepath.WalkDir(e.root, func(p string, d fs.DirEntry, err error) error {
		if d != nil && d.IsDir() {
			_ = os.Chmod(p, 0o755)
		}
		return nil
	})
}

func isNilCloser(c interface{ Close() error }) bool {
	switch v := c.(type) {
	case net.Listener:
		return v == nil
	case net.PacketConn:
		return v == nil
	}
	return false
}

// expand fills in the corpus's placeholders.
func (e *scene) expand(s string) string {
	srvAddr, srvPort, srvPID, session, dbPath := "127.0.0.1:1", "1", "1", "attack-offline", "/nonexistent"
	if e.srv != nil {
		srvAddr, session, dbPath = e.srv.addr, e.srv.session, e.srv.db
		_, srvPort, _ = net.SplitHostPort(e.srv.addr)
		srvPID = strconv.Itoa(e.srv.cmd.Process.Pid)
	}
	s = repeat(s)
	return strings.NewReplacer(
		"{{ALLOWPORT}}", decoyPort(e.t),
		"{{DIR}}", e.repo, "{{OUT}}", e.out, "{{HOME}}", e.home,
		"{{TCP}}", strconv.Itoa(e.tcpPort), "{{UDP}}", strconv.Itoa(e.udpPort),
		"{{SOCK}}", e.sockPath, "{{ABSTRACT}}", e.abstractN,
		"{{PID}}", strconv.Itoa(e.bystander.Process.Pid),
		"{{SRV}}", srvAddr, "{{SRVPORT}}", srvPort, "{{SRVPID}}", srvPID,
		"{{SESSION}}", session, "{{DB}}", dbPath,
	).Replace(s)
}

// repeats are {{REPEAT N}}TEXT{{/REPEAT}}: TEXT N times over, for the
// long commands that cost the classifier the most.
var repeats = regexp.MustCompile(`(?s)\{\{REPEAT (\d+)\}\}(.*?)\{\{/REPEAT\}\}`)

func repeat(s string) string {
	return repeats.ReplaceAllStringFunc(s, func(m string) string {
		sub := repeats.FindStringSubmatch(m)
		n, _ := strconv.Atoi(sub[1])
		return strings.Repeat(sub[2], n)
	})
}

// decoy is the listener of --hook-sandbox-allow-connect's one allowed
// pair (127.0.0.1:{{ALLOWPORT}}), shared by every case: reaching it is
// allowed on that route, so it counts nothing.
var decoy struct {
	once sync.Once
	port string
	err  error
}

func decoyPort(t testing.TB) string {
	decoy.once.Do(func() {
		ln, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			decoy.err = err
			return
		}
		_, decoy.port, _ = net.SplitHostPort(ln.Addr().String())
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
	})
	if decoy.err != nil {
		t.Fatalf("the allow-connect decoy: %v", decoy.err)
	}
	return decoy.port
}

// shell runs a command line with bash in the repository, as a host's
// shell tool does, with a plain environment of the scene's own.
func (e *scene) shell(cmd string, attack bool) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	c := exec.CommandContext(ctx, "bash", "-c", cmd)
	c.Dir = e.repo
	c.Env = []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + e.home, "TMPDIR=" + e.tmp, "LANG=C.UTF-8",
		"GOPATH=" + filepath.Join(e.home, "go"), "GOCACHE=" + goCache, "GOFLAGS=-mod=mod",
		"GOTOOLCHAIN=local", "GOPROXY=off", "GIT_CONFIG_NOSYSTEM=1",
		"PLANSERVER_ATTACK_TOKEN=" + e.token,
	}
	if p := os.Getenv("PYENV_ROOT"); p != "" {
		c.Env = append(c.Env, "PYENV_ROOT="+p)
	}
	c.Stdin = nil
	c.WaitDelay = 5 * time.Second
	// Its own process group: a timeout ends the group as hosts do,
	// SIGTERM first, SIGKILL when it lingers (WaitDelay).
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c.Cancel = func() error { return syscall.Kill(-c.Process.Pid, syscall.SIGTERM) }
	out, err := c.CombinedOutput()
	if ctx.Err() != nil {
		_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
		return string(out) + "\n[ran past 40 s]", ctx.Err()
	}
	return string(out), err
}

// snapshot records everything an attack could change on disk under the
// scene's root: each path's type, mode, size, modification and change
// times, content digest, link target and extended attributes.
func (e *scene) snapshot(t *testing.T) map[string]string {
	t.Helper()
	snap := map[string]string{}
	err := filepath.WalkDir(e.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			snap[p] = "unreadable: " + err.Error()
			return nil
		}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			snap[p] = "unreadable: " + err.Error()
			return nil
		}
		if p == e.tmp {
			// The sandbox makes its private TMPDIR here and removes it:
			// what is in it counts, its own times do not.
			snap[p] = "the scene's TMPDIR"
			return nil
		}
		line := fmt.Sprintf("mode %o uid %d gid %d size %d nlink %d mtime %d.%09d ctime %d.%09d",
			st.Mode, st.Uid, st.Gid, st.Size, st.Nlink, st.Mtim.Sec, st.Mtim.Nsec, st.Ctim.Sec, st.Ctim.Nsec)
		switch {
		case d.Type().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				line += " unreadable"
			} else {
				sum := sha256.Sum256(b)
				line += " sha256 " + hex.EncodeToString(sum[:8])
			}
		case d.Type()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			line += " -> " + target
		}
		line += " xattrs " + xattrs(p)
		snap[p] = line
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

func xattrs(p string) string {
	buf := make([]byte, 4096)
	n, err := unix.Llistxattr(p, buf)
	if err != nil || n == 0 {
		return "-"
	}
	var parts []string
	for _, name := range strings.Split(strings.TrimRight(string(buf[:n]), "\x00"), "\x00") {
		val := make([]byte, 256)
		m, _ := unix.Lgetxattr(p, name, val)
		parts = append(parts, fmt.Sprintf("%s=%q", name, val[:max(m, 0)]))
	}
	return strings.Join(parts, ",")
}

// check compares the world with the snapshot taken before the case and
// returns what changed.
func (e *scene) check(t *testing.T, before map[string]string) []string {
	var problems []string
	after := e.snapshot(t)
	for _, p := range sortedKeys(before) {
		if a, ok := after[p]; !ok {
			problems = append(problems, "removed: "+p)
		} else if a != before[p] {
			problems = append(problems, fmt.Sprintf("changed: %s\n    before %s\n    after  %s", p, before[p], a))
		}
	}
	for _, p := range sortedKeys(after) {
		if _, ok := before[p]; !ok {
			problems = append(problems, "created: "+p)
		}
	}
	for _, dir := range []string{os.TempDir(), "/dev/shm"} {
		matches, _ := filepath.Glob(filepath.Join(dir, fmt.Sprintf("planserver-attack-pwned-%d", e.tcpPort)))
		for _, m := range matches {
			problems = append(problems, "created: "+m)
		}
	}
	if e.reached.Load() > 0 {
		e.reachedBy.Range(func(k, v any) bool {
			problems = append(problems, fmt.Sprintf("the %s was reached: %s", k, strings.Join(*v.(*[]string), ", ")))
			return true
		})
	}
	if now := processState(e.bystander.Process.Pid); now != e.byState {
		problems = append(problems, fmt.Sprintf("the bystander changed:\n    before %q\n    after  %q", e.byState, now))
	}
	if left := e.leftovers(); len(left) > 0 {
		problems = append(problems, "processes outlived the command: "+strings.Join(left, "; "))
	}
	if err := lockFree(filepath.Join(e.out, "lockfile")); err != nil {
		problems = append(problems, "a lock outlived the command: "+err.Error())
	}
	if e.srv != nil {
		problems = append(problems, e.srv.healthy(e.t)...)
	}
	return problems
}

// leftovers lists the processes still carrying the scene's token.
func (e *scene) leftovers() []string {
	var out []string
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if err != nil || !bytes.Contains(env, []byte("PLANSERVER_ATTACK_TOKEN="+e.token)) {
			continue
		}
		stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:])); len(f) > 0 && f[0] == "Z" {
			continue
		}
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		out = append(out, fmt.Sprintf("%d %q", pid, bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '})))
	}
	return out
}

func (e *scene) killLeftovers() {
	for _, l := range e.leftovers() {
		if pid, err := strconv.Atoi(strings.Fields(l)[0]); err == nil {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// lockFree says whether a file can be locked now, both ways a program
// locks: flock and POSIX record locks.
func lockFree(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return fmt.Errorf("flock: %w", err)
	}
	_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
	lk := unix.Flock_t{Type: unix.F_WRLCK}
	if err := unix.FcntlFlock(f.Fd(), unix.F_SETLK, &lk); err != nil {
		return fmt.Errorf("fcntl lock: %w", err)
	}
	return nil
}

// healthy says what is wrong with the server after a case: it must
// answer, keep the session in plan mode, accept a write at once, and keep
// its own limits, priority and affinity.
func (s *server) healthy(t *testing.T) []string {
	var problems []string
	if mode := s.sessionMode(t); mode != "plan" {
		problems = append(problems, "the session is not in plan mode any more: "+mode)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	body := fmt.Sprintf(`{"todos":[{"content":"probe %d","status":"pending"}]}`, time.Now().UnixNano())
	req, _ := http.NewRequestWithContext(ctx, "PUT", s.URL+"/v1/sessions/"+s.session+"/todos", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := httpClient.Do(req)
	switch {
	case err != nil:
		problems = append(problems, "the server did not take a write: "+err.Error())
	case resp.StatusCode != 200:
		problems = append(problems, fmt.Sprintf("the server did not take a write: %d", resp.StatusCode))
	}
	if resp != nil {
		resp.Body.Close()
	}
	if now := processState(s.cmd.Process.Pid); now != s.state {
		problems = append(problems, fmt.Sprintf("the server process changed:\n    before %q\n    after  %q", s.state, now))
	}
	return problems
}
