package http

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/apierr"
	"github.com/planserver/planserver/internal/auth"
	"github.com/planserver/planserver/internal/http/request"
	"github.com/planserver/planserver/internal/http/response"
	"github.com/planserver/planserver/internal/revision"
)

func (s *Server) putSessionPlan(w http.ResponseWriter, r *http.Request) error {
	id, err := request.SessionID(r)
	if err != nil {
		return err
	}
	mt, err := request.RequireMediaType(r, request.MediaJSON, request.MediaMarkdown)
	if err != nil {
		return err
	}
	body, err := request.ReadBody(w, r, s.planBodyLimit())
	if err != nil {
		return err
	}
	var in api.SessionPlanWrite
	if mt == request.MediaMarkdown {
		in.Content = string(body)
	} else if err := request.DecodeJSONBytes(body, &in, false); err != nil {
		return err
	}
	pre, err := request.Precondition(r, nil, s.cfg.RequirePreconditions)
	if err != nil {
		return err
	}
	plan, created, err := s.sessions.PutSessionPlan(r.Context(), id, in, s.cfg.MaxPlanBytes, pre)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
		w.Header().Set("Location", "/v1/sessions/"+id+"/plan")
	}
	response.SetETag(w, plan.Revision)
	response.JSON(w, status, plan)
	return nil
}

func (s *Server) getSessionPlan(w http.ResponseWriter, r *http.Request) error {
	id, err := request.SessionID(r)
	if err != nil {
		return err
	}
	w.Header().Set("Vary", "Accept")
	mt, err := request.Negotiate(r, request.MediaJSON, request.MediaMarkdown)
	if err != nil {
		return err
	}
	plan, err := s.sessions.GetSessionPlan(r.Context(), id)
	if err != nil {
		return err
	}
	if done, err := response.NotModified(w, r, plan.Revision); done || err != nil {
		return err
	}
	response.SetETag(w, plan.Revision)
	if mt == request.MediaMarkdown {
		writeMarkdown(w, plan.Content)
		return nil
	}
	response.JSON(w, http.StatusOK, plan)
	return nil
}

// reviewAction is the handler of each review action: an optional JSON body
// of type In, the If-Match naming the plan revision, the store call. The
// answer is the session (whose review object changed) without an ETag:
// the If-Match names the plan's revision, and the session's own ETag comes
// with GET /v1/sessions/{id}.
func reviewAction[In, Out any](s *Server, act func(ctx context.Context, id string, in In, pre revision.Precondition) (Out, error)) handler {
	return func(w http.ResponseWriter, r *http.Request) error {
		id, err := request.SessionID(r)
		if err != nil {
			return err
		}
		var in In
		if err := request.DecodeJSON(w, r, &in, s.cfg.MaxBodyBytes, request.DecodeOptions{AllowEmpty: true}); err != nil {
			return err
		}
		pre, err := request.Precondition(r, nil, s.cfg.RequirePreconditions)
		if err != nil {
			return err
		}
		out, err := act(r.Context(), id, in, pre)
		if err != nil {
			return err
		}
		response.JSON(w, http.StatusOK, out)
		return nil
	}
}

// approvePlan is the human's approval of the plan revision they read. Its
// If-Match must name exactly that one revision: a list, *, a weak tag or
// a number written another way is refused before anything is looked up.
func (s *Server) approvePlan(w http.ResponseWriter, r *http.Request) error {
	values := r.Header.Values("If-Match")
	if len(values) > 1 {
		return apierr.Invalid("If-Match", "sent more than once; name the one plan revision you read")
	}
	if len(values) == 1 {
		if _, err := revision.ExactRevision("If-Match", values[0]); err != nil {
			return err
		}
	}
	return reviewAction(s, s.approve)(w, r)
}

// approve is the human's approval of the plan revision they read, with
// optional feedback and line comments.
func (s *Server) approve(ctx context.Context, id string, in api.ReviewApproval, pre revision.Precondition) (*api.Approval, error) {
	mayLift, err := s.authz.May(ctx, auth.LiftScope, id)
	if err != nil {
		return nil, err
	}
	return s.sessions.Approve(ctx, id, in, pre, mayLift)
}

// liftScope is DELETE /v1/sessions/{id}/scope: an admin ends the session's
// scoped build (route access: auth.LiftScope).
func (s *Server) liftScope(w http.ResponseWriter, r *http.Request) error {
	id, err := request.SessionID(r)
	if err != nil {
		return err
	}
	pre, err := request.Precondition(r, nil, s.cfg.RequirePreconditions)
	if err != nil {
		return err
	}
	sess, err := s.sessions.LiftScope(r.Context(), id, pre)
	if err != nil {
		return err
	}
	writeSession(w, http.StatusOK, sess)
	return nil
}

// revisionParam parses the {revision} URL parameter.
func revisionParam(r *http.Request) (int64, error) {
	raw := chi.URLParam(r, "revision")
	n, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || n < 1 || strings.HasPrefix(raw, "+") {
		return 0, apierr.Invalid("revision", "must be a revision number (1, 2, …), got %q", raw)
	}
	return n, nil
}

func (s *Server) listSessionPlanRevisions(w http.ResponseWriter, r *http.Request) error {
	id, err := request.SessionID(r)
	if err != nil {
		return err
	}
	revs, err := s.sessions.SessionPlanRevisions(r.Context(), id)
	if err != nil {
		return err
	}
	response.JSON(w, http.StatusOK, revs)
	return nil
}

// getSessionPlanRevision answers a session plan as it was at one
// revision, as JSON or Markdown.
func (s *Server) getSessionPlanRevision(w http.ResponseWriter, r *http.Request) error {
	id, err := request.SessionID(r)
	if err != nil {
		return err
	}
	n, err := revisionParam(r)
	if err != nil {
		return err
	}
	w.Header().Set("Vary", "Accept")
	mt, err := request.Negotiate(r, request.MediaJSON, request.MediaMarkdown)
	if err != nil {
		return err
	}
	plan, err := s.sessions.GetSessionPlanRevision(r.Context(), id, n)
	if err != nil {
		return err
	}
	response.SetETag(w, plan.Revision)
	if mt == request.MediaMarkdown {
		writeMarkdown(w, plan.Content)
		return nil
	}
	response.JSON(w, http.StatusOK, plan)
	return nil
}

// diffSessionPlan answers how one revision of a session plan differs from
// another: ?to= defaults to the current revision, ?from= to the newest
// kept revision before it (0, the empty plan, when there is none).
func (s *Server) diffSessionPlan(w http.ResponseWriter, r *http.Request) error {
	id, err := request.SessionID(r)
	if err != nil {
		return err
	}
	from, to, err := diffRange(r)
	if err != nil {
		return err
	}
	d, err := s.sessions.SessionPlanDiff(r.Context(), id, from, to)
	if err != nil {
		return err
	}
	return writeDiff(w, r, "plan of session "+id, d)
}

func (s *Server) reviewHistory(w http.ResponseWriter, r *http.Request) error {
	id, err := request.SessionID(r)
	if err != nil {
		return err
	}
	h, err := s.sessions.ReviewHistory(r.Context(), id)
	if err != nil {
		return err
	}
	response.JSON(w, http.StatusOK, h)
	return nil
}
