package main

import (
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

func TestAllowedHostsFlag(t *testing.T) {
	base := config{Addr: "127.0.0.1:8080", Auth: "none", RateLimit: 50, RateBurst: 100}
	for value, ok := range map[string]bool{
		"":                    true,
		"planserver.internal": true,
		" planserver.internal , plans.example.com:8443,[fd00::1],10.0.0.5": true,
		"https://plans.example.com":                                        false,
		"plans.example.com/ui":                                             false,
		"*.example.com":                                                    false,
		"user@plans.example.com":                                           false,
		"plans.example.com:port":                                           false,
	} {
		c := base
		c.AllowedHosts = value
		err := c.validateAccess()
		if ok && err != nil || !ok && (err == nil || !strings.Contains(err.Error(), "--allowed-hosts")) {
			t.Errorf("--allowed-hosts %q: %v", value, err)
		}
	}
	got, _ := hostList(" planserver.internal , plans.example.com:8443,,[fd00::1]")
	if strings.Join(got, " ") != "planserver.internal plans.example.com:8443 [fd00::1]" {
		t.Errorf("hostList = %q", got)
	}
	var cfg config
	env := map[string]string{"PLANSERVER_ALLOWED_HOSTS": "planserver.internal"}
	if err := parseServe(&cfg, nil, func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	if cfg.AllowedHosts != "planserver.internal" {
		t.Errorf("from the environment: %q", cfg.AllowedHosts)
	}
}

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
