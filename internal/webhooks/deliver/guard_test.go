package deliver

import (
	"context"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"
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

// lastAddr is the highest address of p.
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// TestSpecialRangesEachRefused holds every entry of the special-purpose
// table to the guard: its first, middle and last address are refused by
// allowedAddr, the dialler refuses each as a literal before any socket
// exists (the dial hook never runs; it would stop the dial if it did),
// and the refusal names the entry's range.
func TestSpecialRangesEachRefused(t *testing.T) {
	g, err := NewGuard(nil)
	if err != nil {
		t.Fatal(err)
	}
	var dialled []string
	g.OnDial = func(a string) error {
		dialled = append(dialled, a)
		return errors.New("stopped by the test: it never dials")
	}
	dial := g.DialContext(time.Second)
	for _, r := range specialRanges {
		first := r.prefix.Masked().Addr()
		mid := first
		for i := 0; i < 3 && mid.Next().IsValid() && r.prefix.Contains(mid.Next()); i++ {
			mid = mid.Next()
		}
		for _, ip := range []netip.Addr{first, mid, lastAddr(r.prefix)} {
			name := r.prefix.String() + " (" + r.name + "): " + ip.String()
			if g.allowedAddr(ip) {
				t.Errorf("%s: allowed", name)
				continue
			}
			_, err := dial(context.Background(), "tcp", net.JoinHostPort(ip.String(), "443"))
			if !errors.Is(err, ErrRefused) {
				t.Errorf("%s: dial error %v, want a refusal", name, err)
				continue
			}
			// The narrowest entry names the address; each entry's own
			// first address is named by it or by a narrower one inside.
			got, _ := special(ip)
			if !strings.Contains(err.Error(), got.name) || !r.prefix.Overlaps(got.prefix) {
				t.Errorf("%s: refused as %q", name, err)
			}
		}
	}
	if len(dialled) != 0 {
		t.Fatalf("special-purpose addresses reached the dialler: %v", dialled)
	}
}

// TestSpecialAddressesInDisguise: the addresses that stand for another
// one, with the address they embed, and the ordinary public addresses just
// outside the ranges, which stay allowed.
func TestSpecialAddressesInDisguise(t *testing.T) {
	g, _ := NewGuard(nil)
	for addr, want := range map[string]string{
		// NAT64: 169.254.169.254 through the well-known and the local-use
		// prefix (RFC 8215), at the /48 and the /96 embedding.
		"64:ff9b::a9fe:a9fe":        "64:ff9b::/96",
		"64:ff9b:1::a9fe:a9fe":      "64:ff9b:1::/48",
		"64:ff9b:1:a9fe:a9:fe00::":  "64:ff9b:1::/48",
		"64:ff9b:1:ffff:ffff::5db8": "64:ff9b:1::/48",
		// IPv4-compatible: 169.254.169.254 and 10.0.0.1.
		"::a9fe:a9fe": "::/96",
		"::a00:1":     "::/96",
		// Site-local.
		"fec0::1": "fec0::/10", "feff:ffff::1": "fec0::/10",
		// 6to4 with a private and the metadata IPv4 address in bits 16-47.
		"2002:a00:1::1": "2002::/16", "2002:a9fe:a9fe::1": "2002::/16", "2002:c0a8:101::": "2002::/16",
		// Teredo: server 10.0.0.1, client 10.0.0.1 and 169.254.169.254
		// (the client's address is stored inverted, RFC 4380 section 4).
		"2001:0:a00:1::f5ff:fffe": "2001::/32", "2001:0:a00:1::5601:5601": "2001::/32",
		// IPv4-mapped: judged as the IPv4 address.
		"::ffff:169.254.169.254": "169.254.0.0/16", "::ffff:10.1.2.3": "10.0.0.0/8",
		// Cloud metadata endpoints, in their ranges.
		"169.254.169.254": "169.254.0.0/16", "fd00:ec2::254": "fc00::/7", "100.100.100.200": "100.64.0.0/10",
		"fd00:c2b6:b24b:be67:2827:688d:e6a1:6a3b": "fc00::/7",
		// Outside 2000::/3 and in no row: reserved.
		"4000::1": "", "e000::1": "", "400::1": "",
	} {
		ip := netip.MustParseAddr(addr)
		r, ok := special(ip.Unmap())
		if !ok || g.allowedAddr(ip) || (want != "" && r.prefix.String() != want) || (want == "" && r.prefix.IsValid()) {
			t.Errorf("%s: special %v in %s (%s), allowed %v; want refused in %q", addr, ok, r.prefix, r.name, g.allowedAddr(ip), want)
		}
	}
	for _, addr := range []string{
		"93.184.216.34", "2606:4700::1111", "::ffff:93.184.216.34", "1.1.1.1", "9.255.255.255", "11.0.0.0",
		"100.63.255.255", "100.128.0.0", "172.15.255.255", "172.32.0.0", "192.0.1.0", "192.167.255.255",
		"192.169.0.0", "198.17.255.255", "198.20.0.0", "223.255.255.255", "2000::1", "3ffe:ffff::1",
		"2001:200::1", "2003::1", "2001:db9::1", "3fff:1000::1",
	} {
		if ip := netip.MustParseAddr(addr); !g.allowedAddr(ip) {
			r, _ := special(ip.Unmap())
			t.Errorf("%s: refused as %s (%s), but it is an ordinary public address", addr, r.prefix, r.name)
		}
	}
}

// TestSpecialRangesCoverTheStandardLibrary: whatever net/netip calls
// loopback, private, link-local, multicast or unspecified, the table
// refuses too, over the table's own boundaries and a spread of addresses.
func TestSpecialRangesCoverTheStandardLibrary(t *testing.T) {
	var probe []netip.Addr
	for _, r := range specialRanges {
		first, last := r.prefix.Masked().Addr(), lastAddr(r.prefix)
		probe = append(probe, first, last, first.Prev(), last.Next())
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		var b4 [4]byte
		var b16 [16]byte
		binary.BigEndian.PutUint32(b4[:], rng.Uint32())
		binary.BigEndian.PutUint64(b16[:8], rng.Uint64())
		binary.BigEndian.PutUint64(b16[8:], rng.Uint64())
		probe = append(probe, netip.AddrFrom4(b4), netip.AddrFrom16(b16))
	}
	for _, ip := range probe {
		if !ip.IsValid() {
			continue
		}
		ip = ip.Unmap()
		std := ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
			ip.IsMulticast() || ip.IsUnspecified() || ip.IsInterfaceLocalMulticast() || !ip.IsGlobalUnicast()
		if _, ok := special(ip); std && !ok {
			t.Errorf("%s: net/netip says it is not a public address, the table does not refuse it", ip)
		}
	}
}
