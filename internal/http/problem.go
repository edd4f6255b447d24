package http

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/planserver/planserver/internal/apierr"
)

// problemStatus maps every error code to its HTTP status: the one table of
// ARCHITECTURE.md. Errors caused by a precondition header are 412 whatever
// their code (see apierr.Error.Precondition).
var problemStatus = map[apierr.Code]int{
	apierr.InvalidArgument:      http.StatusBadRequest,
	apierr.Unauthenticated:      http.StatusUnauthorized,
	apierr.PermissionDenied:     http.StatusForbidden,
	apierr.NotFound:             http.StatusNotFound,
	apierr.MethodNotAllowed:     http.StatusMethodNotAllowed,
	apierr.NotAcceptable:        http.StatusNotAcceptable,
	apierr.AlreadyExists:        http.StatusConflict,
	apierr.VersionConflict:      http.StatusConflict,
	apierr.PreconditionRequired: http.StatusPreconditionRequired,
	apierr.PayloadTooLarge:      http.StatusRequestEntityTooLarge,
	apierr.HeadersTooLarge:      http.StatusRequestHeaderFieldsTooLarge,
	apierr.RequestTimeout:       http.StatusRequestTimeout,
	apierr.UnsupportedMediaType: http.StatusUnsupportedMediaType,
	apierr.UnsupportedMode:      http.StatusConflict,
	apierr.PlanMissing:          http.StatusConflict,
	apierr.ReviewNotPending:     http.StatusConflict,
	apierr.DepsIncomplete:       http.StatusConflict,
	apierr.CursorExpired:        http.StatusGone,
	apierr.RateLimited:          http.StatusTooManyRequests,
	apierr.InsufficientStorage:  http.StatusInsufficientStorage,
	apierr.Unavailable:          http.StatusServiceUnavailable,
	apierr.Internal:             http.StatusInternalServerError,
}

// problemTitle is the short, human-readable summary of each code.
var problemTitle = map[apierr.Code]string{
	apierr.InvalidArgument:      "Invalid argument",
	apierr.Unauthenticated:      "Unauthenticated",
	apierr.PermissionDenied:     "Permission denied",
	apierr.NotFound:             "Not found",
	apierr.MethodNotAllowed:     "Method not allowed",
	apierr.NotAcceptable:        "Not acceptable",
	apierr.AlreadyExists:        "Already exists",
	apierr.VersionConflict:      "Version conflict",
	apierr.PreconditionRequired: "Precondition required",
	apierr.PayloadTooLarge:      "Payload too large",
	apierr.HeadersTooLarge:      "Request headers too large",
	apierr.RequestTimeout:       "Request timeout",
	apierr.UnsupportedMediaType: "Unsupported media type",
	apierr.UnsupportedMode:      "Unsupported mode",
	apierr.PlanMissing:          "Plan missing",
	apierr.ReviewNotPending:     "Review not pending",
	apierr.DepsIncomplete:       "Dependencies incomplete",
	apierr.CursorExpired:        "Cursor expired",
	apierr.RateLimited:          "Rate limited",
	apierr.InsufficientStorage:  "Insufficient storage",
	apierr.Unavailable:          "Unavailable",
	apierr.Internal:             "Internal error",
}

// problemTypeBase prefixes the code to form the problem type URI.
const problemTypeBase = "urn:planserver:problem:"

// statusOf returns the HTTP status for e.
func statusOf(e *apierr.Error) int {
	if e.Precondition {
		return http.StatusPreconditionFailed
	}
	if st, ok := problemStatus[e.Code]; ok {
		return st
	}
	return http.StatusInternalServerError
}

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

// Bounds of a problem document, so no input can make a huge answer: a
// field message or a detail longer than these is cut, and at most
// maxProblemFields field errors are listed.
const (
	maxProblemMessage = 1024
	maxProblemDetail  = 4096
	maxProblemFields  = 100
)

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
	status := statusOf(e)
	body := problemBody(e)
	if id := requestID(r); id != "" {
		body["request_id"] = id
	}
	if r.URL != nil {
		body["instance"] = r.URL.Path
	}
	return e, status, body
}

// truncate cuts s to at most n bytes, at a rune boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// problemBody is the problem document of e: the one shape of every error
// answer, whether a handler or the connection layer (conn.go) gives it.
func problemBody(e *apierr.Error) map[string]any {
	body := map[string]any{}
	for k, v := range e.Extra {
		body[k] = v
	}
	body["type"] = problemTypeBase + string(e.Code)
	body["title"] = problemTitle[e.Code]
	body["status"] = statusOf(e)
	body["code"] = e.Code
	if e.Detail != "" {
		body["detail"] = truncate(e.Detail, maxProblemDetail)
	}
	if len(e.Fields) > 0 {
		fields := make([]apierr.FieldError, 0, min(len(e.Fields), maxProblemFields))
		for _, f := range e.Fields[:min(len(e.Fields), maxProblemFields)] {
			fields = append(fields, apierr.FieldError{Field: truncate(f.Field, maxProblemMessage), Message: truncate(f.Message, maxProblemMessage)})
		}
		body["errors"] = fields
	}
	if e.CurrentRevision != nil {
		body["current_revision"] = *e.CurrentRevision
	}
	return body
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
		_ = json.NewEncoder(buf).Encode(problemBody(&apierr.Error{Code: apierr.Internal, Detail: "internal error"}))
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
