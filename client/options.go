package client

import (
	"net/http"
	"strconv"
)

// CallOption adds a precondition to a call, or asks for the answer's
// metadata.
type CallOption func(*settings)

// settings are the CallOptions of one call.
type settings struct {
	ifMatch     string
	ifNoneMatch string
	lastKnown   *int64
	meta        *ResponseMeta
}

func settle(opts []CallOption) *settings {
	s := &settings{}
	for _, o := range opts {
		if o != nil {
			o(s)
		}
	}
	return s
}

// etag is the strong entity tag of revision rev.
func etag(rev int64) string { return `"` + strconv.FormatInt(rev, 10) + `"` }

// IfMatch makes a write conditional on the resource being at revision
// rev: otherwise it fails with ErrVersionConflict (412) and changes
// nothing. For an approval, rev is the plan revision the human read.
func IfMatch(rev int64) CallOption { return func(s *settings) { s.ifMatch = etag(rev) } }

// IfMatchAny makes a write conditional on the resource existing.
func IfMatchAny() CallOption { return func(s *settings) { s.ifMatch = "*" } }

// IfNoneMatch makes a read answer ErrNotModified while the resource is
// still at revision rev, so a poller re-reads nothing that did not change.
func IfNoneMatch(rev int64) CallOption { return func(s *settings) { s.ifNoneMatch = etag(rev) } }

// IfNoneMatchAny makes a PUT create-only: it fails with ErrAlreadyExists
// (412) when the resource exists.
func IfNoneMatchAny() CallOption { return func(s *settings) { s.ifNoneMatch = "*" } }

// LastKnownRevision sets the body's last_known_revision, the plan tools'
// precondition (PutPlan, SetPlanStatus): a plan that moved on fails with
// ErrVersionConflict (409); 0 means the plan must not exist yet. Other
// calls refuse it without sending anything: use IfMatch.
func LastKnownRevision(rev int64) CallOption { return func(s *settings) { s.lastKnown = &rev } }

// ResponseMeta is what an answer said besides its body.
type ResponseMeta struct {
	// Status is the HTTP status (201 when a PUT created the resource).
	Status int
	// Revision is the ETag's revision; 0 when the answer had none.
	Revision int64
	// EventSeq is X-Event-Seq, the event log's head read before a GET's
	// snapshot: subscribe after it to follow every change since. -1 when
	// the answer had none.
	EventSeq int64
	// RequestID is X-Request-ID, for the server's logs.
	RequestID string
	// Header is every header of the answer.
	Header http.Header
}

// Meta fills m from the answer of the call, whatever its status.
func Meta(m *ResponseMeta) CallOption { return func(s *settings) { s.meta = m } }

// apply sets the precondition headers of req.
func (s *settings) apply(req *http.Request) {
	if s.ifMatch != "" {
		req.Header.Set("If-Match", s.ifMatch)
	}
	if s.ifNoneMatch != "" {
		req.Header.Set("If-None-Match", s.ifNoneMatch)
	}
}

// record fills the Meta option from resp.
func (s *settings) record(resp *http.Response) {
	if s.meta == nil {
		return
	}
	*s.meta = ResponseMeta{
		Status:    resp.StatusCode,
		Revision:  etagRevision(resp.Header.Get("ETag")),
		EventSeq:  -1,
		RequestID: resp.Header.Get("X-Request-ID"),
		Header:    resp.Header,
	}
	if v, err := strconv.ParseInt(resp.Header.Get("X-Event-Seq"), 10, 64); err == nil {
		s.meta.EventSeq = v
	}
}
