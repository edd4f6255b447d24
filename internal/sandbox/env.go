package sandbox

import (
	"path/filepath"
	"strconv"
	"strings"
)

// quietEnv are the switches every sandboxed command gets so that reading
// tools neither try to write (which would fail in the sandbox anyway) nor
// download, nor start a program of the repository's choosing for output
// nobody reads. They are set; no write path is ever opened to make a tool
// pass.
var quietEnv = [][2]string{
	{"GIT_OPTIONAL_LOCKS", "0"},      // git status: no index refresh
	{"GIT_TERMINAL_PROMPT", "0"},     // git: never ask for credentials
	{"GIT_PAGER", "cat"},             // no pager, whatever the repository says
	{"PAGER", "cat"},                 //
	{"MANPAGER", "cat"},              //
	{"GOTOOLCHAIN", "local"},         // go: never download a toolchain
	{"GOTELEMETRY", "off"},           // go: no telemetry counters under $HOME
	{"GOPROXY", "off"},               // go: no module downloads
	{"PYTHONDONTWRITEBYTECODE", "1"}, // python: no __pycache__
}

// unsetEnv are removed: an external diff program named by the caller's
// environment.
var unsetEnv = []string{"GIT_EXTERNAL_DIFF"}

// gitConfig are appended to the caller's GIT_CONFIG_COUNT entries, so
// they win over every configuration file (a repository's own included):
// no fsmonitor daemon or hook, no pager, no gpg run to show signatures,
// no automatic gc or maintenance.
var gitConfig = [][2]string{
	{"core.fsmonitor", "false"},
	{"core.pager", "cat"},
	{"log.showSignature", "false"},
	{"gc.auto", "0"},
	{"maintenance.auto", "false"},
}

// Env returns base with TMPDIR set to tmp and the quiet switches applied:
// quietEnv set, unsetEnv removed, gitConfig appended after any
// GIT_CONFIG_COUNT entries the caller had. GOCACHE goes inside TMPDIR:
// go list writes to its build cache, and the caller's is not writable
// in the sandbox. Everything else (HOME included) is kept.
func Env(base []string, tmp string) []string {
	set := map[string]string{"TMPDIR": tmp, "GOCACHE": filepath.Join(tmp, "go-build")}
	order := []string{"TMPDIR", "GOCACHE"}
	for _, kv := range quietEnv {
		set[kv[0]] = kv[1]
		order = append(order, kv[0])
	}
	count := 0
	for _, kv := range base {
		if v, ok := strings.CutPrefix(kv, "GIT_CONFIG_COUNT="); ok {
			// git refuses a count that is not a number, so ours start at
			// 0 then, and the command fails as it would outside.
			if n, err := strconv.Atoi(v); err == nil && n > 0 && n < 1<<16 {
				count = n
			}
		}
	}
	for i, kv := range gitConfig {
		n := strconv.Itoa(count + i)
		set["GIT_CONFIG_KEY_"+n], set["GIT_CONFIG_VALUE_"+n] = kv[0], kv[1]
		order = append(order, "GIT_CONFIG_KEY_"+n, "GIT_CONFIG_VALUE_"+n)
	}
	set["GIT_CONFIG_COUNT"] = strconv.Itoa(count + len(gitConfig))
	order = append(order, "GIT_CONFIG_COUNT")
	for _, k := range unsetEnv {
		set[k] = ""
	}
	out := make([]string, 0, len(base)+len(order))
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := set[k]; ok {
			continue
		}
		out = append(out, kv)
	}
	for _, k := range order {
		out = append(out, k+"="+set[k])
	}
	return out
}
