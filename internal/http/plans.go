package http

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/apierr"
	"github.com/planserver/planserver/internal/http/request"
	"github.com/planserver/planserver/internal/http/response"
	"github.com/planserver/planserver/internal/plans"
	"github.com/planserver/planserver/internal/validation"
)

// planNameParam returns the {name} URL parameter, unescaped and validated.
// chi routes on the escaped path, so "a%2Fb" arrives here whole and is
// refused as the name "a/b" rather than routed anywhere.
func planNameParam(r *http.Request) (string, error) {
	raw := chi.URLParam(r, "name")
	name, err := url.PathUnescape(raw)
	if err != nil {
		return "", apierr.Invalid("name", "plan name %q is not a valid URL path segment", raw)
	}
	return name, plans.ValidateName(name)
}

// readPlanContent reads a raw Markdown body as a plan's content.
func (s *Server) readPlanContent(w http.ResponseWriter, r *http.Request) (string, error) {
	body, err := request.ReadBody(w, r, s.cfg.MaxPlanBytes)
	if err != nil {
		if e, ok := apierr.As(err); ok && e.Code == apierr.PayloadTooLarge {
			e.Detail = "content is larger than " + strconv.FormatInt(s.cfg.MaxPlanBytes, 10) + " bytes (--max-plan-bytes)"
		}
		return "", err
	}
	return string(body), nil
}

// putPlan is write_plan: create or replace a plan from JSON, Markdown or
// YAML.
func (s *Server) putPlan(w http.ResponseWriter, r *http.Request) error {
	name, err := planNameParam(r)
	if err != nil {
		return err
	}
	mt, err := request.RequireMediaType(r, request.MediaJSON, request.MediaMarkdown, request.MediaYAML)
	if err != nil {
		return err
	}
	var (
		ch        plans.Change
		lastKnown *int64
	)
	switch mt {
	case request.MediaMarkdown:
		content, err := s.readPlanContent(w, r)
		if err != nil {
			return err
		}
		ch.Content = &content
	case request.MediaYAML:
		body, err := request.ReadBody(w, r, s.planBodyLimit())
		if err == nil {
			ch, err = plans.DecodeYAML(body)
		}
		if err != nil {
			return err
		}
	default:
		var req api.PlanWrite
		body, err := request.ReadBody(w, r, s.planBodyLimit())
		if err == nil {
			err = request.DecodeJSONBytes(body, &req, false)
		}
		if err == nil {
			ch, err = plans.ChangeOf(req)
		}
		if err != nil {
			return err
		}
		lastKnown = req.LastKnownRevision
	}
	return s.writePlanChange(w, r, name, ch, lastKnown, func(p *plans.Plan) any { return p })
}

// writePlanChange stores a Put and answers 201 (with Location) or 200, the
// ETag, and the body view picks.
func (s *Server) writePlanChange(w http.ResponseWriter, r *http.Request, name string, ch plans.Change, lastKnown *int64, view func(*plans.Plan) any) error {
	pre, err := request.Precondition(r, lastKnown, s.cfg.RequirePreconditions)
	if err != nil {
		return err
	}
	p, created, err := s.plans.Put(r.Context(), name, ch, pre)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
		w.Header().Set("Location", "/v1/plans/"+p.Name)
	}
	response.SetETag(w, p.Revision)
	response.JSON(w, status, view(p))
	return nil
}

// getPlan is read_plan, in the representation the client accepts.
func (s *Server) getPlan(w http.ResponseWriter, r *http.Request) error {
	name, err := planNameParam(r)
	if err != nil {
		return err
	}
	mt, err := request.Negotiate(r, request.MediaJSON, request.MediaMarkdown, request.MediaYAML)
	if err != nil {
		return err
	}
	if mt == request.MediaJSON {
		rev, body, err := s.answers.Answer(r.Context(), "plan "+name, func() (response.Loaded, error) {
			now := s.answers.Now()
			p, err := s.plans.GetAt(r.Context(), name, now)
			if err != nil {
				return response.Loaded{}, err
			}
			expires, _ := plans.NextViewChange(p, now)
			return response.Loaded{Revision: p.Revision, Value: p, Expires: expires}, nil
		})

		if err != nil {
			return err
		}
		w.Header().Set("Vary", "Accept")
		if done, err := response.NotModified(w, r, rev); done || err != nil {
			return err
		}
		response.SetETag(w, rev)
		response.JSONBody(w, http.StatusOK, body)
		return nil
	}
	p, err := s.plans.Get(r.Context(), name)
	if err != nil {
		return err
	}
	return s.writePlanAs(w, r, mt, p)
}

// writePlanAs answers a plan in media type mt, or 304 when the client's
// If-None-Match names its revision. Every representation of a revision
// carries that revision's ETag; Vary tells caches the body depends on
// Accept.
func (s *Server) writePlanAs(w http.ResponseWriter, r *http.Request, mt string, p *plans.Plan) error {
	w.Header().Set("Vary", "Accept")
	if done, err := response.NotModified(w, r, p.Revision); done || err != nil {
		return err
	}
	response.SetETag(w, p.Revision)
	switch mt {
	case request.MediaMarkdown:
		writeMarkdown(w, p.Content)
	case request.MediaYAML:
		doc, err := plans.EncodeYAML(p)
		if err != nil {
			return err
		}
		w.Header().Set("Content-Type", request.MediaYAML)
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(doc)
	default:
		response.JSON(w, http.StatusOK, p)
	}
	return nil
}

func writeMarkdown(w http.ResponseWriter, content string) {
	w.Header().Set("Content-Type", request.MediaMarkdown+"; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte(content))
}

// deletePlan is delete_plan.
func (s *Server) deletePlan(w http.ResponseWriter, r *http.Request) error {
	name, err := planNameParam(r)
	if err != nil {
		return err
	}
	pre, err := request.Precondition(r, nil, s.cfg.RequirePreconditions)
	if err != nil {
		return err
	}
	if err := s.plans.Delete(r.Context(), name, pre); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// listPlans is list_plans: summaries, never content.
func (s *Server) listPlans(w http.ResponseWriter, r *http.Request) error {
	limit, err := request.PageSize(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	page, err := s.plans.List(r.Context(), plans.ListQuery{
		Status:    q.Get("status"),
		Author:    q.Get("author"),
		Limit:     limit,
		PageToken: q.Get("page_token"),
	})
	if err != nil {
		return err
	}
	response.JSON(w, http.StatusOK, page)
	return nil
}

// getPlanContent is export_plan_to_file: the content alone, as Markdown.
func (s *Server) getPlanContent(w http.ResponseWriter, r *http.Request) error {
	name, err := planNameParam(r)
	if err != nil {
		return err
	}
	if _, err := request.Negotiate(r, request.MediaMarkdown); err != nil {
		return err
	}
	p, err := s.plans.Get(r.Context(), name)
	if err != nil {
		return err
	}
	return s.writePlanAs(w, r, request.MediaMarkdown, p)
}

// putPlanContent is update_plan_from_file: the raw body becomes the
// content; title, author, status and steps stay. The answer is the plan's
// summary, so the cheap edit never sends the body back.
func (s *Server) putPlanContent(w http.ResponseWriter, r *http.Request) error {
	name, err := planNameParam(r)
	if err != nil {
		return err
	}
	if _, err := request.RequireMediaType(r, request.MediaMarkdown, "text/plain"); err != nil {
		return err
	}
	content, err := s.readPlanContent(w, r)
	if err != nil {
		return err
	}
	return s.writePlanChange(w, r, name, plans.Change{Content: &content}, nil, func(p *plans.Plan) any { return p.Summary() })
}

// getPlanStatus is get_plan_status.
func (s *Server) getPlanStatus(w http.ResponseWriter, r *http.Request) error {
	name, err := planNameParam(r)
	if err != nil {
		return err
	}
	v, err := s.plans.GetStatus(r.Context(), name)
	if err != nil {
		return err
	}
	if done, err := response.NotModified(w, r, v.Revision); done || err != nil {
		return err
	}
	response.SetETag(w, v.Revision)
	response.JSON(w, http.StatusOK, v)
	return nil
}

// setPlanStatus is set_plan_status.
func (s *Server) setPlanStatus(w http.ResponseWriter, r *http.Request) error {
	name, err := planNameParam(r)
	if err != nil {
		return err
	}
	var req api.PlanStatusWrite
	if err := request.DecodeJSON(w, r, &req, s.cfg.MaxBodyBytes, request.DecodeOptions{}); err != nil {
		return err
	}
	pre, err := request.Precondition(r, req.LastKnownRevision, s.cfg.RequirePreconditions)
	if err != nil {
		return err
	}
	v, err := s.plans.SetStatus(r.Context(), name, *req.Status, pre)
	if err != nil {
		return err
	}
	response.SetETag(w, v.Revision)
	response.JSON(w, http.StatusOK, v)
	return nil
}

// listPlanRevisions lists a plan's readable history, newest first.
func (s *Server) listPlanRevisions(w http.ResponseWriter, r *http.Request) error {
	name, err := planNameParam(r)
	if err != nil {
		return err
	}
	revs, err := s.plans.Revisions(r.Context(), name)
	if err != nil {
		return err
	}
	response.JSON(w, http.StatusOK, api.PlanRevisions{Name: name, Revisions: revs})
	return nil
}

// getPlanRevision answers a plan as it was at one revision, in any of the
// representations of the plan itself.
func (s *Server) getPlanRevision(w http.ResponseWriter, r *http.Request) error {
	name, err := planNameParam(r)
	if err != nil {
		return err
	}
	n, err := revisionParam(r)
	if err != nil {
		return err
	}
	mt, err := request.Negotiate(r, request.MediaJSON, request.MediaMarkdown, request.MediaYAML)
	if err != nil {
		return err
	}
	p, err := s.plans.GetRevision(r.Context(), name, n)
	if err != nil {
		return err
	}
	return s.writePlanAs(w, r, mt, p)
}

// plansNotFound answers paths under /v1/plans/ that match no route. Such a
// path is a plan name with a "/" in it (or something else that is no plan
// name), so it is refused as an invalid name, 400, as the contract (api/openapi.yaml) asks for
// names with "/" or "..", rather than 404 as if a plan could be missing.
func plansNotFound(w http.ResponseWriter, r *http.Request) bool {
	path := r.URL.RawPath
	if path == "" {
		path = r.URL.Path
	}
	rest, ok := strings.CutPrefix(path, "/v1/plans/")
	if !ok {
		return false
	}
	name, err := url.PathUnescape(rest)
	if err != nil {
		name = rest
	}
	response.Problem(w, r, apierr.Invalid("name", "no route for %s %s, and %q is not a plan name: names must match %s",
		r.Method, r.URL.Path, name, validation.PlanName.String()))
	return true
}

// diffPlan answers how one revision of a shared plan's content differs
// from another (the store settles the revisions left out).
func (s *Server) diffPlan(w http.ResponseWriter, r *http.Request) error {
	name, err := planNameParam(r)
	if err != nil {
		return err
	}
	from, to, err := diffRange(r)
	if err != nil {
		return err
	}
	d, err := s.plans.Diff(r.Context(), name, from, to)
	if err != nil {
		return err
	}
	return writeDiff(w, r, "plan "+name, d)
}
