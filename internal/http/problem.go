package http

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"sync"

	"github.com/planserver/planserver/internal/apierr"
	"github.com/planserver/planserver/internal/http/response"
)

// handler is the shape of every route's handler: it decodes, validates,
// calls a store and responds, and returns the error to answer instead of
// writing it, so no handler can forget to stop after an error.
type handler func(w http.ResponseWriter, r *http.Request) error

// h adapts a handler to net/http: a returned error is answered as a
// problem document.
func (s *Server) h(fn handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := fn(w, r); err != nil {
			writeProblem(w, r, err)
		}
	}
}

// writeProblem answers err as application/problem+json. An error without a
// code (or a storage fault) is answered with only what the client may
// know, and its cause is left for the request's one log line (observe).
func writeProblem(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() != nil && errors.Is(err, r.Context().Err()) {
		// The client went away; there is nobody to answer and nothing to fix.
		return
	}
	e, status, body := problem(r, err)
	h := w.Header()
	h.Del("ETag")
	h.Set("Content-Type", "application/problem+json")
	h.Set("X-Content-Type-Options", "nosniff")
	if status == http.StatusUnauthorized {
		h.Set("WWW-Authenticate", `Bearer realm="planserver"`)
	}
	if e.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

// problem returns the error a client sees for err, its status and its
// problem document, bounded in size, and notes the cause of a failure that
// is not the client's for the request's log line.
func problem(r *http.Request, err error) (*apierr.Error, int, map[string]any) {
	e, ok := apierr.Of(err)
	if !ok || e.Code == apierr.Internal {
		noteFailure(r, err)
		e = &apierr.Error{Code: apierr.Internal, Detail: "internal error"}
	} else if e.Cause != nil {
		noteFailure(r, e.Cause)
	}
	status := response.Status(e)
	body := response.ProblemBody(e)
	if id := requestID(r); id != "" {
		body["request_id"] = id
	}
	if r.URL != nil {
		body["instance"] = r.URL.Path
	}
	return e, status, body
}

// writeJSON answers v as application/json with status.
//
// The body is encoded into a pooled buffer first and written in one piece
// with its Content-Length: no chunked encoding, one write, and an encoding
// error (a bug) becomes a 500 instead of half a body.
func writeJSON(w http.ResponseWriter, status int, v any) {
	buf := jsonBuffers.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= maxPooledBuffer {
			buf.Reset()
			jsonBuffers.Put(buf)
		}
	}()
	if err := json.NewEncoder(buf).Encode(v); err != nil {
		buf.Reset()
		status = http.StatusInternalServerError
		_ = json.NewEncoder(buf).Encode(response.ProblemBody(&apierr.Error{Code: apierr.Internal, Detail: "internal error"}))
		w.Header().Set("Content-Type", "application/problem+json")
		w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
		w.WriteHeader(status)
		_, _ = w.Write(buf.Bytes())
		return
	}
	writeJSONBody(w, status, buf.Bytes())
}

// jsonBuffers are the buffers writeJSON encodes into; a buffer grown past
// maxPooledBuffer (a large plan) is left to the garbage collector rather
// than kept for every later small answer.
var jsonBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

const maxPooledBuffer = 64 << 10
