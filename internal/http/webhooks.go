package http

import (
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/apierr"
	"github.com/planserver/planserver/internal/http/request"
	"github.com/planserver/planserver/internal/http/response"
	"github.com/planserver/planserver/internal/webhooks"
)

// The webhook subscriptions' routes (admin only), mounted with /v1 in
// routes(). A subscription's secret is in the answers of create and
// rotate-secret only.

func (s *Server) createWebhook(w http.ResponseWriter, r *http.Request) error {
	var in api.WebhookCreate
	if err := request.DecodeJSON(w, r, &in, s.cfg.MaxBodyBytes, request.DecodeOptions{}); err != nil {
		return err
	}
	out, err := s.webhooks.Create(r.Context(), in)
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/v1/webhooks/"+out.ID)
	w.Header().Set("Cache-Control", "no-store")
	response.JSON(w, http.StatusCreated, out)
	return nil
}

func (s *Server) listWebhooks(w http.ResponseWriter, r *http.Request) error {
	limit, err := request.PageSize(r)
	if err != nil {
		return err
	}
	page, next, err := s.webhooks.List(r.Context(), limit, r.URL.Query().Get("page_token"))
	if err != nil {
		return err
	}
	response.JSON(w, http.StatusOK, api.WebhookList{Webhooks: page, NextPageToken: next})
	return nil
}

func (s *Server) getWebhook(w http.ResponseWriter, r *http.Request) error {
	out, err := s.webhooks.Get(r.Context(), chi.URLParam(r, "id"))
	if err != nil {
		return err
	}
	response.JSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) patchWebhook(w http.ResponseWriter, r *http.Request) error {
	var in api.WebhookPatch
	if err := request.DecodeJSON(w, r, &in, s.cfg.MaxBodyBytes, request.DecodeOptions{MediaTypes: []string{"application/json", "application/merge-patch+json"}}); err != nil {
		return err
	}
	out, err := s.webhooks.Update(r.Context(), chi.URLParam(r, "id"), in)
	if err != nil {
		return err
	}
	response.JSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) deleteWebhook(w http.ResponseWriter, r *http.Request) error {
	if err := s.webhooks.Delete(r.Context(), chi.URLParam(r, "id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) rotateWebhookSecret(w http.ResponseWriter, r *http.Request) error {
	var in api.WebhookRotate
	if err := request.DecodeJSON(w, r, &in, s.cfg.MaxBodyBytes, request.DecodeOptions{AllowEmpty: true}); err != nil {
		return err
	}
	overlap := webhooks.DefaultOverlap
	if in.OverlapSeconds != nil {
		if *in.OverlapSeconds < 0 || *in.OverlapSeconds > int64(webhooks.MaxOverlap/time.Second) {
			return apierr.Invalid("overlap_seconds", "must be between 0 and %d", int64(webhooks.MaxOverlap/time.Second))
		}
		overlap = time.Duration(*in.OverlapSeconds) * time.Second
	}
	out, err := s.webhooks.Rotate(r.Context(), chi.URLParam(r, "id"), overlap)
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	response.JSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) listWebhookDeliveries(w http.ResponseWriter, r *http.Request) error {
	limit, err := request.PageSize(r)
	if err != nil {
		return err
	}
	page, next, err := s.webhooks.Deliveries(r.Context(), chi.URLParam(r, "id"), limit, r.URL.Query().Get("page_token"))
	if err != nil {
		return err
	}
	response.JSON(w, http.StatusOK, api.DeliveryList{Deliveries: page, NextPageToken: next})
	return nil
}

// redeliverWebhook answers 202: the delivery is made by the subscription's
// deliverer, in its turn, never inside this request.
func (s *Server) redeliverWebhook(w http.ResponseWriter, r *http.Request) error {
	raw := chi.URLParam(r, "delivery")
	id, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || id < 1 {
		return apierr.Invalid("delivery", "must be a delivery id (a positive whole number), got %q", raw)
	}
	out, _, err := s.webhooks.Redeliver(r.Context(), chi.URLParam(r, "id"), id)
	if err != nil {
		return err
	}
	response.JSON(w, http.StatusAccepted, out)
	return nil
}
