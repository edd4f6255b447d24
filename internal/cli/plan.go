package cli

import (
	"errors"
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
	"github.com/spf13/pflag"
)

var planGetCmd = &cliCommand{
	name: "plan get", args: "NAME", minArgs: 1, maxArgs: 1,
	summary: "show a shared plan",
	help: `Show a shared plan: its title, status, revision and steps' progress, then
its Markdown content. --markdown prints the content alone (to save it to a
file), --yaml the whole plan document (which 'plan put --yaml' takes back).
`,
	flags: func(fs *pflag.FlagSet) func(*cli, []string) error {
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
	flags: func(fs *pflag.FlagSet) func(*cli, []string) error {
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
	flags: func(fs *pflag.FlagSet) func(*cli, []string) error {
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
	e := &editing{x: x, what: "plan " + name, again: "planserver plan edit " + name,
		file: fmt.Sprintf("planserver-%s-r%d-*.md", name, cur.Revision), base: cur.Revision}
	rev, err := e.run(cur.Body, func(content string) (int64, error) {
		sum, err := x.c.PutPlanContent(x.ctx, name, content, client.IfMatch(cur.Revision))
		if err != nil {
			return 0, err
		}
		e.out = sum
		return sum.Revision, nil
	})
	if err != nil || rev == 0 {
		return err
	}
	return x.out(e.out, func(w io.Writer) { fmt.Fprintf(w, "plan %s updated: revision %d\n", name, rev) })
}

// editing is one round of $EDITOR on a document read at revision base
// (0: none yet), written back only if nobody wrote it meanwhile.
type editing struct {
	x *cli
	// what names the document in messages ("plan release"); again is the
	// command that edits it afresh; file the temporary file's pattern.
	what, again, file string
	base              int64
	// out is what the write answered, for --json.
	out any
}

// run opens $EDITOR (else $VISUAL, else vi) on body in a temporary file and
// writes the result with write, which sends the precondition. It returns
// the revision written, or 0 when the file was left unchanged. On a
// conflict or a failed write nothing is written and the edited file is
// kept: its path is in the message.
func (e *editing) run(body string, write func(content string) (int64, error)) (int64, error) {
	x := e.x
	f, err := os.CreateTemp("", e.file)
	if err != nil {
		return 0, err
	}
	path := f.Name()
	_, err = f.WriteString(body)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return 0, err
	}
	editor := firstOf(x.getenv("EDITOR"), x.getenv("VISUAL"), "vi")
	// Through the shell, as git does, so EDITOR may carry arguments
	// ("code --wait").
	cmd := exec.CommandContext(x.ctx, "/bin/sh", "-c", editor+` "$1"`, "editor", path)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = x.stdin, x.stdout, x.stderr
	if err := cmd.Run(); err != nil {
		return 0, cliFail(err, "%s failed (%v): %s is unchanged; the file is kept in %s", editor, err, e.what, path)
	}
	edited, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	if string(edited) == body {
		os.Remove(path)
		if e.base == 0 {
			fmt.Fprintf(x.stderr, "no changes: %s is still not written\n", e.what)
		} else {
			fmt.Fprintf(x.stderr, "no changes: %s stays at revision %d\n", e.what, e.base)
		}
		return 0, nil
	}
	rev, err := write(string(edited))
	var ce *client.Error
	switch {
	case errors.Is(err, client.ErrVersionConflict) && errors.As(err, &ce) && ce.CurrentRevision != nil:
		return 0, cliFail(err, "conflict: %s changed since you read revision %d (it is at revision %d now), so nothing was written.\n"+
			"Your edit is kept in %s; run '%s' again and merge it in.", e.what, e.base, *ce.CurrentRevision, path, e.again)
	case errors.Is(err, client.ErrAlreadyExists) && e.base == 0:
		return 0, cliFail(err, "conflict: %s was written by someone else while you edited, so nothing was written.\n"+
			"Your edit is kept in %s; run '%s' again and merge it in.", e.what, path, e.again)
	case err != nil:
		return 0, cliFail(err, "%s; nothing was written. Your edit is kept in %s", cliMessage(x.server, err), path)
	}
	os.Remove(path)
	return rev, nil
}

var planListCmd = &cliCommand{
	name: "plan list", args: "", minArgs: 0, maxArgs: 0,
	summary: "list shared plans",
	help: `List shared plans by name, with their status, author, revision and
steps' progress (never their content), every page of them. --status and
--author filter as GET /v1/plans does. --limit N prints one page of at most
N plans and, when there are more, the --page-token that continues after it.
`,
	flags: func(fs *pflag.FlagSet) func(*cli, []string) error {
		var q client.PlanQuery
		fs.StringVar(&q.Status, "status", "", "only plans with this `status`")
		fs.StringVar(&q.Author, "author", "", "only plans by this `author`")
		fs.IntVar(&q.Limit, "limit", 0, "one page of at most this many `plans` (1 to 1000; default: every page)")
		fs.StringVar(&q.PageToken, "page-token", "", "continue after the page that gave this `token`")
		return func(x *cli, _ []string) error {
			if q.Limit < 0 {
				return x.usage("--limit must be at least 1")
			}
			page := &api.PlanPage{Plans: []api.PlanSummary{}}
			if q.Limit > 0 {
				var err error
				if page, err = x.c.ListPlans(x.ctx, q); err != nil {
					return err
				}
			} else {
				for p, err := range x.c.Plans(x.ctx, q) {
					if err != nil {
						return err
					}
					page.Plans = append(page.Plans, *p)
				}
			}
			return x.out(page, func(w io.Writer) {
				if len(page.Plans) == 0 {
					fmt.Fprintln(w, "no plans"+planFilters(q))
					return
				}
				rows := make([][]string, len(page.Plans))
				for i, p := range page.Plans {
					progress := "-"
					if g := p.Progress; g.Total > 0 {
						progress = fmt.Sprintf("%d/%d", g.Complete, g.Total)
					}
					rows[i] = []string{p.Name, strconv.FormatInt(p.Revision, 10), orNone(p.Status), orNone(p.Author),
						progress, p.UpdatedAt, oneLine(p.Title, 40)}
				}
				table(w, "NAME\tREV\tSTATUS\tAUTHOR\tSTEPS DONE\tUPDATED\tTITLE", rows)
				if page.NextPageToken != "" {
					fmt.Fprintf(x.stderr, "more plans: add --page-token %s\n", page.NextPageToken)
				}
			})
		}
	},
}

// planFilters says which filters an empty list had.
func planFilters(q client.PlanQuery) string {
	var f []string
	if q.Status != "" {
		f = append(f, "status "+q.Status)
	}
	if q.Author != "" {
		f = append(f, "author "+q.Author)
	}
	if len(f) == 0 {
		return ""
	}
	return " with " + strings.Join(f, " and ")
}

var planDeleteCmd = &cliCommand{
	name: "plan delete", args: "NAME", minArgs: 1, maxArgs: 1,
	summary: "delete a shared plan",
	help: `Delete a shared plan, its steps, reports and history. With --if-match,
only if the plan is still at that revision (exit status 4 otherwise). A plan
created again under the same name continues above its last revision.
`,
	flags: func(fs *pflag.FlagSet) func(*cli, []string) error {
		var rev int64
		fs.Int64Var(&rev, "if-match", 0, "delete it only if the plan is still at this `revision`")
		return func(x *cli, args []string) error {
			if err := x.c.DeletePlan(x.ctx, args[0], ifMatch(rev)); err != nil {
				return err
			}
			return x.out(map[string]any{"name": args[0], "deleted": true}, func(w io.Writer) {
				fmt.Fprintf(w, "plan %s deleted\n", args[0])
			})
		}
	},
}

var planStatusCmd = &cliCommand{
	name: "plan status", args: "NAME [STATUS]", minArgs: 1, maxArgs: 2,
	summary: "show or set a shared plan's status",
	help:    "Show a plan's free-form status, or set it to STATUS (a new revision).\n",
	flags: func(fs *pflag.FlagSet) func(*cli, []string) error {
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
	flags: func(fs *pflag.FlagSet) func(*cli, []string) error {
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
	flags: func(fs *pflag.FlagSet) func(*cli, []string) error {
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
func (o *optString) Type() string       { return "value" }

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
