package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/cliflag"
	"github.com/planserver/planserver/internal/mcp"
	"github.com/planserver/planserver/internal/sandbox"
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

// gate is planserver gate: the stdio proxy, or the gate registry.
func gate(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) > 0 && isHelp(args[0]) {
		fmt.Fprint(stdout, gateUsage)
		return errHelp
	}
	if len(args) > 0 {
		switch args[0] {
		case "add", "list", "remove":
			return gateRegistry(ctx, args[0], args[1:], getenv, stdout, stderr)
		}
	}
	return gateProxy(ctx, args, getenv, stdin, stdout, stderr)
}

// readOnlyFlag collects --read-only: comma-separated tool names, the flag
// given any number of times.
type readOnlyFlag map[string]bool

func (f readOnlyFlag) String() string { return mcp.ReadOnlyList(f) }

func (f readOnlyFlag) Set(v string) error {
	for _, name := range strings.Split(v, ",") {
		if name = strings.TrimSpace(name); name != "" {
			f[name] = true
		}
	}
	return nil
}

func gateProxy(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	i := slices.Index(args, "--")
	if i < 0 || i == len(args)-1 {
		return usageError(stderr, "planserver gate", "name the MCP server to guard after --: planserver gate --session ID -- CMD ARGS...")
	}
	flags, command := args[:i], args[i+1:]
	fs := flag.NewFlagSet("planserver gate", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var (
		session, server, token, name string
		project                      string
		err                          error
		every                        time.Duration
		readOnly                     = readOnlyFlag{}
	)
	fs.StringVar(&session, "session", "", "the `session` whose mode gates the tools (required)")
	fs.StringVar(&server, "server", "http://127.0.0.1:8080", "planserver's `URL` (PLANSERVER_URL)")
	fs.StringVar(&token, "token", "", "a `token` that may check tools of the session, e.g. its agent token (PLANSERVER_TOKEN)")
	fs.StringVar(&name, "name", "", "the upstream's `name` in tool_call.denied events (default: CMD's file name)")
	fs.StringVar(&project, "project", "", "the `dir` CMD runs in, which a scoped build's paths are relative to (default: the working directory)")
	fs.Var(readOnly, "read-only", "`tools` of CMD to treat as read-only although not annotated so (comma-separated; repeatable)")
	durationVar(fs, &every, "watch", 2*time.Second, "how often (a `duration`) to look for a mode change to announce to the host (list_changed); 0: never")
	if err := fs.Parse(flags); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, gateUsage)
			printHelp(stdout, fs)
			return errHelp
		}
		return usageError(stderr, "planserver gate", cliflag.ErrorText(err))
	}
	if fs.NArg() > 0 {
		return usageError(stderr, "planserver gate", fmt.Sprintf("unexpected argument %q before --", fs.Arg(0)))
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if !given["server"] && getenv("PLANSERVER_URL") != "" {
		server = getenv("PLANSERVER_URL")
	}
	if !given["token"] {
		token = getenv("PLANSERVER_TOKEN")
	}
	if session == "" {
		return usageError(stderr, "planserver gate", "--session is required: the session whose mode gates the tools")
	}
	if name == "" {
		name = filepath.Base(command[0])
	}

	logger := slog.New(slog.NewTextHandler(stderr, nil)).With("gate", name)
	checker := mcp.RemoteChecker{Server: server, Session: session, Token: token}
	g := &mcp.StdioGate{
		Policy:     mcp.Policy{Upstream: name, ReadOnly: readOnly, Checker: checker},
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
		"extra_read_only_tools", mcp.ReadOnlyList(readOnly), "project", project)

	// The kernel holds the upstream to the session's mode (mcp.HoldOf):
	// asked at the start, before every call, and by the watch.
	g.Held = func(ctx context.Context) mcp.Hold {
		s, err := checker.Get(ctx)
		if err != nil {
			return mcp.UnreachableHold(err)
		}
		return mcp.HoldOf(s)
	}
	up := &upstream{command: command, project: project, server: server, stderr: stderr, log: logger}
	g.Start = up.start
	defer up.stop()
	return g.RunHeld(ctx, stdin, stdout)
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
func (u *upstream) start(ctx context.Context, h mcp.Hold) (*mcp.UpstreamRun, error) {
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
	return &mcp.UpstreamRun{In: in, Out: out, Stop: func() {
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
func (u *upstream) held(h mcp.Hold) ([]string, error) {
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

func gateRegistry(ctx context.Context, action string, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	var cfg config
	fs := flagSet("gate "+action, &cfg)
	readOnly := readOnlyFlag{}
	if action == "add" {
		fs.Var(readOnly, "read-only", "`tools` of the server to treat as read-only although not annotated so (comma-separated; repeatable)")
	}
	// Positional arguments come first (gate add NAME URL --read-only x).
	want := map[string]int{"add": 2, "list": 0, "remove": 1}[action]
	var pos []string
	for len(args) > 0 && !strings.HasPrefix(args[0], "-") && len(pos) < want {
		pos, args = append(pos, args[0]), args[1:]
	}
	if err := parseFlags(fs, args, getenv, stdout, stderr); err != nil {
		return err
	}
	if len(pos) != want {
		return usageError(stderr, fs.Name(), map[string]string{"add": "give NAME and URL", "remove": "give NAME"}[action])
	}
	if err := cfg.validate(); err != nil {
		return err
	}
	if action != "add" {
		if err := mustExist(cfg.DB); err != nil {
			return err
		}
	}
	d, err := openAndMigrate(ctx, cfg, "gate "+action)
	if err != nil {
		return err
	}
	defer d.Close()
	store := mcp.NewGateStore(d)
	switch action {
	case "add":
		tools := []string{}
		for t := range readOnly {
			tools = append(tools, t)
		}
		slices.Sort(tools)
		g, created, err := store.Put(ctx, pos[0], api.GateWrite{URL: pos[1], ReadOnlyTools: tools})
		if err != nil {
			return err
		}
		verb := "replaced"
		if created {
			verb = "registered"
		}
		fmt.Fprintf(stderr, "%s gate %q: agents reach %s at /mcp/gate/%s (extra read-only tools: %s)\n",
			verb, g.Name, g.URL, g.Name, mcp.ReadOnlyList(readOnly))
	case "list":
		gates, err := store.List(ctx)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tURL\tREAD-ONLY TOOLS\tUPDATED")
		for _, g := range gates {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", g.Name, g.URL, strings.Join(g.ReadOnlyTools, ","), g.UpdatedAt)
		}
		return tw.Flush()
	case "remove":
		if err := store.Delete(ctx, pos[0]); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "removed gate %q\n", pos[0])
	}
	return nil
}
