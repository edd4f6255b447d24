package client

import (
	"context"

	"github.com/planserver/planserver/api"
)

// CreateToken creates a bearer token; the answer is the only place its
// secret is ever shown. Admin tokens only.
func (c *Client) CreateToken(ctx context.Context, in api.TokenCreate, opts ...CallOption) (*api.CreatedToken, error) {
	return doJSON[api.CreatedToken](ctx, c, request{method: "POST", path: "/v1/tokens", body: in}, opts)
}

// ListTokens lists every token, never a secret.
func (c *Client) ListTokens(ctx context.Context, opts ...CallOption) (*api.TokenList, error) {
	return doJSON[api.TokenList](ctx, c, request{method: "GET", path: "/v1/tokens"}, opts)
}

// GetToken reads one token.
func (c *Client) GetToken(ctx context.Context, name string, opts ...CallOption) (*api.Token, error) {
	return doJSON[api.Token](ctx, c, request{method: "GET", path: pathOf("v1", "tokens", esc(name))}, opts)
}

// RevokeToken revokes a token at once: its requests and event streams
// fail with ErrUnauthenticated from then on. Revoking twice is no error.
func (c *Client) RevokeToken(ctx context.Context, name string, opts ...CallOption) error {
	_, err := c.call(ctx, request{method: "DELETE", path: pathOf("v1", "tokens", esc(name))}, opts, nil)
	return err
}
