package http

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
	mediaJSON     = "application/json"
	mediaMarkdown = "text/markdown"
	mediaYAML     = "application/yaml"
)

// mediaType returns the request's media type without parameters, lower-case;
// "" when the request names none.
func mediaType(r *http.Request) (string, error) {
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

// requireMediaType checks the request's Content-Type against the accepted
// ones: another type is 415, and so is a body without a Content-Type. A
// web page can send a body without one to any origin without asking
// (fetch with mode "no-cors"), so a body is taken as JSON only when it says
// so; a request without a body needs no Content-Type.
func requireMediaType(r *http.Request, accepted ...string) (string, error) {
	mt, err := mediaType(r)
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

// readBody reads the whole body, at most limit bytes (413 above). A body
// that stops arriving is the client's doing, never an internal error: 408
// when the read deadline passes (the server's ReadTimeout, or a shutdown's
// drain), 400 when the connection ends before the body does.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
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

// planBodyLimit bounds the body of a write carrying a whole plan, shared or session plan: room for
// content at the limit even when JSON or YAML escaping doubles it, plus the
// other fields. The content itself is then held to MaxPlanBytes.
func (s *Server) planBodyLimit() int64 {
	return max(s.cfg.MaxBodyBytes, 2*s.cfg.MaxPlanBytes+64<<10)
}

// decodeOptions tune decodeJSON.
type decodeOptions struct {
	// allowEmpty accepts an empty body as {}.
	allowEmpty bool
	// mediaTypes are the accepted Content-Types; default application/json.
	mediaTypes []string
}

// decodeJSON is the one JSON decode step of every handler: media type
// check, size limit, unknown fields rejected, one value only, then field
// validation. Every failure is an *apierr.Error naming the field.
func (s *Server) decodeJSON(w http.ResponseWriter, r *http.Request, dst any, opt decodeOptions) error {
	types := opt.mediaTypes
	if len(types) == 0 {
		types = []string{"application/json"}
	}
	if _, err := requireMediaType(r, types...); err != nil {
		return err
	}
	body, err := readBody(w, r, s.cfg.MaxBodyBytes)
	if err != nil {
		return err
	}
	return decodeJSONBytes(body, dst, opt.allowEmpty)
}

// decodeJSONBytes decodes body into dst strictly and validates it.
func decodeJSONBytes(body []byte, dst any, allowEmpty bool) error {
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

// precondition reads If-Match and If-None-Match and combines them with the
// body's last_known_revision (nil when the resource has none).
func (s *Server) precondition(r *http.Request, lastKnown *int64) (revision.Precondition, error) {
	im, err := revision.ParseMatch("If-Match", r.Header.Get("If-Match"))
	if err != nil {
		return revision.Precondition{}, err
	}
	inm, err := revision.ParseMatch("If-None-Match", r.Header.Get("If-None-Match"))
	if err != nil {
		return revision.Precondition{}, err
	}
	return revision.New(im, inm, lastKnown, s.cfg.RequirePreconditions)
}

// notModified answers a GET whose If-None-Match names the current
// revision with 304 and reports whether it did; otherwise the handler
// writes the representation. A malformed If-None-Match is its 400.
func notModified(w http.ResponseWriter, r *http.Request, current int64) (bool, error) {
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

func setETag(w http.ResponseWriter, rev int64) { w.Header().Set("ETag", revision.ETag(rev)) }

// sessionIDParam returns the {id} URL parameter, validated as a session id.
func sessionIDParam(r *http.Request) (string, error) {
	id := chi.URLParam(r, "id")
	if !validation.SessionID.MatchString(id) {
		return "", apierr.Invalid("id", "session id %q must match %s", id, validation.SessionID.String())
	}
	return id, nil
}
