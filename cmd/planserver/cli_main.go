package main

// The API commands (session, plan, review, steps, events) talk to a
// running server through the client package, as any other program would;
// the other commands work on the database file. Flags may come before or
// after the arguments; --server and --token have environment variables,
// every other flag describes one invocation and has none (a stray
// PLANSERVER_YES must never approve a plan).

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/client"
	"github.com/planserver/planserver/internal/cliflag"
)

// cliEnv are the environment variables of the connection flags, the only
// API command flags that have one.
var cliEnv = map[string]string{"server": "PLANSERVER_URL", "token": "PLANSERVER_TOKEN"}

// Exit statuses of the API commands, by class of error. Scripts tell "not
// there" from "changed under me" from "not allowed" from "try later".
const (
	cliExitFailure     = 1
	cliExitUsage       = 2
	cliExitNotFound    = 3
	cliExitConflict    = 4
	cliExitDenied      = 5
	cliExitUnavailable = 6
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
	flags func(fs *flag.FlagSet) func(x *cli, args []string) error
}

// cliGroups lists the API commands by their first word.
var cliGroups = map[string][]*cliCommand{
	"session": {sessionCreateCmd, sessionGetCmd, sessionListCmd, sessionModeCmd, sessionDeleteCmd,
		sessionPlanShowCmd, sessionPlanPutCmd, sessionPlanEditCmd, sessionTodosCmd},
	"plan":   {planGetCmd, planListCmd, planPutCmd, planEditCmd, planStatusCmd, planHistoryCmd, planDiffCmd, planDeleteCmd},
	"review": {reviewListCmd, reviewShowCmd, reviewApproveCmd, reviewRejectCmd},
	"steps":  {stepsReadyCmd, stepsClaimCmd, stepsReportCmd},
	"events": {eventsCmd},
	"webhook": {webhookCreateCmd, webhookListCmd, webhookShowCmd, webhookUpdateCmd, webhookDeleteCmd, webhookRotateCmd,
		webhookDeliveriesCmd, webhookRedeliverCmd},
	"signin": {signinListCmd, signinShowCmd, signinRevokeCmd},
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

// apiCommand runs an API command: args[0] is its group.
func apiCommand(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	group := args[0]
	cmds := cliGroups[group]
	cmd := cmds[0]
	rest := args[1:]
	if len(cmds) > 1 {
		if len(rest) == 0 || isHelp(rest[0]) {
			if len(rest) == 0 {
				return usageError(stderr, "planserver "+group, "name an action: "+cliActions(cmds))
			}
			cliGroupHelp(stdout, group, cmds)
			return errHelp
		}
		var used int
		if cmd, used = cliLookup(cmds, group, rest); cmd == nil {
			return usageError(stderr, "planserver "+group,
				fmt.Sprintf("unknown action %q: want %s", strings.Join(rest[:min(used, len(rest))], " "), cliActions(cmds)))
		}
		rest = rest[used:]
	}
	x := &cli{name: cmd.name, ctx: ctx, getenv: getenv, stdin: stdin, stdout: stdout, stderr: stderr}
	fs := flag.NewFlagSet("planserver "+cmd.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors and help are written in --double-dash form below
	fs.Usage = func() {}
	runCmd := cmd.flags(fs)
	var token string
	fs.StringVar(&x.server, "server", cliflag.DefaultServer, "the planserver's base `url`")
	fs.StringVar(&token, "token", "", "bearer `token` (a server with --auth token needs one)")
	fs.BoolVar(&x.json, "json", false, "print JSON for scripts instead of text for people")

	pos, err := cliParse(fs, rest)
	switch {
	case errors.Is(err, flag.ErrHelp):
		cliHelp(stdout, cmd, fs)
		return errHelp
	case err != nil:
		return usageError(stderr, fs.Name(), cliflag.ErrorText(err))
	case len(pos) < cmd.minArgs:
		return usageError(stderr, fs.Name(), "missing arguments: usage is planserver "+cmd.name+" "+cmd.args)
	case cmd.maxArgs >= 0 && len(pos) > cmd.maxArgs:
		return usageError(stderr, fs.Name(), fmt.Sprintf("unexpected argument %q", pos[cmd.maxArgs]))
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	x.serverFrom = "the default"
	if given["server"] {
		x.serverFrom = "--server"
	}
	for name, env := range cliEnv {
		if v := getenv(env); v != "" && !given[name] {
			_ = fs.Set(name, v) // string flags take any value
			if name == "server" {
				x.serverFrom = env
			}
		}
	}
	x.c, err = client.New(x.server, client.WithToken(token), client.WithUserAgent("planserver-cli/"+version))
	if err != nil {
		// Blame where the value came from: a stale PLANSERVER_URL in the
		// environment is not something the user typed.
		if x.serverFrom == cliEnv["server"] {
			return usageError(stderr, fs.Name(), fmt.Sprintf("%s=%q (from the environment): %v", x.serverFrom, x.server, err))
		}
		return usageError(stderr, fs.Name(), "--server: "+err.Error())
	}
	if err := runCmd(x, pos); err != nil && !errors.Is(err, errUsage) {
		where := x.server + " (from " + x.serverFrom + ")"
		if !given["server"] && x.serverFrom != cliEnv["server"] {
			where = x.server + " (the default)"
		}
		return asTyped(cliFailure(where, err), pos)
	} else if err != nil {
		return err
	}
	return nil
}

// usage reports a wrong use of the command the flag package cannot see
// (flags that do not go together, a malformed value) the way it reports
// its own: one line, a pointer to --help, exit 2.
func (x *cli) usage(format string, args ...any) error {
	return usageError(x.stderr, "planserver "+x.name, fmt.Sprintf(format, args...))
}

// cliParse parses flags wherever they are among the arguments, as people
// type them (plan get NAME --json), and returns the arguments. After "--"
// everything is an argument. flag.ErrHelp means -h or --help was given.
func cliParse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// cliLookup finds the command of group that the first words of args name
// ("plan" + "get", or "session" + "plan show") and how many words it took.
// With none, used is how many words were tried.
func cliLookup(cmds []*cliCommand, group string, args []string) (cmd *cliCommand, used int) {
	name := group
	for i, a := range args {
		if strings.HasPrefix(a, "-") {
			return nil, max(i, 1)
		}
		name += " " + a
		prefix := false
		for _, c := range cmds {
			if c.name == name {
				return c, i + 1
			}
			prefix = prefix || strings.HasPrefix(c.name, name+" ")
		}
		if !prefix {
			return nil, i + 1
		}
	}
	return nil, len(args)
}

// cliActions lists the actions of a group: "get, put or edit".
func cliActions(cmds []*cliCommand) string {
	names := make([]string, len(cmds))
	for i, c := range cmds {
		_, names[i], _ = strings.Cut(c.name, " ")
	}
	if len(names) == 1 {
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// cliGroupHelp lists a group's actions.
func cliGroupHelp(w io.Writer, group string, cmds []*cliCommand) {
	fmt.Fprintf(w, "Usage:\n")
	for _, c := range cmds {
		fmt.Fprintf(w, "  planserver %-40s %s\n", c.name+" "+c.args, c.summary)
	}
	fmt.Fprintf(w, "\nRun 'planserver %s ACTION --help' for an action's flags.\n%s", group, cliExitHelp)
}

// cliHelp writes a command's help: synopsis, what it does, its flags in
// --double-dash form with their environment variables, the exit statuses.
func cliHelp(w io.Writer, cmd *cliCommand, fs *flag.FlagSet) {
	fmt.Fprintf(w, "Usage: planserver %s [flags]\n\n%s", strings.TrimSpace(cmd.name+" "+cmd.args), cmd.help)
	fmt.Fprintln(w, "\nFlags (--server and --token given on the command line win over their environment variables):")
	fs.VisitAll(func(f *flag.Flag) {
		placeholder, usage := flag.UnquoteUsage(f)
		line := "  --" + f.Name
		if placeholder != "" {
			line += " " + placeholder
		}
		if env := cliEnv[f.Name]; env != "" {
			line = fmt.Sprintf("%-36s %s", line, env)
		}
		fmt.Fprintln(w, line)
		if f.DefValue != "" && f.DefValue != "0" && f.DefValue != "false" {
			usage += fmt.Sprintf(" (default %s)", f.DefValue)
		}
		fmt.Fprintf(w, "        %s\n", usage)
	})
	fmt.Fprint(w, cliExitHelp)
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

// cliFailure is the exitError of a command that failed with err.
func cliFailure(server string, err error) error {
	return exitError{code: cliExitCode(err), err: errors.New(cliMessage(server, err))}
}

// asTyped shows the arguments in a failure's message as the user typed
// them: the client escapes an id x/y as x%2Fy in the request path, and the
// server's detail names the id as it arrived.
func asTyped(err error, args []string) error {
	var ee exitError
	if !errors.As(err, &ee) {
		return err
	}
	msg := ee.err.Error()
	for _, a := range args {
		if esc := url.PathEscape(a); esc != a {
			msg = strings.ReplaceAll(msg, esc, a)
		}
	}
	ee.err = errors.New(msg)
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
		return cliExitNotFound
	}
	var e *client.Error
	if errors.As(err, &e) {
		switch e.Code {
		case api.CodeNotFound:
			return cliExitNotFound
		case api.CodeVersionConflict, api.CodeAlreadyExists, api.CodePreconditionRequired, api.CodeUnsupportedMode,
			api.CodePlanMissing, api.CodeReviewNotPending, api.CodeDepsIncomplete, api.CodeCursorExpired:
			return cliExitConflict
		case api.CodeUnauthenticated, api.CodePermissionDenied:
			return cliExitDenied
		case api.CodeInternal, api.CodeUnavailable, api.CodeInsufficientStorage, api.CodeRateLimited:
			return cliExitUnavailable
		}
		if e.Status >= 500 {
			return cliExitUnavailable
		}
		return cliExitFailure
	}
	var ne net.Error
	var ue *url.Error
	if (errors.As(err, &ne) || errors.As(err, &ue)) && !errors.Is(err, context.Canceled) {
		return cliExitUnavailable
	}
	return cliExitFailure
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

// optRevision is a flag naming a revision, unset until given (0 is a
// revision: the empty document of a diff).
type optRevision struct{ v *int64 }

func (o *optRevision) String() string {
	if o.v == nil {
		return ""
	}
	return strconv.FormatInt(*o.v, 10)
}

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
