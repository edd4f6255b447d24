package http

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/apierr"
	"github.com/planserver/planserver/internal/diff"
)

// mediaDiff is the unified diff of GET …/diff.
const mediaDiff = "text/x-diff"

// diffRange reads ?from= and ?to= of a diff route. revisions lists the
// readable revisions, newest first; it is asked only for what the client
// left out: to defaults to the newest, from to the newest kept one below
// to (0, the empty document, when there is none).
func diffRange(r *http.Request, revisions func() ([]int64, error)) (from, to int64, err error) {
	parse := func(name string, min int64) (int64, bool, error) {
		v := r.URL.Query().Get(name)
		if v == "" {
			return 0, false, nil
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < min || strconv.FormatInt(n, 10) != v {
			return 0, false, apierr.Invalid(name, "must be a revision number (%d or more), got %q", min, v)
		}
		return n, true, nil
	}
	from, hasFrom, err := parse("from", 0)
	if err != nil {
		return 0, 0, err
	}
	to, hasTo, err := parse("to", 1)
	if err != nil {
		return 0, 0, err
	}
	if hasFrom && hasTo {
		return from, to, nil
	}
	revs, err := revisions()
	if err != nil {
		return 0, 0, err
	}
	if !hasTo {
		to = revs[0]
	}
	if !hasFrom {
		for _, rv := range revs {
			if rv < to {
				from = rv
				break
			}
		}
	}
	return from, to, nil
}

// writeDiff answers how text b (revision to) differs from text a
// (revision from) of what, as JSON hunks or, when Accept asks for it, a
// unified diff.
//
// scope, when set, is the change of the declared scope between the two,
// given in the JSON form only.
func writeDiff(w http.ResponseWriter, r *http.Request, what string, from, to int64, a, b string, scope *api.ScopeChange) error {
	w.Header().Set("Vary", "Accept")
	mt, err := negotiate(r, mediaJSON, mediaDiff)
	if err != nil {
		return err
	}
	hunks := diff.Hunks(diff.Lines(a), diff.Lines(b))
	if mt == mediaDiff {
		w.Header().Set("Content-Type", mediaDiff+"; charset=utf-8")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(diff.Unified(fmt.Sprintf("%s@%d", what, from), fmt.Sprintf("%s@%d", what, to), hunks)))
		return nil
	}
	if hunks == nil {
		hunks = []api.DiffHunk{}
	}
	writeJSON(w, http.StatusOK, api.Diff{From: from, To: to, Hunks: hunks, Scope: scope})
	return nil
}
