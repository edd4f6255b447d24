package http

import "github.com/go-chi/chi/v5"

// Router exposes the router, so the access table test can walk every route.
func (s *Server) Router() chi.Routes { return s.router }
