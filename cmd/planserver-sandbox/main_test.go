package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestSandboxBinaryStaysLean: in plan mode every shell command starts this
// binary, and it starts itself once more as the stage, so every package
// it links adds to each command twice (initialisers run before main, and
// more of the binary is paged in). It links internal/sandbox, go-landlock,
// x/sys, and doublestar (pure Go on the standard library's path and io/fs:
// --allow-write's globs, which the stage must read as the scope reads
// them); from the standard library, nothing heavy: no net/http, TLS,
// database drivers, regular expressions or compression. Not
// go-seccomp-bpf: its system-call tables take a quarter of a millisecond
// to initialise in each process, and the programs it assembles are
// carried as a table (internal/sandbox/seccomppolicy assembles them).
func TestSandboxBinaryStaysLean(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.Standard}} {{.ImportPath}}", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	// Ours exactly; the libraries with their subpackages (psx is
	// go-landlock's way to reach every thread without cgo).
	ours := []string{
		"github.com/planserver/planserver/cmd/planserver-sandbox",
		"github.com/planserver/planserver/internal/sandbox",
	}
	libraries := []string{
		"github.com/landlock-lsm/go-landlock", "kernel.org/pub/linux/libs/security/libcap/psx", "golang.org/x/sys/unix",
		"github.com/bmatcuk/doublestar/v4",
	}
	heavy := []string{"net/http", "crypto/tls", "crypto/x509", "database/sql", "regexp", "compress/", "encoding/json", "text/template", "html/template"}
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		standard, path, _ := strings.Cut(line, " ")
		if standard == "false" {
			ok := false
			for _, a := range ours {
				ok = ok || path == a
			}
			for _, l := range libraries {
				ok = ok || path == l || strings.HasPrefix(path, l+"/")
			}
			if !ok {
				t.Errorf("planserver-sandbox links %s: keep it to internal/sandbox and its kernel libraries", path)
			}
			seen[path] = true
			continue
		}
		for _, h := range heavy {
			if path == h || (strings.HasSuffix(h, "/") && strings.HasPrefix(path, h)) {
				t.Errorf("planserver-sandbox links %s, whose start-up every sandboxed command would pay", path)
			}
		}
	}
	if !seen["github.com/planserver/planserver/internal/sandbox"] {
		t.Errorf("go list did not find internal/sandbox among the dependencies: %s", out)
	}
}
