package signin

import (
	"log/slog"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/apierr"
	"github.com/planserver/planserver/internal/auth"
	"github.com/planserver/planserver/internal/http/request"
	"github.com/planserver/planserver/internal/http/response"
)

// Admin serves the admin's routes of people's sign-ins (auth.SignIns):
// list them, read one, end one, or end all of one person's. Ending takes
// effect at once on every replica (the record is gone from the shared
// database), on open event streams (their re-check fails at this very
// commit) and on MCP calls (each one is authenticated anew). Its methods
// are the server's handlers: they return the error to answer.
type Admin struct {
	SignIns *auth.SignIns
	Log     *slog.Logger
}

// List answers GET /v1/signins.
func (a *Admin) List(w http.ResponseWriter, r *http.Request) error {
	limit, err := request.PageSize(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	subject := q.Get("subject")
	if q.Has("subject") && subject == "" {
		return apierr.Invalid("subject", "is empty: name a provider subject, or leave subject out to list everyone's")
	}
	page, next, err := a.SignIns.List(r.Context(), subject, limit, q.Get("page_token"))
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	response.JSON(w, http.StatusOK, api.SignInList{SignIns: page, NextPageToken: next})
	return nil
}

// Get answers GET /v1/signins/{id}.
func (a *Admin) Get(w http.ResponseWriter, r *http.Request) error {
	out, err := a.SignIns.Get(r.Context(), chi.URLParam(r, "id"))
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	response.JSON(w, http.StatusOK, out)
	return nil
}

// Revoke ends one sign-in: 204, and 404 once it has ended (a sign-in is
// gone when it ends, unlike a revoked token).
func (a *Admin) Revoke(w http.ResponseWriter, r *http.Request) error {
	ended, err := a.SignIns.Revoke(r.Context(), chi.URLParam(r, "id"))
	if err != nil {
		return err
	}
	a.logEnded(r, ended)
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// RevokeSubject ends every sign-in of the person ?subject= names and
// answers the ones it ended. Without subject it refuses: ending everyone
// at once is not what a missing parameter should mean.
func (a *Admin) RevokeSubject(w http.ResponseWriter, r *http.Request) error {
	subject := r.URL.Query().Get("subject")
	if subject == "" {
		return apierr.Invalid("subject", "name the person whose sign-ins end: DELETE /v1/signins?subject=SUB "+
			"(GET /v1/signins lists them); one sign-in ends with DELETE /v1/signins/{id}")
	}
	ended, err := a.SignIns.RevokeSubject(r.Context(), subject)
	if err != nil {
		return err
	}
	for _, g := range ended {
		a.logEnded(r, g)
	}
	response.JSON(w, http.StatusOK, api.SignInsEnded{SignIns: ended})
	return nil
}

// logEnded records who ended whose sign-in: the change makes no event
// (sign-ins are not in the event log), so the log line is its trace.
func (a *Admin) logEnded(r *http.Request, g api.SignIn) {
	a.Log.Info("sign-in ended", "signin", g.ID, "subject", g.Subject, "email", g.Email,
		"by", auth.PrincipalFrom(r.Context()).Name, "request_id", request.ID(r))
}
