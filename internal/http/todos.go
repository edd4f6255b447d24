package http

import (
	"net/http"

	"github.com/planserver/planserver/api"
)

func (s *Server) putTodos(w http.ResponseWriter, r *http.Request) error {
	id, err := sessionIDParam(r)
	if err != nil {
		return err
	}
	var in api.TodosWrite
	if err := s.decodeJSON(w, r, &in, decodeOptions{}); err != nil {
		return err
	}
	pre, err := s.precondition(r, nil)
	if err != nil {
		return err
	}
	list, err := s.sessions.PutTodos(r.Context(), id, in, pre)
	if err != nil {
		return err
	}
	setETag(w, list.Revision)
	writeJSON(w, http.StatusOK, list)
	return nil
}

func (s *Server) getTodos(w http.ResponseWriter, r *http.Request) error {
	id, err := sessionIDParam(r)
	if err != nil {
		return err
	}
	list, err := s.sessions.GetTodos(r.Context(), id)
	if err != nil {
		return err
	}
	// A list never written has no revision to tag.
	if list.Revision > 0 {
		if done, err := notModified(w, r, list.Revision); done || err != nil {
			return err
		}
		setETag(w, list.Revision)
	}
	writeJSON(w, http.StatusOK, list)
	return nil
}
