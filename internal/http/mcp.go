package http

import (
	"net/url"
	"strconv"

	"github.com/go-chi/chi/v5"

	"github.com/planserver/planserver/internal/mcp"
)

// mcpRoutes mounts the MCP endpoint (internal/mcp) behind the same guard
// as /v1, so every route here needs a rule in auth.Routes too. The
// endpoint gets this server's stores, gate and access check: an MCP tool
// is the HTTP route it stands for, decided the same way.
func (s *Server) mcpRoutes(r chi.Router) {
	endpoint := mcp.New(mcp.Backend{
		Sessions:             s.sessions,
		Plans:                s.plans,
		Gate:                 s.gate,
		Authorize:            s.Authorize,
		ReviewURL:            reviewURL,
		Problem:              writeProblem,
		MaxPlanBytes:         s.cfg.MaxPlanBytes,
		RequirePreconditions: s.cfg.RequirePreconditions,
		Version:              s.cfg.Version,
		Logger:               s.log,
	})
	r.Group(func(r chi.Router) {
		r.Use(s.guard)
		r.Post("/mcp", endpoint.ServeHTTP)
	})
}

// reviewURL is the review console's page for one plan revision of a
// session (ui.go serves it).
func reviewURL(base, sessionID string, revision int64) string {
	return base + uiPrefix + "sessions/" + url.PathEscape(sessionID) + "/review?revision=" + strconv.FormatInt(revision, 10)
}
