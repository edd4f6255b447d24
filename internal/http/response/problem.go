// Package response owns how the API answers: the problem document of
// every error (RFC 9457) and the status each error code maps to, JSON
// answers, ETags and 304s, and the cache of the most polled answers.
package response

import (
	"net/http"
	"unicode/utf8"

	"github.com/planserver/planserver/internal/apierr"
)

// problemStatus maps every error code to its HTTP status: the one such
// table (docs/architecture.md, "Where each rule lives"). Errors caused by a precondition header are 412 whatever
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

// Status returns the HTTP status for e.
func Status(e *apierr.Error) int {
	if e.Precondition {
		return http.StatusPreconditionFailed
	}
	if st, ok := problemStatus[e.Code]; ok {
		return st
	}
	return http.StatusInternalServerError
}

// Bounds of a problem document, so no input can make a huge answer: a
// field message or a detail longer than these is cut, and at most
// maxProblemFields field errors are listed.
const (
	maxProblemMessage = 1024
	maxProblemDetail  = 4096
	maxProblemFields  = 100
)

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

// ProblemBody is the problem document of e: the one shape of every error
// answer, whether a handler or the connection layer (package listener) gives it.
func ProblemBody(e *apierr.Error) map[string]any {
	body := map[string]any{}
	for k, v := range e.Extra {
		body[k] = v
	}
	body["type"] = problemTypeBase + string(e.Code)
	body["title"] = problemTitle[e.Code]
	body["status"] = Status(e)
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
