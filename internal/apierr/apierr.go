// Package apierr owns the error vocabulary every planserver package speaks:
// one Error type carrying a stable Code (the contract's problem codes,
// defined in the public api package), so a transport can map it to a status in one
// table and clients can switch on it. Storage speaks its own (db.Fault);
// As and CodeOf give a storage fault its code here.
package apierr

import (
	"errors"
	"fmt"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/db"
)

// Code is the stable, machine-readable error code clients switch on.
type Code = api.Code

// The code set of the contract (api/openapi.yaml). The HTTP status for
// each lives in internal/http.
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
	if e, ok := As(err); ok {
		return e.Code
	}
	return Internal
}

// As returns err as *Error when it is one, or the Error a client gets for
// it when it is a storage fault (db.Fault, once db.Classify has said so).
func As(err error) (*Error, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e, true
	}
	var f *db.Fault
	if errors.As(err, &f) {
		return storageFault(f), true
	}
	return nil, false
}

// Of is As for an error a transport is about to answer: an engine's error
// that db.Classify finds to be a storage fault gets that fault's answer
// too. An error with a code of its own keeps it, whatever it wraps.
func Of(err error) (*Error, bool) {
	if e, ok := As(err); ok {
		return e, true
	}
	return As(db.Classify(err))
}

// retryAfterFault is the Retry-After, in seconds, of a storage fault: long
// enough for an operator to notice, short enough for a client to resume
// soon after the fault is fixed.
const retryAfterFault = 30

// storageFault is the answer to a storage fault: a full disk is
// insufficient_storage (507), any other fault unavailable (503), neither
// the client's doing nor a bug, so not internal. The detail is storage's
// own; the cause is kept for the server's log.
func storageFault(f *db.Fault) *Error {
	code := Unavailable
	if errors.Is(f.Kind, db.ErrDiskFull) {
		code = InsufficientStorage
	}
	return &Error{Code: code, Detail: f.Detail, RetryAfter: retryAfterFault, Cause: f.Cause}
}
