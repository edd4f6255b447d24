// Package apierr owns the error vocabulary every planserver package speaks:
// one Error type carrying a stable Code (the code column of API.md, defined
// in the public api package), so a transport can map it to a status in one
// table and clients can switch on it.
package apierr

import (
	"errors"
	"fmt"

	"github.com/planserver/planserver/api"
)

// Code is the stable, machine-readable error code clients switch on.
type Code = api.Code

// The code set of API.md. The HTTP status for each lives in internal/http.
const (
	InvalidArgument      = api.CodeInvalidArgument
	Unauthenticated      = api.CodeUnauthenticated
	PermissionDenied     = api.CodePermissionDenied
	NotFound             = api.CodeNotFound
	MethodNotAllowed     = api.CodeMethodNotAllowed
	NotAcceptable        = api.CodeNotAcceptable
	AlreadyExists        = api.CodeAlreadyExists
	VersionConflict      = api.CodeVersionConflict
	PreconditionRequired = api.CodePreconditionRequired
	PayloadTooLarge      = api.CodePayloadTooLarge
	HeadersTooLarge      = api.CodeHeadersTooLarge
	RequestTimeout       = api.CodeRequestTimeout
	UnsupportedMediaType = api.CodeUnsupportedMediaType
	UnsupportedMode      = api.CodeUnsupportedMode
	PlanMissing          = api.CodePlanMissing
	ReviewNotPending     = api.CodeReviewNotPending
	DepsIncomplete       = api.CodeDepsIncomplete
	CursorExpired        = api.CodeCursorExpired
	RateLimited          = api.CodeRateLimited
	InsufficientStorage  = api.CodeInsufficientStorage
	Unavailable          = api.CodeUnavailable
	Internal             = api.CodeInternal
)

// FieldError names one invalid field the way the client sent it.
type FieldError = api.FieldError

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
	// RetryAfter, in seconds, tells the client when to try again (sent as
	// Retry-After); 0 for none.
	RetryAfter int
	// Extra holds additional problem members, e.g. the session that makes a
	// mode unsupported.
	Extra map[string]any
	// Cause is the underlying failure, for the server's log; never shown
	// to clients.
	Cause error
}

func (e *Error) Error() string {
	msg := string(e.Code)
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	if e.Cause != nil {
		msg += " (" + e.Cause.Error() + ")"
	}
	return msg
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Cause }

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
