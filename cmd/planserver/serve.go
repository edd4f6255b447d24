package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/planserver/planserver/internal/app"
	"github.com/planserver/planserver/internal/cli"
	"github.com/planserver/planserver/internal/db"
	"github.com/planserver/planserver/internal/http/signin"
	"github.com/planserver/planserver/internal/serveconfig"
	"github.com/planserver/planserver/internal/tracing"
	"github.com/spf13/cobra"
)

// shutdownGrace is how long in-flight requests may take to finish after
// SIGINT or SIGTERM.
const shutdownGrace = 30 * time.Second

// stallGrace is how long, after SIGINT or SIGTERM, a request still
// arriving (headers or body) has to arrive whole. After it, the request is
// answered 408 (or its connection closed, when not even its headers came)
// and the shutdown goes on: a client that never sends its body cannot hold
// the process.
const stallGrace = 5 * time.Second

// serveCommand is planserver serve: its flags, each with its
// environment variable, then serve.
func serveCommand(env cli.Env) *cobra.Command {
	cfg := serveconfig.New()
	cmd := cli.Help(&cobra.Command{
		Use: "serve", Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return serve(cmd.Context(), *cfg, env.Getenv, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}, serveconfig.ServeHelp, cli.EnvFlags, "")
	serveconfig.Flags(cmd.Flags(), cfg)
	serveconfig.EnvFlags(cmd.Flags())
	return cmd
}

// serve applies pending migrations, then serves with cfg until ctx ends.
func serve(ctx context.Context, cfg serveconfig.Config, getenv func(string) string, stdout, stderr io.Writer) error {
	if err := cfg.ValidateServe(); err != nil {
		return err
	}
	oidcSettings, signIn, err := cfg.OIDCSettings(getenv)
	if err != nil {
		return err
	}
	var signInProvider *signin.OIDC
	if signIn {
		// Discovery now: an unreachable or wrong issuer stops the start.
		if signInProvider, err = signin.NewOIDC(ctx, oidcSettings); err != nil {
			return err
		}
	}
	log := serveconfig.NewLogger(cfg.LogFormat, stderr)
	// Off unless OTEL_EXPORTER_OTLP_ENDPOINT names a collector
	// (docs/tracing.md).
	stopTracing, err := tracing.Setup(ctx, version)
	if err != nil {
		return fmt.Errorf("tracing: %w", err)
	}
	defer func() {
		tctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = stopTracing(tctx) // flushes the last spans
	}()
	if tracing.Enabled() {
		log.Info("tracing on: spans go over OTLP/HTTP to OTEL_EXPORTER_OTLP_ENDPOINT")
	}
	lock, err := db.Lock(cfg.DB, "serve")
	if err != nil {
		return cli.ExitError{Code: exitDatabaseUnusable, Err: err}
	}
	defer lock.Release()
	fd := serveconfig.RaiseFDLimit()
	store, err := cfg.OpenDB(ctx)
	switch {
	case db.IsCorrupt(err):
		return damaged(err)
	case err != nil:
		return cli.ExitError{Code: exitDatabaseUnusable, Err: err}
	}
	defer store.Close()
	if err := checkIntegrity(ctx, store, cfg); err != nil {
		return err
	}
	if _, _, err := store.MigrateUp(ctx, nil); err != nil {
		return err
	}
	if err := store.Probe(ctx); err != nil {
		return cli.ExitError{Code: exitDatabaseUnusable, Err: fmt.Errorf("refusing to serve %s: a test write failed: %w", cfg.DB, err)}
	}
	maxConns, maxStreams, err := cfg.ConnectionLimits(fd.Soft, serveconfig.DBConns(store))
	if err != nil {
		return err
	}
	serveconfig.LogLimits(log, fd, maxConns, maxStreams)
	gcPercent, gcSource := serveconfig.TuneGC(getenv)
	log.Info("garbage collector", slog.Int("gc_percent", gcPercent), slog.String("source", gcSource))

	hookCfg, err := cfg.Hooks()
	if err != nil {
		return err
	}
	if hookCfg.Shell.Sandbox.Why != "" {
		log.Warn("host hooks: the read-only sandbox is not available; in plan mode, only plain reads on the allowlist run",
			slog.String("why", hookCfg.Shell.Sandbox.Why))
	}
	built := app.New(cfg.App(store, log, hookCfg, maxStreams, signInProvider, version))
	api := built.HTTP
	// Retention runs beside the server; it stops (and is waited for)
	// before the database closes.
	pruneCtx, stopPruning := context.WithCancel(ctx)
	pruned := make(chan struct{})
	go func() {
		defer close(pruned)
		built.RunPruner(pruneCtx, app.DefaultPruneInterval)
	}()
	defer func() {
		stopPruning()
		<-pruned
	}()
	// Webhook deliveries run beside the server too, never inside a
	// request; they stop (releasing their leases) before the database
	// closes.
	webhooksCtx, stopWebhooks := context.WithCancel(ctx)
	delivered := make(chan struct{})
	go func() {
		defer close(delivered)
		built.RunWebhooks(webhooksCtx)
	}()
	defer func() {
		stopWebhooks()
		<-delivered
	}()
	// The lease sweeper too: it records each lapsed step lease
	// (step.claim_expired) about a second after its end, and stops before
	// the database closes.
	sweepCtx, stopSweeping := context.WithCancel(ctx)
	swept := make(chan struct{})
	go func() {
		defer close(swept)
		built.RunLeaseSweeper(sweepCtx)
	}()
	defer func() {
		stopSweeping()
		<-swept
	}()
	srv := newHTTPServer(api, log, defaultTimeouts)
	// Shutdown waits for handlers to return, and an event stream only
	// returns when told to.
	srv.RegisterOnShutdown(api.Shutdown)
	tcp, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Addr, err)
	}
	if err := cfg.CheckBound(tcp.Addr()); err != nil {
		tcp.Close()
		return err
	}
	ln := api.Listener(tcp, maxConns)
	srv.ConnContext = ln.ConnContext
	log.Info("planserver listening", slog.String("addr", "http://"+ln.Addr().String()),
		slog.String("db", db.Redact(cfg.DB)), slog.String("version", version), slog.String("auth", cfg.Auth))
	log.Info("console", slog.String("url", consoleURL(ln.Addr())))

	if cfg.PprofAddr != "" {
		stopPprof, err := servePprof(cfg.PprofAddr, log)
		if err != nil {
			ln.Close()
			return err
		}
		defer stopPprof()
	}

	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	log.Info("shutting down: draining in-flight requests (a second signal exits at once)",
		slog.Duration("grace", shutdownGrace), slog.Duration("stall_grace", stallGrace))
	ln.Drain(stallGrace)
	shutdownCtx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	err = srv.Shutdown(shutdownCtx)
	if n := ln.Dropped(); n > 0 {
		log.Warn("shutdown dropped requests whose clients stalled", slog.Int64("count", n))
	}
	if err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	log.Info("stopped")
	return nil
}

// timeouts bound how long a client may take at each stage of a request, so
// slow or stalled clients cannot hold connections and goroutines forever.
type timeouts struct {
	readHeader, read, write, idle time.Duration
}

// defaultTimeouts are the production values. WriteTimeout is a default for
// ordinary responses; the event stream extends its own deadline per write.
var defaultTimeouts = timeouts{readHeader: 10 * time.Second, read: 60 * time.Second, write: 60 * time.Second, idle: 120 * time.Second}

// newHTTPServer returns the http.Server planserver runs, with its timeouts
// and limits. Request contexts do not derive from the signal context: a
// SIGTERM must let in-flight requests finish (Shutdown drains them), not
// cancel them half-way.
func newHTTPServer(h http.Handler, log *slog.Logger, t timeouts) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: t.readHeader,
		ReadTimeout:       t.read,
		WriteTimeout:      t.write,
		IdleTimeout:       t.idle,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}

// servePprof serves the runtime profiles on their own listener, never on
// the API's, so they are not exposed wherever the API is. Only loopback
// addresses are accepted.
func servePprof(addr string, log *slog.Logger) (func(), error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("--pprof-addr %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("--pprof-addr %q: profiles are served on loopback addresses only", addr)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--pprof-addr: %w", err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	log.Info("pprof listening", slog.String("addr", "http://"+ln.Addr().String()+"/debug/pprof/"))
	return func() { _ = srv.Close() }, nil
}

// exitDatabaseUnusable is serve's exit status for a database it cannot
// serve (it cannot open it, or it is damaged or unwritable): an operator's
// problem, which a supervisor should not restart in a loop as it would a
// crash.
const exitDatabaseUnusable = 3

// checkIntegrity refuses, before serving, a damaged database (SQLite's
// quick_check; --skip-integrity-check skips it on very large files), with
// what to do. (serve also refuses one that cannot take writes, with a
// probe commit once it is migrated.)
func checkIntegrity(ctx context.Context, store *db.DB, cfg serveconfig.Config) error {
	if cfg.SkipIntegrityCheck {
		return nil
	}
	if err := store.CheckIntegrity(ctx); err != nil {
		return damaged(err)
	}
	return nil
}

// damaged is serve's refusal of a damaged database.
func damaged(err error) error {
	return cli.ExitError{Code: exitDatabaseUnusable, Err: fmt.Errorf("%w\nrefusing to serve a damaged database: "+
		"restore it from a backup (planserver backup makes one), or pass --skip-integrity-check to serve it anyway", err)}
}

// consoleURL is the address of the review console on the listener addr,
// for the log line a user clicks. An unspecified address (0.0.0.0, ::)
// listens on loopback too, so the link names localhost.
func consoleURL(addr net.Addr) string {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return "http://" + addr.String() + "/ui/"
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port) + "/ui/"
}
