package http

import (
	"net/http"
	"net/url"

	"github.com/go-chi/chi/v5"

	"github.com/planserver/planserver/internal/apierr"
	"github.com/planserver/planserver/internal/auth"
	"github.com/planserver/planserver/internal/http/request"
	"github.com/planserver/planserver/internal/http/response"
	"github.com/planserver/planserver/internal/plans"
	"github.com/planserver/planserver/internal/revision"
	"github.com/planserver/planserver/internal/validation"
)

// stepIDParam returns the {step_id} URL parameter, unescaped and validated.
func stepIDParam(r *http.Request) (string, error) {
	raw := chi.URLParam(r, "step_id")
	id, err := url.PathUnescape(raw)
	if err != nil || !validation.StepID.MatchString(id) {
		return "", validation.BadStepID(raw)
	}
	return id, nil
}

// planAndStep returns the {name} and {step_id} URL parameters.
func planAndStep(r *http.Request) (string, string, error) {
	name, err := planNameParam(r)
	if err != nil {
		return "", "", err
	}
	id, err := stepIDParam(r)
	return name, id, err
}

// actionPrecondition is the precondition of a claim or a report: If-Match
// is honoured when sent, but never required, not even under
// --require-preconditions. These operations make their own atomic check
// (the step is ready, the claim is the worker's) inside the write
// transaction; asking every worker for the plan's current revision would
// only make concurrent claimers fail against each other.
func (s *Server) actionPrecondition(r *http.Request) (revision.Precondition, error) {
	pre, err := request.Precondition(r, nil, s.cfg.RequirePreconditions)
	pre.Required = false
	return pre, err
}

// listSteps answers a plan's steps, filtered. It never answers 304: which
// steps are ready, and which claims expired, depends on the time as well
// as on the revision.
func (s *Server) listSteps(w http.ResponseWriter, r *http.Request) error {
	name, err := planNameParam(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	query := plans.StepQuery{Status: q.Get("status"), Owner: q.Get("owner")}
	switch ready := q.Get("ready"); ready {
	case "":
	case "true", "false":
		b := ready == "true"
		query.Ready = &b
	default:
		return apierr.Invalid("ready", "must be true or false, not %q", ready)
	}
	list, err := s.plans.Steps(r.Context(), name, query)
	if err != nil {
		return err
	}
	response.SetETag(w, list.Revision)
	response.JSON(w, http.StatusOK, list)
	return nil
}

// getStep answers one step and the plan revision.
func (s *Server) getStep(w http.ResponseWriter, r *http.Request) error {
	name, id, err := planAndStep(r)
	if err != nil {
		return err
	}
	res, err := s.plans.GetStep(r.Context(), name, id)
	if err != nil {
		return err
	}
	response.SetETag(w, res.Revision)
	response.JSON(w, http.StatusOK, res)
	return nil
}

// patchStep sets a step's status or owner.
func (s *Server) patchStep(w http.ResponseWriter, r *http.Request) error {
	name, id, err := planAndStep(r)
	if err != nil {
		return err
	}
	var patch plans.StepPatch
	if err := request.DecodeJSON(w, r, &patch, s.cfg.MaxBodyBytes, request.DecodeOptions{
		MediaTypes: []string{"application/json", "application/merge-patch+json"},
	}); err != nil {
		return err
	}
	// Starting or completing a step is executing it, which plan mode
	// keeps from agents; setting its owner, or pending or blocked, is
	// planning.
	if patch.Status != nil && plans.ExecutingStatus(*patch.Status) {
		if err := s.authz.Authorize(r.Context(), auth.ExecuteSteps, "", nil); err != nil {
			return err
		}
	}
	pre, err := request.Precondition(r, nil, s.cfg.RequirePreconditions)
	if err != nil {
		return err
	}
	res, err := s.plans.UpdateStep(r.Context(), name, id, patch, pre)
	if err != nil {
		return err
	}
	response.SetETag(w, res.Revision)
	response.JSON(w, http.StatusOK, res)
	return nil
}

// claimNextStep is the coordinator's dispatch: the first ready step, or 204.
func (s *Server) claimNextStep(w http.ResponseWriter, r *http.Request) error {
	name, err := planNameParam(r)
	if err != nil {
		return err
	}
	var req plans.ClaimRequest
	if err := request.DecodeJSON(w, r, &req, s.cfg.MaxBodyBytes, request.DecodeOptions{}); err != nil {
		return err
	}
	pre, err := s.actionPrecondition(r)
	if err != nil {
		return err
	}
	res, err := s.plans.Claim(r.Context(), name, req, pre)
	if err != nil {
		return err
	}
	if res == nil {
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	response.SetETag(w, res.Revision)
	response.JSON(w, http.StatusOK, res)
	return nil
}

// claimStep takes one named step, or renews the caller's lease on it.
func (s *Server) claimStep(w http.ResponseWriter, r *http.Request) error {
	name, id, err := planAndStep(r)
	if err != nil {
		return err
	}
	var req plans.StepClaimRequest
	if err := request.DecodeJSON(w, r, &req, s.cfg.MaxBodyBytes, request.DecodeOptions{}); err != nil {
		return err
	}
	pre, err := s.actionPrecondition(r)
	if err != nil {
		return err
	}
	res, err := s.plans.ClaimStep(r.Context(), name, id, req, pre)
	if err != nil {
		return err
	}
	response.SetETag(w, res.Revision)
	response.JSON(w, http.StatusOK, res)
	return nil
}

// addStepReport stores an execution report and applies its outcome.
func (s *Server) addStepReport(w http.ResponseWriter, r *http.Request) error {
	name, id, err := planAndStep(r)
	if err != nil {
		return err
	}
	var in plans.ReportInput
	if err := request.DecodeJSON(w, r, &in, s.cfg.MaxBodyBytes, request.DecodeOptions{}); err != nil {
		return err
	}
	pre, err := s.actionPrecondition(r)
	if err != nil {
		return err
	}
	rep, err := s.plans.AddReport(r.Context(), name, id, in, pre)
	if err != nil {
		return err
	}
	response.JSON(w, http.StatusCreated, rep)
	return nil
}

// listReports answers a plan's execution reports, oldest first.
func (s *Server) listReports(w http.ResponseWriter, r *http.Request) error {
	name, err := planNameParam(r)
	if err != nil {
		return err
	}
	stepID := r.URL.Query().Get("step_id")
	if stepID != "" && !validation.StepID.MatchString(stepID) {
		return validation.BadStepID(stepID)
	}
	list, err := s.plans.Reports(r.Context(), name, stepID)
	if err != nil {
		return err
	}
	response.JSON(w, http.StatusOK, list)
	return nil
}
