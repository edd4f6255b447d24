package http

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"

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

// writeProblem answers err as application/problem+json. An error without a
// code is logged in full, once, with the request id, and answered 500 with
// nothing but "internal error".
func writeProblem(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() != nil && errors.Is(err, r.Context().Err()) {
		// The client went away; there is nobody to answer and nothing to fix.
		return
	}
	e, ok := apierr.As(err)
	if !ok || e.Code == apierr.Internal {
		// The request's logger carries its request_id already.
		logger(r).Error("internal error", slog.Any("error", err))
		e = &apierr.Error{Code: apierr.Internal, Detail: "internal error"}
	}
	status := statusOf(e)
	body := problemBody(e)
	if id := requestID(r); id != "" {
		body["request_id"] = id
	}
	if r.URL != nil {
		body["instance"] = r.URL.Path
	}
	h := w.Header()
	h.Del("ETag")
	h.Set("Content-Type", "application/problem+json")
	h.Set("X-Content-Type-Options", "nosniff")
	if status == http.StatusUnauthorized {
		h.Set("WWW-Authenticate", `Bearer realm="planserver"`)
	}
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
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
		body["detail"] = e.Detail
	}
	if len(e.Fields) > 0 {
		body["errors"] = e.Fields
	}
	if e.CurrentRevision != nil {
		body["current_revision"] = *e.CurrentRevision
	}
	return body
}

// writeJSON answers v as application/json with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
