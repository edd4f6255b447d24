package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/cliflag"
	"github.com/planserver/planserver/internal/mcp"
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
		every                        time.Duration
		readOnly                     = readOnlyFlag{}
	)
	fs.StringVar(&session, "session", "", "the `session` whose mode gates the tools (required)")
	fs.StringVar(&server, "server", "http://127.0.0.1:8080", "planserver's `URL` (PLANSERVER_URL)")
	fs.StringVar(&token, "token", "", "a `token` that may check tools of the session, e.g. its agent token (PLANSERVER_TOKEN)")
	fs.StringVar(&name, "name", "", "the upstream's `name` in tool_call.denied events (default: CMD's file name)")
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
	// Said once at start, so an operator can see what the gate lets
	// through in plan mode beyond the annotations.
	logger.Info("planserver gate starting", "session", session, "server", server, "command", strings.Join(command, " "),
		"extra_read_only_tools", mcp.ReadOnlyList(readOnly))

	cmd := exec.Command(command[0], command[1:]...)
	cmd.Stderr = stderr
	up, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	upOut, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", command[0], err)
	}
	// A signal to the gate ends the upstream too.
	stop := context.AfterFunc(ctx, func() { _ = cmd.Process.Signal(os.Interrupt) })
	defer stop()
	relayErr := g.Run(ctx, stdin, stdout, up, upOut)
	waitErr := cmd.Wait()
	if relayErr != nil {
		return relayErr
	}
	if waitErr != nil && ctx.Err() == nil {
		return fmt.Errorf("%s: %w", command[0], waitErr)
	}
	return nil
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
