package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestServeSetsTheGCTargetUnlessGOGCIsSet: serve collects at GOGC=200 by
// default (what docs/benchmarks.md measured), and an operator's GOGC wins.
// Both are read back from the runtime itself, through /metrics.
func TestServeSetsTheGCTargetUnlessGOGCIsSet(t *testing.T) {
	for _, c := range []struct {
		gogc, want, source string
	}{
		{"", "200", "default"},
		{"50", "50", "GOGC"},
	} {
		t.Run("GOGC="+c.gogc, func(t *testing.T) {
			env := withoutEnv(os.Environ(), "GOGC")
			if c.gogc != "" {
				env = append(env, "GOGC="+c.gogc)
			}
			addr := freeAddr(t)
			cmd := exec.Command(binary, "serve", "--addr", addr, "--db", filepath.Join(t.TempDir(), "p.db"))
			cmd.Env = env
			p := startCmd(t, addr, cmd, serverReady)
			if !strings.Contains(p.stderr.String(), "gc_percent="+c.want+" source="+c.source) {
				t.Errorf("start-up log lacks gc_percent=%s source=%s:\n%s", c.want, c.source, p.stderr.String())
			}
			_, metrics := p.call(t, "GET", "/metrics", "")
			m := regexp.MustCompile(`(?m)^go_gc_gogc_percent (\S+)$`).FindSubmatch(metrics)
			if m == nil || string(m[1]) != c.want {
				t.Fatalf("go_gc_gogc_percent = %q, want %s", m, c.want)
			}
		})
	}
}

func withoutEnv(env []string, name string) []string {
	var kept []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			kept = append(kept, kv)
		}
	}
	return kept
}
