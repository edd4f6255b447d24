package main

import (
	"io"
	"net/http"
	"path/filepath"
	"testing"
)

// getWithHost sends GET path to p with the given Host, as a browser on a
// DNS-rebinding page would.
func getWithHost(t *testing.T, p *proc, path, host string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://"+p.addr+path, nil)
	req.Host = host
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// TestServeChecksHost runs the binary: with --auth none only loopback
// names are served, and --allowed-hosts adds more.
func TestServeChecksHost(t *testing.T) {
	p := start(t, filepath.Join(t.TempDir(), "p.db"))
	if st := getWithHost(t, p, "/healthz", "attacker.example"); st != http.StatusForbidden {
		t.Errorf("foreign Host: %d", st)
	}
	if st := getWithHost(t, p, "/healthz", p.addr); st != http.StatusOK {
		t.Errorf("loopback Host: %d", st)
	}
	q := start(t, filepath.Join(t.TempDir(), "q.db"), "--allowed-hosts", "planserver.internal")
	if st := getWithHost(t, q, "/v1/sessions", "planserver.internal"); st != http.StatusOK {
		t.Errorf("listed Host: %d", st)
	}
	if st := getWithHost(t, q, "/v1/sessions", "attacker.example"); st != http.StatusForbidden {
		t.Errorf("unlisted Host: %d", st)
	}
}
