package api

import "net/http"

// Code is the stable, machine-readable error code of a problem document:
// the field clients switch on. The contract lists them (api/openapi.yaml,
// the Problem schema's code) and internal/http's status table gives the
// HTTP status of each.
type Code string

// Every code the server answers with.
const (
	CodeInvalidArgument      Code = "invalid_argument"
	CodeUnauthenticated      Code = "unauthenticated"
	CodePermissionDenied     Code = "permission_denied"
	CodeNotFound             Code = "not_found"
	CodeMethodNotAllowed     Code = "method_not_allowed"
	CodeNotAcceptable        Code = "not_acceptable"
	CodeAlreadyExists        Code = "already_exists"
	CodeVersionConflict      Code = "version_conflict"
	CodePreconditionRequired Code = "precondition_required"
	CodePayloadTooLarge      Code = "payload_too_large"
	CodeHeadersTooLarge      Code = "headers_too_large"
	CodeRequestTimeout       Code = "request_timeout"
	CodeUnsupportedMediaType Code = "unsupported_media_type"
	CodeUnsupportedMode      Code = "unsupported_mode"
	CodePlanMissing          Code = "plan_missing"
	CodeReviewNotPending     Code = "review_not_pending"
	CodeDepsIncomplete       Code = "deps_incomplete"
	CodeCursorExpired        Code = "cursor_expired"
	CodeRateLimited          Code = "rate_limited"
	CodeInsufficientStorage  Code = "insufficient_storage"
	CodeUnavailable          Code = "unavailable"
	CodeInternal             Code = "internal"
)

// CodeForStatus is the code an HTTP status stands for in an answer that is
// not a problem document (a proxy's, or a library's plain-text error):
// only the statuses that stand for one code have one; "" for the others.
func CodeForStatus(status int) Code { return statusCodes[status] }

var statusCodes = map[int]Code{
	http.StatusBadRequest:                  CodeInvalidArgument,
	http.StatusUnauthorized:                CodeUnauthenticated,
	http.StatusForbidden:                   CodePermissionDenied,
	http.StatusNotFound:                    CodeNotFound,
	http.StatusMethodNotAllowed:            CodeMethodNotAllowed,
	http.StatusNotAcceptable:               CodeNotAcceptable,
	http.StatusGone:                        CodeCursorExpired,
	http.StatusPreconditionRequired:        CodePreconditionRequired,
	http.StatusRequestEntityTooLarge:       CodePayloadTooLarge,
	http.StatusRequestHeaderFieldsTooLarge: CodeHeadersTooLarge,
	http.StatusRequestTimeout:              CodeRequestTimeout,
	http.StatusUnsupportedMediaType:        CodeUnsupportedMediaType,
	http.StatusTooManyRequests:             CodeRateLimited,
	http.StatusInternalServerError:         CodeInternal,
	http.StatusBadGateway:                  CodeUnavailable,
	http.StatusServiceUnavailable:          CodeUnavailable,
	http.StatusGatewayTimeout:              CodeUnavailable,
	http.StatusInsufficientStorage:         CodeInsufficientStorage,
}

// FieldError names one invalid field the way the client sent it, e.g.
// "steps[3].deps[0]" or the header name "If-Match".
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// Problem is an RFC 9457 problem document: the body of every answer with
// a status of 400 or more. Members beyond the standard ones appear where
// their code needs them.
type Problem struct {
	Type     string `json:"type"`
	Title    string `json:"title"`
	Status   int    `json:"status"`
	Code     Code   `json:"code"`
	Detail   string `json:"detail,omitempty"`
	Instance string `json:"instance,omitempty"`
	// RequestID is the X-Request-ID of the request, for the server's logs.
	RequestID string `json:"request_id,omitempty"`
	// Errors lists the invalid fields (invalid_argument).
	Errors []FieldError `json:"errors,omitempty"`
	// CurrentRevision is the resource's revision (version_conflict).
	CurrentRevision *int64 `json:"current_revision,omitempty"`
	// SessionID names the harness session that makes plan mode
	// unsupported (unsupported_mode).
	SessionID string `json:"session_id,omitempty"`
	// StepID names the step (deps_incomplete, version_conflict of a claim).
	StepID string `json:"step_id,omitempty"`
	// IncompleteDeps are the deps a step waits for (deps_incomplete).
	IncompleteDeps []string `json:"incomplete_deps,omitempty"`
	// ClaimedBy is the worker holding a step (version_conflict of a report).
	ClaimedBy string `json:"claimed_by,omitempty"`
}
