package http

import (
	"net/http"

	"github.com/planserver/planserver/internal/sessions"
)

func (s *Server) putSessionPlan(w http.ResponseWriter, r *http.Request) {
	id, err := sessionIDParam(r)
	if err != nil {
		writeProblem(w, r, err)
		return
	}
	mt, err := requireMediaType(r, mediaJSON, mediaMarkdown)
	if err != nil {
		writeProblem(w, r, err)
		return
	}
	body, err := readBody(w, r, s.planBodyLimit())
	if err != nil {
		writeProblem(w, r, err)
		return
	}
	var in sessions.PlanInput
	if mt == mediaMarkdown {
		in.Content = string(body)
	} else if err := decodeJSONBytes(body, &in, false); err != nil {
		writeProblem(w, r, err)
		return
	}
	pre, err := s.precondition(r, nil)
	if err != nil {
		writeProblem(w, r, err)
		return
	}
	plan, created, err := s.sessions.PutPlan(r.Context(), id, in, s.cfg.MaxPlanBytes, pre)
	if err != nil {
		writeProblem(w, r, err)
		return
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
		w.Header().Set("Location", "/v1/sessions/"+id+"/plan")
	}
	setETag(w, plan.Revision)
	writeJSON(w, status, plan)
}

func (s *Server) getSessionPlan(w http.ResponseWriter, r *http.Request) {
	id, err := sessionIDParam(r)
	if err != nil {
		writeProblem(w, r, err)
		return
	}
	w.Header().Set("Vary", "Accept")
	mt, err := negotiate(r, mediaJSON, mediaMarkdown)
	if err != nil {
		writeProblem(w, r, err)
		return
	}
	plan, err := s.sessions.GetPlan(r.Context(), id)
	if err != nil {
		writeProblem(w, r, err)
		return
	}
	if answeredNotModified(w, r, plan.Revision) {
		return
	}
	setETag(w, plan.Revision)
	if mt == mediaMarkdown {
		writeMarkdown(w, plan.Content)
		return
	}
	writeJSON(w, http.StatusOK, plan)
}

// The review actions answer the session (whose review object changed)
// without an ETag: their If-Match names the plan revision, and the
// session's own ETag comes with GET /v1/sessions/{id}.

func (s *Server) requestPlanReview(w http.ResponseWriter, r *http.Request) {
	id, err := sessionIDParam(r)
	if err != nil {
		writeProblem(w, r, err)
		return
	}
	var in sessions.ReviewRequest
	if err := s.decodeJSON(w, r, &in, decodeOptions{allowEmpty: true}); err != nil {
		writeProblem(w, r, err)
		return
	}
	pre, err := s.precondition(r, nil)
	if err != nil {
		writeProblem(w, r, err)
		return
	}
	sess, err := s.sessions.RequestReview(r.Context(), id, in, pre)
	if err != nil {
		writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, sess)
}

func (s *Server) approvePlan(w http.ResponseWriter, r *http.Request) {
	id, err := sessionIDParam(r)
	if err != nil {
		writeProblem(w, r, err)
		return
	}
	var none struct{}
	if err := s.decodeJSON(w, r, &none, decodeOptions{allowEmpty: true}); err != nil {
		writeProblem(w, r, err)
		return
	}
	pre, err := s.precondition(r, nil)
	if err != nil {
		writeProblem(w, r, err)
		return
	}
	approval, err := s.sessions.Approve(r.Context(), id, pre)
	if err != nil {
		writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, approval)
}

func (s *Server) rejectPlan(w http.ResponseWriter, r *http.Request) {
	id, err := sessionIDParam(r)
	if err != nil {
		writeProblem(w, r, err)
		return
	}
	var in sessions.ReviewRejection
	if err := s.decodeJSON(w, r, &in, decodeOptions{allowEmpty: true}); err != nil {
		writeProblem(w, r, err)
		return
	}
	pre, err := s.precondition(r, nil)
	if err != nil {
		writeProblem(w, r, err)
		return
	}
	sess, err := s.sessions.Reject(r.Context(), id, in, pre)
	if err != nil {
		writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, sess)
}
