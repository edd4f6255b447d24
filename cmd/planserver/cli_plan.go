package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/client"
)

var planGetCmd = &cliCommand{
	name: "plan get", args: "NAME", minArgs: 1, maxArgs: 1,
	summary: "show a shared plan",
	help: `Show a shared plan: its title, status, revision and steps' progress, then
its Markdown content. --markdown prints the content alone (to save it to a
file), --yaml the whole plan document (which 'plan put --yaml' takes back).
`,
	flags: func(fs *flag.FlagSet) func(*cli, []string) error {
		var markdown, yaml bool
		var rev int64
		fs.BoolVar(&markdown, "markdown", false, "print the Markdown content alone")
		fs.BoolVar(&yaml, "yaml", false, "print the plan document as YAML")
		fs.Int64Var(&rev, "revision", 0, "show the plan as it was at this `revision`")
		return func(x *cli, args []string) error {
			name := args[0]
			switch {
			case yaml && (markdown || x.json || rev > 0):
				return x.usage("--yaml goes with none of --markdown, --json and --revision")
			case markdown && x.json:
				return x.usage("--markdown and --json are two different outputs: pick one")
			case yaml:
				doc, err := x.c.GetPlanYAML(x.ctx, name)
				if err != nil {
					return err
				}
				_, err = io.WriteString(x.stdout, doc.Body)
				return err
			case markdown:
				var doc *client.Content
				var err error
				if rev > 0 {
					doc, err = x.c.GetPlanRevisionContent(x.ctx, name, rev)
				} else {
					doc, err = x.c.GetPlanContent(x.ctx, name)
				}
				if err != nil {
					return err
				}
				_, err = io.WriteString(x.stdout, doc.Body)
				return err
			}
			var p *api.Plan
			var err error
			if rev > 0 {
				p, err = x.c.GetPlanRevision(x.ctx, name, rev)
			} else {
				p, err = x.c.GetPlan(x.ctx, name)
			}
			if err != nil {
				return err
			}
			return x.out(p, func(w io.Writer) {
				fmt.Fprintf(w, "plan %s, revision %d", p.Name, p.Revision)
				if p.Title != "" {
					fmt.Fprintf(w, ": %s", p.Title)
				}
				fmt.Fprintf(w, "\nstatus %s, by %s, updated %s\n", orNone(p.Status), orNone(p.Author), p.UpdatedAt)
				if g := p.Progress; g.Total > 0 {
					fmt.Fprintf(w, "steps: %d (%d complete, %d in progress, %d pending, %d blocked; %d ready)\n",
						g.Total, g.Complete, g.InProgress, g.Pending, g.Blocked, g.Ready)
				}
				fmt.Fprintf(w, "\n%s", withNewline(p.Content))
			})
		}
	},
}

var planPutCmd = &cliCommand{
	name: "plan put", args: "NAME [FILE]", minArgs: 1, maxArgs: 2,
	summary: "create or replace a shared plan from a file",
	help: `Create or replace a shared plan from FILE (or standard input, also as -).
A Markdown file replaces the content alone, keeping title, status and steps;
with --title, --status or --author those are set too. A YAML file (--yaml,
or a name ending .yaml or .yml) is the whole plan document, as 'plan get
--yaml' prints it.
`,
	flags: func(fs *flag.FlagSet) func(*cli, []string) error {
		var yaml, create bool
		var rev int64
		var title, status, author optString
		fs.BoolVar(&yaml, "yaml", false, "the file is the plan document in YAML (steps included)")
		fs.Var(&title, "title", "set the plan's `title`")
		fs.Var(&status, "status", "set the plan's `status`")
		fs.Var(&author, "author", "record this `author`")
		fs.Int64Var(&rev, "if-match", 0, "write only if the plan is still at this `revision`")
		fs.BoolVar(&create, "create", false, "create only: fail if the plan exists")
		return func(x *cli, args []string) error {
			name, file := args[0], "-"
			if len(args) == 2 {
				file = args[1]
			}
			if ext := filepath.Ext(file); ext == ".yaml" || ext == ".yml" {
				yaml = true
			}
			if yaml && (title.v != nil || status.v != nil || author.v != nil) {
				return x.usage("a YAML document carries its own title, status and author: drop --title, --status and --author")
			}
			body, err := readInput(x, file)
			if err != nil {
				return err
			}
			opts := []client.CallOption{ifMatch(rev)}
			if create {
				opts = append(opts, client.IfNoneMatchAny())
			}
			var meta client.ResponseMeta
			opts = append(opts, client.Meta(&meta))
			var out any
			var revision int64
			switch {
			case yaml:
				p, err := x.c.PutPlanYAML(x.ctx, name, body, opts...)
				if err != nil {
					return err
				}
				out, revision = p, p.Revision
			case title.v != nil || status.v != nil || author.v != nil:
				content := string(body)
				p, err := x.c.PutPlan(x.ctx, name, api.PlanWrite{Content: &content, Title: title.v, Status: status.v, Author: author.v}, opts...)
				if err != nil {
					return err
				}
				out, revision = p, p.Revision
			default:
				p, err := x.c.PutPlanContent(x.ctx, name, string(body), opts...)
				if err != nil {
					return err
				}
				out, revision = p, p.Revision
			}
			return x.out(out, func(w io.Writer) {
				what := "updated"
				if meta.Status == http.StatusCreated {
					what = "created"
				}
				fmt.Fprintf(w, "plan %s %s: revision %d\n", name, what, revision)
			})
		}
	},
}

var planEditCmd = &cliCommand{
	name: "plan edit", args: "NAME", minArgs: 1, maxArgs: 1,
	summary: "edit a shared plan's content in $EDITOR",
	help: `Open $EDITOR (else $VISUAL, else vi) on the plan's Markdown content in a
temporary file, then write it back only if nobody changed the plan
meanwhile (If-Match of the revision read). When someone did, nothing is
written and the file with your edit is kept: its path is printed, to merge
into a fresh 'plan edit'. An unchanged file writes nothing.
`,
	flags: func(fs *flag.FlagSet) func(*cli, []string) error {
		return func(x *cli, args []string) error { return editPlan(x, args[0]) }
	},
}

// editPlan is plan edit: read, edit, write back with If-Match.
func editPlan(x *cli, name string) error {
	cur, err := x.c.GetPlanContent(x.ctx, name)
	if errors.Is(err, client.ErrNotFound) {
		return cliFail(err, "plan %q does not exist; create it with 'planserver plan put %s FILE'", name, name)
	}
	if err != nil {
		return err
	}
	f, err := os.CreateTemp("", fmt.Sprintf("planserver-%s-r%d-*.md", name, cur.Revision))
	if err != nil {
		return err
	}
	path := f.Name()
	_, err = f.WriteString(cur.Body)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return err
	}
	editor := firstOf(x.getenv("EDITOR"), x.getenv("VISUAL"), "vi")
	// Through the shell, as git does, so EDITOR may carry arguments
	// ("code --wait").
	cmd := exec.CommandContext(x.ctx, "/bin/sh", "-c", editor+` "$1"`, "editor", path)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = x.stdin, x.stdout, x.stderr
	if err := cmd.Run(); err != nil {
		return cliFail(err, "%s failed (%v): plan %s is unchanged; the file is kept in %s", editor, err, name, path)
	}
	edited, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if string(edited) == cur.Body {
		os.Remove(path)
		fmt.Fprintf(x.stderr, "no changes: plan %s stays at revision %d\n", name, cur.Revision)
		return nil
	}
	sum, err := x.c.PutPlanContent(x.ctx, name, string(edited), client.IfMatch(cur.Revision))
	var e *client.Error
	switch {
	case errors.Is(err, client.ErrVersionConflict) && errors.As(err, &e) && e.CurrentRevision != nil:
		return cliFail(err, "conflict: plan %s changed since you read revision %d (it is at revision %d now), so nothing was written.\n"+
			"Your edit is kept in %s; run 'planserver plan edit %s' again and merge it in.", name, cur.Revision, *e.CurrentRevision, path, name)
	case err != nil:
		return cliFail(err, "%s; nothing was written. Your edit is kept in %s", cliMessage(x.server, err), path)
	}
	os.Remove(path)
	return x.out(sum, func(w io.Writer) { fmt.Fprintf(w, "plan %s updated: revision %d\n", name, sum.Revision) })
}

var planStatusCmd = &cliCommand{
	name: "plan status", args: "NAME [STATUS]", minArgs: 1, maxArgs: 2,
	summary: "show or set a shared plan's status",
	help:    "Show a plan's free-form status, or set it to STATUS (a new revision).\n",
	flags: func(fs *flag.FlagSet) func(*cli, []string) error {
		var rev int64
		fs.Int64Var(&rev, "if-match", 0, "set it only if the plan is still at this `revision`")
		return func(x *cli, args []string) error {
			var st *api.PlanStatus
			var err error
			if len(args) == 2 {
				st, err = x.c.SetPlanStatus(x.ctx, args[0], args[1], ifMatch(rev))
			} else {
				st, err = x.c.GetPlanStatus(x.ctx, args[0])
			}
			if err != nil {
				return err
			}
			return x.out(st, func(w io.Writer) { fmt.Fprintf(w, "%s: %s (revision %d)\n", st.Name, orNone(st.Status), st.Revision) })
		}
	},
}

var planHistoryCmd = &cliCommand{
	name: "plan history", args: "NAME", minArgs: 1, maxArgs: 1,
	summary: "list a shared plan's revisions",
	help:    "List the kept revisions of a plan, newest first.\n",
	flags: func(fs *flag.FlagSet) func(*cli, []string) error {
		return func(x *cli, args []string) error {
			revs, err := x.c.PlanRevisions(x.ctx, args[0])
			if err != nil {
				return err
			}
			return x.out(revs, func(w io.Writer) {
				rows := make([][]string, len(revs.Revisions))
				for i, r := range revs.Revisions {
					rows[i] = []string{strconv.FormatInt(r.Revision, 10), r.UpdatedAt, orNone(r.Author), orNone(r.Status)}
				}
				table(w, "REV\tUPDATED\tAUTHOR\tSTATUS", rows)
			})
		}
	},
}

var planDiffCmd = &cliCommand{
	name: "plan diff", args: "NAME", minArgs: 1, maxArgs: 1,
	summary: "show how a shared plan's content changed",
	help: `Show how revision --to of a plan's content differs from revision --from,
as a unified diff (--json: hunks). --to defaults to the current revision,
--from to the kept revision before it (0 is the empty document).
`,
	flags: func(fs *flag.FlagSet) func(*cli, []string) error {
		var from, to optRevision
		fs.Var(&from, "from", "the older `revision`")
		fs.Var(&to, "to", "the newer `revision`")
		return func(x *cli, args []string) error {
			r := client.DiffRange{From: from.v, To: to.v}
			if x.json {
				d, err := x.c.DiffPlan(x.ctx, args[0], r)
				if err != nil {
					return err
				}
				return x.out(d, nil)
			}
			text, err := x.c.DiffPlanText(x.ctx, args[0], r)
			if err != nil {
				return err
			}
			_, err = io.WriteString(x.stdout, text)
			return err
		}
	},
}

// readInput reads a file argument, "-" being standard input.
func readInput(x *cli, file string) ([]byte, error) {
	if file == "-" {
		return io.ReadAll(x.stdin)
	}
	return os.ReadFile(file)
}

// optString is a string flag that tells "not given" from "given empty"
// (--status "" clears a status).
type optString struct{ v *string }

func (o *optString) String() string {
	if o.v == nil {
		return ""
	}
	return *o.v
}

func (o *optString) Set(s string) error { o.v = &s; return nil }

func firstOf(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func withNewline(s string) string {
	if s == "" || strings.HasSuffix(s, "\n") {
		return s
	}
	return s + "\n"
}
