package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/client"
)

// eventsPage is how many events the command reads at a time without
// --follow.
const eventsPage = 500

// eventsIdleTimeout drops a followed stream that sent nothing, not even a
// heartbeat, for this long (the server's default heartbeat is 15 s), so a
// server that vanished without closing the connection is noticed.
const eventsIdleTimeout = time.Minute

var eventsCmd = &cliCommand{
	name: "events", args: "", minArgs: 0, maxArgs: 0,
	summary: "print the change log, or follow it",
	help: `Print the change log, oldest first, from --after (default: the oldest
event kept). With --follow, go on printing changes as they happen; a dropped
connection or a server restart is resumed after the last event printed, so
nothing is missed or printed twice. Ends with status 4 if events after that
point were pruned meanwhile (cursor_expired), 5 if the token was revoked.
--json prints one event per line.
`,
	flags: func(fs *flag.FlagSet) func(*cli, []string) error {
		var follow bool
		var types, session, plan string
		var after optRevision
		var limit int
		fs.BoolVar(&follow, "follow", false, "keep printing events as they happen")
		fs.StringVar(&types, "types", "", "only events of these comma-separated `types`, e.g. session.review_requested")
		fs.StringVar(&session, "session", "", "only the events of this `session` and its descendants")
		fs.StringVar(&plan, "plan", "", "only the events of this shared `plan`")
		fs.Var(&after, "after", "only events after this `seq`")
		fs.IntVar(&limit, "limit", 0, "print at most this many `events` (default: all)")
		return func(x *cli, _ []string) error {
			q := client.EventQuery{After: after.v, SessionID: session, Plan: plan}
			if types != "" {
				q.Types = strings.Split(types, ",")
			}
			p := &eventPrinter{x: x, limit: limit}
			if follow {
				return followEvents(x, q, p)
			}
			q.Limit = eventsPage
			for !p.done() {
				page, err := x.c.ListEvents(x.ctx, q)
				if err != nil {
					return err
				}
				for i := range page.Events {
					if err := p.print(&page.Events[i]); err != nil || p.done() {
						return err
					}
				}
				if len(page.Events) < eventsPage {
					return nil
				}
				q.After = &page.NextAfter
			}
			return nil
		}
	},
}

// followEvents prints the events q selects as they happen, until the
// user interrupts it or the subscription ends for good.
func followEvents(x *cli, q client.EventQuery, p *eventPrinter) error {
	// A server that is not there at all is a mistake to report, not a
	// restart to wait out.
	if _, err := x.c.Health(x.ctx); err != nil {
		return err
	}
	sub := x.c.Subscribe(x.ctx, q, client.SubscribeOptions{
		IdleTimeout: eventsIdleTimeout,
		OnReconnect: func(err error, attempt int, wait time.Duration) {
			fmt.Fprintf(x.stderr, "planserver: events: %s; reconnecting in %s\n", cliMessage(x.server, err), wait.Round(10*time.Millisecond))
		},
	})
	defer sub.Close()
	for !p.done() {
		d, err := sub.Next(x.ctx)
		switch {
		case errors.Is(err, context.Canceled) && x.ctx.Err() != nil:
			return nil // interrupted: following ends here
		case errors.Is(err, client.ErrCursorExpired):
			cur, _ := sub.Cursor()
			return cliFail(err, "events after seq %d were pruned from the server's log while this was away: "+
				"re-read what you follow, then follow again from the X-Event-Seq of that read", cur)
		case err != nil:
			return err
		}
		if d.Event != nil {
			if err := p.print(d.Event); err != nil {
				return err
			}
		}
	}
	return nil
}

// eventPrinter prints events, one line each, up to a limit.
type eventPrinter struct {
	x       *cli
	limit   int
	printed int
}

func (p *eventPrinter) done() bool { return p.limit > 0 && p.printed >= p.limit }

func (p *eventPrinter) print(e *api.Event) error {
	p.printed++
	if p.x.json {
		b, err := json.Marshal(e)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(p.x.stdout, "%s\n", b)
		return err
	}
	subject := e.SessionID
	if e.Plan != "" {
		subject = "plan " + e.Plan
	}
	rev := ""
	if e.Revision > 0 {
		rev = fmt.Sprintf(" r%d", e.Revision)
	}
	_, err := fmt.Fprintf(p.x.stdout, "%-6d %s  %-26s %s%s  by %s\n", e.Seq, e.Time, e.Type, subject, rev, e.Actor)
	return err
}
