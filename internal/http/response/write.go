package response

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"sync"

	"github.com/planserver/planserver/internal/apierr"
	"github.com/planserver/planserver/internal/http/request"
	"github.com/planserver/planserver/internal/revision"
)

// Problem answers err as application/problem+json. An error without a
// code (or a storage fault) is answered with only what the client may
// know, and its cause is left for the request's one log line (observe).
func Problem(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() != nil && errors.Is(err, r.Context().Err()) {
		// The client went away; there is nobody to answer and nothing to fix.
		return
	}
	e, status, body := ProblemOf(r, err)
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

// ProblemOf returns the error a client sees for err, its status and its
// problem document, bounded in size, and notes the cause of a failure that
// is not the client's for the request's log line.
func ProblemOf(r *http.Request, err error) (*apierr.Error, int, map[string]any) {
	e, ok := apierr.Of(err)
	if !ok || e.Code == apierr.Internal {
		NoteFailure(r, err)
		e = &apierr.Error{Code: apierr.Internal, Detail: "internal error"}
	} else if e.Cause != nil {
		NoteFailure(r, e.Cause)
	}
	status := Status(e)
	body := ProblemBody(e)
	if id := request.ID(r); id != "" {
		body["request_id"] = id
	}
	if r.URL != nil {
		body["instance"] = r.URL.Path
	}
	return e, status, body
}

// JSON answers v as application/json with status.
//
// The body is encoded into a pooled buffer first and written in one piece
// with its Content-Length: no chunked encoding, one write, and an encoding
// error (a bug) becomes a 500 instead of half a body.
func JSON(w http.ResponseWriter, status int, v any) {
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
		_ = json.NewEncoder(buf).Encode(ProblemBody(&apierr.Error{Code: apierr.Internal, Detail: "internal error"}))
		w.Header().Set("Content-Type", "application/problem+json")
		w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
		w.WriteHeader(status)
		_, _ = w.Write(buf.Bytes())
		return
	}
	JSONBody(w, status, buf.Bytes())
}

// jsonBuffers are the buffers JSON encodes into; a buffer grown past
// maxPooledBuffer (a large plan) is left to the garbage collector rather
// than kept for every later small answer.
var jsonBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

const maxPooledBuffer = 64 << 10

// JSONBody answers body, an encoded JSON document, with its length.
func JSONBody(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

type ctxKey int

const failureKey ctxKey = iota

// failure holds the cause of a request's 5xx (or storage fault) until
// the request's one log line, so it is logged exactly once.
type failure struct{ err error }

// TrackFailure returns r with room for the cause of its failure, and a
// function that returns the cause noted, if any (for the request's log
// line).
func TrackFailure(r *http.Request) (*http.Request, func() error) {
	f := &failure{}
	return r.WithContext(context.WithValue(r.Context(), failureKey, f)), func() error { return f.err }
}

// NoteFailure records err as the cause of r's failure; the first one wins.
// Without TrackFailure it does nothing.
func NoteFailure(r *http.Request, err error) {
	if f, ok := r.Context().Value(failureKey).(*failure); ok && f.err == nil {
		f.err = err
	}
}

// NotModified answers a GET whose If-None-Match names the current
// revision with 304 and reports whether it did; otherwise the handler
// writes the representation. A malformed If-None-Match is its 400.
func NotModified(w http.ResponseWriter, r *http.Request, current int64) (bool, error) {
	inm, err := revision.ParseMatch("If-None-Match", r.Header.Get("If-None-Match"))
	if err != nil {
		return false, err
	}
	if inm.NotModified(current) {
		w.Header().Set("ETag", revision.ETag(current))
		w.WriteHeader(http.StatusNotModified)
		return true, nil
	}
	return false, nil
}

// SetETag sets the ETag of revision rev.
func SetETag(w http.ResponseWriter, rev int64) { w.Header().Set("ETag", revision.ETag(rev)) }
