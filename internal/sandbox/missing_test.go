//go:build linux && (amd64 || arm64)

package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// lackKernelFeature makes this process's kernel probes answer as a kernel
// without feature would (SANDBOX_TEST_LACK, in the test binary standing
// for planserver sandbox): no Landlock, a Landlock ABI below MinABI, no
// seccomp, seccomp without the errno action, or without user
// notifications (which --allow-connect needs).
func lackKernelFeature(feature string) {
	actions := func(have string) {
		f, err := os.CreateTemp("", "actions_avail")
		if err != nil {
			panic(err)
		}
		_, _ = f.WriteString(have + "\n")
		_ = f.Close()
		seccompActionsFile = f.Name()
	}
	switch feature {
	case "landlock":
		landlockVersion = func() (int, error) { return 0, syscall.EOPNOTSUPP }
	case "landlock-abi":
		landlockVersion = func() (int, error) { return MinABI - 1, nil }
	case "seccomp":
		seccompActionsFile = filepath.Join(os.TempDir(), "no-such-dir", "actions_avail")
	case "seccomp-errno":
		actions("kill_process kill_thread trap log allow")
	case "user-notif":
		actions("kill_process kill_thread trap errno trace log allow")
	}
}

// TestMissingKernelFeature: where the kernel lacks what a rule needs, the
// sandbox refuses to run, with exit status 125 and one line that names
// what is missing; the command never runs with less protection.
func TestMissingKernelFeature(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		lack  string
		flags []string
		want  string
	}{
		{"landlock", nil, "Landlock is not enabled"},
		{"landlock-abi", nil, "Landlock ABI is 5"},
		{"seccomp", nil, "no seccomp filters"},
		{"seccomp-errno", nil, "cannot return errno"},
		{"user-notif", []string{"--allow-connect", "127.0.0.1:9"}, "cannot return user_notif"},
	} {
		t.Run(c.lack, func(t *testing.T) {
			dir := t.TempDir()
			args := append(append([]string{"sandbox", "--read-only"}, c.flags...), "--", "touch", "marker")
			cmd := exec.Command(exe, args...)
			cmd.Dir = dir
			// TMPDIR: the stand-in probe file goes where the test cleans up.
			cmd.Env = append(os.Environ(), "SANDBOX_TEST_CLI=1", "SANDBOX_TEST_LACK="+c.lack, "TMPDIR="+dir)
			res := collect(t, cmd)
			if res.code != ExitUnavailable || !strings.Contains(res.stderr, c.want) || strings.Count(res.stderr, "\n") != 1 ||
				!strings.Contains(res.stderr, "did not run") {
				t.Errorf("exit %d, stderr %q; want 125 and one line with %q", res.code, res.stderr, c.want)
			}
			if _, err := os.Stat(filepath.Join(dir, "marker")); !os.IsNotExist(err) {
				t.Errorf("the command ran without the sandbox: %v", err)
			}
		})
	}
}
