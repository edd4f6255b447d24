package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestHookBinaryStaysLean: a host starts this binary before every tool
// call, so every package it links is start-up time on every call (package
// initialisers run before main). It links the hook's own packages, the
// shell classifier's parser and the standard library, nothing else: a
// change that pulls in the store, the server or their drivers fails here.
func TestHookBinaryStaysLean(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	allowed := map[string]bool{
		"github.com/planserver/planserver/cmd/planserver-hook": true,
		"github.com/planserver/planserver/internal/cliflag":    true,
		"github.com/planserver/planserver/internal/hookcmd":    true,
		"github.com/planserver/planserver/internal/hooks":      true,
		"github.com/planserver/planserver/internal/shellclass": true,
		// The classifier's parser and its table format.
		"mvdan.cc/sh/v3/syntax":   true,
		"mvdan.cc/sh/v3/fileutil": true,
		"gopkg.in/yaml.v3":        true,
	}
	deps := strings.Fields(string(out))
	if len(deps) < len(allowed) {
		t.Fatalf("go list listed too little to judge: %q", deps)
	}
	for _, dep := range deps {
		if !allowed[dep] {
			t.Errorf("planserver-hook links %s: keep the hook's packages free of it (see the hooks package comment)", dep)
		}
	}
}
