package http

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/planserver/planserver/internal/apierr"
	"github.com/planserver/planserver/internal/hosthook"
	"github.com/planserver/planserver/internal/hosthookproto"
	"github.com/planserver/planserver/internal/hosthookservice"
	"github.com/planserver/planserver/internal/http/request"
	"github.com/planserver/planserver/internal/http/response"
)

// hook is POST /v1/hooks/{host}: a host's hook input in, the host's hook
// output out, decided by the host-hook service (internal/hosthookservice).
// Once the host is known every answer is 200 in the host's format: a host
// treats an error status as "no decision" and runs the tool (Claude Code
// does), so a request the hook cannot serve (a malformed input, no such
// session, an unknown parent) is a denial that says why.
func (s *Server) hook(w http.ResponseWriter, r *http.Request) error {
	host, err := hosthook.ParseHost(chi.URLParam(r, "host"))
	if err != nil {
		return apierr.New(apierr.NotFound, "%v", err)
	}
	q := r.URL.Query()
	req := hosthookservice.Request{Host: host, Adapter: "http", Session: q.Get("session"), Parent: q.Get("parent"),
		MCP: q.Get("mcp"), BaseURL: baseURL(r)}
	switch v := r.Header.Get(hosthookproto.AdapterHeader); v {
	case "command", "plugin":
		req.Adapter = v
	}
	if _, err := request.RequireMediaType(r, request.MediaJSON); err != nil {
		req.Unreadable = err
	} else if req.Input, err = request.ReadBody(w, r, hosthookproto.MaxInput+1); err != nil {
		req.Unreadable = err
	}
	a := s.hooks.Answer(r.Context(), req)
	w.Header().Set("Planserver-Hook-Decision", a.Outcome.String())
	response.JSONBody(w, http.StatusOK, a.Body)
	return nil
}

// baseURL is the server's address as the caller reached it.
func baseURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}
