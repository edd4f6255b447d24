package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/planserver/planserver/api"
)

// Error is a request the server refused: the problem document it answered
// with, and the request it answered. Match it with errors.Is against the
// sentinel of its code (ErrVersionConflict, ErrNotFound, …) or take it
// apart with errors.As.
type Error struct {
	// Method and Path name the request, e.g. "PUT" "/v1/plans/release".
	Method, Path string
	// Status is the HTTP status of the answer.
	Status int
	// Code is the problem's stable code. An answer that was not a problem
	// document (a proxy's error page) gets the code its status stands
	// for, or "" where the status stands for several.
	Code api.Code
	// Detail is the server's explanation, for people.
	Detail string
	// CurrentRevision is the resource's revision on a version conflict (0:
	// it does not exist), nil when the problem names none.
	CurrentRevision *int64
	// Fields lists the invalid fields of an invalid_argument.
	Fields []api.FieldError
	// RetryAfter is the server's Retry-After (rate_limited, unavailable,
	// insufficient_storage); 0 when it sent none.
	RetryAfter time.Duration
	// Problem is the problem document as decoded, members specific to a
	// code (SessionID, IncompleteDeps, ClaimedBy, …) included.
	Problem api.Problem
	// Raw is the body of the answer, as it came.
	Raw []byte
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.Method != "" {
		fmt.Fprintf(&b, "%s %s: ", e.Method, e.Path)
	}
	b.WriteString(strconv.Itoa(e.Status))
	if e.Code != "" {
		b.WriteString(" " + string(e.Code))
	} else {
		b.WriteString(" " + http.StatusText(e.Status))
	}
	if e.Detail != "" {
		b.WriteString(": " + e.Detail)
	}
	return b.String()
}

// Is reports whether target is the sentinel of e's code.
func (e *Error) Is(target error) bool {
	s, ok := target.(*sentinel)
	return ok && s.code == e.Code
}

// sentinel is the error each code is matched against. It is never
// returned by itself: requests return *Error.
type sentinel struct{ code api.Code }

func (s *sentinel) Error() string { return "planserver: " + string(s.code) }

// The sentinels, one per api.Code: errors.Is(err, ErrVersionConflict) holds
// for any *Error with that code.
var (
	ErrInvalidArgument      error = &sentinel{api.CodeInvalidArgument}
	ErrUnauthenticated      error = &sentinel{api.CodeUnauthenticated}
	ErrPermissionDenied     error = &sentinel{api.CodePermissionDenied}
	ErrNotFound             error = &sentinel{api.CodeNotFound}
	ErrMethodNotAllowed     error = &sentinel{api.CodeMethodNotAllowed}
	ErrNotAcceptable        error = &sentinel{api.CodeNotAcceptable}
	ErrAlreadyExists        error = &sentinel{api.CodeAlreadyExists}
	ErrVersionConflict      error = &sentinel{api.CodeVersionConflict}
	ErrPreconditionRequired error = &sentinel{api.CodePreconditionRequired}
	ErrPayloadTooLarge      error = &sentinel{api.CodePayloadTooLarge}
	ErrHeadersTooLarge      error = &sentinel{api.CodeHeadersTooLarge}
	ErrRequestTimeout       error = &sentinel{api.CodeRequestTimeout}
	ErrUnsupportedMediaType error = &sentinel{api.CodeUnsupportedMediaType}
	ErrUnsupportedMode      error = &sentinel{api.CodeUnsupportedMode}
	ErrPlanMissing          error = &sentinel{api.CodePlanMissing}
	ErrReviewNotPending     error = &sentinel{api.CodeReviewNotPending}
	ErrDepsIncomplete       error = &sentinel{api.CodeDepsIncomplete}
	ErrCursorExpired        error = &sentinel{api.CodeCursorExpired}
	ErrRateLimited          error = &sentinel{api.CodeRateLimited}
	ErrInsufficientStorage  error = &sentinel{api.CodeInsufficientStorage}
	ErrUnavailable          error = &sentinel{api.CodeUnavailable}
	ErrInternal             error = &sentinel{api.CodeInternal}
)

// ErrNotModified is returned by a read made with IfNoneMatch while the
// resource is still at that revision (304): keep the copy you have.
var ErrNotModified = errors.New("planserver: not modified")

// ErrNoStepReady is returned by ClaimNextStep when no step is ready (of
// that owner): nothing was written.
var ErrNoStepReady = errors.New("planserver: no step is ready")

// CodeOf returns the code of the *Error in err's chain, "" when there is
// none (a network failure, a cancelled context).
func CodeOf(err error) api.Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// newError builds the *Error of an answer with status, header and body.
func newError(method, path string, status int, header http.Header, body []byte) *Error {
	e := &Error{Method: method, Path: path, Status: status, Raw: body}
	if isMedia(header.Get("Content-Type"), "application/problem+json") && json.Unmarshal(body, &e.Problem) == nil && e.Problem.Code != "" {
		e.Code, e.Detail = e.Problem.Code, e.Problem.Detail
		e.CurrentRevision, e.Fields = e.Problem.CurrentRevision, e.Problem.Errors
	} else {
		e.Code = api.CodeForStatus(status)
		e.Detail = strings.TrimSpace(string(body[:min(len(body), 512)]))
	}
	if s, err := strconv.Atoi(header.Get("Retry-After")); err == nil && s > 0 {
		e.RetryAfter = time.Duration(s) * time.Second
	}
	return e
}

// problemError is the *Error of a problem that came inside an event
// stream's error event rather than as an answer.
func problemError(method, path string, data []byte) *Error {
	h := http.Header{"Content-Type": {"application/problem+json"}}
	var p api.Problem
	_ = json.Unmarshal(data, &p)
	return newError(method, path, p.Status, h, data)
}

// isMedia reports whether the Content-Type value ct is media type mt,
// whatever its parameters.
func isMedia(ct, mt string) bool {
	base, _, _ := strings.Cut(ct, ";")
	return strings.EqualFold(strings.TrimSpace(base), mt)
}
