package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/client"
	"github.com/spf13/pflag"
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
	flags: func(fs *pflag.FlagSet) func(*cli, []string) error {
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
	change := eventChange(e)
	if change != "" {
		change = " " + change
	}
	_, err := fmt.Fprintf(p.x.stdout, "%-6d %s  %-26s %s%s%s  by %s\n", e.Seq, e.Time, e.Type, subject, change, rev, e.Actor)
	return err
}

// eventChange says in a few words what an event changed, from its data:
// "plan→build" for a mode change, "step 3 failure" for a report. Empty
// where the type says it all (session.created) or the data is not the
// shape expected.
func eventChange(e *api.Event) string {
	var raw struct {
		Mode           string          `json:"mode"`
		PreviousMode   string          `json:"previous_mode"`
		EffectiveMode  string          `json:"effective_mode"`
		Status         string          `json:"status"`
		PreviousStatus *string         `json:"previous_status"`
		Revision       int64           `json:"revision"`
		Tool           string          `json:"tool"`
		Outcome        string          `json:"outcome"`
		StepID         string          `json:"step_id"`
		Worker         string          `json:"worker"`
		Review         *api.Review     `json:"review"`
		Step           *api.Step       `json:"step"`
		Todos          json.RawMessage `json:"todos"`
		ClaimedBy      string          `json:"claimed_by"`
		ClaimExpiresAt string          `json:"claim_expires_at"`
	}
	if json.Unmarshal(e.Data, &raw) != nil {
		return ""
	}
	switch e.Type {
	case "session.mode_changed":
		if raw.Mode == "" {
			return ""
		}
		from := raw.PreviousMode
		if from == "" {
			from = "?"
		}
		s := from + "→" + raw.Mode
		if raw.EffectiveMode != "" && raw.EffectiveMode != raw.Mode {
			s += " (effective " + raw.EffectiveMode + ")"
		}
		return s
	case "plan.status_changed":
		if raw.PreviousStatus == nil {
			return ""
		}
		return orNone(*raw.PreviousStatus) + "→" + orNone(raw.Status)
	case "session.review_requested", "session.review_approved", "session.review_rejected":
		if raw.Review != nil && raw.Review.PlanRevision != nil {
			return fmt.Sprintf("plan revision %d", *raw.Review.PlanRevision)
		}
	case "tool_call.denied":
		if raw.Tool != "" {
			return "tool " + raw.Tool
		}
	case "step.claimed":
		if raw.Step != nil && raw.Step.ClaimedBy != nil {
			return "step " + raw.Step.ID + " by " + *raw.Step.ClaimedBy
		}
	case "step.claim_expired":
		if raw.StepID != "" && raw.ClaimedBy != "" {
			return "step " + raw.StepID + " of " + raw.ClaimedBy + " at " + raw.ClaimExpiresAt
		}
	case "step.updated":
		if raw.Step != nil {
			return "step " + raw.Step.ID + " " + raw.Step.Status
		}
	case "step.report_added":
		if raw.StepID != "" {
			return "step " + raw.StepID + " " + raw.Outcome
		}
	case "todos.updated":
		var todos []json.RawMessage
		if json.Unmarshal(raw.Todos, &todos) == nil && raw.Todos != nil {
			return fmt.Sprintf("%d todos", len(todos))
		}
	}
	return ""
}
