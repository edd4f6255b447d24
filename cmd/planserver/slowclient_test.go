package main

import (
	"bufio"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestDribbledHeadersAreCutOff sends a request's headers one line at a time,
// slower than ReadHeaderTimeout allows, to the http.Server planserver runs
// (only the timeout is shortened): the server must drop the connection
// instead of holding it while the client takes its time.
func TestDribbledHeadersAreCutOff(t *testing.T) {
	tm := defaultTimeouts
	tm.readHeader = 200 * time.Millisecond
	srv := newHTTPServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("a request with dribbled headers reached the handler")
	}), slog.New(slog.NewTextHandler(io.Discard, nil)), tm)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()

	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n"); err != nil {
		t.Fatal(err)
	}
	// 40 header lines, 50 ms apart: 2 s in all, ten times the timeout.
	cut := false
	for i := 0; i < 40 && !cut; i++ {
		time.Sleep(50 * time.Millisecond)
		if _, err := io.WriteString(conn, "X-Slow: a\r\n"); err != nil {
			cut = true
		}
	}
	if !cut {
		// The server may have closed without the write noticing yet: the
		// connection must then read as closed (possibly after a 408).
		_ = conn.SetReadDeadline(time.Now().Add(time.Second))
		line, err := bufio.NewReader(conn).ReadString('\n')
		if err == nil && !strings.Contains(line, "408") {
			t.Fatalf("connection still served after dribbling headers for 2 s: %q", line)
		}
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatal("connection still open after dribbling headers for 2 s past a 200 ms ReadHeaderTimeout")
		}
	}
}

func TestProductionTimeoutsAreSet(t *testing.T) {
	srv := newHTTPServer(http.NotFoundHandler(), slog.New(slog.NewTextHandler(io.Discard, nil)), defaultTimeouts)
	if srv.ReadHeaderTimeout <= 0 || srv.ReadTimeout <= 0 || srv.WriteTimeout <= 0 || srv.IdleTimeout <= 0 || srv.MaxHeaderBytes <= 0 {
		t.Errorf("a timeout or limit is unset: %+v", srv)
	}
}
