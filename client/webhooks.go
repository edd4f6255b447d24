package client

import (
	"context"
	"net/url"
	"strconv"

	"github.com/planserver/planserver/api"
)

// CreateWebhook subscribes a URL to events; the answer is the only place
// its secret is shown (and rotate-secret's). Admin tokens only.
func (c *Client) CreateWebhook(ctx context.Context, in api.WebhookCreate, opts ...CallOption) (*api.WebhookCreated, error) {
	return doJSON[api.WebhookCreated](ctx, c, request{method: "POST", path: "/v1/webhooks", body: in}, opts)
}

// ListWebhooks reads one page of subscriptions (limit 0: the server's
// default; pageToken "": the first page).
func (c *Client) ListWebhooks(ctx context.Context, limit int, pageToken string, opts ...CallOption) (*api.WebhookList, error) {
	return doJSON[api.WebhookList](ctx, c, request{method: "GET", path: "/v1/webhooks", query: pageQuery(limit, pageToken)}, opts)
}

// GetWebhook reads one subscription and its delivery state.
func (c *Client) GetWebhook(ctx context.Context, id string, opts ...CallOption) (*api.Webhook, error) {
	return doJSON[api.Webhook](ctx, c, request{method: "GET", path: pathOf("v1", "webhooks", esc(id))}, opts)
}

// UpdateWebhook changes the fields p names; State active resumes a paused
// or failing subscription.
func (c *Client) UpdateWebhook(ctx context.Context, id string, p api.WebhookPatch, opts ...CallOption) (*api.Webhook, error) {
	return doJSON[api.Webhook](ctx, c, request{method: "PATCH", path: pathOf("v1", "webhooks", esc(id)), body: p}, opts)
}

// DeleteWebhook removes a subscription and its delivery log.
func (c *Client) DeleteWebhook(ctx context.Context, id string, opts ...CallOption) error {
	_, err := c.call(ctx, request{method: "DELETE", path: pathOf("v1", "webhooks", esc(id))}, opts, nil)
	return err
}

// RotateWebhookSecret gives a subscription a new secret; the old one
// keeps signing beside it for overlapSeconds (nil: the server's default,
// a day).
func (c *Client) RotateWebhookSecret(ctx context.Context, id string, overlapSeconds *int64, opts ...CallOption) (*api.WebhookCreated, error) {
	return doJSON[api.WebhookCreated](ctx, c, request{method: "POST", path: pathOf("v1", "webhooks", esc(id), "rotate-secret"),
		body: api.WebhookRotate{OverlapSeconds: overlapSeconds}}, opts)
}

// ListDeliveries reads one page of a subscription's delivery log, newest
// first.
func (c *Client) ListDeliveries(ctx context.Context, id string, limit int, pageToken string, opts ...CallOption) (*api.DeliveryList, error) {
	return doJSON[api.DeliveryList](ctx, c, request{method: "GET", path: pathOf("v1", "webhooks", esc(id), "deliveries"),
		query: pageQuery(limit, pageToken)}, opts)
}

// Redeliver sends a delivery's event again, with the same webhook-id.
func (c *Client) Redeliver(ctx context.Context, id string, delivery int64, opts ...CallOption) (*api.Delivery, error) {
	return doJSON[api.Delivery](ctx, c, request{method: "POST",
		path: pathOf("v1", "webhooks", esc(id), "deliveries", strconv.FormatInt(delivery, 10), "redeliver")}, opts)
}

func pageQuery(limit int, pageToken string) url.Values {
	v := url.Values{}
	if limit > 0 {
		v.Set("limit", strconv.Itoa(limit))
	}
	if pageToken != "" {
		v.Set("page_token", pageToken)
	}
	return v
}
