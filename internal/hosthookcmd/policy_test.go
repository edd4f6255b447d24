package hosthookcmd

import (
	"testing"

	"github.com/planserver/planserver/internal/hosthook"
)

// TestShellPolicyDefaults: the policy serve's hook service and the command form
// share judges a writer as one and lets a plain read through the default
// table, and keeps the sandbox it is given.
func TestShellPolicyDefaults(t *testing.T) {
	p := ShellPolicy(nil, hosthook.Sandbox{Why: "off"})
	if yes, _ := p.Writes("rm -rf build"); !yes {
		t.Error("rm -rf is not judged a writer")
	}
	if ok, why := p.Strict("ls -la"); !ok {
		t.Errorf("ls is not a plain read: %s", why)
	}
	if p.Sandbox.Why != "off" {
		t.Errorf("sandbox %+v, want the one given", p.Sandbox)
	}
}
