package client

import (
	"context"
	"net/url"

	"github.com/planserver/planserver/api"
)

// ListSignIns reads one page of people's live sign-ins, oldest first; of
// one person when subject is not "" (limit 0: the server's default;
// pageToken "": the first page). Admin only.
func (c *Client) ListSignIns(ctx context.Context, subject string, limit int, pageToken string, opts ...CallOption) (*api.SignInList, error) {
	q := pageQuery(limit, pageToken)
	if subject != "" {
		q.Set("subject", subject)
	}
	return doJSON[api.SignInList](ctx, c, request{method: "GET", path: "/v1/signins", query: q}, opts)
}

// GetSignIn reads one live sign-in. Admin only.
func (c *Client) GetSignIn(ctx context.Context, id string, opts ...CallOption) (*api.SignIn, error) {
	return doJSON[api.SignIn](ctx, c, request{method: "GET", path: pathOf("v1", "signins", esc(id))}, opts)
}

// RevokeSignIn ends a sign-in at once, on every replica: its requests,
// event streams and MCP calls fail with ErrUnauthenticated from then on.
// One that has already ended is ErrNotFound. Admin only.
func (c *Client) RevokeSignIn(ctx context.Context, id string, opts ...CallOption) error {
	_, err := c.call(ctx, request{method: "DELETE", path: pathOf("v1", "signins", esc(id))}, opts, nil)
	return err
}

// RevokeSignInsOf ends every sign-in of the person subject names and
// returns the ones it ended (none is no error). Admin only.
func (c *Client) RevokeSignInsOf(ctx context.Context, subject string, opts ...CallOption) (*api.SignInsEnded, error) {
	return doJSON[api.SignInsEnded](ctx, c, request{method: "DELETE", path: "/v1/signins", query: url.Values{"subject": {subject}}}, opts)
}
