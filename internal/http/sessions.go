package http

import (
	"net/http"
	"strconv"

	"github.com/planserver/planserver/internal/apierr"
	"github.com/planserver/planserver/internal/auth"
	"github.com/planserver/planserver/internal/sessions"
)

// writeSession answers one session with its ETag.
func writeSession(w http.ResponseWriter, status int, s *sessions.Session) {
	setETag(w, s.Revision)
	writeJSON(w, status, s)
}

func (s *Server) createSession(w http.ResponseWriter, r *http.Request) {
	var in sessions.CreateInput
	if err := s.decodeJSON(w, r, &in, decodeOptions{allowEmpty: true}); err != nil {
		writeProblem(w, r, err)
		return
	}
	if err := s.allow(r, createAction(in), in.ParentID, sessions.UnknownParent(in.ParentID)); err != nil {
		writeProblem(w, r, err)
		return
	}
	sess, err := s.sessions.Create(r.Context(), in)
	if err != nil {
		writeProblem(w, r, err)
		return
	}
	w.Header().Set("Location", "/v1/sessions/"+sess.ID)
	writeSession(w, http.StatusCreated, sess)
}

// createAction is what creating in asks for: a root session and a harness
// session (whose tools cannot be gated) are not an agent's to create; an
// ordinary child needs its parent in the caller's scope.
func createAction(in sessions.CreateInput) auth.Action {
	switch {
	case in.ParentID == "":
		return auth.CreateRootSession
	case in.Harness:
		return auth.CreateHarnessSession
	}
	return auth.CreateSession
}

func (s *Server) getSession(w http.ResponseWriter, r *http.Request) {
	id, err := sessionIDParam(r)
	if err != nil {
		writeProblem(w, r, err)
		return
	}
	sess, err := s.sessions.Get(r.Context(), id)
	if err != nil {
		writeProblem(w, r, err)
		return
	}
	if answeredNotModified(w, r, sess.Revision) {
		return
	}
	writeSession(w, http.StatusOK, sess)
}

// pageSize parses the limit query parameter; 0 when absent.
func pageSize(r *http.Request) (int, error) {
	v := r.URL.Query().Get("limit")
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, apierr.Invalid("limit", "must be a whole number from 1 to 1000, got %q", v)
	}
	return n, nil
}

type sessionList struct {
	Sessions      []*sessions.Session `json:"sessions"`
	NextPageToken string              `json:"next_page_token"`
}

func (s *Server) listSessions(w http.ResponseWriter, r *http.Request) {
	limit, err := pageSize(r)
	if err != nil {
		writeProblem(w, r, err)
		return
	}
	q := r.URL.Query()
	page, next, err := s.sessions.List(r.Context(), sessions.ListQuery{
		// An agent sees its session and its descendants, whatever the
		// filters; a parent_id outside them gives an empty page.
		Subtree:   auth.PrincipalFrom(r.Context()).SessionID,
		ParentID:  q.Get("parent_id"),
		Mode:      q.Get("mode"),
		Limit:     limit,
		PageToken: q.Get("page_token"),
	})
	if err != nil {
		writeProblem(w, r, err)
		return
	}
	if page == nil {
		page = []*sessions.Session{}
	}
	writeJSON(w, http.StatusOK, sessionList{Sessions: page, NextPageToken: next})
}

func (s *Server) patchSession(w http.ResponseWriter, r *http.Request) {
	id, err := sessionIDParam(r)
	if err != nil {
		writeProblem(w, r, err)
		return
	}
	var patch sessions.Patch
	if err := s.decodeJSON(w, r, &patch, decodeOptions{
		mediaTypes: []string{"application/merge-patch+json", "application/json"},
	}); err != nil {
		writeProblem(w, r, err)
		return
	}
	pre, err := s.precondition(r, nil)
	if err != nil {
		writeProblem(w, r, err)
		return
	}
	sess, err := s.sessions.Update(r.Context(), id, patch, pre)
	if err != nil {
		writeProblem(w, r, err)
		return
	}
	writeSession(w, http.StatusOK, sess)
}

// modeRequest is the body of PATCH /v1/sessions/{id}/mode.
type modeRequest struct {
	Mode string `json:"mode" validate:"required"`
}

func (s *Server) setSessionMode(w http.ResponseWriter, r *http.Request) {
	id, err := sessionIDParam(r)
	if err != nil {
		writeProblem(w, r, err)
		return
	}
	var req modeRequest
	if err := s.decodeJSON(w, r, &req, decodeOptions{
		mediaTypes: []string{"application/json", "application/merge-patch+json"},
	}); err != nil {
		writeProblem(w, r, err)
		return
	}
	mode, err := sessions.ParseMode("mode", req.Mode)
	if err != nil {
		writeProblem(w, r, err)
		return
	}
	// Entering plan mode was checked with the route; leaving it is a
	// different, human-only action.
	if mode == sessions.Build {
		if err := s.allow(r, auth.LeavePlanMode, id, sessions.NotFound(id)); err != nil {
			writeProblem(w, r, err)
			return
		}
	}
	pre, err := s.precondition(r, nil)
	if err != nil {
		writeProblem(w, r, err)
		return
	}
	sess, err := s.sessions.SetMode(r.Context(), id, mode, pre)
	if err != nil {
		writeProblem(w, r, err)
		return
	}
	writeSession(w, http.StatusOK, sess)
}

func (s *Server) deleteSession(w http.ResponseWriter, r *http.Request) {
	id, err := sessionIDParam(r)
	if err != nil {
		writeProblem(w, r, err)
		return
	}
	pre, err := s.precondition(r, nil)
	if err != nil {
		writeProblem(w, r, err)
		return
	}
	if err := s.sessions.Delete(r.Context(), id, pre); err != nil {
		writeProblem(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
