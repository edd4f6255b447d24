package hosttest

import (
	"net"
	"net/http"
	"sync"
	"testing"
)

// Egress is a proxy that forwards nothing: a host run with HTTP_PROXY and
// HTTPS_PROXY pointed at it (and NO_PROXY naming loopback) sends every
// request it means for the outside world here instead, where it is
// recorded and refused at once. That is how a test learns, without a
// single packet leaving loopback, what a host tries to reach (telemetry,
// update checks, model catalogues), and why a host never waits on a
// network that is not there.
type Egress struct {
	URL string

	mu      sync.Mutex
	targets []string
}

// StartEgress serves the refusing proxy on a free loopback port until the
// test ends.
func StartEgress(t testing.TB) *Egress {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e := &Egress{URL: "http://" + ln.Addr().String()}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		target := r.Host // CONNECT host:port, or the absolute URL's host
		if r.Method != http.MethodConnect {
			target = r.Method + " " + r.URL.String()
		}
		e.mu.Lock()
		e.targets = append(e.targets, target)
		e.mu.Unlock()
		http.Error(w, "planserver tests: no traffic leaves loopback", http.StatusForbidden)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return e
}

// Targets returns what hosts tried to reach through the proxy so far.
func (e *Egress) Targets() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.targets...)
}

// Env is the environment that sends a host's outside traffic to the proxy
// and its loopback traffic (planserver, the scripted model) direct.
func (e *Egress) Env() []string {
	return []string{
		"HTTP_PROXY=" + e.URL, "HTTPS_PROXY=" + e.URL, "http_proxy=" + e.URL, "https_proxy=" + e.URL,
		"ALL_PROXY=" + e.URL, "all_proxy=" + e.URL,
		"NO_PROXY=127.0.0.1,localhost,::1", "no_proxy=127.0.0.1,localhost,::1",
	}
}
