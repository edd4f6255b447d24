// Package sandboxtest holds what tests of the kernel sandbox share: the one
// rule for a test that needs the sandbox on a kernel that cannot run it.
package sandboxtest

import (
	"os"
	"testing"

	"github.com/planserver/planserver/internal/sandbox"
)

// RequireEnv is the variable that turns a missing sandbox from a skip into
// a failure. CI sets it: there the kernel has what the sandbox needs, and a
// test that quietly skipped would prove nothing.
const RequireEnv = "PLANSERVER_REQUIRE_SANDBOX"

// Need skips t where this kernel cannot run the sandbox (saying why, and
// what the test would have shown: because), or fails it when RequireEnv is
// 1.
func Need(t testing.TB, because string) {
	t.Helper()
	abi, err := sandbox.Available()
	if err == nil {
		return
	}
	if os.Getenv(RequireEnv) == "1" {
		t.Fatalf("%s=1, but this kernel cannot run the sandbox (Landlock ABI %d): %v", RequireEnv, abi, err)
	}
	t.Skipf("no kernel sandbox here (Landlock ABI %d): %v; %s", abi, err, because)
}
