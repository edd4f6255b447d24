package client

import (
	"context"
	"io"
	"net/http"
)

// Health is the answer of GET /healthz.
type Health struct {
	Status  string `json:"status"`
	Version string `json:"version"`
}

// Readiness is the answer of GET /readyz.
type Readiness struct {
	Status        string `json:"status"`
	SchemaVersion int64  `json:"schema_version"`
}

// Health reports whether the server process is up.
func (c *Client) Health(ctx context.Context, opts ...CallOption) (*Health, error) {
	return doJSON[Health](ctx, c, request{method: "GET", path: "/healthz"}, opts)
}

// Ready reports whether the server can serve: its database answers and
// takes writes, at the schema the binary expects. A server that cannot is
// ErrUnavailable (or ErrInsufficientStorage while its disk is full).
func (c *Client) Ready(ctx context.Context, opts ...CallOption) (*Readiness, error) {
	return doJSON[Readiness](ctx, c, request{method: "GET", path: "/readyz"}, opts)
}

// NewRequest returns a request for path (e.g. "/v1/plans") on the
// client's server, for a route or a representation this package has no
// method for. Send it with Do.
func (c *Client) NewRequest(ctx context.Context, method, path string, body io.Reader) (*http.Request, error) {
	return http.NewRequestWithContext(ctx, method, c.base+path, body)
}

// Do sends req with the client's token and user agent. A 2xx or 304
// answer is returned for the caller to read and close; any other status
// is returned as an *Error, its body read and closed.
func (c *Client) Do(req *http.Request) (*http.Response, error) { return c.do(req, nil) }

// do is Do, recording the answer's metadata in s (when not nil) whatever
// its status.
func (c *Client) do(req *http.Request, s *settings) (*http.Response, error) {
	c.authorize(req)
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, err // *url.Error names the method and URL
	}
	if s != nil {
		s.record(resp)
	}
	if resp.StatusCode >= 300 && resp.StatusCode != http.StatusNotModified {
		defer resp.Body.Close()
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return nil, newError(req.Method, req.URL.Path, resp.StatusCode, resp.Header, data)
	}
	return resp, nil
}
