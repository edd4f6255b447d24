package client

import (
	"context"
	"net/url"
	"strconv"
	"strings"

	"github.com/planserver/planserver/api"
)

// EventQuery selects events from the log. Filters combine with AND.
type EventQuery struct {
	// After is the cursor: only events after this seq. nil starts at the
	// oldest event still retained; a cursor after which events were
	// pruned is ErrCursorExpired.
	After *int64
	// SessionID keeps that session's events and its descendants'.
	SessionID string
	// Plan keeps that shared plan's events.
	Plan string
	// Types keeps events of these types (api.EventSessionCreated, …).
	Types []string
	// Limit is the page size of ListEvents (1 to 1000; the server's
	// default, 100, when 0). Subscribe ignores it.
	Limit int
}

// values are the query parameters of q. The cursor is left out: ListEvents
// sends it as ?after=, a subscription as Last-Event-ID.
func (q EventQuery) values() url.Values {
	v := url.Values{}
	set(v, "session_id", q.SessionID)
	set(v, "plan", q.Plan)
	set(v, "types", strings.Join(q.Types, ","))
	return v
}

// ListEvents reads one page of the log. Pass NextAfter back as After for
// the next page; a page shorter than the limit means the log has nothing
// newer yet.
func (c *Client) ListEvents(ctx context.Context, q EventQuery, opts ...CallOption) (*api.EventPage, error) {
	v := q.values()
	if q.After != nil {
		v.Set("after", strconv.FormatInt(*q.After, 10))
	}
	setInt(v, "limit", int64(q.Limit))
	return doJSON[api.EventPage](ctx, c, request{method: "GET", path: "/v1/events", query: v}, opts)
}
