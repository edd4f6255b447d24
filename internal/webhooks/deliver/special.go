package deliver

import "net/netip"

// specialRange is one entry of the address ranges a webhook is never
// delivered to unless an operator allows it: where it comes from, and why
// it is not the public internet.
type specialRange struct {
	prefix netip.Prefix
	name   string
	// source is the registry (or RFC) the entry is taken from.
	source string
}

func sr(prefix, name, source string) specialRange {
	return specialRange{prefix: netip.MustParsePrefix(prefix), name: name, source: source}
}

// The registries the table is taken from (as published in 2025).
const (
	ianaV4     = "IANA IPv4 Special-Purpose Address Registry"
	ianaV6     = "IANA IPv6 Special-Purpose Address Registry"
	ianaV4Mcst = "IANA IPv4 Multicast Address Space Registry"
	ianaV6Addr = "IANA IPv6 Address Space registry"
)

// specialRanges is every entry of IANA's special-purpose address
// registries, IPv4 and IPv6, and the ranges of the address-space registries
// that are not global unicast (multicast, the deprecated IPv4-compatible and
// site-local forms). Every address in them is refused, also the entries
// IANA marks globally reachable (the AS112, AMT, PCP and TURN anycast
// services, ORCHIDv2, DETs): no webhook receiver lives there, and refusing
// a whole registry is a rule that can be checked entry by entry.
//
// An address that stands for another one is refused with its whole range,
// whatever it embeds: what a NAT64 prefix, a 6to4 or Teredo address or an
// IPv4-compatible address reaches depends on a gateway or a tunnel this
// server cannot see (the local-use NAT64 prefix may embed the IPv4 address
// at any of RFC 6052's positions), so its embedded address cannot be
// judged. Only IPv4-mapped addresses (::ffff:0:0/96) are judged as the
// IPv4 address they embed, because the kernel dials exactly that address.
//
// TestSpecialRangesEachRefused holds every entry to it, and
// TestSpecialRangesCoverTheStandardLibrary holds the table to everything
// net/netip calls loopback, private, link-local, multicast or unspecified.
var specialRanges = []specialRange{
	// IPv4 special-purpose registry.
	sr("0.0.0.0/8", `"This network" (RFC 791)`, ianaV4),
	sr("0.0.0.0/32", `"This host on this network" (RFC 1122)`, ianaV4),
	sr("10.0.0.0/8", "Private-Use (RFC 1918)", ianaV4),
	sr("100.64.0.0/10", "Shared Address Space, carrier-grade NAT (RFC 6598)", ianaV4),
	sr("127.0.0.0/8", "Loopback (RFC 1122)", ianaV4),
	sr("169.254.0.0/16", "Link Local, cloud metadata (RFC 3927)", ianaV4),
	sr("172.16.0.0/12", "Private-Use (RFC 1918)", ianaV4),
	sr("192.0.0.0/24", "IETF Protocol Assignments (RFC 6890)", ianaV4),
	sr("192.0.0.0/29", "IPv4 Service Continuity Prefix, DS-Lite (RFC 7335)", ianaV4),
	sr("192.0.0.8/32", "IPv4 dummy address (RFC 7600)", ianaV4),
	sr("192.0.0.9/32", "Port Control Protocol Anycast (RFC 7723)", ianaV4),
	sr("192.0.0.10/32", "Traversal Using Relays around NAT Anycast (RFC 8155)", ianaV4),
	sr("192.0.0.170/32", "NAT64/DNS64 Discovery (RFC 8880, RFC 7050)", ianaV4),
	sr("192.0.0.171/32", "NAT64/DNS64 Discovery (RFC 8880, RFC 7050)", ianaV4),
	sr("192.0.2.0/24", "Documentation, TEST-NET-1 (RFC 5737)", ianaV4),
	sr("192.31.196.0/24", "AS112-v4 (RFC 7535)", ianaV4),
	sr("192.52.193.0/24", "AMT (RFC 7450)", ianaV4),
	sr("192.88.99.0/24", "Deprecated 6to4 Relay Anycast (RFC 7526)", ianaV4),
	sr("192.168.0.0/16", "Private-Use (RFC 1918)", ianaV4),
	sr("192.175.48.0/24", "Direct Delegation AS112 Service (RFC 7534)", ianaV4),
	sr("198.18.0.0/15", "Benchmarking (RFC 2544)", ianaV4),
	sr("198.51.100.0/24", "Documentation, TEST-NET-2 (RFC 5737)", ianaV4),
	sr("203.0.113.0/24", "Documentation, TEST-NET-3 (RFC 5737)", ianaV4),
	sr("240.0.0.0/4", "Reserved (RFC 1112)", ianaV4),
	sr("255.255.255.255/32", "Limited Broadcast (RFC 8190, RFC 919)", ianaV4),
	// IPv4 multicast.
	sr("224.0.0.0/4", "Multicast (RFC 5771)", ianaV4Mcst),

	// IPv6 special-purpose registry.
	sr("::1/128", "Loopback Address (RFC 4291)", ianaV6),
	sr("::/128", "Unspecified Address (RFC 4291)", ianaV6),
	// ::ffff:0:0/96, IPv4-mapped (RFC 4291), is judged as its IPv4
	// address (public unmaps it first), so it has no row of its own.
	sr("64:ff9b::/96", "IPv4-IPv6 Translation, NAT64 well-known prefix (RFC 6052)", ianaV6),
	sr("64:ff9b:1::/48", "IPv4-IPv6 Translation, NAT64 local-use prefix (RFC 8215)", ianaV6),
	sr("100::/64", "Discard-Only Address Block (RFC 6666)", ianaV6),
	sr("100:0:0:1::/64", "Dummy IPv6 Prefix (RFC 9780)", ianaV6),
	sr("2001::/23", "IETF Protocol Assignments (RFC 2928)", ianaV6),
	sr("2001::/32", "TEREDO (RFC 4380, RFC 8190)", ianaV6),
	sr("2001:1::1/128", "Port Control Protocol Anycast (RFC 7723)", ianaV6),
	sr("2001:1::2/128", "Traversal Using Relays around NAT Anycast (RFC 8155)", ianaV6),
	sr("2001:1::3/128", "DNS-SD Service Registration Protocol Anycast (RFC 9665)", ianaV6),
	sr("2001:2::/48", "Benchmarking (RFC 5180)", ianaV6),
	sr("2001:3::/32", "AMT (RFC 7450)", ianaV6),
	sr("2001:4:112::/48", "AS112-v6 (RFC 7535)", ianaV6),
	sr("2001:10::/28", "Deprecated, previously ORCHID (RFC 4843)", ianaV6),
	sr("2001:20::/28", "ORCHIDv2 (RFC 7343)", ianaV6),
	sr("2001:30::/28", "Drone Remote ID Protocol Entity Tags (RFC 9374)", ianaV6),
	sr("2001:db8::/32", "Documentation (RFC 3849)", ianaV6),
	sr("2002::/16", "6to4 (RFC 3056)", ianaV6),
	sr("2620:4f:8000::/48", "Direct Delegation AS112 Service (RFC 7534)", ianaV6),
	sr("3fff::/20", "Documentation (RFC 9637)", ianaV6),
	sr("5f00::/16", "Segment Routing (SRv6) SIDs (RFC 9602)", ianaV6),
	sr("fc00::/7", "Unique-Local, cloud metadata (RFC 4193)", ianaV6),
	sr("fe80::/10", "Link-Local Unicast (RFC 4291)", ianaV6),
	// IPv6 address space: what is not global unicast.
	sr("::/96", "IPv4-compatible, deprecated (RFC 4291 section 2.5.5.1)", ianaV6Addr),
	sr("fec0::/10", "Site-local, deprecated (RFC 3879)", ianaV6Addr),
	sr("ff00::/8", "Multicast (RFC 4291)", ianaV6Addr),
}

// globalUnicast is the only IPv6 space IANA has allocated for global
// unicast (RFC 4291, IPv6 Address Space registry): an IPv6 address outside
// it is reserved, special or multicast, never a webhook receiver, so it is
// refused even where no row above names it.
var globalUnicast = netip.MustParsePrefix("2000::/3")

// special returns the range ip (unmapped) falls in, and false for an
// ordinary public address. The range of an IPv6 address outside
// globalUnicast that no row names has no prefix.
func special(ip netip.Addr) (specialRange, bool) {
	var found specialRange
	ok := false
	for _, r := range specialRanges {
		// The narrowest entry names the address best (2001::/32 over
		// 2001::/23).
		if r.prefix.Contains(ip) && (!ok || r.prefix.Bits() > found.prefix.Bits()) {
			found, ok = r, true
		}
	}
	if !ok && ip.Is6() && !globalUnicast.Contains(ip) {
		return specialRange{name: "outside 2000::/3, the IPv6 global unicast space (RFC 4291)", source: ianaV6Addr}, true
	}
	return found, ok
}
