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
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// server is one planserver process under measurement.
type server struct {
	cmd    *exec.Cmd
	base   string
	label  string
	stderr bytes.Buffer
	// pprof is the base URL of the server's profiles, when -pprof is set.
	pprof string
}

// startServer runs the binary on a fresh database and waits for /readyz.
func startServer(bin, db, durability string, profile bool) (*server, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	s := &server{base: "http://" + addr, label: "--durability " + durability}
	// The defaults of make run: --auth none, so no token and no rate limit.
	args := []string{"serve", "--addr", addr, "--db", db, "--durability", durability, "--log-format", "json"}
	if profile {
		paddr, err := freeAddr()
		if err != nil {
			return nil, err
		}
		s.pprof = "http://" + paddr + "/debug/pprof"
		args = append(args, "--pprof-addr", paddr)
	}
	s.cmd = exec.Command(bin, args...)
	// Request logs are formatted as in production but kept only until the
	// server is ready (for the error message), then discarded.
	s.cmd.Stderr = &limitedWriter{w: &s.stderr, n: 64 << 10}
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(s.base + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return s, nil
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.stop()
	return nil, fmt.Errorf("server not ready: %s", s.stderr.String())
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

// profileWhile saves a CPU profile of the server, taken while fn runs, to
// dir/name.pprof; without -pprof it just runs fn.
func (s *server) profileWhile(dir, name string, d time.Duration, fn func() result) result {
	if s.pprof == "" || dir == "" {
		return fn()
	}
	done := make(chan error, 1)
	go func() {
		secs := max(1, int(d.Seconds())-1)
		resp, err := http.Get(fmt.Sprintf("%s/profile?seconds=%d", s.pprof, secs))
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
func (s *server) stop() {
	if s.cmd.Process == nil || s.cmd.ProcessState != nil {
		return
	}
	if kib, err := peakRSS(s.cmd.Process.Pid); err == nil {
		rssMu.Lock()
		rssSeen = append(rssSeen, fmt.Sprintf("%.1f MiB (%s)", float64(kib)/1024, s.label))
		rssMu.Unlock()
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-done
	}
}

// peakRSS reads VmHWM, the process's peak resident set, in KiB.
func peakRSS(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		}
	}
	return 0, fmt.Errorf("no VmHWM for pid %d", pid)
}

func peakRSSSummary() string {
	rssMu.Lock()
	defer rssMu.Unlock()
	if len(rssSeen) == 0 {
		return "not measured"
	}
	return strings.Join(rssSeen, ", ")
}
