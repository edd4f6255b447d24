package client

import (
	"context"
	"iter"
	"net/url"
	"strconv"

	"github.com/planserver/planserver/api"
)

// CreateSession creates a session: 201 with the new session. A taken id is
// ErrAlreadyExists; a harness session that would be in plan mode is
// ErrUnsupportedMode.
func (c *Client) CreateSession(ctx context.Context, in api.SessionCreate, opts ...CallOption) (*api.Session, error) {
	return doJSON[api.Session](ctx, c, request{method: "POST", path: "/v1/sessions", body: in}, opts)
}

// GetSession reads a session; with IfNoneMatch, ErrNotModified while it is
// unchanged.
func (c *Client) GetSession(ctx context.Context, id string, opts ...CallOption) (*api.Session, error) {
	return doJSON[api.Session](ctx, c, request{method: "GET", path: pathOf("v1", "sessions", esc(id))}, opts)
}

// SessionQuery filters GET /v1/sessions. Zero values do not filter.
type SessionQuery struct {
	ParentID string
	Mode     api.Mode
	// ReviewState "pending" is a reviewer's inbox.
	ReviewState string
	// ExternalID finds the child that stands for a host's conversation
	// (with ParentID).
	ExternalID string
	// Limit is the page size (the server's default when 0).
	Limit     int
	PageToken string
}

func (q SessionQuery) values() url.Values {
	v := url.Values{}
	set(v, "parent_id", q.ParentID)
	set(v, "mode", string(q.Mode))
	set(v, "review_state", q.ReviewState)
	set(v, "external_id", q.ExternalID)
	setInt(v, "limit", int64(q.Limit))
	set(v, "page_token", q.PageToken)
	return v
}

// ListSessions reads one page of sessions in creation order; pass its
// NextPageToken back as PageToken for the next ("" ends the list).
func (c *Client) ListSessions(ctx context.Context, q SessionQuery, opts ...CallOption) (*api.SessionList, error) {
	return doJSON[api.SessionList](ctx, c, request{method: "GET", path: "/v1/sessions", query: q.values()}, opts)
}

// Sessions walks every page of the list from q.PageToken on, yielding each
// session, or the error that ended the walk.
func (c *Client) Sessions(ctx context.Context, q SessionQuery) iter.Seq2[*api.Session, error] {
	return func(yield func(*api.Session, error) bool) {
		for {
			page, err := c.ListSessions(ctx, q)
			if err != nil {
				yield(nil, err)
				return
			}
			for _, s := range page.Sessions {
				if !yield(s, nil) {
					return
				}
			}
			if page.NextPageToken == "" {
				return
			}
			q.PageToken = page.NextPageToken
		}
	}
}

// PatchSession merge-patches a session's title and metadata (RFC 7396):
// a nil value clears a member, and metadata merges key by key. Admin
// tokens only.
func (c *Client) PatchSession(ctx context.Context, id string, patch map[string]any, opts ...CallOption) (*api.Session, error) {
	return doJSON[api.Session](ctx, c, request{method: "PATCH", path: pathOf("v1", "sessions", esc(id)),
		body: patch, contentType: mediaMergePatch}, opts)
}

// DeleteSession deletes a session with all its descendants and everything
// they own. Admin tokens only.
func (c *Client) DeleteSession(ctx context.Context, id string, opts ...CallOption) error {
	_, err := c.call(ctx, request{method: "DELETE", path: pathOf("v1", "sessions", esc(id))}, opts, nil)
	return err
}

// SetMode sets a session's own mode. Plan on (or above) a harness session
// is ErrUnsupportedMode; only admins may set build (ErrPermissionDenied).
func (c *Client) SetMode(ctx context.Context, id string, mode api.Mode, opts ...CallOption) (*api.Session, error) {
	return doJSON[api.Session](ctx, c, request{method: "PATCH", path: pathOf("v1", "sessions", esc(id), "mode"),
		body: api.ModeChange{Mode: string(mode)}}, opts)
}

func set(v url.Values, key, value string) {
	if value != "" {
		v.Set(key, value)
	}
}

func setInt(v url.Values, key string, n int64) {
	if n != 0 {
		v.Set(key, strconv.FormatInt(n, 10))
	}
}
