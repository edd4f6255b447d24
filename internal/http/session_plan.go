package http

import (
	"context"
	"net/http"

	"github.com/planserver/planserver/internal/revision"
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

// reviewAction is the handler of each review action: an optional JSON body
// of type In, the If-Match naming the plan revision, the store call. The
// answer is the session (whose review object changed) without an ETag:
// the If-Match names the plan's revision, and the session's own ETag comes
// with GET /v1/sessions/{id}.
func reviewAction[In, Out any](s *Server, act func(ctx context.Context, id string, in In, pre revision.Precondition) (Out, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, err := sessionIDParam(r)
		if err != nil {
			writeProblem(w, r, err)
			return
		}
		var in In
		if err := s.decodeJSON(w, r, &in, decodeOptions{allowEmpty: true}); err != nil {
			writeProblem(w, r, err)
			return
		}
		pre, err := s.precondition(r, nil)
		if err != nil {
			writeProblem(w, r, err)
			return
		}
		out, err := act(r.Context(), id, in, pre)
		if err != nil {
			writeProblem(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, out)
	}
}

// requestPlanReview is exit_plan_mode.
func (s *Server) requestPlanReview(w http.ResponseWriter, r *http.Request) {
	reviewAction(s, s.sessions.RequestReview)(w, r)
}

// approvePlan is the human's approval of the plan revision they read; it
// takes no body.
func (s *Server) approvePlan(w http.ResponseWriter, r *http.Request) {
	reviewAction(s, func(ctx context.Context, id string, _ struct{}, pre revision.Precondition) (*sessions.Approval, error) {
		return s.sessions.Approve(ctx, id, pre)
	})(w, r)
}

// rejectPlan sends the plan back with the human's feedback.
func (s *Server) rejectPlan(w http.ResponseWriter, r *http.Request) {
	reviewAction(s, s.sessions.Reject)(w, r)
}
