package cli

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/client"
	"github.com/spf13/pflag"
)

var sessionDeleteCmd = &cliCommand{
	name: "session delete", args: "ID", minArgs: 1, maxArgs: 1,
	summary: "delete a session and its descendants",
	help: `Delete a session and every descendant, with their plans, reviews and
todos; the agent tokens bound to them are revoked. With --if-match, only if
the session is still at that revision (exit status 4 otherwise). Only an
admin token may delete.
`,
	flags: func(fs *pflag.FlagSet) func(*cli, []string) error {
		var rev int64
		fs.Int64Var(&rev, "if-match", 0, "delete it only if the session is still at this `revision`")
		return func(x *cli, args []string) error {
			if err := x.c.DeleteSession(x.ctx, args[0], ifMatch(rev)); err != nil {
				return err
			}
			return x.out(map[string]any{"id": args[0], "deleted": true}, func(w io.Writer) {
				fmt.Fprintf(w, "session %s deleted, with its descendants\n", args[0])
			})
		}
	},
}

var sessionPlanShowCmd = &cliCommand{
	name: "session plan show", args: "ID", minArgs: 1, maxArgs: 1,
	summary: "show a session's plan and its review",
	help: `Show the plan a session's agent wrote (write_session_plan): its revision,
author and review state, the human's feedback and line comments, then the
Markdown. --markdown prints the Markdown alone.
`,
	flags: func(fs *pflag.FlagSet) func(*cli, []string) error {
		var markdown bool
		fs.BoolVar(&markdown, "markdown", false, "print the Markdown content alone")
		return func(x *cli, args []string) error {
			if markdown && x.json {
				return x.usage("--markdown and --json are two different outputs: pick one")
			}
			p, err := getSessionPlan(x, args[0])
			if err != nil {
				return err
			}
			if markdown {
				_, err := io.WriteString(x.stdout, withNewline(p.Content))
				return err
			}
			return x.out(p, func(w io.Writer) {
				fmt.Fprintf(w, "plan of session %s, revision %d, by %s, updated %s\n", p.SessionID, p.Revision, orNone(p.Author), p.UpdatedAt)
				if r := p.Review; r != nil {
					fmt.Fprintf(w, "review: %s", r.State)
					if r.PlanRevision != nil {
						fmt.Fprintf(w, " (revision %d)", *r.PlanRevision)
					}
					if r.DecidedBy != nil {
						fmt.Fprintf(w, " by %s", *r.DecidedBy)
					}
					fmt.Fprintln(w)
					if r.Feedback != nil && *r.Feedback != "" {
						fmt.Fprintf(w, "feedback: %s\n", *r.Feedback)
					}
					for _, c := range r.Comments {
						fmt.Fprintf(w, "comment on line %d: %s\n", c.Line, c.Body)
					}
				}
				fmt.Fprintf(w, "\n%s", withNewline(p.Content))
			})
		}
	},
}

// getSessionPlan reads a session's plan, telling a session without one
// from a missing session.
func getSessionPlan(x *cli, id string) (*api.SessionPlan, error) {
	p, err := x.c.GetSessionPlan(x.ctx, id)
	if errors.Is(err, client.ErrNotFound) {
		if _, serr := x.c.GetSession(x.ctx, id); serr == nil {
			return nil, cliFail(err, "session %s has no plan yet; write one with 'planserver session plan put %s FILE' or 'planserver session plan edit %s'", id, id, id)
		}
	}
	return p, err
}

var sessionPlanPutCmd = &cliCommand{
	name: "session plan put", args: "ID [FILE]", minArgs: 1, maxArgs: 2,
	summary: "write a session's plan from a file or standard input",
	help: `Write a session's plan (as write_session_plan does) from FILE, or standard
input (also as -): a new revision. Rewriting the plan withdraws a pending
review: the agent asks again for the new revision. --if-match writes only
if the plan is still at that revision; --create only if it has none yet.
`,
	flags: func(fs *pflag.FlagSet) func(*cli, []string) error {
		var rev int64
		var create bool
		var author optString
		fs.Int64Var(&rev, "if-match", 0, "write only if the plan is still at this `revision`")
		fs.BoolVar(&create, "create", false, "create only: fail if the session has a plan")
		fs.Var(&author, "author", "record this `author` (default: the current one, or the caller)")
		return func(x *cli, args []string) error {
			file := "-"
			if len(args) == 2 {
				file = args[1]
			}
			if create && rev > 0 {
				return x.usage("--create and --if-match contradict each other: a plan to create has no revision")
			}
			body, err := readInput(x, file)
			if err != nil {
				return err
			}
			if strings.TrimSpace(string(body)) == "" {
				return x.usage("the plan is empty: %s has no content", map[bool]string{true: "standard input", false: file}[file == "-"])
			}
			opts := []client.CallOption{ifMatch(rev)}
			if create {
				opts = append(opts, client.IfNoneMatchAny())
			}
			p, err := x.c.PutSessionPlan(x.ctx, args[0], api.SessionPlanWrite{Content: string(body), Author: author.v}, opts...)
			if err != nil {
				return err
			}
			return x.out(p, func(w io.Writer) { printPlanWritten(w, p) })
		}
	},
}

var sessionPlanEditCmd = &cliCommand{
	name: "session plan edit", args: "ID", minArgs: 1, maxArgs: 1,
	summary: "edit a session's plan in $EDITOR",
	help: `Open $EDITOR (else $VISUAL, else vi) on a session's plan in a temporary
file (an empty one when the session has no plan yet), then write it back
only if nobody wrote the plan meanwhile (If-Match of the revision read, or
If-None-Match: * for a first plan). When someone did, nothing is written and
the file with your edit is kept: its path is printed, to merge into a fresh
'session plan edit'. An unchanged file writes nothing.
`,
	flags: func(fs *pflag.FlagSet) func(*cli, []string) error {
		return func(x *cli, args []string) error {
			id := args[0]
			var body string
			var base int64
			p, err := x.c.GetSessionPlan(x.ctx, id)
			switch {
			case errors.Is(err, client.ErrNotFound):
				// No plan yet, or no session: the write tells which.
				if _, serr := x.c.GetSession(x.ctx, id); serr != nil {
					return serr
				}
			case err != nil:
				return err
			default:
				body, base = p.Content, p.Revision
			}
			e := &editing{x: x, what: "the plan of session " + id, again: "planserver session plan edit " + id,
				file: fmt.Sprintf("planserver-session-%s-r%d-*.md", strings.ReplaceAll(id, "/", "_"), base), base: base}
			var written *api.SessionPlan
			rev, err := e.run(body, func(content string) (int64, error) {
				pre := client.IfNoneMatchAny()
				if base > 0 {
					pre = client.IfMatch(base)
				}
				w, err := x.c.PutSessionPlan(x.ctx, id, api.SessionPlanWrite{Content: content}, pre)
				if err != nil {
					return 0, err
				}
				written = w
				return w.Revision, nil
			})
			if err != nil || rev == 0 {
				return err
			}
			return x.out(written, func(w io.Writer) { printPlanWritten(w, written) })
		}
	},
}

// printPlanWritten says what a session plan write did.
func printPlanWritten(w io.Writer, p *api.SessionPlan) {
	fmt.Fprintf(w, "plan of session %s written: revision %d\n", p.SessionID, p.Revision)
}

var sessionTodosCmd = &cliCommand{
	name: "session todos", args: "ID", minArgs: 1, maxArgs: 1,
	summary: "show a session's todo list",
	help:    "Show the todo list a session's agent keeps (todo_write), in its order.\n",
	flags: func(fs *pflag.FlagSet) func(*cli, []string) error {
		return func(x *cli, args []string) error {
			l, err := x.c.GetTodos(x.ctx, args[0])
			if err != nil {
				return err
			}
			return x.out(l, func(w io.Writer) {
				if len(l.Todos) == 0 {
					if l.Revision == 0 {
						fmt.Fprintf(w, "session %s has no todo list: its agent never wrote one\n", l.SessionID)
					} else {
						fmt.Fprintf(w, "session %s has no todos (its list is empty, revision %d)\n", l.SessionID, l.Revision)
					}
					return
				}
				rows := make([][]string, len(l.Todos))
				for i, t := range l.Todos {
					rows[i] = []string{todoMark(t.Status), t.Status, oneLine(t.Content, 70), t.ID}
				}
				table(w, "\tSTATUS\tTODO\tID", rows)
			})
		}
	},
}

// todoMark is a todo's status at a glance.
func todoMark(status string) string {
	switch status {
	case "completed":
		return "[x]"
	case "in_progress":
		return "[>]"
	}
	return "[ ]"
}
