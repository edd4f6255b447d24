// Package request owns what the API reads from a request before a handler
// acts on it: its id, the body (media type, size limit, strict JSON
// decoding and validation), the preconditions, the representation asked
// for (Accept), and the path parameters every handler validates alike.
package request

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"regexp"
)

type ctxKey int

const idKey ctxKey = iota

// idPattern limits the client-supplied request ids we echo back, so a
// header cannot inject anything into logs or responses.
var idPattern = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)

// AssignID takes X-Request-ID from the client when it is sane, or makes
// one, and echoes it in the response; ID reads it back.
func AssignID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("X-Request-ID")
		if !idPattern.MatchString(id) {
			b := make([]byte, 8)
			_, _ = rand.Read(b)
			id = hex.EncodeToString(b)
		}
		w.Header().Set("X-Request-ID", id)
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), idKey, id)))
	})
}

// ID is the request's id, as AssignID set it; "" outside it.
func ID(r *http.Request) string {
	id, _ := r.Context().Value(idKey).(string)
	return id
}
