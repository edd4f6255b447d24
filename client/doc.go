// Package client is the Go client of planserver's HTTP API: one method per
// route, the public wire types of package api, typed errors, revisions and
// preconditions, the optimistic-locking loop and a resuming event
// subscriber. The planserver command line is built on it.
//
// # Calls
//
// A Client holds only its settings (base URL, bearer token, *http.Client,
// user agent) and is safe for concurrent use; there is no package state.
// Every method takes a context.Context and, last, any CallOptions:
//
//	c, err := client.New("http://127.0.0.1:8080", client.WithToken(os.Getenv("PLANSERVER_TOKEN")))
//	plan, err := c.GetPlan(ctx, "release")
//
// # Revisions and preconditions
//
// Every versioned resource (session, session plan, todo list, shared plan)
// carries its revision, which is also its ETag. Reads return it (in the
// body's Revision field, or as a separate result for Markdown and YAML
// representations), and writes take it back as a precondition:
//
//	plan, _ := c.GetPlanContent(ctx, "release")
//	_, err := c.PutPlanContent(ctx, "release", edited, client.IfMatch(plan.Revision))
//	if errors.Is(err, client.ErrVersionConflict) { ... someone else wrote first ... }
//
// IfMatch, IfMatchAny, IfNoneMatch (a GET answers ErrNotModified while the
// resource is unchanged), IfNoneMatchAny (create only) and
// LastKnownRevision (the plan tools' body member) cover every precondition
// of the contract. RetryOnConflict runs the read → modify → conditional
// write loop, retrying a bounded number of times on version conflicts.
//
// # Errors
//
// A refused request returns an *Error carrying the problem document's
// code, status, current_revision and field errors. Each api.Code has a
// sentinel matched with errors.Is:
//
//	var e *client.Error
//	switch {
//	case errors.Is(err, client.ErrNotFound):
//	case errors.As(err, &e) && e.CurrentRevision != nil:
//	}
//
// # Events
//
// ListEvents reads the change log a page at a time. Subscribe follows it
// as Server-Sent Events and survives drops and server restarts: it resumes
// after the last event it delivered (Last-Event-ID), backing off
// exponentially with jitter between attempts, and delivers the cursor
// moves of heartbeats so a consumer can persist its resume point. It ends
// only on a terminal error: ErrCursorExpired (events after the cursor were
// pruned: re-read the state and subscribe from its EventSeq) or
// ErrUnauthenticated (the token was revoked or expired), reported whether
// the server refused the stream when it opened or ended it with an error
// event.
package client
