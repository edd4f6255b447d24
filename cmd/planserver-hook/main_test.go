package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestHookBinaryStaysLean: a host starts this binary before every tool
// call, and every package it links adds to that start-up (initialisers run
// before main, and more of the binary is paged in). It links
// internal/hosthookwire and the standard library's plain networking, nothing
// else: not the adapters and the shell parser (planserver hook judges
// what planserver cannot, in the planserver binary), not net/http or TLS
// (hosthookwire's client speaks the HTTP it needs; https is handed over).
func TestHookBinaryStaysLean(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.Standard}} {{.ImportPath}}", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	ours := map[string]bool{
		"github.com/planserver/planserver/cmd/planserver-hook":    true,
		"github.com/planserver/planserver/internal/hosthookwire":  true,
		"github.com/planserver/planserver/internal/hosthookproto": true,
	}
	heavy := []string{"net/http", "crypto/tls", "crypto/x509", "regexp", "compress/"}
	var seen int
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		standard, path, _ := strings.Cut(line, " ")
		if standard == "false" {
			seen++
			if !ours[path] {
				t.Errorf("planserver-hook links %s: keep it to internal/hosthookwire (see its package comment)", path)
			}
			continue
		}
		for _, h := range heavy {
			if path == h || (strings.HasSuffix(h, "/") && strings.HasPrefix(path, h)) {
				t.Errorf("planserver-hook links %s, whose start-up every tool call would pay", path)
			}
		}
	}
	if seen != len(ours) {
		t.Errorf("go list found %d of planserver's packages, want the %d allowed: %s", seen, len(ours), out)
	}
}
