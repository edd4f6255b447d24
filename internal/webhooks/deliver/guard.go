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
	// connection to it is attempted; an error stops that connection before
	// it is made. Tests prove with it that refused addresses are never
	// dialled, and stop any dial off the machine, so that a guard that
	// failed to refuse still sends nothing.
	OnDial func(address string) error
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

// public reports whether ip is an ordinary public address: in no range of
// specialRanges (special.go), which holds the cloud metadata endpoints
// too (169.254.169.254 is link-local, AWS's fd00:ec2::254 unique-local).
func public(ip netip.Addr) bool {
	ip = ip.Unmap()
	if !ip.IsValid() || ip.Zone() != "" {
		return false // a zone only ever names a link-local scope
	}
	_, isSpecial := special(ip)
	return !isSpecial
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

// refusal is the error of a refused address: which special range it is in,
// and what to do.
func refusal(host string, ip netip.Addr) error {
	what := "a private, loopback, link-local or metadata address"
	if r, ok := special(ip.Unmap()); ok {
		what = r.name
		if r.prefix.IsValid() {
			what = r.prefix.String() + ", " + r.name
		}
	}
	return fmt.Errorf("%w: %s resolves to %s, which is not the public internet (%s); "+
		"list it in --webhook-allow-hosts to deliver there: %w", ErrRefused, host, ip, what, errRefusedTarget)
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
			return nil, refusal(host, ip)
		}
		d := net.Dialer{Timeout: timeout, Control: func(network, addr string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(addr)
			if err != nil {
				return fmt.Errorf("%w: unparseable address %q", ErrRefused, addr)
			}
			if !byName && !g.allowedAddr(ap.Addr()) {
				return refusal(host, ap.Addr())
			}
			if g.OnDial != nil {
				return g.OnDial(addr)
			}
			return nil
		}}
		return d.DialContext(ctx, network, address)
	}
}
