// Package request owns what the API reads from a request before a handler
// acts on it: its id, the body (media type, size limit, strict JSON
// decoding and validation), the preconditions, the representation asked
// for (Accept), the parameters every handler validates alike, and whether
// its Host names this server.
package request

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"github.com/planserver/planserver/internal/apierr"
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

// PageSize parses the limit query parameter; 0 when absent.
func PageSize(r *http.Request) (int, error) {
	v := r.URL.Query().Get("limit")
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, apierr.Invalid("limit", "must be a whole number from 1 to 1000, got %q", v)
	}
	return n, nil
}

// HostAllowed reports whether a Host header names this server: a loopback
// name or address, with or without a port, or an entry of allowed (the
// server's --allowed-hosts).
func HostAllowed(hostport string, allowed map[string]bool) bool {
	hostport = strings.ToLower(hostport)
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if host == "" {
		return false
	}
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return true
	}
	return allowed[host] || allowed[hostport]
}
