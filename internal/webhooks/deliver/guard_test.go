package deliver

import (
	"net/netip"
	"testing"
)

func TestGuardJudgesAddresses(t *testing.T) {
	g, err := NewGuard([]string{"10.9.0.0/16", "192.168.1.7", "[fd12::1]", "hooks.internal"})
	if err != nil {
		t.Fatal(err)
	}
	for addr, want := range map[string]bool{
		"93.184.216.34": true, "2606:4700::1111": true,
		"127.0.0.1": false, "127.0.0.2": false, "::1": false, "0.0.0.0": false, "::": false,
		"10.1.2.3": false, "172.16.0.1": false, "192.168.0.1": false, "100.64.0.1": false,
		"169.254.169.254": false, "169.254.1.1": false, "fe80::1": false, "fd00:ec2::254": false, "fc00::5": false,
		"::ffff:127.0.0.1": false, "::ffff:169.254.169.254": false, "224.0.0.1": false,
		// The allow list's addresses and ranges.
		"10.9.4.4": true, "192.168.1.7": true, "fd12::1": true, "192.168.1.8": false,
	} {
		if got := g.allowedAddr(netip.MustParseAddr(addr)); got != want {
			t.Errorf("%s: allowed %v, want %v", addr, got, want)
		}
	}
	if !g.allowedHost("HOOKS.internal.") || g.allowedHost("other.internal") {
		t.Error("host names on the allow list")
	}
	for _, bad := range []string{"http://x", "a b", "user@host"} {
		if _, err := NewGuard([]string{bad}); err == nil {
			t.Errorf("NewGuard(%q) accepted it", bad)
		}
	}
}
