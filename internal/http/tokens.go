package http

import (
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/planserver/planserver/internal/apierr"
	"github.com/planserver/planserver/internal/auth"
)

// createdToken is the one answer that carries a token's secret.
type createdToken struct {
	Secret string `json:"token"`
	*auth.Token
}

func (s *Server) createToken(w http.ResponseWriter, r *http.Request) {
	var in auth.CreateInput
	if err := s.decodeJSON(w, r, &in, decodeOptions{}); err != nil {
		writeProblem(w, r, err)
		return
	}
	secret, tok, err := s.tokens.Create(r.Context(), in, time.Now())
	if err != nil {
		writeProblem(w, r, err)
		return
	}
	// The secret is shown once: no cache may keep it.
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Location", "/v1/tokens/"+tok.Name)
	writeJSON(w, http.StatusCreated, createdToken{Secret: secret, Token: tok})
}

type tokenList struct {
	Tokens []*auth.Token `json:"tokens"`
}

func (s *Server) listTokens(w http.ResponseWriter, r *http.Request) {
	toks, err := s.tokens.List(r.Context())
	if err != nil {
		writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, tokenList{Tokens: toks})
}

// tokenNameParam returns the {name} URL parameter, validated.
func tokenNameParam(r *http.Request) (string, error) {
	name := chi.URLParam(r, "name")
	if !auth.NamePattern.MatchString(name) {
		return "", apierr.Invalid("name", "token name %q must match %s", name, auth.NamePattern)
	}
	return name, nil
}

func (s *Server) getToken(w http.ResponseWriter, r *http.Request) {
	name, err := tokenNameParam(r)
	if err != nil {
		writeProblem(w, r, err)
		return
	}
	tok, err := s.tokens.Get(r.Context(), name)
	if err != nil {
		writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, tok)
}

// revokeToken revokes rather than deletes, so the token stays listed with
// revoked_at; revoking a revoked token again is a success.
func (s *Server) revokeToken(w http.ResponseWriter, r *http.Request) {
	name, err := tokenNameParam(r)
	if err != nil {
		writeProblem(w, r, err)
		return
	}
	if _, err := s.tokens.Revoke(r.Context(), name, time.Now()); err != nil {
		writeProblem(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
