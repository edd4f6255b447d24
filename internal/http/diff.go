package http

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/apierr"
	"github.com/planserver/planserver/internal/diff"
	"github.com/planserver/planserver/internal/http/request"
	"github.com/planserver/planserver/internal/http/response"
)

// mediaDiff is the unified diff of GET …/diff.
const mediaDiff = "text/x-diff"

// diffRange reads ?from= and ?to= of a diff route; nil for what the
// client left out, which the store settles (versioned.Compare).
func diffRange(r *http.Request) (from, to *int64, err error) {
	parse := func(name string, min int64) (*int64, error) {
		v := r.URL.Query().Get(name)
		if v == "" {
			return nil, nil
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < min || strconv.FormatInt(n, 10) != v {
			return nil, apierr.Invalid(name, "must be a revision number (%d or more), got %q", min, v)
		}
		return &n, nil
	}
	if from, err = parse("from", 0); err != nil {
		return nil, nil, err
	}
	if to, err = parse("to", 1); err != nil {
		return nil, nil, err
	}
	return from, to, nil
}

// writeDiff answers d, a diff of what, as JSON or, when Accept asks for
// it, as a unified diff (which leaves out d.Scope).
func writeDiff(w http.ResponseWriter, r *http.Request, what string, d *api.Diff) error {
	w.Header().Set("Vary", "Accept")
	mt, err := request.Negotiate(r, request.MediaJSON, mediaDiff)
	if err != nil {
		return err
	}
	if mt == mediaDiff {
		w.Header().Set("Content-Type", mediaDiff+"; charset=utf-8")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(diff.Unified(fmt.Sprintf("%s@%d", what, d.From), fmt.Sprintf("%s@%d", what, d.To), d.Hunks)))
		return nil
	}
	response.JSON(w, http.StatusOK, d)
	return nil
}
