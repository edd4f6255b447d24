package http

import (
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/planserver/planserver/internal/apierr"
	"github.com/planserver/planserver/internal/http/request"
	"github.com/planserver/planserver/internal/http/response"
)

// A web page the user visits must not be able to drive a server on the
// user's own machine. Two middlewares see to it, before routing and
// authentication:
//
//   - hostGuard refuses a Host header this server does not answer to. With
//     --auth none that is any Host that is not a loopback name or address
//     (or one of --allowed-hosts): a DNS-rebinding page, whose own name now
//     resolves to 127.0.0.1, sends its own name as Host, and is refused
//     before it can read or write anything. With --auth token a page has
//     no credential to ride on, so the check is on only when
//     --allowed-hosts names the server's names.
//   - originGuard refuses a state-changing request (POST, PUT, PATCH,
//     DELETE) whose Origin is not the server's own or one of
//     --cors-origins, with or without CORS. A cross-origin page can send
//     such requests without asking anyone (a no-cors fetch or a form
//     post), it just cannot read the answer; browsers always send Origin
//     on them. Requests without Origin (curl, SDKs, agents) are untouched.
//
// Both answer 403 permission_denied.

// hostGuard is the Host check described above.
func (s *Server) hostGuard(next http.Handler) http.Handler {
	allowed := normalizeHosts(s.cfg.AllowedHosts)
	on := s.cfg.Auth != AuthToken || len(allowed) > 0
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !on || request.HostAllowed(r.Host, allowed) {
			next.ServeHTTP(w, r)
			return
		}
		response.Problem(w, r, apierr.New(apierr.PermissionDenied,
			"Host %q is not a name this server answers to: without tokens it answers to loopback names only "+
				"(localhost, 127.0.0.1, [::1]), so that a page on another site cannot reach it through DNS rebinding; "+
				"behind a proxy, list the names with --allowed-hosts (PLANSERVER_ALLOWED_HOSTS)", r.Host))
	})
}

// originGuard is the Origin check described above.
func (s *Server) originGuard(next http.Handler) http.Handler {
	cors := map[string]bool{}
	for _, o := range s.cfg.CORSOrigins {
		cors[strings.ToLower(o)] = true
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origins := r.Header.Values("Origin")
		if len(origins) == 0 || !stateChanging(r.Method) ||
			(len(origins) == 1 && originAllowed(origins[0], r.Host, cors)) {
			next.ServeHTTP(w, r)
			return
		}
		response.Problem(w, r, apierr.New(apierr.PermissionDenied,
			"Origin %q may not change anything here: a state-changing request from a browser must come from this "+
				"server's own origin or one listed in --cors-origins", strings.Join(origins, ", ")))
	})
}

// stateChanging reports whether method may change state: everything but
// the safe methods of RFC 9110.
func stateChanging(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return false
	}
	return true
}

// originAllowed reports whether a browser's Origin header is the server's
// own origin (the Host the request was sent to, whatever the scheme: only
// this server answers on that host and port) or a configured CORS origin.
// "null" (sandboxed frames, file: pages) and anything unparsable never is.
func originAllowed(origin, host string, cors map[string]bool) bool {
	origin = strings.ToLower(strings.TrimSpace(origin))
	if cors[origin] {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
		u.Path != "" || u.RawQuery != "" || u.User != nil {
		return false
	}
	defaultPort := map[string]string{"http": ":80", "https": ":443"}[u.Scheme]
	return strings.TrimSuffix(u.Host, defaultPort) == strings.TrimSuffix(strings.ToLower(host), defaultPort)
}

// normalizeHosts turns --allowed-hosts entries into the set request.HostAllowed
// looks up: an entry without a port allows its name on any port, one with
// a port only that port.
func normalizeHosts(hosts []string) map[string]bool {
	out := map[string]bool{}
	for _, h := range hosts {
		h = strings.ToLower(strings.TrimSpace(h))
		if _, _, err := net.SplitHostPort(h); err != nil {
			h = strings.Trim(h, "[]") // an IPv6 address without a port
		}
		if h != "" {
			out[strings.TrimSuffix(h, ".")] = true
		}
	}
	return out
}
