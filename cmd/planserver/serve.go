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

	"github.com/planserver/planserver/internal/db"
	"github.com/planserver/planserver/internal/events"
	planhttp "github.com/planserver/planserver/internal/http"
)

// shutdownGrace is how long in-flight requests may take to finish after
// SIGINT or SIGTERM.
const shutdownGrace = 30 * time.Second

func serve(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	var cfg config
	if err := parseFlags(flagSet("serve", &cfg, true, stderr), args, getenv); err != nil {
		return err
	}
	if err := cfg.validateServe(); err != nil {
		return err
	}
	corsOrigins, _ := origins(cfg.CORSOrigins) // validated
	log := newLogger(cfg.LogFormat, stderr)
	store, err := openAndMigrate(ctx, cfg, stderr)
	if err != nil {
		return err
	}
	defer store.Close()

	api := planhttp.New(planhttp.Config{
		DB:                   store,
		Logger:               log,
		MaxBodyBytes:         cfg.MaxBodyBytes,
		MaxPlanBytes:         cfg.MaxPlanBytes,
		PlanModeAllow:        allowlist(cfg.PlanModeAllow),
		PlanHistory:          cfg.PlanHistory,
		RequirePreconditions: cfg.RequirePreconditions,
		Version:              version,
		Auth:                 cfg.Auth,
		RateLimit:            cfg.RateLimit,
		RateBurst:            cfg.RateBurst,
		CORSOrigins:          corsOrigins,
		EventRetention:       events.Retention{MaxAge: cfg.EventRetention, MaxRows: cfg.EventMaxRows},
		SSEHeartbeat:         cfg.SSEHeartbeat,
	})
	// Retention runs beside the server; it stops (and is waited for)
	// before the database closes.
	pruneCtx, stopPruning := context.WithCancel(ctx)
	pruned := make(chan struct{})
	go func() {
		defer close(pruned)
		api.RunPruner(pruneCtx, planhttp.DefaultPruneInterval)
	}()
	defer func() {
		stopPruning()
		<-pruned
	}()
	srv := newHTTPServer(api, log, defaultTimeouts)
	// Shutdown waits for handlers to return, and an event stream only
	// returns when told to.
	srv.RegisterOnShutdown(api.Shutdown)
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Addr, err)
	}
	log.Info("planserver listening", slog.String("addr", "http://"+ln.Addr().String()),
		slog.String("db", db.Redact(cfg.DB)), slog.String("version", version), slog.String("auth", cfg.Auth))

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
	log.Info("shutting down: draining in-flight requests", slog.Duration("grace", shutdownGrace))
	shutdownCtx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
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

// openDB opens the database cfg names.
func openDB(ctx context.Context, cfg config) (*db.DB, error) {
	durability, _ := db.ParseDurability(cfg.Durability) // validated
	return db.Open(ctx, cfg.DB, db.Options{Durability: durability})
}

// openAndMigrate opens the database and applies pending migrations,
// refusing a schema newer than this binary.
func openAndMigrate(ctx context.Context, cfg config, stderr io.Writer) (*db.DB, error) {
	d, err := openDB(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if _, _, err := d.MigrateUp(ctx, nil); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}
