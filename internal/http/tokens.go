package http

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/apierr"
	"github.com/planserver/planserver/internal/auth"
	"github.com/planserver/planserver/internal/http/request"
	"github.com/planserver/planserver/internal/http/response"
)

func (s *Server) createToken(w http.ResponseWriter, r *http.Request) error {
	var in auth.CreateInput
	if err := request.DecodeJSON(w, r, &in, s.cfg.MaxBodyBytes, request.DecodeOptions{}); err != nil {
		return err
	}
	secret, tok, err := s.tokens.Create(r.Context(), in)
	if err != nil {
		return err
	}
	// The secret is shown once: no cache may keep it.
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Location", "/v1/tokens/"+tok.Name)
	response.JSON(w, http.StatusCreated, api.CreatedToken{Secret: secret, Token: tok})
	return nil
}

func (s *Server) listTokens(w http.ResponseWriter, r *http.Request) error {
	toks, err := s.tokens.List(r.Context())
	if err != nil {
		return err
	}
	response.JSON(w, http.StatusOK, api.TokenList{Tokens: toks})
	return nil
}

// tokenNameParam returns the {name} URL parameter, validated.
func tokenNameParam(r *http.Request) (string, error) {
	name := chi.URLParam(r, "name")
	if !auth.NamePattern.MatchString(name) {
		return "", apierr.Invalid("name", "token name %q must match %s", name, auth.NamePattern)
	}
	return name, nil
}

func (s *Server) getToken(w http.ResponseWriter, r *http.Request) error {
	name, err := tokenNameParam(r)
	if err != nil {
		return err
	}
	tok, err := s.tokens.Get(r.Context(), name)
	if err != nil {
		return err
	}
	response.JSON(w, http.StatusOK, tok)
	return nil
}

// revokeToken revokes rather than deletes, so the token stays listed with
// revoked_at; revoking a revoked token again is a success.
func (s *Server) revokeToken(w http.ResponseWriter, r *http.Request) error {
	name, err := tokenNameParam(r)
	if err != nil {
		return err
	}
	if _, err := s.tokens.Revoke(r.Context(), name); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
