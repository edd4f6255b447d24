package main

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestConsoleURL(t *testing.T) {
	for addr, want := range map[string]string{
		"127.0.0.1:8080": "http://127.0.0.1:8080/ui/",
		"[::1]:8080":     "http://[::1]:8080/ui/",
		"0.0.0.0:8080":   "http://localhost:8080/ui/",
		"[::]:9000":      "http://localhost:9000/ui/",
	} {
		a, err := net.ResolveTCPAddr("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		if got := consoleURL(a); got != want {
			t.Errorf("consoleURL(%s) = %s, want %s", addr, got, want)
		}
	}
}

// TestServeLogsConsoleURL: make run's output says where the console is,
// with the port actually bound, and the address works.
func TestServeLogsConsoleURL(t *testing.T) {
	cmd := exec.Command(binary, "serve", "--addr", "127.0.0.1:0", "--db", filepath.Join(t.TempDir(), "p.db"))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	lines := bufio.NewScanner(stderr)
	url := ""
	for url == "" && lines.Scan() {
		if _, rest, ok := strings.Cut(lines.Text(), "msg=console url="); ok {
			url = rest
		}
	}
	go func() { _, _ = io.Copy(io.Discard, stderr) }()
	if !strings.HasPrefix(url, "http://127.0.0.1:") || !strings.HasSuffix(url, "/ui/") || strings.HasSuffix(url, ":0/ui/") {
		t.Fatalf("console address %q", url)
	}
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Errorf("%s: %d %s", url, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
}
