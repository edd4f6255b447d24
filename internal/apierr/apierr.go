// Package apierr owns the error vocabulary every planserver package speaks:
// one Error type carrying a stable Code (the code column of API.md), so the
// HTTP layer can map it to a status in one table and clients can switch on it.
package apierr

import (
	"errors"
	"fmt"
)

// Code is the stable, machine-readable error code clients switch on.
type Code string

// The code set of API.md. The HTTP status for each lives in internal/http.
const (
	InvalidArgument      Code = "invalid_argument"
	Unauthenticated      Code = "unauthenticated"
	PermissionDenied     Code = "permission_denied"
	NotFound             Code = "not_found"
	MethodNotAllowed     Code = "method_not_allowed"
	NotAcceptable        Code = "not_acceptable"
	AlreadyExists        Code = "already_exists"
	VersionConflict      Code = "version_conflict"
	PreconditionRequired Code = "precondition_required"
	PayloadTooLarge      Code = "payload_too_large"
	HeadersTooLarge      Code = "headers_too_large"
	RequestTimeout       Code = "request_timeout"
	UnsupportedMediaType Code = "unsupported_media_type"
	UnsupportedMode      Code = "unsupported_mode"
	PlanMissing          Code = "plan_missing"
	ReviewNotPending     Code = "review_not_pending"
	DepsIncomplete       Code = "deps_incomplete"
	CursorExpired        Code = "cursor_expired"
	RateLimited          Code = "rate_limited"
	Unavailable          Code = "unavailable"
	Internal             Code = "internal"
)

// FieldError names one invalid field the way the client sent it, e.g.
// "steps[3].deps[0]" or the header name "If-Match".
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// Error is a failure a client can act on. Detail is safe to show to clients.
type Error struct {
	Code   Code
	Detail string
	// Fields lists per-field problems (invalid_argument).
	Fields []FieldError
	// CurrentRevision is set on version conflicts so clients can re-read.
	CurrentRevision *int64
	// Precondition marks failures caused by an HTTP precondition header
	// (If-Match, If-None-Match): they are answered 412 whatever the code.
	Precondition bool
	// Extra holds additional problem members, e.g. the session that makes a
	// mode unsupported.
	Extra map[string]any
}

func (e *Error) Error() string {
	if e.Detail == "" {
		return string(e.Code)
	}
	return string(e.Code) + ": " + e.Detail
}

// New returns an Error with a formatted detail.
func New(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Detail: fmt.Sprintf(format, args...)}
}

// Invalid returns an invalid_argument error for a single field.
func Invalid(field, format string, args ...any) *Error {
	msg := fmt.Sprintf(format, args...)
	return &Error{Code: InvalidArgument, Detail: field + ": " + msg, Fields: []FieldError{{Field: field, Message: msg}}}
}

// InvalidFields returns an invalid_argument error listing every field error.
func InvalidFields(fields []FieldError) *Error {
	detail := "invalid request"
	if len(fields) == 1 {
		detail = fields[0].Field + ": " + fields[0].Message
	} else if len(fields) > 1 {
		detail = fmt.Sprintf("%d invalid fields, first %s: %s", len(fields), fields[0].Field, fields[0].Message)
	}
	return &Error{Code: InvalidArgument, Detail: detail, Fields: fields}
}

// Conflict returns a version_conflict error carrying the current revision.
func Conflict(current int64, format string, args ...any) *Error {
	return &Error{Code: VersionConflict, Detail: fmt.Sprintf(format, args...), CurrentRevision: &current}
}

// CodeOf reports the Code of err, or Internal when err carries none.
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return Internal
}

// As returns err as *Error when it is one.
func As(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}
