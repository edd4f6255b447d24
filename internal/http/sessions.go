package http

import (
	"net/http"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/apierr"
	"github.com/planserver/planserver/internal/auth"
	"github.com/planserver/planserver/internal/http/request"
	"github.com/planserver/planserver/internal/http/response"
	"github.com/planserver/planserver/internal/sessions"
)

// writeSession answers one session with its ETag.
func writeSession(w http.ResponseWriter, status int, s *sessions.Session) {
	response.SetETag(w, s.Revision)
	response.JSON(w, status, s)
}

func (s *Server) createSession(w http.ResponseWriter, r *http.Request) error {
	var in api.SessionCreate
	if err := request.DecodeJSON(w, r, &in, s.cfg.MaxBodyBytes, request.DecodeOptions{AllowEmpty: true}); err != nil {
		return err
	}
	if err := s.authz.Authorize(r.Context(), createAction(in), in.ParentID, sessions.UnknownParent(in.ParentID)); err != nil {
		return err
	}
	sess, err := s.sessions.Create(r.Context(), in)
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/v1/sessions/"+sess.ID)
	writeSession(w, http.StatusCreated, sess)
	return nil
}

// createAction is what creating in asks for: a root session, a harness
// session (whose tools cannot be gated) and a session with a chosen id are
// not an agent's to create; an ordinary child needs its parent in the
// caller's scope.
func createAction(in api.SessionCreate) auth.Action {
	switch {
	case in.ParentID == "":
		return auth.CreateRootSession
	case in.Harness:
		return auth.CreateHarnessSession
	case in.ID != nil:
		return auth.NameSession
	}
	return auth.CreateSession
}

func (s *Server) getSession(w http.ResponseWriter, r *http.Request) error {
	id, err := request.SessionID(r)
	if err != nil {
		return err
	}
	rev, body, err := s.answers.Answer(r.Context(), "session "+id, func() (response.Loaded, error) {
		sess, err := s.sessions.Get(r.Context(), id)
		if err != nil {
			return response.Loaded{}, err
		}
		return response.Loaded{Revision: sess.Revision, Value: sess}, nil
	})

	if err != nil {
		return err
	}
	if done, err := response.NotModified(w, r, rev); done || err != nil {
		return err
	}
	response.SetETag(w, rev)
	response.JSONBody(w, http.StatusOK, body)
	return nil
}

func (s *Server) listSessions(w http.ResponseWriter, r *http.Request) error {
	limit, err := request.PageSize(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	parent := q.Get("parent_id")
	if alias := q.Get("parent"); alias != "" {
		// The host hooks' spelling (api/openapi.yaml: ?parent=&external_id=).
		if parent != "" && parent != alias {
			return apierr.Invalid("parent", "names %q while parent_id names %q; send one", alias, parent)
		}
		parent = alias
	}
	page, next, err := s.sessions.List(r.Context(), sessions.ListQuery{
		// An agent sees its session and its descendants, whatever the
		// filters; a parent_id outside them gives an empty page.
		Subtree:     auth.PrincipalFrom(r.Context()).SessionPath,
		ParentID:    parent,
		Mode:        q.Get("mode"),
		ReviewState: q.Get("review_state"),
		ExternalID:  q.Get("external_id"),
		Limit:       limit,
		PageToken:   q.Get("page_token"),
	})
	if err != nil {
		return err
	}
	if page == nil {
		page = []*sessions.Session{}
	}
	response.JSON(w, http.StatusOK, api.SessionList{Sessions: page, NextPageToken: next})
	return nil
}

func (s *Server) patchSession(w http.ResponseWriter, r *http.Request) error {
	id, err := request.SessionID(r)
	if err != nil {
		return err
	}
	var patch sessions.Patch
	if err := request.DecodeJSON(w, r, &patch, s.cfg.MaxBodyBytes, request.DecodeOptions{
		MediaTypes: []string{"application/merge-patch+json", "application/json"},
	}); err != nil {
		return err
	}
	pre, err := request.Precondition(r, nil, s.cfg.RequirePreconditions)
	if err != nil {
		return err
	}
	sess, err := s.sessions.Update(r.Context(), id, patch, pre)
	if err != nil {
		return err
	}
	writeSession(w, http.StatusOK, sess)
	return nil
}

func (s *Server) setSessionMode(w http.ResponseWriter, r *http.Request) error {
	id, err := request.SessionID(r)
	if err != nil {
		return err
	}
	var req api.ModeChange
	if err := request.DecodeJSON(w, r, &req, s.cfg.MaxBodyBytes, request.DecodeOptions{
		MediaTypes: []string{"application/json", "application/merge-patch+json"},
	}); err != nil {
		return err
	}
	mode, err := sessions.ParseMode("mode", req.Mode)
	if err != nil {
		return err
	}
	// Entering plan mode was checked with the route; leaving it is a
	// different, human-only action.
	if mode == sessions.Build {
		if err := s.authz.Authorize(r.Context(), auth.LeavePlanMode, id, sessions.NotFound(id)); err != nil {
			return err
		}
	}
	pre, err := request.Precondition(r, nil, s.cfg.RequirePreconditions)
	if err != nil {
		return err
	}
	mayLift := false
	if mode == sessions.Build {
		if mayLift, err = s.authz.May(r.Context(), auth.LiftScope, id); err != nil {
			return err
		}
	}
	sess, err := s.sessions.SetMode(r.Context(), id, mode, pre, mayLift)
	if err != nil {
		return err
	}
	writeSession(w, http.StatusOK, sess)
	return nil
}

func (s *Server) deleteSession(w http.ResponseWriter, r *http.Request) error {
	id, err := request.SessionID(r)
	if err != nil {
		return err
	}
	pre, err := request.Precondition(r, nil, s.cfg.RequirePreconditions)
	if err != nil {
		return err
	}
	if err := s.sessions.Delete(r.Context(), id, pre); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
