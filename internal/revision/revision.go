// Package revision owns optimistic concurrency: parsing the HTTP precondition
// headers (If-Match, If-None-Match) and the plan tools' last_known_revision
// body field into one Precondition, and evaluating it against a resource's
// current revision inside the writing transaction. It is pure: no I/O.
package revision

import (
	"strconv"
	"strings"

	"github.com/planserver/planserver/internal/apierr"
)

// ETag formats a revision as the strong entity tag served in ETag headers.
func ETag(rev int64) string { return `"` + strconv.FormatInt(rev, 10) + `"` }

// Match is a parsed If-Match or If-None-Match header.
type Match struct {
	// Present is true when the header was sent.
	Present bool
	// Any is true for "*".
	Any bool
	// Revisions are the strong, numeric entity tags listed. Weak tags and
	// tags that are not revisions are dropped: they can never match.
	Revisions []int64
}

// ParseMatch parses an If-Match or If-None-Match header value for the named
// header. It accepts "*", a comma-separated list of entity tags, and bare
// numbers (`If-Match: 7`, for curl users). Weak tags (W/"7") are accepted
// but never match, as RFC 9110 requires for If-Match. A value that is not an
// entity tag at all is an invalid_argument error naming the header.
func ParseMatch(header, value string) (Match, error) {
	value = strings.TrimSpace(value)
	if value == "" {
		return Match{}, nil
	}
	m := Match{Present: true}
	if value == "*" {
		m.Any = true
		return m, nil
	}
	for _, part := range strings.Split(value, ",") {
		tag := strings.TrimSpace(part)
		switch {
		case tag == "":
			continue
		case strings.HasPrefix(tag, "W/"):
			if !isQuoted(tag[2:]) {
				return Match{}, apierr.Invalid(header, "malformed entity tag %q", tag)
			}
			// A weak tag never matches a strong comparison.
		case isQuoted(tag):
			if n, ok := parseRevision(tag[1 : len(tag)-1]); ok {
				m.Revisions = append(m.Revisions, n)
			}
		default:
			n, ok := parseRevision(tag)
			if !ok {
				return Match{}, apierr.Invalid(header, "want an entity tag such as \"7\", a revision number, or *; got %q", tag)
			}
			m.Revisions = append(m.Revisions, n)
		}
	}
	return m, nil
}

func isQuoted(s string) bool {
	return len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' && !strings.Contains(s[1:len(s)-1], `"`)
}

func parseRevision(s string) (int64, bool) {
	if s == "" || len(s) > 18 {
		return 0, false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// Matches reports whether the header matches a resource at revision current
// (exists=false for a missing resource). An absent header matches.
func (m Match) Matches(exists bool, current int64) bool {
	if !m.Present {
		return true
	}
	if !exists {
		return false
	}
	if m.Any {
		return true
	}
	for _, r := range m.Revisions {
		if r == current {
			return true
		}
	}
	return false
}

// NotModified reports whether a GET carrying this If-None-Match header may be
// answered 304 for a resource at revision current. Weak comparison applies
// to If-None-Match, but we only ever serve strong tags, so the two agree.
func (m Match) NotModified(current int64) bool {
	return m.Present && (m.Any || m.Matches(true, current))
}

// Precondition is everything a client said about the revision it expects a
// write to apply to.
type Precondition struct {
	IfMatch     Match
	IfNoneMatch Match
	// LastKnown is the plan tools' last_known_revision body field; 0 means
	// "I expect the resource not to exist yet".
	LastKnown *int64
	// Required makes an update or delete without any precondition fail with
	// 428 (the server's --require-preconditions).
	Required bool
}

// New combines the headers and the body field, rejecting a header and body
// field that disagree (the contract's conventions, api/openapi.yaml: "Both
// given and different: 400").
func New(ifMatch, ifNoneMatch Match, lastKnown *int64, required bool) (Precondition, error) {
	if lastKnown != nil && *lastKnown < 0 {
		return Precondition{}, apierr.Invalid("last_known_revision", "must be 0 or a positive revision")
	}
	if lastKnown != nil && ifMatch.Present {
		if ifMatch.Any || len(ifMatch.Revisions) != 1 || ifMatch.Revisions[0] != *lastKnown {
			return Precondition{}, apierr.Invalid("last_known_revision", "disagrees with the If-Match header; send one of them")
		}
	}
	return Precondition{IfMatch: ifMatch, IfNoneMatch: ifNoneMatch, LastKnown: lastKnown, Required: required}, nil
}

// Conditional reports whether the client stated any expectation at all.
func (p Precondition) Conditional() bool {
	return p.IfMatch.Present || p.IfNoneMatch.Present || p.LastKnown != nil
}

// Check evaluates the precondition for a write to a resource called what
// (for messages, e.g. `plan "release"`), which exists at revision current or
// does not exist. It returns nil when the write may proceed.
//
// Header failures are 412 (Precondition set on the error); a stale
// last_known_revision is 409 version_conflict; an unconditional update or
// delete under Required is 428.
func (p Precondition) Check(what string, exists bool, current int64) error {
	if p.Required && exists && !p.Conditional() {
		return apierr.New(apierr.PreconditionRequired,
			"%s exists; this server requires If-Match (or last_known_revision) on updates and deletes", what)
	}
	if p.IfNoneMatch.Present && exists && (p.IfNoneMatch.Any || p.IfNoneMatch.Matches(true, current)) {
		e := apierr.New(apierr.AlreadyExists, "%s already exists at revision %d", what, current)
		e.CurrentRevision = &current
		e.Precondition = true
		return e
	}
	if !p.IfMatch.Matches(exists, current) {
		var e *apierr.Error
		if !exists {
			e = apierr.New(apierr.VersionConflict, "%s does not exist, If-Match requires it to", what)
			zero := int64(0)
			e.CurrentRevision = &zero
		} else {
			e = apierr.Conflict(current, "%s is at revision %d, If-Match named %s", what, current, p.IfMatch.describe())
		}
		e.Precondition = true
		return e
	}
	if p.LastKnown != nil {
		switch {
		case !exists && *p.LastKnown != 0:
			return apierr.Conflict(0, "%s does not exist, last_known_revision was %d", what, *p.LastKnown)
		case exists && *p.LastKnown != current:
			return apierr.Conflict(current, "%s is at revision %d, last_known_revision was %d", what, current, *p.LastKnown)
		}
	}
	return nil
}

func (m Match) describe() string {
	if m.Any {
		return "*"
	}
	if len(m.Revisions) == 0 {
		return "no revision this server issues"
	}
	parts := make([]string, len(m.Revisions))
	for i, r := range m.Revisions {
		parts[i] = strconv.FormatInt(r, 10)
	}
	return strings.Join(parts, ", ")
}

// Next is the revision a write stores over a resource at current (0 when
// it does not exist). A resource created under the name of a deleted one
// continues above floor, the deleted one's last revision, so no ETag or
// If-Match of the old one can match the new one.
func Next(current, floor int64) int64 {
	if current > 0 {
		return current + 1
	}
	return floor + 1
}

// ExactRevision parses a header that must name exactly one revision as a
// strong entity tag, "7", or as the bare number curl users type, 7: no
// list, no *, no weak tag, no leading zeros, nothing around it. An
// approval names the one revision a human read; anything looser could
// name something else.
func ExactRevision(header, value string) (int64, error) {
	v := strings.TrimSpace(value)
	if isQuoted(v) {
		v = v[1 : len(v)-1]
	}
	n, ok := parseRevision(v)
	if !ok || n < 1 || strconv.FormatInt(n, 10) != v {
		return 0, apierr.Invalid(header, "must name exactly one revision, such as \"7\" (or 7); got %q", value)
	}
	return n, nil
}
