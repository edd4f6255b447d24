package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// DefaultUserAgent is the User-Agent of a Client made without
// WithUserAgent.
const DefaultUserAgent = "planserver-go-client"

// Client calls one planserver. It keeps nothing between calls but its
// settings, so one Client may serve many goroutines.
type Client struct {
	base      string // scheme://host[/prefix], without a trailing slash
	token     string
	hc        *http.Client
	userAgent string
}

// Option configures a Client made by New.
type Option func(*Client)

// WithToken sends token as the bearer credential of every request (a
// server running --auth token requires one). "" sends none.
func WithToken(token string) Option { return func(c *Client) { c.token = token } }

// WithHTTPClient sends requests with hc instead of a client of its own.
// Give it no overall Timeout if you subscribe to events: a Timeout would
// cut every stream; bound calls with their contexts instead.
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.hc = hc } }

// WithUserAgent sets the User-Agent of every request.
func WithUserAgent(ua string) Option { return func(c *Client) { c.userAgent = ua } }

// New returns a Client of the planserver at baseURL, e.g.
// "http://127.0.0.1:8080" or "https://example.com/planserver" behind a
// proxy that serves it under a prefix.
func New(baseURL string, opts ...Option) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
		u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("planserver client: %q is not a server URL such as http://127.0.0.1:8080", baseURL)
	}
	c := &Client{base: strings.TrimRight(u.String(), "/"), userAgent: DefaultUserAgent}
	for _, o := range opts {
		o(c)
	}
	if c.hc == nil {
		c.hc = &http.Client{}
	}
	return c, nil
}

// BaseURL returns the server URL the client calls.
func (c *Client) BaseURL() string { return c.base }

// Media types the client sends and accepts.
const (
	mediaJSON       = "application/json"
	mediaMergePatch = "application/merge-patch+json"
	mediaMarkdown   = "text/markdown"
	mediaYAML       = "application/yaml"
	mediaDiff       = "text/x-diff"
	mediaEvents     = "text/event-stream"
)

// request describes one call to the API.
type request struct {
	method string
	// path is escaped: build it with pathOf.
	path  string
	query url.Values
	// body is encoded as JSON unless it is []byte, which is sent as it is
	// with contentType.
	body        any
	contentType string
	// accept is the representation asked for; JSON when empty.
	accept string
	// lastKnown says the body has a last_known_revision member that the
	// LastKnownRevision option may set (the caller sets it).
	lastKnown bool
}

// pathOf joins escaped segments into a path: names and ids are escaped
// one by one, so "a/b" or ".." stays one segment (which the server
// refuses) and never reaches another route.
func pathOf(segments ...string) string {
	var b strings.Builder
	for _, s := range segments {
		b.WriteByte('/')
		b.WriteString(s)
	}
	return b.String()
}

// esc escapes one path segment.
func esc(s string) string { return url.PathEscape(s) }

// send makes the request and returns the answer of any 2xx status. A 304
// is ErrNotModified and any other status an *Error; the response's
// metadata goes to the Meta option either way.
func (c *Client) send(ctx context.Context, r request, s *settings) (*http.Response, error) {
	if s.lastKnown != nil && !r.lastKnown {
		return nil, fmt.Errorf("planserver client: %s %s has no last_known_revision; use IfMatch", r.method, r.path)
	}
	var body io.Reader
	contentType := r.contentType
	switch b := r.body.(type) {
	case nil:
	case []byte:
		body = bytes.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			return nil, fmt.Errorf("planserver client: encode %s %s: %w", r.method, r.path, err)
		}
		body = bytes.NewReader(data)
		if contentType == "" {
			contentType = mediaJSON
		}
	}
	target := c.base + r.path
	if len(r.query) > 0 {
		target += "?" + r.query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, r.method, target, body)
	if err != nil {
		return nil, fmt.Errorf("planserver client: %s %s: %w", r.method, r.path, err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	accept := r.accept
	if accept == "" {
		accept = mediaJSON
	}
	req.Header.Set("Accept", accept)
	s.apply(req)
	resp, err := c.do(req, s)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode == http.StatusNotModified {
		resp.Body.Close()
		return nil, ErrNotModified
	}
	return resp, nil
}

// authorize sets the headers every request carries.
func (c *Client) authorize(req *http.Request) {
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	req.Header.Set("User-Agent", c.userAgent)
}

// call makes the request and decodes a JSON answer into out (nil: the
// answer is dropped). It returns the status, for routes whose 204 means
// something.
func (c *Client) call(ctx context.Context, r request, opts []CallOption, out any) (int, error) {
	s := settle(opts)
	resp, err := c.send(ctx, r, s)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if out == nil || resp.StatusCode == http.StatusNoContent {
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, nil
	}
	if ct := resp.Header.Get("Content-Type"); !isMedia(ct, mediaJSON) {
		return 0, fmt.Errorf("planserver client: %s %s answered %s, not JSON", r.method, r.path, ct)
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return 0, fmt.Errorf("planserver client: decode %s %s: %w", r.method, r.path, err)
	}
	return resp.StatusCode, nil
}

// raw makes the request and returns the body of its answer with the
// revision of its ETag (0 without one).
func (c *Client) raw(ctx context.Context, r request, opts []CallOption) ([]byte, int64, error) {
	s := settle(opts)
	resp, err := c.send(ctx, r, s)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, 0, fmt.Errorf("planserver client: read %s %s: %w", r.method, r.path, err)
	}
	return data, etagRevision(resp.Header.Get("ETag")), nil
}

// doJSON is call for a route that answers one JSON value of type T.
func doJSON[T any](ctx context.Context, c *Client, r request, opts []CallOption) (*T, error) {
	var out T
	if _, err := c.call(ctx, r, opts, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// etagRevision parses a strong ETag "7" into 7; 0 for anything else.
func etagRevision(etag string) int64 {
	s, ok := strings.CutPrefix(etag, `"`)
	if !ok {
		return 0
	}
	s, ok = strings.CutSuffix(s, `"`)
	if !ok {
		return 0
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// Ptr returns a pointer to v, for the optional members of the api types:
// api.PlanWrite{Content: client.Ptr("# Plan")}.
func Ptr[T any](v T) *T { return &v }
