package main

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
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
}

// startServer runs the binary on a fresh database and waits for /readyz.
func startServer(bin, db, durability string) (*server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	s := &server{base: "http://" + addr, label: "--durability " + durability}
	s.cmd = exec.Command(bin, "serve", "--addr", addr, "--db", db, "--durability", durability, "--log-format", "json")
	// Request logs go nowhere: the benchmark measures serving, not a
	// terminal. They are still formatted, as in production.
	s.cmd.Stderr = &s.stderr
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
