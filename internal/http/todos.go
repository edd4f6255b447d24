package http

import (
	"net/http"

	"github.com/planserver/planserver/internal/sessions"
)

func (s *Server) putTodos(w http.ResponseWriter, r *http.Request) {
	id, err := sessionIDParam(r)
	if err != nil {
		writeProblem(w, r, err)
		return
	}
	var in sessions.TodosInput
	if err := s.decodeJSON(w, r, &in, decodeOptions{}); err != nil {
		writeProblem(w, r, err)
		return
	}
	pre, err := s.precondition(r, nil)
	if err != nil {
		writeProblem(w, r, err)
		return
	}
	list, err := s.sessions.PutTodos(r.Context(), id, in, pre)
	if err != nil {
		writeProblem(w, r, err)
		return
	}
	setETag(w, list.Revision)
	writeJSON(w, http.StatusOK, list)
}

func (s *Server) getTodos(w http.ResponseWriter, r *http.Request) {
	id, err := sessionIDParam(r)
	if err != nil {
		writeProblem(w, r, err)
		return
	}
	list, err := s.sessions.GetTodos(r.Context(), id)
	if err != nil {
		writeProblem(w, r, err)
		return
	}
	// A list never written has no revision to tag.
	if list.Revision > 0 {
		if answeredNotModified(w, r, list.Revision) {
			return
		}
		setETag(w, list.Revision)
	}
	writeJSON(w, http.StatusOK, list)
}
