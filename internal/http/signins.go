package http

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/apierr"
	"github.com/planserver/planserver/internal/auth"
	"github.com/planserver/planserver/internal/http/request"
	"github.com/planserver/planserver/internal/http/response"
)

// The admin's routes of people's sign-ins (auth.SignIns): list them,
// read one, end one, or end all of one person's. Ending takes effect at
// once on every replica (the record is gone from the shared database),
// on open event streams (their re-check fails at this very commit) and
// on MCP calls (each one is authenticated anew).

func (s *Server) listSignIns(w http.ResponseWriter, r *http.Request) error {
	limit, err := pageSize(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	subject := q.Get("subject")
	if q.Has("subject") && subject == "" {
		return apierr.Invalid("subject", "is empty: name a provider subject, or leave subject out to list everyone's")
	}
	page, next, err := s.signIns.List(r.Context(), subject, limit, q.Get("page_token"))
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	response.JSON(w, http.StatusOK, api.SignInList{SignIns: page, NextPageToken: next})
	return nil
}

func (s *Server) getSignIn(w http.ResponseWriter, r *http.Request) error {
	out, err := s.signIns.Get(r.Context(), chi.URLParam(r, "id"))
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	response.JSON(w, http.StatusOK, out)
	return nil
}

// revokeSignIn ends one sign-in: 204, and 404 once it has ended (a
// sign-in is gone when it ends, unlike a revoked token).
func (s *Server) revokeSignIn(w http.ResponseWriter, r *http.Request) error {
	ended, err := s.signIns.Revoke(r.Context(), chi.URLParam(r, "id"))
	if err != nil {
		return err
	}
	s.logEnded(r, ended)
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// revokeSignInsOf ends every sign-in of the person ?subject= names and
// answers the ones it ended. Without subject it refuses: ending everyone
// at once is not what a missing parameter should mean.
func (s *Server) revokeSignInsOf(w http.ResponseWriter, r *http.Request) error {
	subject := r.URL.Query().Get("subject")
	if subject == "" {
		return apierr.Invalid("subject", "name the person whose sign-ins end: DELETE /v1/signins?subject=SUB "+
			"(GET /v1/signins lists them); one sign-in ends with DELETE /v1/signins/{id}")
	}
	ended, err := s.signIns.RevokeSubject(r.Context(), subject)
	if err != nil {
		return err
	}
	for _, g := range ended {
		s.logEnded(r, g)
	}
	response.JSON(w, http.StatusOK, api.SignInsEnded{SignIns: ended})
	return nil
}

// logEnded records who ended whose sign-in: the change makes no event
// (sign-ins are not in the event log), so the log line is its trace.
func (s *Server) logEnded(r *http.Request, g api.SignIn) {
	s.log.Info("sign-in ended", "signin", g.ID, "subject", g.Subject, "email", g.Email,
		"by", auth.PrincipalFrom(r.Context()).Name, "request_id", request.ID(r))
}
