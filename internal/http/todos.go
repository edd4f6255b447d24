package http

import (
	"net/http"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/http/request"
	"github.com/planserver/planserver/internal/http/response"
)

func (s *Server) putTodos(w http.ResponseWriter, r *http.Request) error {
	id, err := request.SessionID(r)
	if err != nil {
		return err
	}
	var in api.TodosWrite
	if err := request.DecodeJSON(w, r, &in, s.cfg.MaxBodyBytes, request.DecodeOptions{}); err != nil {
		return err
	}
	pre, err := request.Precondition(r, nil, s.cfg.RequirePreconditions)
	if err != nil {
		return err
	}
	list, err := s.sessions.PutTodos(r.Context(), id, in, pre)
	if err != nil {
		return err
	}
	response.SetETag(w, list.Revision)
	response.JSON(w, http.StatusOK, list)
	return nil
}

func (s *Server) getTodos(w http.ResponseWriter, r *http.Request) error {
	id, err := request.SessionID(r)
	if err != nil {
		return err
	}
	list, err := s.sessions.GetTodos(r.Context(), id)
	if err != nil {
		return err
	}
	// A list never written has no revision to tag.
	if list.Revision > 0 {
		if done, err := response.NotModified(w, r, list.Revision); done || err != nil {
			return err
		}
		response.SetETag(w, list.Revision)
	}
	response.JSON(w, http.StatusOK, list)
	return nil
}
