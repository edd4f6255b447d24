package request

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/planserver/planserver/internal/apierr"
	"github.com/planserver/planserver/internal/revision"
	"github.com/planserver/planserver/internal/validation"
)

// The media types of plans, shared and session: JSON is the whole
// resource, Markdown its content alone, YAML the plan & action item
// document of the seeds.
const (
	MediaJSON     = "application/json"
	MediaMarkdown = "text/markdown"
	MediaYAML     = "application/yaml"
)

// MediaType returns the request's media type without parameters, lower-case;
// "" when the request names none.
func MediaType(r *http.Request) (string, error) {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return "", nil
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return "", apierr.New(apierr.UnsupportedMediaType, "malformed Content-Type %q", ct)
	}
	return mt, nil
}

// RequireMediaType checks the request's Content-Type against the accepted
// ones: another type is 415, and so is a body without a Content-Type. A
// web page can send a body without one to any origin without asking
// (fetch with mode "no-cors"), so a body is taken as JSON only when it says
// so; a request without a body needs no Content-Type.
func RequireMediaType(r *http.Request, accepted ...string) (string, error) {
	mt, err := MediaType(r)
	if err != nil {
		return "", err
	}
	if mt == "" {
		if r.ContentLength != 0 {
			return "", apierr.New(apierr.UnsupportedMediaType, "the request has a body but no Content-Type; send Content-Type: %s",
				strings.Join(accepted, " or "))
		}
		return accepted[0], nil
	}
	for _, a := range accepted {
		if mt == a {
			return mt, nil
		}
	}
	return "", apierr.New(apierr.UnsupportedMediaType, "Content-Type %s is not accepted here; send %s",
		mt, strings.Join(accepted, " or "))
}

// ReadBody reads the whole body, at most limit bytes (413 above). A body
// that stops arriving is the client's doing, never an internal error: 408
// when the read deadline passes (the server's ReadTimeout, or a shutdown's
// drain), 400 when the connection ends before the body does.
func ReadBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var (
			tooBig  *http.MaxBytesError
			timeout interface{ Timeout() bool }
		)
		switch {
		case errors.As(err, &tooBig):
			return nil, apierr.New(apierr.PayloadTooLarge, "request body is larger than %d bytes", limit)
		case errors.As(err, &timeout) && timeout.Timeout():
			return nil, bodyTimedOut(w)
		case errors.Is(err, io.ErrUnexpectedEOF):
			return nil, apierr.New(apierr.InvalidArgument, "the request body ended before its declared length")
		}
		return nil, fmt.Errorf("read request body: %w", err)
	}
	return body, nil
}

// answerTimeout is the write deadline of an answer to a request whose
// body timed out: its own read deadline has passed already.
const answerTimeout = 5 * time.Second

// bodyTimedOut is the error of a request whose body stopped arriving
// before the read deadline. The connection cannot carry another request
// (the rest of the body may still come), and the answer gets a write
// deadline of its own, since the request's is about to pass too.
func bodyTimedOut(w http.ResponseWriter) error {
	w.Header().Set("Connection", "close")
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(answerTimeout))
	return apierr.New(apierr.RequestTimeout, "the request body did not arrive in time; send the request again")
}

// DecodeOptions tune DecodeJSON.
type DecodeOptions struct {
	// AllowEmpty accepts an empty body as {}.
	AllowEmpty bool
	// MediaTypes are the accepted Content-Types; default application/json.
	MediaTypes []string
}

// DecodeJSON is the one JSON decode step of every handler: media type
// check, size limit (limit bytes; 413 above), unknown fields rejected, one
// value only, then field validation. Every failure is an *apierr.Error
// naming the field.
func DecodeJSON(w http.ResponseWriter, r *http.Request, dst any, limit int64, opt DecodeOptions) error {
	types := opt.MediaTypes
	if len(types) == 0 {
		types = []string{"application/json"}
	}
	if _, err := RequireMediaType(r, types...); err != nil {
		return err
	}
	body, err := ReadBody(w, r, limit)
	if err != nil {
		return err
	}
	return DecodeJSONBytes(body, dst, opt.AllowEmpty)
}

// DecodeJSONBytes decodes body into dst strictly and validates it.
func DecodeJSONBytes(body []byte, dst any, allowEmpty bool) error {
	if len(bytes.TrimSpace(body)) == 0 {
		if allowEmpty {
			return validation.Struct(dst)
		}
		return apierr.New(apierr.InvalidArgument, "request body is empty; send a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return jsonError(err)
	}
	// Not dec.More(), which says false before a stray ] or }.
	if len(bytes.TrimSpace(body[dec.InputOffset():])) > 0 {
		return apierr.New(apierr.InvalidArgument, "request body holds more than one JSON value")
	}
	if err := checkMembers(body, dst); err != nil {
		return err
	}
	if err := validation.NoNULInJSON("", body); err != nil {
		return err
	}
	return validation.Struct(dst)
}

// jsonError turns encoding/json errors into field errors.
func jsonError(err error) error {
	var (
		syntax *json.SyntaxError
		typ    *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &syntax):
		return apierr.New(apierr.InvalidArgument, "malformed JSON at byte %d: %v", syntax.Offset, err)
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			return apierr.New(apierr.InvalidArgument, "request body must be a JSON object, not %s", typ.Value)
		}
		return apierr.Invalid(field, "must be %s, not %s", jsonTypeName(typ.Type.Kind().String()), typ.Value)
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return apierr.New(apierr.InvalidArgument, "malformed JSON: body ends early")
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		field := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return apierr.Invalid(field, "unknown field")
	}
	return apierr.New(apierr.InvalidArgument, "malformed JSON: %v", err)
}

func jsonTypeName(kind string) string {
	switch kind {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "slice", "array":
		return "an array"
	case "map", "struct":
		return "an object"
	case "int", "int64", "int32", "uint", "uint64", "float64":
		return "a number"
	}
	return "of type " + kind
}

// Precondition reads If-Match and If-None-Match and combines them with the
// body's last_known_revision (nil when the resource has none); required is
// the server's --require-preconditions.
func Precondition(r *http.Request, lastKnown *int64, required bool) (revision.Precondition, error) {
	im, err := revision.ParseMatch("If-Match", r.Header.Get("If-Match"))
	if err != nil {
		return revision.Precondition{}, err
	}
	inm, err := revision.ParseMatch("If-None-Match", r.Header.Get("If-None-Match"))
	if err != nil {
		return revision.Precondition{}, err
	}
	return revision.New(im, inm, lastKnown, required)
}

// SessionID returns the {id} URL parameter, validated as a session id.
func SessionID(r *http.Request) (string, error) {
	id := chi.URLParam(r, "id")
	if !validation.SessionID.MatchString(id) {
		return "", apierr.Invalid("id", "session id %q must match %s", id, validation.SessionID.String())
	}
	return id, nil
}
