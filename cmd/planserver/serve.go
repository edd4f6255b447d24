package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"time"

	"github.com/planserver/planserver/internal/events"
	planhttp "github.com/planserver/planserver/internal/http"
	"github.com/planserver/planserver/internal/sqlite"
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

func serve(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	var cfg config
	if err := parseFlags(flagSet("serve", &cfg), args, getenv, stdout, stderr); err != nil {
		return err
	}
	if err := cfg.validateServe(); err != nil {
		return err
	}
	corsOrigins, _ := origins(cfg.CORSOrigins) // validated
	log := newLogger(cfg.LogFormat, stderr)
	lock, err := sqlite.Lock(cfg.DB, "serve")
	if err != nil {
		return err
	}
	defer lock.Release()
	fd := raiseFDLimit()
	db, err := openDB(ctx, cfg)
	if err != nil {
		return err
	}
	defer db.Close()
	if _, _, err := db.MigrateUp(ctx, nil); err != nil {
		return err
	}
	maxConns, maxStreams, err := cfg.connectionLimits(fd.soft, dbConns(db))
	if err != nil {
		return err
	}
	logLimits(log, fd, maxConns, maxStreams)

	api := planhttp.New(planhttp.Config{
		DB:                   db,
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
		MaxEventStreams:      maxStreams,
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
	tcp, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Addr, err)
	}
	ln := api.Listener(tcp, maxConns)
	log.Info("planserver listening", slog.String("addr", "http://"+ln.Addr().String()),
		slog.String("db", cfg.DB), slog.String("version", version), slog.String("auth", cfg.Auth))

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

// openDB opens the database, saying why when SQLite cannot.
func openDB(ctx context.Context, cfg config) (*sqlite.DB, error) {
	durability, _ := sqlite.ParseDurability(cfg.Durability) // validated
	db, err := sqlite.Open(ctx, cfg.DB, durability)
	if err != nil {
		return nil, sqlite.ExplainOpenError(cfg.DB, err)
	}
	return db, nil
}

// openAndMigrate opens the database for a command that works beside a
// running server (token) and applies pending migrations first, refusing a
// schema newer than this binary. Only a migration takes the database's
// lock, so at the same schema version it never waits on a server.
func openAndMigrate(ctx context.Context, cfg config, holder string) (*sqlite.DB, error) {
	db, err := openDB(ctx, cfg)
	if err != nil {
		return nil, err
	}
	current, known, err := db.SchemaVersions(ctx)
	if err == nil && current < known {
		var lock *sqlite.FileLock
		if lock, err = sqlite.Lock(cfg.DB, holder); err == nil {
			_, _, err = db.MigrateUp(ctx, nil)
			lock.Release()
		}
	} else if err == nil && current > known {
		_, _, err = db.MigrateUp(ctx, nil) // refuses, saying why
	}
	if err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// mustExist refuses a database path that does not exist, for commands
// that read one and must not leave an empty file behind.
func mustExist(path string) error {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("database %s does not exist (planserver serve or migrate up creates it)", path)
	} else if err != nil {
		return sqlite.ExplainOpenError(path, err)
	}
	return nil
}
