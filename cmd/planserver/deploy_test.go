package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestContainerFiles checks what no container engine here can: the build
// context leaves out databases, binaries and history; the image's
// HEALTHCHECK runs a subcommand the binary has, as the image's user; and
// /data belongs to that user on a fresh volume. (Not a substitute for
// building the image: see README, Deploying.)
func TestContainerFiles(t *testing.T) {
	ignore, err := os.ReadFile(filepath.Join("..", "..", ".dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	patterns := map[string]bool{}
	for _, line := range strings.Split(string(ignore), "\n") {
		patterns[strings.TrimSpace(line)] = true
	}
	for _, want := range []string{".git", "bin/", "*.db", "*.db-*", "*.db.lock"} {
		if !patterns[want] {
			t.Errorf(".dockerignore lacks %s", want)
		}
	}
	cf, err := os.ReadFile(filepath.Join("..", "..", "deploy", "Containerfile"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^HEALTHCHECK .*\\\n\s+CMD \["/usr/local/bin/planserver", "healthcheck"\]$`),
		regexp.MustCompile(`(?m)^USER 65532:65532$`),
		regexp.MustCompile(`(?m)^COPY --from=build --chown=65532:65532 /out/data /data$`),
		regexp.MustCompile(`(?m)^VOLUME \["/data"\]$`),
		regexp.MustCompile(`PLANSERVER_DB=/data/planserver\.db`),
	} {
		if !want.Match(cf) {
			t.Errorf("deploy/Containerfile lacks %s", want)
		}
	}
	if cmd, _, err := newRoot(noEnv).Find([]string{"healthcheck"}); err != nil || cmd.Name() != "healthcheck" || cmd.Long == "" {
		t.Error("the HEALTHCHECK's subcommand has no help: is it still a command?")
	}
}
