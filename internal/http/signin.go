package http

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/planserver/planserver/internal/http/signin"
)

// signInRoutes routes /auth/login, /auth/callback and /auth/logout
// (package signin) with this server's provider, sign-ins, rate limit and
// console.
func (s *Server) signInRoutes(r chi.Router) {
	f := &signin.Flow{OIDC: s.oidc, SignIns: s.signIns, Limited: s.signInLimited, ClientKey: clientKey,
		Console: uiPrefix, CSP: uiCSP, Log: s.log}
	f.Routes(r)
}

// signInAdmin serves the admin's routes of sign-ins (package signin).
func (s *Server) signInAdmin() *signin.Admin {
	return &signin.Admin{SignIns: s.signIns, Log: s.log}
}

// signInLimited takes one request of the client's rate limit for the
// sign-in routes, and answers 429 when none is left. The bucket is the
// one failed authentications of /v1 draw from: what this address does
// before anyone knows who it is.
func (s *Server) signInLimited(w http.ResponseWriter, r *http.Request) bool {
	return s.limited(w, r, "ip:"+clientKey(r))
}
