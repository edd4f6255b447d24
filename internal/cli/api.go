package cli

// The API commands (session, plan, review, steps, events, webhook,
// signin) talk to a running server through the client package, as any
// other program would. Flags may come before or after the arguments;
// --server and --token have environment variables, every other flag
// describes one invocation and has none (a stray PLANSERVER_YES must
// never approve a plan).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/client"
	"github.com/planserver/planserver/internal/hosthookwire"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Exit statuses of the API commands, by class of error. Scripts tell "not
// there" from "changed under me" from "not allowed" from "try later".
const (
	ExitFailure     = 1
	ExitUsage       = 2
	ExitNotFound    = 3
	ExitConflict    = 4
	ExitDenied      = 5
	ExitUnavailable = 6
)

// cliExitHelp documents the statuses in every API command's --help.
const cliExitHelp = `
Exit status:
  0  success
  1  any other failure: the server found the request invalid, a local
     error, an approval not confirmed
  2  usage: a wrong command, flag or argument
  3  not found: no such session, plan, step or token (steps claim: no
     step is ready)
  4  conflict: the resource changed since it was read (version_conflict),
     already exists, or is not in the state the action needs
     (review_not_pending, plan_missing, deps_incomplete, unsupported_mode,
     precondition_required, cursor_expired)
  5  denied: no valid token (unauthenticated), or its role may not
     (permission_denied)
  6  unavailable: the server cannot be reached, failed (5xx), limits the
     rate (429) or cannot take writes (503, 507)
`

// cliCommand is one API command.
type cliCommand struct {
	// name is the command after "planserver": "plan edit", "events".
	name string
	// args is the synopsis of its arguments, e.g. "NAME [FILE]".
	args string
	// minArgs and maxArgs bound the arguments (-1: no bound).
	minArgs, maxArgs int
	// summary is its line in its group's help.
	summary string
	// help is what --help says above the flags.
	help string
	// flags declares the command's own flags on fs and returns what runs
	// it once they are parsed.
	flags func(fs *pflag.FlagSet) func(x *cli, args []string) error
}

// cliGroups lists the API commands by their first word, in the order
// help lists them.
var cliGroups = [][]*cliCommand{
	{sessionCreateCmd, sessionGetCmd, sessionListCmd, sessionModeCmd, sessionDeleteCmd,
		sessionPlanShowCmd, sessionPlanPutCmd, sessionPlanEditCmd, sessionTodosCmd},
	{planGetCmd, planListCmd, planPutCmd, planEditCmd, planStatusCmd, planHistoryCmd, planDiffCmd, planDeleteCmd},
	{reviewListCmd, reviewShowCmd, reviewApproveCmd, reviewRejectCmd},
	{stepsReadyCmd, stepsClaimCmd, stepsReportCmd},
	{eventsCmd},
	{webhookCreateCmd, webhookListCmd, webhookShowCmd, webhookUpdateCmd, webhookDeleteCmd, webhookRotateCmd,
		webhookDeliveriesCmd, webhookRedeliverCmd},
	{signinListCmd, signinShowCmd, signinRevokeCmd},
}

// cli is what an API command runs with.
type cli struct {
	// name is the command's, e.g. "plan edit".
	name   string
	ctx    context.Context
	c      *client.Client
	server string
	// serverFrom says where server came from, for messages that blame it:
	// "--server", "PLANSERVER_URL" or "the default".
	serverFrom     string
	json           bool
	getenv         func(string) string
	stdin          io.Reader
	stdout, stderr io.Writer
}

// APICommands are the commands that talk to a running server through the
// client package, as any other program would, grouped by their first
// word.
func APICommands(env Env) []*cobra.Command {
	var out []*cobra.Command
	for _, cmds := range cliGroups {
		if len(cmds) == 1 {
			out = append(out, apiCommand(cmds[0], env))
			continue
		}
		name, _, _ := strings.Cut(cmds[0].name, " ")
		group := groupCommand(name)
		sub := map[string]*cobra.Command{name: group}
		for _, d := range cmds {
			words := strings.Fields(d.name)
			parent := group
			// A command of three words ("session plan show") is in a
			// group of its own under the first.
			if len(words) > 2 {
				path := strings.Join(words[:len(words)-1], " ")
				if sub[path] == nil {
					sub[path] = groupCommand(path)
					group.AddCommand(sub[path])
				}
				parent = sub[path]
			}
			parent.AddCommand(apiCommand(d, env))
		}
		out = append(out, group)
	}
	return out
}

// groupCommand is the group of the API commands whose names start with
// path; its help lists them.
func groupCommand(path string) *cobra.Command {
	words := strings.Fields(path)
	group := Group(&cobra.Command{Use: words[len(words)-1]})
	group.Annotations[listKey] = "true"
	return group
}

// listKey, on a group of API commands, makes its help the list of them.
const listKey = "planserver_list"

// listActions is the help of a group of API commands: each with its
// arguments and summary.
func listActions(w io.Writer, group *cobra.Command) {
	fmt.Fprintf(w, "Usage:\n")
	var list func(*cobra.Command)
	list = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if IsGroup(sub) {
				list(sub)
				continue
			}
			name := strings.TrimPrefix(sub.CommandPath(), "planserver ")
			fmt.Fprintf(w, "  planserver %-40s %s\n", name+" "+sub.Annotations[argsKey], sub.Short)
		}
	}
	list(group)
	fmt.Fprintf(w, "\nRun '%s ACTION --help' for an action's flags.\n%s", group.CommandPath(), cliExitHelp)
}

// argsKey, on an API command, is the synopsis of its arguments.
const argsKey = "planserver_args"

// apiFlags heads the flags of an API command.
const apiFlags = "Flags (--server and --token given on the command line win over their environment variables):"

// apiCommand is the command of d: the connection flags (--server, --token,
// --json) besides its own, then a client for the server it names.
func apiCommand(d *cliCommand, env Env) *cobra.Command {
	words := strings.Fields(d.name)
	x := &cli{name: d.name, getenv: env.Getenv}
	var token string
	cmd := &cobra.Command{
		Use:         words[len(words)-1] + " " + d.args,
		Short:       d.summary,
		Args:        ArgsBetween(d.minArgs, d.maxArgs, "planserver "+d.name+" "+d.args),
		Annotations: map[string]string{argsKey: d.args},
	}
	Help(cmd, fmt.Sprintf("Usage: planserver %s [flags]\n\n%s", strings.TrimSpace(d.name+" "+d.args), d.help), apiFlags, cliExitHelp)
	fs := cmd.Flags()
	runCmd := d.flags(fs)
	fs.StringVar(&x.server, "server", hosthookwire.DefaultServer, "the planserver's base `url`")
	fs.StringVar(&token, "token", "", "bearer `token` (a server with --auth token needs one)")
	fs.BoolVar(&x.json, "json", false, "print JSON for scripts instead of text for people")
	BindEnv(fs, "server", "PLANSERVER_URL")
	BindEnv(fs, "token", "PLANSERVER_TOKEN")
	cmd.RunE = func(cmd *cobra.Command, pos []string) error {
		x.ctx, x.stdin, x.stdout, x.stderr = cmd.Context(), cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr()
		switch {
		case fs.Changed("server"):
			x.serverFrom = "--server"
		case env.Getenv("PLANSERVER_URL") != "":
			x.serverFrom = "PLANSERVER_URL"
		default:
			x.serverFrom = "the default"
		}
		var err error
		x.c, err = client.New(x.server, client.WithToken(token), client.WithUserAgent("planserver-cli/"+env.Version))
		if err != nil {
			// Blame where the value came from: a stale PLANSERVER_URL in the
			// environment is not something the user typed.
			if x.serverFrom == "PLANSERVER_URL" {
				return Usage(cmd, "%s=%q (from the environment): %v", x.serverFrom, x.server, err)
			}
			return Usage(cmd, "--server: %v", err)
		}
		if err := runCmd(x, pos); err != nil && !errors.Is(err, ErrUsage) {
			where := x.server + " (from " + x.serverFrom + ")"
			if x.serverFrom == "the default" {
				where = x.server + " (the default)"
			}
			return asTyped(cliFailure(where, err), pos)
		} else if err != nil {
			return err
		}
		return nil
	}
	return cmd
}

// usage reports a wrong use of the command the flag package cannot see
// (flags that do not go together, a malformed value) the way it reports
// its own: one line, a pointer to --help, exit 2.
func (x *cli) usage(format string, args ...any) error {
	return UsageError(x.stderr, "planserver "+x.name, fmt.Sprintf(format, args...))
}

// cliError is a failure with its message for people; its cause decides
// the exit status.
type cliError struct {
	msg   string
	cause error
}

func (e *cliError) Error() string { return e.msg }
func (e *cliError) Unwrap() error { return e.cause }

// cliFail is a failure saying msg, of the class of cause.
func cliFail(cause error, format string, args ...any) error {
	return &cliError{msg: fmt.Sprintf(format, args...), cause: cause}
}

// cliFailure is the ExitError of a command that failed with err.
func cliFailure(server string, err error) error {
	return ExitError{Code: cliExitCode(err), Err: errors.New(cliMessage(server, err))}
}

// asTyped shows the arguments in a failure's message as the user typed
// them: the client escapes an id x/y as x%2Fy in the request path, and the
// server's detail names the id as it arrived.
func asTyped(err error, args []string) error {
	var ee ExitError
	if !errors.As(err, &ee) {
		return err
	}
	msg := ee.Err.Error()
	for _, a := range args {
		if esc := url.PathEscape(a); esc != a {
			msg = strings.ReplaceAll(msg, esc, a)
		}
	}
	ee.Err = errors.New(msg)
	return ee
}

// cliMessage says what went wrong, for people.
func cliMessage(server string, err error) string {
	var ce *cliError
	var e *client.Error
	var ue *url.Error
	switch {
	case errors.As(err, &ce):
		return ce.msg
	case errors.As(err, &e) && e.Code == api.CodeUnauthenticated:
		// The server's detail speaks HTTP (the Authorization header); the
		// command line takes the token as --token or PLANSERVER_TOKEN.
		why := "it requires a token"
		if e.Detail != "" && !strings.Contains(e.Detail, "Authorization") {
			why = e.Detail
		}
		return fmt.Sprintf("the planserver at %s refused the request: %s (unauthenticated); pass a valid token with --token TOKEN "+
			"or set PLANSERVER_TOKEN (planserver token create --role admin|agent|viewer makes one)", server, why)
	case errors.As(err, &e):
		msg := e.Detail
		if msg == "" {
			msg = fmt.Sprintf("%s %s answered %d", e.Method, unescapePath(e.Path), e.Status)
		}
		// The detail of one invalid field is that field's message; of
		// several, a count and the first: list each field once.
		if len(e.Fields) > 1 {
			msg = fmt.Sprintf("%d invalid fields", len(e.Fields))
		}
		if e.Code != "" {
			msg += " (" + string(e.Code) + ")"
		} else {
			msg += fmt.Sprintf(" (%d)", e.Status)
		}
		for _, f := range e.Fields {
			if len(e.Fields) == 1 && strings.Contains(e.Detail, f.Message) {
				continue
			}
			msg += fmt.Sprintf("\n  %s: %s", f.Field, f.Message)
		}
		return msg
	case errors.As(err, &ue) && !errors.Is(err, context.Canceled):
		return fmt.Sprintf("cannot reach the planserver at %s: %v (is it running? set --server or PLANSERVER_URL)", server, ue.Err)
	}
	return err.Error()
}

// unescapePath shows a request path as the user typed its segments: the
// client escapes an id x/y as x%2Fy on the wire.
func unescapePath(p string) string {
	if u, err := url.PathUnescape(p); err == nil {
		return u
	}
	return p
}

// cliExitCode is the exit status of err's class.
func cliExitCode(err error) int {
	if errors.Is(err, client.ErrNoStepReady) {
		return ExitNotFound
	}
	var e *client.Error
	if errors.As(err, &e) {
		switch e.Code {
		case api.CodeNotFound:
			return ExitNotFound
		case api.CodeVersionConflict, api.CodeAlreadyExists, api.CodePreconditionRequired, api.CodeUnsupportedMode,
			api.CodePlanMissing, api.CodeReviewNotPending, api.CodeDepsIncomplete, api.CodeCursorExpired:
			return ExitConflict
		case api.CodeUnauthenticated, api.CodePermissionDenied:
			return ExitDenied
		case api.CodeInternal, api.CodeUnavailable, api.CodeInsufficientStorage, api.CodeRateLimited:
			return ExitUnavailable
		}
		if e.Status >= 500 {
			return ExitUnavailable
		}
		return ExitFailure
	}
	var ne net.Error
	var ue *url.Error
	if (errors.As(err, &ne) || errors.As(err, &ue)) && !errors.Is(err, context.Canceled) {
		return ExitUnavailable
	}
	return ExitFailure
}

// out prints v as JSON with --json, else calls human.
func (x *cli) out(v any, human func(w io.Writer)) error {
	if x.json {
		enc := json.NewEncoder(x.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	human(x.stdout)
	return nil
}

// newTable aligns tab-separated columns.
func newTable(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 4, 2, ' ', 0) }

// table writes rows under a header, in aligned columns.
func table(w io.Writer, header string, rows [][]string) {
	tw := newTable(w)
	fmt.Fprintln(tw, header)
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	tw.Flush()
}

// oneLine shortens s to one line of at most n runes, for a table cell.
func oneLine(s string, n int) string {
	s, _, cut := strings.Cut(strings.TrimSpace(s), "\n")
	r := []rune(s)
	if len(r) > n {
		return string(r[:n-1]) + "…"
	}
	if cut {
		return s + " …"
	}
	return s
}

// repeated is a flag that may be given many times.
type repeated []string

func (r *repeated) String() string     { return strings.Join(*r, ", ") }
func (r *repeated) Set(v string) error { *r = append(*r, v); return nil }
func (r *repeated) Type() string       { return "value" }

// optRevision is a flag naming a revision, unset until given (0 is a
// revision: the empty document of a diff).
type optRevision struct{ v *int64 }

func (o *optRevision) String() string {
	if o.v == nil {
		return ""
	}
	return strconv.FormatInt(*o.v, 10)
}

func (o *optRevision) Type() string { return "value" }

func (o *optRevision) Set(s string) error {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return errors.New("want a revision number")
	}
	o.v = &n
	return nil
}

// ifMatch is the IfMatch option of a --if-match flag (0: none).
func ifMatch(rev int64) client.CallOption {
	if rev > 0 {
		return client.IfMatch(rev)
	}
	return nil
}
