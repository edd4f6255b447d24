// Package deliver sends webhook deliveries: one goroutine per
// subscription, in cursor order, signed per Standard Webhooks, through an
// HTTP client that dials only the addresses the Guard allows. It is the
// outbound transport of the webhooks package, whose store and rules it
// uses; nothing it does runs inside an API request or a write of one.
package deliver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"syscall"
	"time"
)

// Guard decides which addresses a delivery may connect to: public ones,
// and the private ones an operator allowed (--webhook-allow-hosts). It
// judges the address actually dialled, after name resolution, so a name
// that resolves (or is re-bound) to a private address is refused too.
type Guard struct {
	// hosts are allowed names (matched against the URL's host, any
	// address it resolves to); prefixes are allowed addresses and ranges.
	hosts    []string
	prefixes []netip.Prefix
	// OnDial, when set, is called with each address just before a
	// connection to it is attempted (tests prove with it that refused
	// addresses are never dialled).
	OnDial func(address string)
}

// ErrRefused is the error of a delivery to an address the guard refuses.
var ErrRefused = errors.New("refused")

// NewGuard returns a guard allowing the private targets in allow: host
// names, IP addresses, or CIDR ranges (10.0.0.0/8).
func NewGuard(allow []string) (*Guard, error) {
	g := &Guard{}
	for _, a := range allow {
		a = strings.TrimSpace(a)
		if a == "" {
			continue
		}
		if p, err := netip.ParsePrefix(a); err == nil {
			g.prefixes = append(g.prefixes, p.Masked())
			continue
		}
		if ip, err := netip.ParseAddr(strings.Trim(a, "[]")); err == nil {
			g.prefixes = append(g.prefixes, netip.PrefixFrom(ip.Unmap(), ip.Unmap().BitLen()))
			continue
		}
		if strings.ContainsAny(a, "/:@ ") {
			return nil, fmt.Errorf("--webhook-allow-hosts: %q is not a host name, an IP address or a CIDR range", a)
		}
		g.hosts = append(g.hosts, strings.ToLower(strings.TrimSuffix(a, ".")))
	}
	return g, nil
}

// metadata are cloud metadata endpoints, refused like private addresses
// (AWS's IPv6 one is in no special range).
var metadata = []netip.Addr{netip.MustParseAddr("169.254.169.254"), netip.MustParseAddr("fd00:ec2::254")}

// special is every range that is not the public internet.
var special = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"), netip.MustParsePrefix("100.64.0.0/10"), netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"), netip.MustParsePrefix("240.0.0.0/4"), netip.MustParsePrefix("64:ff9b::/96"),
}

// public reports whether ip is an ordinary public address.
func public(ip netip.Addr) bool {
	ip = ip.Unmap()
	if !ip.IsValid() || ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsMulticast() || ip.IsUnspecified() || ip.IsInterfaceLocalMulticast() {
		return false
	}
	for _, m := range metadata {
		if ip == m {
			return false
		}
	}
	for _, p := range special {
		if p.Contains(ip) {
			return false
		}
	}
	return true
}

// allowedAddr reports whether ip may be dialled for a URL whose host is
// not on the allow list by name.
func (g *Guard) allowedAddr(ip netip.Addr) bool {
	ip = ip.Unmap()
	for _, p := range g.prefixes {
		if p.Contains(ip) {
			return true
		}
	}
	return public(ip)
}

func (g *Guard) allowedHost(host string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	for _, h := range g.hosts {
		if h == host {
			return true
		}
	}
	return false
}

// refusal is the error of a refused address, saying what to do.
func refusal(host, addr string) error {
	return fmt.Errorf("%w: %s resolves to %s, a private, loopback, link-local or metadata address; "+
		"list it in --webhook-allow-hosts to deliver there: %w", ErrRefused, host, addr, errRefusedTarget)
}

var errRefusedTarget = errors.New("target not allowed")

// DialContext dials address (host:port) for the HTTP transport, checking
// every resolved address at connect time.
func (g *Guard) DialContext(timeout time.Duration) func(ctx context.Context, network, address string) (net.Conn, error) {
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(address)
		if err != nil {
			return nil, err
		}
		byName := g.allowedHost(host)
		// An address literal is judged before any socket exists.
		if ip, err := netip.ParseAddr(host); err == nil && !byName && !g.allowedAddr(ip) {
			return nil, refusal(host, ip.String())
		}
		d := net.Dialer{Timeout: timeout, Control: func(network, addr string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(addr)
			if err != nil {
				return fmt.Errorf("%w: unparseable address %q", ErrRefused, addr)
			}
			if !byName && !g.allowedAddr(ap.Addr()) {
				return refusal(host, ap.Addr().String())
			}
			if g.OnDial != nil {
				g.OnDial(addr)
			}
			return nil
		}}
		return d.DialContext(ctx, network, address)
	}
}
