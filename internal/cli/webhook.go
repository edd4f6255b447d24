package cli

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/planserver/planserver/api"
	"github.com/spf13/pflag"
)

// The webhook commands manage a running server's webhook subscriptions
// (admin tokens only), through the client package.

// eventList is the repeatable --event flag; a value may also list several
// types separated by commas.
type eventList []string

func (e *eventList) String() string { return strings.Join(*e, ",") }
func (e *eventList) Type() string   { return "value" }
func (e *eventList) Set(v string) error {
	for _, t := range strings.Split(v, ",") {
		if t = strings.TrimSpace(t); t != "" {
			*e = append(*e, t)
		}
	}
	return nil
}

const webhookTypesHelp = `Event types: review.requested, review.decided, step.claim_expired,
step.completed, plan.changed, tool_call.denied, or any event log type
(session.created, plan.updated, ...). docs/webhooks.md says what each covers.
`

var webhookCreateCmd = &cliCommand{
	name: "webhook create", args: "URL", minArgs: 1, maxArgs: 1,
	summary: "subscribe a URL to events; prints the signing secret, shown only now",
	help: `Subscribe URL to events. Deliveries are signed per Standard Webhooks with
the secret printed here, the only time it is shown. --format slack sends a
Slack-compatible message (Mattermost and Rocket.Chat take it too).
` + webhookTypesHelp,
	flags: func(fs *pflag.FlagSet) func(*cli, []string) error {
		var evs eventList
		var format, session, plan string
		fs.Var(&evs, "event", "an event `type` to deliver (repeatable, or comma-separated)")
		fs.StringVar(&format, "format", "standard", "`format` of the body: standard or slack")
		fs.StringVar(&session, "session", "", "only the events of this `session` and its descendants")
		fs.StringVar(&plan, "plan", "", "only the events of this shared `plan`")
		return func(x *cli, args []string) error {
			if len(evs) == 0 {
				return x.usage("name at least one --event")
			}
			wh, err := x.c.CreateWebhook(x.ctx, api.WebhookCreate{URL: args[0], Events: evs, Format: format, Session: session, Plan: plan})
			if err != nil {
				return err
			}
			return x.out(wh, func(w io.Writer) {
				fmt.Fprintf(w, "created webhook %s to %s\n", wh.ID, wh.URL)
				fmt.Fprintf(w, "secret: %s\n", wh.Secret)
				fmt.Fprintln(w, "Keep the secret now: it is not shown again (rotate-secret makes a new one).")
			})
		}
	},
}

var webhookListCmd = &cliCommand{
	name: "webhook list", args: "", minArgs: 0, maxArgs: 0,
	summary: "list the subscriptions and their state",
	help:    "List every webhook subscription, its state and its cursor.\n",
	flags: func(fs *pflag.FlagSet) func(*cli, []string) error {
		return func(x *cli, _ []string) error {
			all := []api.Webhook{}
			token := ""
			for {
				page, err := x.c.ListWebhooks(x.ctx, 1000, token)
				if err != nil {
					return err
				}
				all = append(all, page.Webhooks...)
				if token = page.NextPageToken; token == "" {
					break
				}
			}
			return x.out(all, func(w io.Writer) {
				rows := make([][]string, len(all))
				for i, wh := range all {
					rows[i] = []string{wh.ID, wh.State, wh.Format, strings.Join(wh.Events, ","), oneLine(wh.URL, 50)}
				}
				table(w, "ID\tSTATE\tFORMAT\tEVENTS\tURL", rows)
			})
		}
	},
}

var webhookShowCmd = &cliCommand{
	name: "webhook show", args: "ID", minArgs: 1, maxArgs: 1,
	summary: "show a subscription and its delivery state",
	help:    "Show a webhook subscription: its target, filters, state and retries.\n",
	flags: func(fs *pflag.FlagSet) func(*cli, []string) error {
		return func(x *cli, args []string) error {
			wh, err := x.c.GetWebhook(x.ctx, args[0])
			if err != nil {
				return err
			}
			return x.out(wh, func(w io.Writer) { printWebhook(w, wh) })
		}
	},
}

func printWebhook(w io.Writer, wh *api.Webhook) {
	fmt.Fprintf(w, "id:       %s\nurl:      %s\nevents:   %s\nformat:   %s\n", wh.ID, wh.URL, strings.Join(wh.Events, ", "), wh.Format)
	if wh.Session != "" {
		fmt.Fprintf(w, "session:  %s\n", wh.Session)
	}
	if wh.Plan != "" {
		fmt.Fprintf(w, "plan:     %s\n", wh.Plan)
	}
	fmt.Fprintf(w, "state:    %s\n", wh.State)
	if wh.StateReason != "" {
		fmt.Fprintf(w, "reason:   %s\n", wh.StateReason)
	}
	fmt.Fprintf(w, "cursor:   %d\n", wh.Cursor)
	if wh.Attempts > 0 {
		fmt.Fprintf(w, "attempts: %d failed, next at %s\n", wh.Attempts, OrDash(wh.NextAttemptAt))
	}
}

var webhookUpdateCmd = &cliCommand{
	name: "webhook update", args: "ID", minArgs: 1, maxArgs: 1,
	summary: "change a subscription, pause it or resume it",
	help: `Change a subscription: only the flags given change. --resume restarts a
paused or failing subscription at once; --pause stops its deliveries.
` + webhookTypesHelp,
	flags: func(fs *pflag.FlagSet) func(*cli, []string) error {
		var evs eventList
		var u, format, session, plan optString
		var pause, resume bool
		fs.Var(&u, "url", "the new target `url`")
		fs.Var(&evs, "event", "replace the event types with these (repeatable, or comma-separated `types`)")
		fs.Var(&format, "format", "`format`: standard or slack")
		fs.Var(&session, "session", "follow this `session` (\"\" removes the filter)")
		fs.Var(&plan, "plan", "follow this shared `plan` (\"\" removes the filter)")
		fs.BoolVar(&pause, "pause", false, "stop delivering")
		fs.BoolVar(&resume, "resume", false, "resume a paused or failing subscription")
		return func(x *cli, args []string) error {
			if pause && resume {
				return x.usage("--pause and --resume do not go together")
			}
			p := api.WebhookPatch{URL: u.v, Format: format.v, Session: session.v, Plan: plan.v}
			if len(evs) > 0 {
				list := []string(evs)
				p.Events = &list
			}
			if pause || resume {
				s := api.WebhookActive
				if pause {
					s = api.WebhookPaused
				}
				p.State = &s
			}
			wh, err := x.c.UpdateWebhook(x.ctx, args[0], p)
			if err != nil {
				return err
			}
			return x.out(wh, func(w io.Writer) { printWebhook(w, wh) })
		}
	},
}

var webhookDeleteCmd = &cliCommand{
	name: "webhook delete", args: "ID", minArgs: 1, maxArgs: 1,
	summary: "remove a subscription and its delivery log",
	help:    "Remove a webhook subscription and its delivery log.\n",
	flags: func(fs *pflag.FlagSet) func(*cli, []string) error {
		return func(x *cli, args []string) error {
			if err := x.c.DeleteWebhook(x.ctx, args[0]); err != nil {
				return err
			}
			return x.out(map[string]string{"deleted": args[0]}, func(w io.Writer) { fmt.Fprintf(w, "deleted webhook %s\n", args[0]) })
		}
	},
}

var webhookRotateCmd = &cliCommand{
	name: "webhook rotate-secret", args: "ID", minArgs: 1, maxArgs: 1,
	summary: "make a new signing secret; the old one overlaps for a while",
	help: `Give a subscription a new secret, printed here only. Until --overlap has
passed, every delivery carries signatures under both secrets, so the
receiver can switch to the new one at its own pace.
`,
	flags: func(fs *pflag.FlagSet) func(*cli, []string) error {
		overlap := 24 * time.Hour
		fs.DurationVar(&overlap, "overlap", overlap, "how long the old secret keeps signing (`duration`; 0 drops it at once)")
		return func(x *cli, args []string) error {
			if overlap < 0 {
				return x.usage("--overlap must not be negative")
			}
			secs := int64(overlap / time.Second)
			wh, err := x.c.RotateWebhookSecret(x.ctx, args[0], &secs)
			if err != nil {
				return err
			}
			return x.out(wh, func(w io.Writer) {
				fmt.Fprintf(w, "new secret of webhook %s: %s\n", wh.ID, wh.Secret)
				if wh.PreviousSecretExpiresAt != nil {
					fmt.Fprintf(w, "the old secret signs too until %s\n", *wh.PreviousSecretExpiresAt)
				}
			})
		}
	},
}

var webhookDeliveriesCmd = &cliCommand{
	name: "webhook deliveries", args: "ID", minArgs: 1, maxArgs: 1,
	summary: "show a subscription's delivery log, newest first",
	help:    "Show the delivery log of a subscription: every attempt, newest first.\n",
	flags: func(fs *pflag.FlagSet) func(*cli, []string) error {
		limit := 50
		fs.IntVar(&limit, "limit", limit, "show at most `n` entries")
		return func(x *cli, args []string) error {
			if limit < 1 || limit > 1000 {
				return x.usage("--limit must be from 1 to 1000")
			}
			page, err := x.c.ListDeliveries(x.ctx, args[0], limit, "")
			if err != nil {
				return err
			}
			return x.out(page.Deliveries, func(w io.Writer) {
				rows := make([][]string, len(page.Deliveries))
				for i, d := range page.Deliveries {
					status, latency := "-", "-"
					if d.StatusCode != nil {
						status = strconv.Itoa(*d.StatusCode)
					}
					if d.LatencyMS != nil {
						latency = strconv.FormatInt(*d.LatencyMS, 10) + "ms"
					}
					rows[i] = []string{strconv.FormatInt(d.ID, 10), strconv.FormatInt(d.EventSeq, 10), d.Type, d.State, status, latency,
						OrDash(d.NextRetryAt), oneLine(firstOf(d.Error, d.Response), 40)}
				}
				table(w, "DELIVERY\tEVENT\tTYPE\tSTATE\tSTATUS\tLATENCY\tNEXT RETRY\tANSWER", rows)
			})
		}
	},
}

var webhookRedeliverCmd = &cliCommand{
	name: "webhook redeliver", args: "ID DELIVERY", minArgs: 2, maxArgs: 2,
	summary: "send a delivery's event again (same webhook-id)",
	help: `Send the event of a delivery again, with the same webhook-id. A failing
subscription resumes from its cursor.
`,
	flags: func(fs *pflag.FlagSet) func(*cli, []string) error {
		return func(x *cli, args []string) error {
			n, err := strconv.ParseInt(args[1], 10, 64)
			if err != nil || n < 1 {
				return x.usage("DELIVERY must be a delivery id (webhook deliveries lists them), got %q", args[1])
			}
			d, err := x.c.Redeliver(x.ctx, args[0], n)
			if err != nil {
				return err
			}
			return x.out(d, func(w io.Writer) {
				fmt.Fprintf(w, "event %d of webhook %s will be delivered again (delivery %d, %s)\n", d.EventSeq, args[0], d.ID, d.State)
			})
		}
	},
}
