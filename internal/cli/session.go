package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/client"
	"github.com/spf13/pflag"
)

var sessionCreateCmd = &cliCommand{
	name: "session create", args: "", minArgs: 0, maxArgs: 0,
	summary: "create a session",
	help: `Create a session. Without --id the server generates one. A child
(--parent) with no --mode is in build mode itself and inherits plan mode
from its ancestors.
`,
	flags: func(fs *pflag.FlagSet) func(*cli, []string) error {
		var in api.SessionCreate
		var id, metadata string
		fs.StringVar(&id, "id", "", "the session's `id` (default: generated)")
		fs.StringVar(&in.Title, "title", "", "a `title` for people")
		fs.StringVar(&in.Agent, "agent", "", "the `agent` the session runs")
		fs.StringVar(&in.ParentID, "parent", "", "the parent `session` of a sub-session")
		fs.StringVar(&in.Mode, "mode", "", "the session's own `mode`: build or plan (default build)")
		fs.BoolVar(&in.Harness, "harness", false, "the agent owns its tools, so plan mode cannot be enforced on it")
		fs.StringVar(&metadata, "metadata", "", "a JSON `object` the host keeps with the session")
		return func(x *cli, _ []string) error {
			if id != "" {
				in.ID = &id
			}
			if metadata != "" {
				if err := json.Unmarshal([]byte(metadata), &in.Metadata); err != nil {
					return x.usage("--metadata is not a JSON object: %v", err)
				}
			}
			s, err := x.c.CreateSession(x.ctx, in)
			if err != nil {
				return err
			}
			return x.out(s, func(w io.Writer) { printSession(w, s) })
		}
	},
}

var sessionGetCmd = &cliCommand{
	name: "session get", args: "ID", minArgs: 1, maxArgs: 1,
	summary: "show a session, its mode and its review",
	help:    "Show a session: its own and effective mode, its review and its revision.\n",
	flags: func(fs *pflag.FlagSet) func(*cli, []string) error {
		return func(x *cli, args []string) error {
			s, err := x.c.GetSession(x.ctx, args[0])
			if err != nil {
				return err
			}
			return x.out(s, func(w io.Writer) { printSession(w, s) })
		}
	},
}

var sessionListCmd = &cliCommand{
	name: "session list", args: "", minArgs: 0, maxArgs: 0,
	summary: "list sessions",
	help:    "List sessions in creation order, every page of them.\n",
	flags: func(fs *pflag.FlagSet) func(*cli, []string) error {
		var q client.SessionQuery
		var mode string
		var limit int
		fs.StringVar(&q.ParentID, "parent", "", "only the children of this `session`")
		fs.StringVar(&mode, "mode", "", "only sessions whose own `mode` is this: build or plan")
		fs.StringVar(&q.ReviewState, "review-state", "", "only sessions whose review is in this `state`: none, pending, approved or rejected")
		fs.IntVar(&limit, "limit", 0, "list at most this many `sessions` (default: all)")
		return func(x *cli, _ []string) error {
			q.Mode = api.Mode(mode)
			list, err := collectSessions(x, q, limit)
			if err != nil {
				return err
			}
			return x.out(list, func(w io.Writer) {
				rows := make([][]string, len(list))
				for i, s := range list {
					rows[i] = []string{s.ID, string(s.Mode), string(s.EffectiveMode), s.Review.State,
						strconv.FormatInt(s.Revision, 10), oneLine(s.Title, 50)}
				}
				table(w, "ID\tMODE\tEFFECTIVE\tREVIEW\tREV\tTITLE", rows)
			})
		}
	},
}

// collectSessions reads every page of q, at most limit sessions (0: all).
func collectSessions(x *cli, q client.SessionQuery, limit int) ([]*api.Session, error) {
	list := []*api.Session{}
	for s, err := range x.c.Sessions(x.ctx, q) {
		if err != nil {
			return nil, err
		}
		list = append(list, s)
		if limit > 0 && len(list) == limit {
			break
		}
	}
	return list, nil
}

var sessionModeCmd = &cliCommand{
	name: "session mode", args: "ID build|plan", minArgs: 2, maxArgs: 2,
	summary: "set a session's own mode",
	help: `Set a session's own mode. Its sub-sessions inherit plan mode; leaving plan
mode this way cancels a pending review (approving the plan is the other way
out). Only an admin token may set build.
`,
	flags: func(fs *pflag.FlagSet) func(*cli, []string) error {
		var rev int64
		fs.Int64Var(&rev, "if-match", 0, "change it only if the session is still at this `revision`")
		return func(x *cli, args []string) error {
			s, err := x.c.SetMode(x.ctx, args[0], api.Mode(args[1]), ifMatch(rev))
			if err != nil {
				return err
			}
			return x.out(s, func(w io.Writer) { printSession(w, s) })
		}
	},
}

// printSession shows a session for people.
func printSession(w io.Writer, s *api.Session) {
	mode := string(s.Mode)
	if s.EffectiveMode != s.Mode {
		mode += fmt.Sprintf(" (effective %s, from %s)", s.EffectiveMode, OrDash(s.ModeSource))
	}
	review := s.Review.State
	if s.Review.PlanRevision != nil {
		review += fmt.Sprintf(", plan revision %d", *s.Review.PlanRevision)
	}
	if s.Review.DecidedBy != nil {
		review += ", by " + *s.Review.DecidedBy
	}
	rows := [][]string{
		{"id:", s.ID}, {"title:", s.Title}, {"agent:", s.Agent}, {"parent:", OrDash(s.ParentID)},
		{"mode:", mode}, {"harness:", strconv.FormatBool(s.Harness)}, {"review:", review},
		{"revision:", strconv.FormatInt(s.Revision, 10)}, {"updated:", s.UpdatedAt},
	}
	tw := newTable(w)
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\n", r[0], r[1])
	}
	tw.Flush()
}
