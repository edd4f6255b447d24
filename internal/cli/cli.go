// Package cli owns planserver's command line: the conventions of its
// command tree (built with cobra) and the commands that talk to a running
// server. The tree's conventions are one-line usage errors that point to
// --help (exit 2), help in planserver's own layout with every flag's
// environment variable, PLANSERVER_* variables for flags not given (a flag
// on the command line wins), "did you mean" for a mistyped command, and
// docs/cli.md generated from the tree (Reference). The commands here are
// the API commands (session, plan, review, steps, events, webhook,
// signin), the stdio gate in front of an MCP server, and the host hook
// with its installer; cmd/planserver adds serve and the admin commands
// (internal/cli/admin) to the same tree.
package cli

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func init() {
	// Commands are listed (in help and docs/cli.md) in the order they are
	// added, which groups them by what they are for.
	cobra.EnableCommandSorting = false
}

// Env is what the commands take from the process besides their
// arguments and standard streams, passed in so that tests can drive the
// tree in-process.
type Env struct {
	// Getenv reads an environment variable (os.Getenv).
	Getenv func(string) string
	// Version is planserver's, for the API commands' User-Agent.
	Version string
}

// ErrUsage marks an error whose message was printed already (a wrong
// flag or argument): exit 2 without another line.
var ErrUsage = errors.New("usage")

// ExitError is an error that exits with a status of its own (an API
// command's class of failure; healthcheck's 1 for unhealthy, which a
// container's HEALTHCHECK tells apart from 2 for misuse).
type ExitError struct {
	Code int
	Err  error
}

func (e ExitError) Error() string { return e.Err.Error() }

// ExitStatus ends planserver with a status and no message: a sandboxed
// command's own exit status, passed on unchanged.
type ExitStatus int

func (e ExitStatus) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// UsageError prints one line saying what is wrong with the use of
// command ("planserver serve") and where its help is, and returns
// ErrUsage.
func UsageError(stderr io.Writer, command, problem string) error {
	fmt.Fprintf(stderr, "%s: %s (see '%s --help')\n", command, problem, command)
	return ErrUsage
}

// Usage is UsageError for cmd.
func Usage(cmd *cobra.Command, format string, args ...any) error {
	return UsageError(cmd.ErrOrStderr(), cmd.CommandPath(), fmt.Sprintf(format, args...))
}

// FlagError words a flag the command line got wrong, from pflag's typed
// errors, in the form the help uses: one line, --double-dash names.
func FlagError(cmd *cobra.Command, err error) error {
	return Usage(cmd, "%s", FlagProblem(err))
}

// FlagProblem says what is wrong in a pflag parse error.
func FlagProblem(err error) string {
	var (
		missing  *pflag.NotExistError
		noValue  *pflag.ValueRequiredError
		badValue *pflag.InvalidValueError
		syntax   *pflag.InvalidSyntaxError
	)
	switch {
	case errors.As(err, &missing) && missing.GetSpecifiedShortnames() == "":
		return "unknown flag --" + missing.GetSpecifiedName()
	case errors.As(err, &noValue):
		return "flag --" + noValue.GetFlag().Name + " needs a value"
	case errors.As(err, &badValue):
		return fmt.Sprintf("invalid value %q for flag --%s: %v", badValue.GetValue(), badValue.GetFlag().Name, valueProblem(badValue.Unwrap()))
	case errors.As(err, &syntax):
		return "unknown flag " + syntax.GetSpecifiedFlag()
	}
	return err.Error()
}

// valueProblem is what is wrong with a flag's value: a number's parse
// error without the Go function that gave it.
func valueProblem(err error) error {
	var num *strconv.NumError
	if errors.As(err, &num) {
		return num.Err
	}
	return err
}

// The annotations that shape a command's help and where its flags' values
// come from.
const (
	// envKey, on a flag, names its environment variable.
	envKey = "planserver_env"
	// flagsKey, on a command, is the heading its flags are listed under
	// in its help (none: its help lists no flags).
	flagsKey = "planserver_flags"
	// plainKey, on a command, lists its flags without defaults or
	// environment variables (copy reads none).
	plainKey = "planserver_plain_flags"
	// footerKey, on a command, is printed after its flags.
	footerKey = "planserver_footer"
	// groupKey marks a command that only groups actions: it has no
	// section of its own in docs/cli.md.
	groupKey = "planserver_group"
)

// Headings of the flags in help.
const (
	// EnvFlags heads the flags of a command whose every flag has an
	// environment variable, or none (per-call flags).
	EnvFlags = "Flags (a flag given on the command line wins over its environment variable):"
	// PlainFlags heads flags that have no environment variables.
	PlainFlags = "Flags:"
)

// BindEnv sets flag name of fs from the environment variable env when
// the command line does not give it.
func BindEnv(fs *pflag.FlagSet, name, env string) {
	_ = fs.SetAnnotation(name, envKey, []string{env})
}

// EnvOf is the environment variable of flag f, or "".
func EnvOf(f *pflag.Flag) string {
	if v := f.Annotations[envKey]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// ApplyEnv fills every flag of fs that the command line did not give
// from its environment variable, when that is set. The flag stays
// unchanged in pflag's sense, so Changed tells a value typed on the
// command line from one the environment gave.
func ApplyEnv(fs *pflag.FlagSet, getenv func(string) string) error {
	var err error
	fs.VisitAll(func(f *pflag.Flag) {
		env := EnvOf(f)
		if err != nil || env == "" || f.Changed {
			return
		}
		if v := getenv(env); v != "" {
			if setErr := f.Value.Set(v); setErr != nil {
				err = fmt.Errorf("%s=%q: %w", env, v, valueProblem(setErr))
			}
		}
	})
	return err
}

// Help sets cmd's help: text is printed above its flags, which are
// listed under heading (none: not listed), and footer below them.
func Help(cmd *cobra.Command, text, heading, footer string) *cobra.Command {
	cmd.Long = text
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	if heading != "" {
		cmd.Annotations[flagsKey] = heading
	}
	if heading == PlainFlags {
		cmd.Annotations[plainKey] = "true"
	}
	if footer != "" {
		cmd.Annotations[footerKey] = footer
	}
	return cmd
}

// writeHelp writes cmd's help: what it does, then its flags in
// --double-dash form, each with its environment variable and default.
func writeHelp(w io.Writer, cmd *cobra.Command) {
	if cmd.Annotations[listKey] != "" {
		listActions(w, cmd)
		return
	}
	fmt.Fprint(w, cmd.Long)
	if heading := cmd.Annotations[flagsKey]; heading != "" && cmd.Flags().HasAvailableFlags() {
		plain := cmd.Annotations[plainKey] != ""
		fmt.Fprintln(w, "\n"+heading)
		cmd.Flags().VisitAll(func(f *pflag.Flag) {
			if f.Name == "help" || f.Hidden {
				return
			}
			placeholder, usage := pflag.UnquoteUsage(f)
			if plain {
				fmt.Fprintf(w, "  --%s %s\n        %s\n", f.Name, placeholder, usage)
				return
			}
			line := "  --" + f.Name
			if placeholder != "" {
				line += " " + placeholder
			}
			if env := EnvOf(f); env != "" {
				line = fmt.Sprintf("%-36s %s", line, env)
			}
			fmt.Fprintln(w, line)
			if f.DefValue != "" && f.DefValue != "0" && f.DefValue != "false" {
				usage += fmt.Sprintf(" (default %s)", f.DefValue)
			}
			fmt.Fprintf(w, "        %s\n", usage)
		})
	}
	fmt.Fprint(w, cmd.Annotations[footerKey])
}

// Group makes cmd a command that only groups actions: without one, or
// with one it does not have, it says so and which it has.
func Group(cmd *cobra.Command) *cobra.Command {
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations[groupKey] = "true"
	cmd.Args = func(c *cobra.Command, args []string) error {
		if len(args) == 0 {
			return Usage(c, "name an action: %s", actions(c))
		}
		return Usage(c, "unknown action %q: want %s", args[0], actions(c))
	}
	cmd.RunE = func(*cobra.Command, []string) error { return nil } // Args refuses every call
	return cmd
}

// IsGroup reports whether cmd only groups actions.
func IsGroup(cmd *cobra.Command) bool { return cmd.Annotations[groupKey] != "" }

// actions lists the actions of a group: "get, put or edit".
func actions(cmd *cobra.Command) string {
	var names []string
	for _, c := range cmd.Commands() {
		if c.IsAvailableCommand() {
			names = append(names, c.Name())
		}
	}
	if len(names) == 1 {
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// ArgsBetween is the check of a command that takes from min to max
// arguments (max -1: no bound); synopsis is how to give them.
func ArgsBetween(min, max int, synopsis string) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		switch {
		case len(args) < min:
			return Usage(c, "missing arguments: usage is %s", synopsis)
		case max >= 0 && len(args) > max:
			return Usage(c, "unexpected argument %q", args[max])
		}
		return nil
	}
}

// NoArgs is the check of a command that takes no arguments.
var NoArgs = ArgsBetween(0, 0, "")

// Root makes cmd the root of the tree: its help is usage, a mistyped
// command gets a suggestion, every command's flags fall back to their
// environment variables, and errors come back to the caller unprinted
// (but for usage errors, printed as one line).
func Root(cmd *cobra.Command, usage string, env Env) *cobra.Command {
	cmd.Long = usage
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	cmd.CompletionOptions.DisableDefaultCmd = true
	cmd.SetFlagErrorFunc(FlagError)
	cmd.SetHelpFunc(func(c *cobra.Command, _ []string) { writeHelp(c.OutOrStdout(), c) })
	cmd.Args = func(c *cobra.Command, args []string) error {
		if len(args) == 0 {
			fmt.Fprint(c.ErrOrStderr(), usage)
			return ErrUsage
		}
		if near := suggest(c, args[0]); near != "" {
			fmt.Fprintf(c.ErrOrStderr(), "%s: unknown command %q: did you mean %s? (see '%s --help')\n", c.Name(), args[0], near, c.Name())
		} else {
			fmt.Fprintf(c.ErrOrStderr(), "%s: unknown command %q (see '%s --help')\n", c.Name(), args[0], c.Name())
		}
		return ErrUsage
	}
	cmd.RunE = func(*cobra.Command, []string) error { return nil } // Args refuses every call
	cmd.PersistentPreRunE = func(c *cobra.Command, _ []string) error { return ApplyEnv(c.Flags(), env.Getenv) }
	return cmd
}

// suggest is the command of root nearest to a mistyped name, "" when
// none is near: cobra's suggestions at one edit, else at two (cobra lists
// every one within its distance, not the nearest first).
func suggest(root *cobra.Command, name string) string {
	for d := 1; d <= 2; d++ {
		root.SuggestionsMinimumDistance = d
		if near := root.SuggestionsFor(name); len(near) > 0 {
			return near[0]
		}
	}
	return ""
}

// Reference is docs/cli.md: preface, then every command of the tree that
// does something (not the groups), each with its help as --help prints
// it. It walks the tree, so a command or flag added anywhere is in it the
// next time it is generated.
func Reference(root *cobra.Command, preface string) string {
	var cmds []*cobra.Command
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if !sub.IsAvailableCommand() {
				continue
			}
			if !IsGroup(sub) {
				cmds = append(cmds, sub)
			}
			walk(sub)
		}
	}
	walk(root)
	var b strings.Builder
	b.WriteString(preface)
	b.WriteString("```\n" + strings.TrimRight(root.Long, "\n") + "\n```\n\n")
	for _, c := range cmds {
		fmt.Fprintf(&b, "- [`%s`](#%s)\n", c.CommandPath(), strings.ReplaceAll(c.CommandPath(), " ", "-"))
	}
	for _, c := range cmds {
		var help strings.Builder
		writeHelp(&help, c)
		fmt.Fprintf(&b, "\n## %s\n\n```\n%s\n```\n", c.CommandPath(), strings.TrimRight(help.String(), "\n"))
	}
	return b.String()
}

// durationValue is a time.Duration flag whose error says what is wanted:
// "--lease 10" means nothing to a reader who does not know Go's duration
// syntax.
type durationValue time.Duration

// DurationVar declares a duration flag like fs.DurationVar, with that
// error.
func DurationVar(fs *pflag.FlagSet, p *time.Duration, name string, value time.Duration, usage string) {
	*p = value
	fs.Var((*durationValue)(p), name, usage)
}

func (d *durationValue) String() string { return (*time.Duration)(d).String() }
func (d *durationValue) Type() string   { return "duration" }

func (d *durationValue) Set(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil {
		if _, numErr := strconv.ParseFloat(s, 64); numErr == nil {
			return fmt.Errorf("want a duration such as 10m or 90s, with its unit (ns, us, ms, s, m, h)")
		}
		return fmt.Errorf("want a duration such as 10m or 90s")
	}
	*d = durationValue(v)
	return nil
}

// OrDash is *s, or "-" for none, for a table cell.
func OrDash(s *string) string {
	if s == nil {
		return "-"
	}
	return *s
}
