package signin

import (
	"net/http"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/auth"
	"github.com/planserver/planserver/internal/http/response"
)

// Me answers GET /v1/me: who the caller is, for a sign-in cookie and a
// bearer token alike. A signed-in person also gets the CSRF token their
// state-changing requests must carry.
func Me(w http.ResponseWriter, r *http.Request) error {
	p := auth.PrincipalFrom(r.Context())
	out := api.Me{Kind: p.Kind(), Subject: p.Name, Name: p.Name, Role: string(p.Role)}
	if p.SessionID != "" {
		id := p.SessionID
		out.SessionID = &id
	}
	if p.Person != nil {
		out.Subject, out.Email, out.Name = p.Person.Subject, p.Person.Email, p.Person.Name
		csrf := p.CSRF
		out.CSRFToken = &csrf
		if p.ExpiresAt != "" {
			exp := p.ExpiresAt
			out.ExpiresAt = &exp
		}
		if p.SignInID != "" {
			id := p.SignInID
			out.SignInID = &id
		}
	}
	// The CSRF token is a secret of this browser's sign-in.
	w.Header().Set("Cache-Control", "no-store")
	response.JSON(w, http.StatusOK, out)
	return nil
}
