package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// process is one server under measurement (planserver, or the chi
// baseline) running in a process of its own, so that its CPU time and
// memory are its own and it can be pinned to the server's CPUs.
type process struct {
	cmd    *exec.Cmd
	base   string
	label  string
	stderr bytes.Buffer
	// pprof is the base URL of the server's profiles (planserver only).
	pprof string
	// exited is closed when the process has ended.
	exited chan struct{}
}

// startServer runs the planserver binary on a fresh database (a file, or a
// postgres:// URL) and waits for /readyz.
func startServer(o options, db, durability string, extra ...string) (*process, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	// The defaults of make run: --auth none, so no token and no rate limit.
	args := []string{"serve", "--addr", addr, "--db", db, "--durability", durability, "--log-format", "json"}
	// Every server serves its profiles on a second loopback address: -pprof
	// takes CPU profiles from it, and the memory figures collect garbage
	// through it first.
	paddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	pprof := "http://" + paddr + "/debug/pprof"
	args = append(append(args, "--pprof-addr", paddr), extra...)
	p, err := o.start("--durability "+durability, "http://"+addr, "/readyz", o.bin, args...)
	if p != nil {
		p.pprof = pprof
	}
	return p, err
}

// start runs prog on the server's CPUs with the server environment and
// waits until GET base+ready answers 200.
func (o options) start(label, base, ready, prog string, args ...string) (*process, error) {
	p := &process{base: base, label: label, exited: make(chan struct{})}
	if len(o.serverCPUs) > 0 {
		self, err := os.Executable()
		if err != nil {
			return nil, err
		}
		p.cmd = exec.Command(self, append([]string{"pin", o.serverCPUs.String(), prog}, args...)...)
	} else {
		p.cmd = exec.Command(prog, args...)
	}
	p.cmd.Env = append(os.Environ(), o.serverEnv...)
	// Request logs are formatted as in production but kept only until the
	// server is ready (for the error message), then discarded.
	p.cmd.Stderr = &limitedWriter{w: &p.stderr, n: 64 << 10}
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	started.Store(p, struct{}{})
	go func() { _ = p.cmd.Wait(); started.Delete(p); close(p.exited) }()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(p.base + ready); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return p, nil
			}
		}
		select {
		case <-p.exited:
			return nil, fmt.Errorf("%s exited: %s", filepath.Base(prog), p.stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	p.stop()
	return nil, fmt.Errorf("%s not ready: %s", filepath.Base(prog), p.stderr.String())
}

// started holds the server processes still running, for stopOnSignal.
var started sync.Map // *process → struct{}

// stopOnSignal ends planbench on SIGTERM or SIGINT (a time limit's
// timeout, Ctrl-C) and kills the servers it started first: left behind,
// they would hold their connections and ports, and their CPUs, into
// whatever runs next on the machine. What was measured until then is on
// the progress output already (bench.addRow).
func stopOnSignal(stderr io.Writer) {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		s := <-sig
		n := killStarted()
		fmt.Fprintf(stderr, "planbench: stopped by %v; killed %d server process(es); the rows measured so far are above\n", s, n)
		os.Exit(1)
	}()
}

// killStarted kills every server process still running and says how many.
func killStarted() int {
	n := 0
	started.Range(func(k, _ any) bool {
		if k.(*process).cmd.Process.Kill() == nil {
			n++
		}
		return true
	})
	return n
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// limitedWriter keeps the first n bytes and drops the rest.
type limitedWriter struct {
	w *bytes.Buffer
	n int
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if room := l.n - l.w.Len(); room > 0 {
		l.w.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// clockTick is the unit of /proc/PID/stat's CPU times (USER_HZ, 100 on
// every Linux architecture Go supports).
const clockTick = 10 * time.Millisecond

// cpu returns the CPU time the process has used so far, user and system,
// all threads.
func (p *process) cpu() time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	// The command name in parentheses may hold spaces: fields start after
	// the last ')'; utime and stime are fields 14 and 15 of the whole line.
	fields := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(fields) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(utime+stime) * clockTick
}

// profileWhile saves a CPU profile of the server, taken while fn runs, to
// dir/name.pprof; without -pprof it just runs fn.
func (p *process) profileWhile(dir, name string, d time.Duration, fn func() result) result {
	if p == nil || p.pprof == "" || dir == "" || name == "" {
		return fn()
	}
	done := make(chan error, 1)
	go func() {
		secs := max(1, int(d.Seconds())-1)
		resp, err := http.Get(fmt.Sprintf("%s/profile?seconds=%d", p.pprof, secs))
		if err != nil {
			done <- err
			return
		}
		defer resp.Body.Close()
		f, err := os.Create(filepath.Join(dir, name+".pprof"))
		if err != nil {
			done <- err
			return
		}
		defer f.Close()
		_, err = io.Copy(f, resp.Body)
		done <- err
	}()
	res := fn()
	if err := <-done; err != nil {
		fmt.Fprintf(os.Stderr, "profile %s: %v\n", name, err)
	}
	return res
}

var (
	rssMu   sync.Mutex
	rssSeen []string
)

// stop records the server's peak RSS and stops it with SIGTERM.
func (p *process) stop() {
	select {
	case <-p.exited:
		return
	default:
	}
	if kib, err := procStatus(p.cmd.Process.Pid, "VmHWM"); err == nil && p.label != "" {
		rssMu.Lock()
		rssSeen = append(rssSeen, fmt.Sprintf("%.1f MiB (%s)", float64(kib)/1024, p.label))
		rssMu.Unlock()
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// procStatus reads one memory figure of /proc/PID/status (VmHWM, the peak
// resident set; VmRSS, the current one), in KiB.
func procStatus(pid int, field string) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		}
	}
	return 0, fmt.Errorf("no %s for pid %d", field, pid)
}

func peakRSSSummary() string {
	rssMu.Lock()
	defer rssMu.Unlock()
	if len(rssSeen) == 0 {
		return "not measured"
	}
	return strings.Join(rssSeen, ", ")
}
