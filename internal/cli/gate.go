package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/planserver/planserver/internal/gates/proxy"
	"github.com/planserver/planserver/internal/hosthookwire"
	"github.com/planserver/planserver/internal/sandbox"
	"github.com/spf13/cobra"
)

const gateUsage = `Usage:
  planserver gate --session ID [--server URL] [--token T] [--name N] [--read-only TOOLS] -- CMD ARGS...
  planserver gate add NAME URL [--read-only TOOLS] [--db FILE]
  planserver gate list | remove NAME [--db FILE]

The first form is a stdio MCP server for an agent host to run in place of
CMD, another stdio MCP server (filesystem, shell, git, ...): it starts CMD,
relays MCP both ways, and asks planserver on every tools/list and tools/call
for session ID's effective mode. In plan mode it hides and refuses every
tool that is not annotated readOnlyHint: true, not on the plan-mode
allowlist and not declared read-only with --read-only; a refused call never
reaches CMD and is recorded as tool_call.denied. If planserver cannot be
reached, state-changing calls are refused (reads keep working) and the
refusal says why. There is no switch that turns the gate off.

The kernel holds CMD too, so a tool that lies about readOnlyHint cannot
write past plan mode: CMD runs in planserver's sandbox, read-only in plan
mode (and while planserver cannot be asked), limited to the approved scope
in scoped build (its files relative to --project, its network), and
unconfined in full build. When the mode or the scope changes (asked before
every call and every --watch), the gate restarts CMD under the new hold;
calls still in flight get an error saying so. Where the kernel has no
sandbox, CMD runs unconfined and the annotations are all that hold it.

add, list and remove manage, on the database, the streamable-HTTP MCP
servers agents reach through planserver at /mcp/gate/NAME behind the same
gate (PUT /v1/gates/{name} does the same over HTTP).
`

// GateCommand is planserver gate: the stdio gate in front of an MCP
// server. cmd/planserver adds the registry's actions (add, list, remove,
// from internal/cli/admin), which work on the database.
func GateCommand() *cobra.Command {
	var g gateSettings
	g.readOnly = ReadOnlyTools{}
	cmd := Help(&cobra.Command{
		Use: "gate",
		Args: func(cmd *cobra.Command, args []string) error {
			switch dash := cmd.ArgsLenAtDash(); {
			case dash < 0 || dash == len(args):
				return Usage(cmd, "name the MCP server to guard after --: planserver gate --session ID -- CMD ARGS...")
			case dash > 0:
				return Usage(cmd, "unexpected argument %q before --", args[0])
			}
			if g.session == "" {
				return Usage(cmd, "--session is required: the session whose mode gates the tools")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return gateProxy(cmd.Context(), g, args, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}, gateUsage, "Flags (--server and --token given on the command line win over their environment variables):", "")
	fs := cmd.Flags()
	fs.StringVar(&g.session, "session", "", "the `session` whose mode gates the tools (required)")
	fs.StringVar(&g.server, "server", hosthookwire.DefaultServer, "planserver's `URL`")
	fs.StringVar(&g.token, "token", "", "a `token` that may check tools of the session, e.g. its agent token")
	fs.StringVar(&g.name, "name", "", "the upstream's `name` in tool_call.denied events (default: CMD's file name)")
	fs.StringVar(&g.project, "project", "", "the `dir` CMD runs in, which a scoped build's paths are relative to (default: the working directory)")
	fs.Var(g.readOnly, "read-only", "`tools` of CMD to treat as read-only although not annotated so (comma-separated; repeatable)")
	DurationVar(fs, &g.every, "watch", 2*time.Second, "how often (a `duration`) to look for a mode change to announce to the host (list_changed); 0: never")
	BindEnv(fs, "server", "PLANSERVER_URL")
	BindEnv(fs, "token", "PLANSERVER_TOKEN")
	return cmd
}

// gateSettings are planserver gate's flags.
type gateSettings struct {
	session, server, token, name, project string
	every                                 time.Duration
	readOnly                              ReadOnlyTools
}

// ReadOnlyTools collects --read-only: comma-separated tool names, the
// flag given any number of times.
type ReadOnlyTools map[string]bool

func (f ReadOnlyTools) String() string { return proxy.ReadOnlyList(f) }
func (f ReadOnlyTools) Type() string   { return "value" }

func (f ReadOnlyTools) Set(v string) error {
	for _, name := range strings.Split(v, ",") {
		if name = strings.TrimSpace(name); name != "" {
			f[name] = true
		}
	}
	return nil
}

// gateProxy runs command behind the gate g describes.
func gateProxy(ctx context.Context, g gateSettings, command []string, stdin io.Reader, stdout, stderr io.Writer) error {
	session, server, token, name, project, every, readOnly := g.session, g.server, g.token, g.name, g.project, g.every, g.readOnly
	var err error
	if name == "" {
		name = filepath.Base(command[0])
	}

	logger := slog.New(slog.NewTextHandler(stderr, nil)).With("gate", name)
	checker := proxy.RemoteChecker{Server: server, Session: session, Token: token}
	gate := &proxy.StdioGate{
		Policy:     proxy.Policy{Upstream: name, ReadOnly: readOnly, Checker: checker},
		Log:        logger,
		WatchEvery: every,
		Watch: func(ctx context.Context) string {
			mode, err := checker.EffectiveMode(ctx)
			if err != nil {
				return "unreachable"
			}
			return string(mode)
		},
	}
	if project == "" {
		if project, err = os.Getwd(); err != nil {
			return err
		}
	}
	// Said once at start, so an operator can see what the gate lets
	// through in plan mode beyond the annotations.
	logger.Info("planserver gate starting", "session", session, "server", server, "command", strings.Join(command, " "),
		"extra_read_only_tools", proxy.ReadOnlyList(readOnly), "project", project)

	// The kernel holds the upstream to the session's mode (proxy.HoldOf):
	// asked at the start, before every call, and by the watch.
	gate.Held = func(ctx context.Context) proxy.Hold {
		s, err := checker.Get(ctx)
		if err != nil {
			return proxy.UnreachableHold(err)
		}
		return proxy.HoldOf(s)
	}
	up := &upstream{command: command, project: project, server: server, stderr: stderr, log: logger}
	gate.Start = up.start
	defer up.stop()
	return gate.RunHeld(ctx, stdin, stdout)
}

// upstream starts the tool server behind planserver gate, each time under
// the hold the session's mode asks for.
type upstream struct {
	command []string
	project string
	server  string
	stderr  io.Writer
	log     *slog.Logger

	mu   sync.Mutex
	cmd  *exec.Cmd
	warn sync.Once
}

// start runs the upstream under hold h: unconfined in full build, else
// inside planserver's sandbox (read-only in plan mode; the scope's files,
// relative to the project, and its network in scoped build, never
// planserver's own port). Where the kernel has no sandbox it runs
// unconfined, and the gate's annotations are all that hold it.
func (u *upstream) start(ctx context.Context, h proxy.Hold) (*proxy.UpstreamRun, error) {
	argv := u.command
	if h.Mode != "full" {
		if held, err := u.held(h); err != nil {
			u.warn.Do(func() {
				u.log.Warn("the kernel sandbox is not available: the upstream runs unconfined, held by its tools' annotations only", "why", err)
			})
		} else {
			argv = held
		}
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = u.project
	cmd.Stderr = u.stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", u.command[0], err)
	}
	u.mu.Lock()
	u.cmd = cmd
	u.mu.Unlock()
	// A signal to the gate ends the upstream too.
	stopOnSignal := context.AfterFunc(ctx, func() { _ = cmd.Process.Signal(os.Interrupt) })
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); stopOnSignal(); close(exited) }()
	return &proxy.UpstreamRun{In: in, Out: out, Stop: func() {
		// The sandbox's supervisor passes the signal on; what is left
		// after a second is killed.
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	}}, nil
}

// held is the command line of the upstream inside the sandbox for hold h.
func (u *upstream) held(h proxy.Hold) ([]string, error) {
	if _, err := sandbox.Available(); err != nil {
		return nil, err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	argv := []string{self, "sandbox", "--read-only"}
	if lean := sandbox.LeanBeside(self); lean != "" {
		argv = []string{lean, "--read-only"}
	}
	if h.Mode == "scoped" {
		own := ""
		if su, err := url.Parse(u.server); err == nil {
			if own = su.Port(); own == "" {
				own = map[string]string{"http": "80", "https": "443"}[su.Scheme]
			}
		}
		var allow []string
		for _, e := range h.Connect {
			if _, port, err := net.SplitHostPort(e); err == nil && port != own {
				allow = append(allow, e)
			}
		}
		if len(allow) > 0 {
			argv = append(argv, "--allow-connect", strings.Join(allow, ","))
		}
		if len(h.Files) > 0 {
			argv = append(argv, "--project", u.project)
			for _, f := range h.Files {
				argv = append(argv, "--allow-write", f)
			}
		}
		argv = append(argv, "--build-scope")
	}
	return append(append(argv, "--"), u.command...), nil
}

// stop ends the last run, when the gate ends.
func (u *upstream) stop() {
	u.mu.Lock()
	cmd := u.cmd
	u.mu.Unlock()
	if cmd != nil && cmd.Process != nil {
		_ = cmd.Process.Signal(os.Interrupt)
	}
}
