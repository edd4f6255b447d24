package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/planserver/planserver/internal/events"
	planhttp "github.com/planserver/planserver/internal/http"
	"github.com/planserver/planserver/internal/sqlite"
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
	log := newLogger(cfg.LogFormat, stderr)
	db, err := openAndMigrate(ctx, cfg, stderr)
	if err != nil {
		return err
	}
	defer db.Close()

	api := planhttp.New(planhttp.Config{
		DB:                   db,
		Logger:               log,
		MaxBodyBytes:         cfg.MaxBodyBytes,
		MaxPlanBytes:         cfg.MaxPlanBytes,
		PlanModeAllow:        allowlist(cfg.PlanModeAllow),
		PlanHistory:          cfg.PlanHistory,
		RequirePreconditions: cfg.RequirePreconditions,
		Version:              version,
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
	srv := &http.Server{
		Handler:           api,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	// Shutdown waits for handlers to return, and an event stream only
	// returns when told to.
	srv.RegisterOnShutdown(api.Shutdown)
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Addr, err)
	}
	log.Info("planserver listening", slog.String("addr", "http://"+ln.Addr().String()),
		slog.String("db", cfg.DB), slog.String("version", version))

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

// openAndMigrate opens the database and applies pending migrations,
// refusing a schema newer than this binary.
func openAndMigrate(ctx context.Context, cfg config, stderr io.Writer) (*sqlite.DB, error) {
	durability, _ := sqlite.ParseDurability(cfg.Durability) // validated
	db, err := sqlite.Open(ctx, cfg.DB, durability)
	if err != nil {
		return nil, err
	}
	if _, _, err := db.MigrateUp(ctx, nil); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}
