package http

import (
	"net/http"
	"net/url"
	"strconv"

	"github.com/go-chi/chi/v5"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/http/request"
	"github.com/planserver/planserver/internal/http/response"
)

// mcpRoutes mounts the MCP endpoint and the plan-mode gate of registered
// tool servers (internal/mcp, built by the composition root) behind the
// same guard as /v1, so every route here needs a rule in auth.Routes too.
// The endpoint shares this server's stores, gate and access check: an MCP
// tool is the HTTP route it stands for, decided the same way.
func (s *Server) mcpRoutes(r chi.Router) {
	r.Group(func(r chi.Router) {
		r.Use(s.guard)
		r.Post("/mcp", func(w http.ResponseWriter, r *http.Request) { s.mcp.ServeHTTP(w, r) })
		r.Post("/mcp/gate/{name}", func(w http.ResponseWriter, r *http.Request) {
			s.gateProxy.ServeGate(w, r, chi.URLParam(r, "name"))
		})
	})
}

// The gate registry's routes (admin only), mounted with /v1 in routes().

func (s *Server) putGate(w http.ResponseWriter, r *http.Request) error {
	var in api.GateWrite
	if err := request.DecodeJSON(w, r, &in, s.cfg.MaxBodyBytes, request.DecodeOptions{}); err != nil {
		return err
	}
	g, created, err := s.gates.Put(r.Context(), chi.URLParam(r, "name"), in)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
		w.Header().Set("Location", "/v1/gates/"+g.Name)
	}
	response.JSON(w, status, g)
	return nil
}

func (s *Server) getGate(w http.ResponseWriter, r *http.Request) error {
	g, err := s.gates.Get(r.Context(), chi.URLParam(r, "name"))
	if err != nil {
		return err
	}
	response.JSON(w, http.StatusOK, g)
	return nil
}

func (s *Server) listGates(w http.ResponseWriter, r *http.Request) error {
	gates, err := s.gates.List(r.Context())
	if err != nil {
		return err
	}
	response.JSON(w, http.StatusOK, api.GateList{Gates: gates})
	return nil
}

func (s *Server) deleteGate(w http.ResponseWriter, r *http.Request) error {
	if err := s.gates.Delete(r.Context(), chi.URLParam(r, "name")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// ReviewURL is the review console's page for one plan revision of a
// session (ui.go serves it), under base.
func ReviewURL(base, sessionID string, revision int64) string {
	return base + uiPrefix + "sessions/" + url.PathEscape(sessionID) + "/review?revision=" + strconv.FormatInt(revision, 10)
}
