package cli

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
)

// tree is a small tree with the conventions planserver's has: a root, a
// group with two actions, a command with a flag bound to the environment
// and a hidden one. ran records what ran with which values.
func tree(env map[string]string, ran *[]string) *cobra.Command {
	root := Root(&cobra.Command{Use: "planserver"}, "Usage: planserver COMMAND\n", Env{Getenv: func(k string) string { return env[k] }})
	var addr string
	var lease time.Duration
	serve := Help(&cobra.Command{
		Use: "serve", Args: NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			*ran = append(*ran, "serve "+addr+" "+lease.String())
			return nil
		},
	}, "Usage: planserver serve [flags]\n", EnvFlags, "footer\n")
	serve.Flags().StringVar(&addr, "addr", "127.0.0.1:8080", "`host:port` to listen on")
	DurationVar(serve.Flags(), &lease, "lease", time.Minute, "how long a claim holds (`duration`)")
	BindEnv(serve.Flags(), "addr", "PLANSERVER_ADDR")
	migrate := Group(&cobra.Command{Use: "migrate"})
	for _, action := range []string{"up", "down"} {
		migrate.AddCommand(&cobra.Command{Use: action, Args: NoArgs, RunE: func(*cobra.Command, []string) error {
			*ran = append(*ran, "migrate "+action)
			return nil
		}})
	}
	session := &cobra.Command{Use: "session ID", Args: ArgsBetween(1, 1, "planserver session ID"), RunE: func(_ *cobra.Command, args []string) error {
		*ran = append(*ran, "session "+args[0])
		return nil
	}}
	root.AddCommand(serve, migrate, session, &cobra.Command{Use: "docs", Hidden: true, Run: func(*cobra.Command, []string) {}})
	return root
}

// execute runs args through the tree and returns what ran, stdout,
// stderr and the error.
func execute(env map[string]string, args ...string) (ran []string, stdout, stderr string, err error) {
	root := tree(env, &ran)
	var out, errOut bytes.Buffer
	root.SetArgs(args)
	root.SetOut(&out)
	root.SetErr(&errOut)
	err = root.ExecuteContext(context.Background())
	return ran, out.String(), errOut.String(), err
}

// TestUsageErrors: every wrong use is one line on stderr, naming the
// command, in --double-dash form, pointing to --help, and ErrUsage.
func TestUsageErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--frobnicate"}, "planserver serve: unknown flag --frobnicate (see 'planserver serve --help')"},
		{[]string{"serve", "--addr"}, "planserver serve: flag --addr needs a value (see 'planserver serve --help')"},
		{[]string{"serve", "--lease", "10"}, `planserver serve: invalid value "10" for flag --lease: want a duration such as 10m or 90s, with its unit`},
		{[]string{"serve", "extra"}, `planserver serve: unexpected argument "extra" (see 'planserver serve --help')`},
		{[]string{"session"}, "planserver session: missing arguments: usage is planserver session ID"},
		{[]string{"migrate"}, "planserver migrate: name an action: up or down (see 'planserver migrate --help')"},
		{[]string{"migrate", "sideways"}, `planserver migrate: unknown action "sideways": want up or down (see 'planserver migrate --help')`},
		{[]string{"sesion"}, `planserver: unknown command "sesion": did you mean session? (see 'planserver --help')`},
		{[]string{"sesison", "x"}, `planserver: unknown command "sesison": did you mean session?`},
		{[]string{"migrat"}, `planserver: unknown command "migrat": did you mean migrate?`},
		{[]string{"frobnicate"}, `planserver: unknown command "frobnicate" (see 'planserver --help')`},
		// A hidden command is never suggested.
		{[]string{"doc"}, `planserver: unknown command "doc" (see 'planserver --help')`},
	} {
		ran, stdout, stderr, err := execute(nil, c.args...)
		if !errors.Is(err, ErrUsage) || len(ran) > 0 || stdout != "" {
			t.Errorf("%v: ran %v, error %v, stdout %q; want a usage error", c.args, ran, err, stdout)
		}
		if lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n"); len(lines) != 1 || !strings.HasPrefix(lines[0], c.want) {
			t.Errorf("%v: stderr %q, want one line starting %q", c.args, stderr, c.want)
		}
	}
	// Without a command: the usage, on stderr.
	if _, stdout, stderr, err := execute(nil); !errors.Is(err, ErrUsage) || stdout != "" || stderr != "Usage: planserver COMMAND\n" {
		t.Errorf("no command: %v %q %q", err, stdout, stderr)
	}
}

// TestEnvironment: a flag not given takes its environment variable; one
// given on the command line wins; a bad value names the variable.
func TestEnvironment(t *testing.T) {
	env := map[string]string{"PLANSERVER_ADDR": "127.0.0.1:9999", "PLANSERVER_LEASE": "1h"}
	if ran, _, _, err := execute(env, "serve"); err != nil || strings.Join(ran, "") != "serve 127.0.0.1:9999 1m0s" {
		t.Errorf("from the environment: %v %v (only --addr has a variable)", ran, err)
	}
	if ran, _, _, err := execute(env, "serve", "--addr", "127.0.0.1:7777"); err != nil || strings.Join(ran, "") != "serve 127.0.0.1:7777 1m0s" {
		t.Errorf("the flag over the environment: %v %v", ran, err)
	}
	if ran, _, _, err := execute(nil, "serve"); err != nil || strings.Join(ran, "") != "serve 127.0.0.1:8080 1m0s" {
		t.Errorf("the default: %v %v", ran, err)
	}
	serve, _, _ := tree(nil, new([]string)).Find([]string{"serve"})
	BindEnv(serve.Flags(), "lease", "PLANSERVER_LEASE")
	if err := ApplyEnv(serve.Flags(), func(string) string { return "10" }); err == nil ||
		!strings.HasPrefix(err.Error(), `PLANSERVER_LEASE="10": want a duration`) {
		t.Errorf("a bad value: %v", err)
	}
	if serve.Flags().Changed("addr") {
		t.Error("a value from the environment counts as given on the command line")
	}
}

// TestHelp: --help prints the command's text, its flags with their
// variables and defaults, and its footer, on stdout; a group's help names
// its actions; the reference has every command but groups and hidden ones.
func TestHelp(t *testing.T) {
	_, stdout, stderr, err := execute(nil, "serve", "--help")
	want := `Usage: planserver serve [flags]

Flags (a flag given on the command line wins over its environment variable):
  --addr host:port                   PLANSERVER_ADDR
        host:port to listen on (default 127.0.0.1:8080)
  --lease duration
        how long a claim holds (duration) (default 1m0s)
footer
`
	if err != nil || stderr != "" || stdout != want {
		t.Errorf("serve --help: %v %q\n%s\nwant\n%s", err, stderr, stdout, want)
	}
	if _, stdout, _, err := execute(nil, "-h"); err != nil || stdout != "Usage: planserver COMMAND\n" {
		t.Errorf("-h: %v %q", err, stdout)
	}
	ref := Reference(tree(nil, new([]string)), "# ref\n\n")
	for _, w := range []string{"- [`planserver serve`](#planserver-serve)", "## planserver migrate up", "## planserver session", "PLANSERVER_ADDR"} {
		if !strings.Contains(ref, w) {
			t.Errorf("the reference lacks %q:\n%s", w, ref)
		}
	}
	for _, n := range []string{"## planserver migrate\n", "docs"} {
		if strings.Contains(ref, n) {
			t.Errorf("the reference has %q:\n%s", n, ref)
		}
	}
}
