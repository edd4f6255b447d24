package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/planserver/planserver/internal/hookinstall"
	"github.com/planserver/planserver/internal/hosthook"
	"github.com/planserver/planserver/internal/hosthookcmd"
	"github.com/planserver/planserver/internal/hosthookwire"
	"github.com/spf13/cobra"
)

// HookCommand is planserver hook: the hook itself (hook HOST), which
// reads its own settings (internal/hosthookwire, shared with the lean
// planserver-hook) and always answers the host in JSON, and install,
// doctor and uninstall.
func HookCommand(env Env) *cobra.Command {
	hook := Help(&cobra.Command{
		Use: "hook", DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				fmt.Fprint(cmd.OutOrStdout(), hosthookcmd.Usage)
				return ErrUsage
			}
			for _, a := range args {
				if hosthookwire.IsHelp(a) {
					fmt.Fprint(cmd.OutOrStdout(), hosthookcmd.Usage)
					return nil
				}
			}
			// A host's hook: its input on stdin, the host's output on stdout.
			hosthookcmd.Run(cmd.Context(), args[0], args[1:], env.Getenv, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
			return nil
		},
	}, hosthookcmd.Usage, "", "")
	for _, verb := range []string{"install", "doctor", "uninstall"} {
		hook.AddCommand(hookInstallCommand(verb, env))
	}
	return hook
}

const hookInstallHelp = `Usage:
  planserver hook install HOST (--session ID | --parent ID) [--create] [--scope project|user]
                               [--server URL] [--token-file FILE] [--bin-dir DIR] [--dry-run]
  planserver hook doctor HOST [--scope project|user]
  planserver hook uninstall HOST [--scope project|user] [--dry-run]

HOST is claude-code, gemini-cli, cursor or opencode.

install puts the host under the session's plan mode in one step:
  - copies planserver-hook, planserver-sandbox (when built) and planserver to
    --bin-dir (default $XDG_DATA_HOME/planserver/bin, ~/.local/share/planserver/bin),
    so that the hook never runs from a build folder;
  - adds the before-tool hook (it decides each call) and the after-tool hook
    (it reports each run, so planserver sees a run it never judged) for every
    event planserver uses, and planserver's MCP server bound to the session,
    so the model has write_session_plan and exit_plan_mode to ask for review;
    the user's own hooks and MCP servers stay as they are;
  - writes the server (--server, else PLANSERVER_URL, else
    http://127.0.0.1:8080) and the session into the hook's command; the token
    (PLANSERVER_TOKEN or --token-file) goes into a file of mode 0600, never
    onto a command line;
  - checks the session exists (--create makes it), then runs a self-test: a
    canary Write through the installed command, exactly as the host runs it,
    is denied in plan mode and gets no decision in build mode.
The installed command fails closed: when its binary is missing, cannot start
or crashes, it answers the host with a denial.

doctor runs the same checks on an installation later and names each fault
and its mend (a missing binary or hook, a wrong server address, a session
that does not exist, a token the server refuses); it exits 1 when it finds
one.

uninstall takes out exactly what install added (and the copied binaries,
when no other installation uses them).

--scope project (the default) edits the current directory's settings
(.claude/settings.json, .gemini/settings.json, .cursor/hooks.json,
.opencode/); --scope user the home directory's. docs/hosts.md has the
details of each host.
`

// hookInstallCommand is planserver hook install|doctor|uninstall HOST.
func hookInstallCommand(verb string, env Env) *cobra.Command {
	var o hookinstall.Options
	var tokenFile string
	cmd := Help(&cobra.Command{
		Use: verb + " HOST",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return Usage(cmd, "name the host: claude-code, gemini-cli, cursor or opencode")
			}
			host, err := hosthook.ParseHost(args[0])
			if err == nil {
				err = hookinstall.Supported(host)
			}
			if err != nil {
				return Usage(cmd, "%v", err)
			}
			if len(args) > 1 {
				return Usage(cmd, "unexpected argument %q", args[1])
			}
			if o.Session != "" && o.Parent != "" {
				return Usage(cmd, "give --session or --parent, not both")
			}
			if o.Scope != "project" && o.Scope != "user" {
				return Usage(cmd, "--scope is %q: want project or user", o.Scope)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			host, _ := hosthook.ParseHost(args[0])
			return hookInstall(cmd.Context(), verb, host, o, tokenFile, env.Getenv, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}, hookInstallHelp, "", "")
	fs := cmd.Flags()
	fs.StringVar(&o.Scope, "scope", "project", "")
	fs.BoolVar(&o.DryRun, "dry-run", false, "")
	if verb == "install" {
		fs.StringVar(&o.Session, "session", "", "")
		fs.StringVar(&o.Parent, "parent", "", "")
		fs.BoolVar(&o.Create, "create", false, "")
		fs.StringVar(&o.Server, "server", "", "")
		fs.StringVar(&o.BinDir, "bin-dir", "", "")
		fs.StringVar(&tokenFile, "token-file", "", "")
		BindEnv(fs, "server", "PLANSERVER_URL")
	}
	return cmd
}

// hookInstall runs verb for host with the options the flags gave, the
// rest from the environment.
func hookInstall(ctx context.Context, verb string, host hosthook.Host, o hookinstall.Options, tokenFile string, getenv func(string) string, stdout, stderr io.Writer) error {
	name := "planserver hook " + verb
	var err error
	o.Host, o.Out = host, stdout
	if o.Base, err = os.Getwd(); err != nil {
		return err
	}
	if o.Home = getenv("HOME"); o.Home == "" {
		if o.Home, err = os.UserHomeDir(); err != nil {
			return err
		}
	}
	o.ConfigHome, o.DataHome, o.ClaudeDir = getenv("XDG_CONFIG_HOME"), getenv("XDG_DATA_HOME"), getenv("CLAUDE_CONFIG_DIR")
	if o.Server == "" {
		o.Server = hosthookwire.DefaultServer
	}
	o.Server = strings.TrimRight(o.Server, "/")
	if o.Session == "" && o.Parent == "" {
		o.Session, o.Parent = getenv("PLANSERVER_SESSION"), getenv("PLANSERVER_PARENT")
		if o.Session != "" {
			o.Parent = ""
		}
	}
	o.Token = strings.TrimSpace(getenv("PLANSERVER_TOKEN"))
	if tokenFile != "" {
		raw, err := os.ReadFile(tokenFile)
		if err != nil {
			return fmt.Errorf("read --token-file: %w", err)
		}
		o.Token = strings.TrimSpace(string(raw))
	}
	if o.BinDir != "" {
		if o.BinDir, err = filepath.Abs(o.BinDir); err != nil {
			return err
		}
	}
	switch verb {
	case "install":
		if o.Session == "" && o.Parent == "" {
			return UsageError(stderr, name, "name the session the hook acts for: --session ID (or --parent ID, or PLANSERVER_SESSION)")
		}
		self, err := os.Executable()
		if err != nil {
			return fmt.Errorf("find planserver's own path: %w", err)
		}
		if self, err = filepath.EvalSymlinks(self); err != nil {
			return err
		}
		o.SourceDir = filepath.Dir(self)
		return hookinstall.Install(ctx, o)
	case "uninstall":
		return hookinstall.Uninstall(o)
	}
	faults, err := hookinstall.Doctor(ctx, o)
	if err != nil {
		return err
	}
	if len(faults) > 0 {
		return ExitError{Code: 1, Err: fmt.Errorf("%d fault(s) found in the installation for %s", len(faults), host)}
	}
	return nil
}
