// Command planbench measures planserver against baselines taken in the same
// run, so the numbers mean something on any machine: it starts the real
// server binary on a fresh database in a temp dir, drives it over loopback
// HTTP with keep-alive connections at a fixed concurrency, measures each
// scenario and its baseline in interleaved rounds with the same client, and
// prints one table of medians, ranges and ratios. A scenario or baseline
// with a single failed request fails the run.
//
//	go run ./cmd/planbench -bin bin/planserver
//	go run ./cmd/planbench -bin bin/planserver -cpus 8    # server on 8 CPUs, load on the rest
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"
)

func main() {
	var err error
	switch {
	case len(os.Args) > 1 && os.Args[1] == "pin":
		err = pinMain(os.Args[2:])
	case len(os.Args) > 1 && os.Args[1] == "serve-baseline":
		err = baselineMain(os.Args[2:])
	default:
		err = run(os.Args[1:], os.Stdout, os.Stderr)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "planbench:", err)
		os.Exit(1)
	}
}

// sections are the parts of a run, in the order they run (-only picks some).
var sections = []string{"writes", "reads", "pages", "wal", "subscribers", "hooks", "sandbox", "webhooks", "signin", "raw", "postgres", "isolation", "team"}

// pgSections run only on a PostgreSQL server (-postgres).
var pgSections = []string{"raw", "postgres", "isolation"}

// optIn are the sections that run only when -only names them: they take
// minutes (team seeds a million events), too long for every make bench.
var optIn = []string{"team"}

type options struct {
	bin         string
	concurrency int
	duration    time.Duration
	rounds      int
	largeList   int
	smallList   int
	subscribers int
	only        []string
	// teamScale sizes the team section's big database (team.go);
	// teamStreams is its number of event streams across replicas.
	teamScale   float64
	teamStreams int
	// pprofDir, when set, receives a CPU profile of the server per scenario.
	pprofDir string
	// postgres, when set, is a PostgreSQL server to run the PostgreSQL
	// scenarios on (postgres.go).
	postgres string
	// serverCPUs and clientCPUs pin the servers (planserver and the chi
	// baseline) and planbench itself; empty: not pinned.
	serverCPUs, clientCPUs cpuSet
	// serverEnv is added to every server's environment (GOGC=..., ...).
	serverEnv []string
}

func (o options) runs(section string) bool {
	if len(o.only) == 0 {
		return !slices.Contains(optIn, section)
	}
	return slices.Contains(o.only, section)
}

// listFlag is a flag that may be given more than once.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, " ") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func run(args []string, stdout, stderr io.Writer) error {
	var (
		o                   options
		cpus                int
		serverCPUs, clients string
		only                string
		env                 listFlag
	)
	fs := flag.NewFlagSet("planbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.bin, "bin", "bin/planserver", "planserver binary to measure")
	fs.IntVar(&o.concurrency, "c", 64, "concurrent keep-alive connections")
	fs.DurationVar(&o.duration, "d", 3*time.Second, "measuring time of each run")
	fs.IntVar(&o.rounds, "rounds", 3, "rounds of each scenario and its baseline, interleaved (at least 3)")
	fs.IntVar(&o.smallList, "list-small", 1000, "plans stored for the small page scenarios")
	fs.IntVar(&o.largeList, "list-large", 100000, "plans stored for the large page scenarios")
	fs.IntVar(&o.subscribers, "subscribers", 1000, "idle event streams to hold open")
	fs.StringVar(&only, "only", "", "run only these sections, comma-separated: "+strings.Join(sections, ",")+
		" (every one but "+strings.Join(optIn, ",")+" when not given)")
	fs.Float64Var(&o.teamScale, "team-scale", 1, "size of the team section's big database, as a fraction of 100,000 sessions, 10,000 plans, 1,000,000 events and 10,000 steps (the small one stays 1%)")
	fs.IntVar(&o.teamStreams, "team-streams", 2000, "event streams the team section holds open across 3 PostgreSQL replicas")
	fs.StringVar(&o.pprofDir, "pprof", "", "write a CPU profile of the server for each scenario's first round to this directory")
	fs.StringVar(&o.postgres, "postgres", os.Getenv("PLANSERVER_BENCH_POSTGRES"),
		"also run the PostgreSQL scenarios on this server (a URL of a user that may create databases; default $PLANSERVER_BENCH_POSTGRES)")
	fs.IntVar(&cpus, "cpus", 0, "run the servers on the first `n` CPUs and planbench on the others (0: all share every CPU)")
	fs.StringVar(&serverCPUs, "server-cpus", "", "pin the servers to these CPUs (`list` like 0-7), instead of -cpus")
	fs.StringVar(&clients, "client-cpus", "", "pin planbench, the load generator, to these CPUs (`list` like 8-15), instead of -cpus")
	fs.Var(&env, "server-env", "add `KEY=VALUE` to the servers' environment (GOGC=200, GOMEMLIMIT=256MiB); repeatable")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if o.teamScale <= 0 || o.teamScale > 1 {
		return fmt.Errorf("-team-scale %g: want a fraction in (0, 1]", o.teamScale)
	}
	if o.rounds < 3 {
		return fmt.Errorf("-rounds %d: a median and a spread need at least 3", o.rounds)
	}
	for _, kv := range env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return fmt.Errorf("-server-env %q: want KEY=VALUE", kv)
		}
	}
	o.serverEnv = env
	if only != "" {
		for _, s := range strings.Split(only, ",") {
			if !slices.Contains(sections, s) {
				return fmt.Errorf("-only %q: the sections are %s", s, strings.Join(sections, ","))
			}
			o.only = append(o.only, s)
		}
	}
	for _, s := range pgSections {
		if o.runs(s) && len(o.only) > 0 && o.postgres == "" {
			return fmt.Errorf("-only %s needs -postgres or PLANSERVER_BENCH_POSTGRES", s)
		}
	}
	server, client, alreadyPinned, err := pinned()
	switch {
	case err != nil:
		return err
	case alreadyPinned:
		o.serverCPUs, o.clientCPUs = server, client
	case cpus > 0 && (serverCPUs != "" || clients != ""):
		return fmt.Errorf("-cpus or -server-cpus/-client-cpus, not both")
	case cpus > 0:
		if o.serverCPUs, o.clientCPUs, err = splitCPUs(cpus); err != nil {
			return err
		}
	default:
		if serverCPUs != "" {
			if o.serverCPUs, err = parseCPUs(serverCPUs); err != nil {
				return fmt.Errorf("-server-cpus: %w", err)
			}
		}
		if clients != "" {
			if o.clientCPUs, err = parseCPUs(clients); err != nil {
				return fmt.Errorf("-client-cpus: %w", err)
			}
		}
	}
	if len(o.clientCPUs) > 0 && !alreadyPinned {
		return pinSelf(o.serverCPUs, o.clientCPUs) // returns only if the exec failed
	}

	if o.bin, err = filepath.Abs(o.bin); err != nil {
		return err
	}
	if _, err := os.Stat(o.bin); err != nil {
		return fmt.Errorf("server binary: %w (run make build first)", err)
	}
	if o.pprofDir != "" {
		if err := os.MkdirAll(o.pprofDir, 0o755); err != nil {
			return err
		}
	}
	dir, err := os.MkdirTemp("", "planbench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	stopOnSignal(stderr)
	ctx := context.Background()
	b := &bench{o: o, c: newClient(o.concurrency), dir: dir,
		note: func(format string, args ...any) { fmt.Fprintf(stderr, format+"\n", args...) }}
	if b.chi, err = startChiBaseline(o); err != nil {
		return fmt.Errorf("chi baseline: %w", err)
	}
	defer b.chi.stop()
	if err := b.all(ctx); err != nil {
		return err
	}

	fmt.Fprintf(stdout, "planbench: %d connections, %s runs, %d rounds (baseline and scenario interleaved), %s\n",
		o.concurrency, o.duration, o.rounds, runtime.GOOS+"/"+runtime.GOARCH)
	fmt.Fprintf(stdout, "servers on CPUs %s; planbench on CPUs %s (GOMAXPROCS %d)", cpusText(o.serverCPUs), cpusText(o.clientCPUs), runtime.GOMAXPROCS(0))
	if len(o.serverEnv) > 0 {
		fmt.Fprintf(stdout, "; server environment %s", strings.Join(o.serverEnv, " "))
	}
	fmt.Fprintln(stdout)
	if len(b.rows) > 0 {
		fmt.Fprintln(stdout)
		printTable(stdout, b.rows)
	}
	if len(b.notes) > 0 {
		fmt.Fprintln(stdout)
	}
	for _, n := range b.notes {
		fmt.Fprintln(stdout, n)
	}
	fmt.Fprintf(stdout, "\npeak RSS of the planserver processes: %s\n", peakRSSSummary())
	return failures(b.rows)
}

func cpusText(c cpuSet) string {
	if len(c) == 0 {
		return "all (shared)"
	}
	return c.String()
}

// all runs the sections -only asks for.
func (b *bench) all(ctx context.Context) error {
	if b.o.runs("writes") || b.o.runs("reads") {
		if err := b.benchSQLite(ctx); err != nil {
			return err
		}
	}
	if b.o.runs("pages") {
		if err := b.pages(ctx); err != nil {
			return err
		}
	}
	if b.o.runs("wal") {
		if err := b.walPages(ctx); err != nil {
			return err
		}
	}
	if b.o.runs("subscribers") {
		if err := b.idleSubscribers(ctx, b.o.subscribers); err != nil {
			return err
		}
	}
	if b.o.runs("hooks") {
		if err := b.hookLatency(ctx); err != nil {
			return fmt.Errorf("hook latency: %w", err)
		}
	}
	if b.o.runs("sandbox") {
		if err := b.sandboxLatency(ctx); err != nil {
			return fmt.Errorf("sandbox latency: %w", err)
		}
	}
	if b.o.runs("webhooks") {
		if err := b.webhooks(ctx); err != nil {
			return fmt.Errorf("webhook scenarios: %w", err)
		}
	}
	if b.o.runs("signin") {
		if err := b.signIn(ctx); err != nil {
			return fmt.Errorf("sign-in scenario: %w", err)
		}
	}
	if b.o.postgres != "" && slices.ContainsFunc(pgSections, b.o.runs) {
		if err := b.postgresSections(ctx); err != nil {
			return err
		}
	}
	if b.o.runs("team") {
		if err := b.team(ctx); err != nil {
			return fmt.Errorf("team scale: %w", err)
		}
	}
	return nil
}
