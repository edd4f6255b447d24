package http

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/apierr"
	"github.com/planserver/planserver/internal/http/request"
	"github.com/planserver/planserver/internal/http/response"
	"github.com/planserver/planserver/internal/sessions"
)

// toolJSON is the MCP tool shape. Hosts may forward their tools verbatim,
// so the MCP fields gating does not use (title, description, schemas,
// _meta) are accepted and ignored; any other field is a 400, which catches
// typos such as "readonlyHint".
type toolJSON struct {
	Name         string          `json:"name"`
	Title        string          `json:"title"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema"`
	Meta         json.RawMessage `json:"_meta"`
	// Annotations is decoded on its own so its errors name their path.
	Annotations json.RawMessage `json:"annotations"`
}

// annotationsJSON is MCP's ToolAnnotations; only readOnlyHint matters to
// gating, but every hint must be a boolean.
type annotationsJSON struct {
	Title           string `json:"title"`
	ReadOnlyHint    *bool  `json:"readOnlyHint"`
	DestructiveHint *bool  `json:"destructiveHint"`
	IdempotentHint  *bool  `json:"idempotentHint"`
	OpenWorldHint   *bool  `json:"openWorldHint"`
}

// decodeTool decodes one tool whose JSON sits at path ("" for the request
// body itself, else e.g. "tools[2]"), reporting field errors under that
// path: tools[2].annotations.readOnlyHint.
func decodeTool(raw json.RawMessage, path string) (sessions.Tool, []apierr.FieldError, error) {
	var tj toolJSON
	if err := request.DecodeJSONBytes(raw, &tj, false); err != nil {
		fields, err := fieldsAt(err, path)
		return sessions.Tool{}, fields, err
	}
	t := sessions.Tool{Name: tj.Name}
	if m := bytes.TrimSpace(tj.Meta); len(m) > 0 && string(m) != "null" {
		var meta map[string]json.RawMessage
		if err := json.Unmarshal(m, &meta); err != nil {
			return sessions.Tool{}, []apierr.FieldError{{Field: joinPath(path, "_meta"), Message: "must be an object"}}, nil
		}
		if raw, ok := meta[api.UpstreamMeta]; ok {
			if err := json.Unmarshal(raw, &t.Upstream); err != nil || len(t.Upstream) > sessions.MaxToolName {
				return sessions.Tool{}, []apierr.FieldError{{Field: joinPath(path, "_meta."+api.UpstreamMeta),
					Message: fmt.Sprintf("must be the tool server's name, a string of at most %d bytes", sessions.MaxToolName)}}, nil
			}
		}
	}
	if a := bytes.TrimSpace(tj.Annotations); len(a) > 0 && string(a) != "null" {
		var aj annotationsJSON
		if err := request.DecodeJSONBytes(a, &aj, false); err != nil {
			fields, err := fieldsAt(err, joinPath(path, "annotations"))
			return sessions.Tool{}, fields, err
		}
		t.ReadOnlyHint = aj.ReadOnlyHint
	}
	return t, nil, nil
}

// fieldsAt moves the field errors of a decode error under path. An
// invalid_argument without fields (the value is not an object at all)
// becomes an error of path itself. Other errors are returned as they are.
func fieldsAt(err error, path string) ([]apierr.FieldError, error) {
	e, ok := apierr.As(err)
	if !ok || e.Code != apierr.InvalidArgument {
		return nil, err
	}
	if len(e.Fields) == 0 {
		if path == "" {
			return nil, err
		}
		return []apierr.FieldError{{Field: path, Message: e.Detail}}, nil
	}
	out := make([]apierr.FieldError, len(e.Fields))
	for i, f := range e.Fields {
		out[i] = apierr.FieldError{Field: joinPath(path, f.Field), Message: f.Message}
	}
	return out, nil
}

func joinPath(path, field string) string {
	if path == "" {
		return field
	}
	return path + "." + field
}

// filterRequest is the body of POST …/tools/filter.
type filterRequest struct {
	Tools []json.RawMessage `json:"tools" validate:"required"`
}

func (s *Server) filterTools(w http.ResponseWriter, r *http.Request) error {
	id, err := request.SessionID(r)
	if err != nil {
		return err
	}
	var req filterRequest
	if err := request.DecodeJSON(w, r, &req, s.cfg.MaxBodyBytes, request.DecodeOptions{}); err != nil {
		return err
	}
	tools := make([]sessions.Tool, len(req.Tools))
	var fields []apierr.FieldError
	for i, raw := range req.Tools {
		t, fe, err := decodeTool(raw, fmt.Sprintf("tools[%d]", i))
		if err != nil {
			return err
		}
		fields = append(fields, fe...)
		tools[i] = t
	}
	if len(fields) > 0 {
		return apierr.InvalidFields(fields)
	}
	if err := sessions.ValidateTools(tools); err != nil {
		return err
	}
	sess, err := s.sessions.Get(r.Context(), id)
	if err != nil {
		return err
	}
	response.JSON(w, http.StatusOK, s.gate.Filter(sess, tools))
	return nil
}

func (s *Server) checkTool(w http.ResponseWriter, r *http.Request) error {
	id, err := request.SessionID(r)
	if err != nil {
		return err
	}
	if _, err := request.RequireMediaType(r, request.MediaJSON); err != nil {
		return err
	}
	body, err := request.ReadBody(w, r, s.cfg.MaxBodyBytes)
	if err != nil {
		return err
	}
	t, fields, err := decodeTool(body, "")
	if err == nil && len(fields) > 0 {
		err = apierr.InvalidFields(fields)
	}
	if err == nil {
		err = sessions.ValidateTool(t)
	}
	if err != nil {
		return err
	}
	res, err := s.sessions.CheckTool(r.Context(), id, s.gate, t)
	if err != nil {
		return err
	}
	response.JSON(w, http.StatusOK, res)
	return nil
}
