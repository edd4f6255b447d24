package serveconfig

import (
	"fmt"
	"log/slog"

	"github.com/planserver/planserver/internal/db"
)

// Descriptors kept free for everything but client connections: fdReserve
// for the listener, logs, backups, pprof and the runtime, plus
// fdsPerDBConn for each SQLite connection (the database file, its WAL and
// its shared-memory index).
const (
	fdReserve    = 64
	fdsPerDBConn = 3
	// fdLimitCeiling caps what an unlimited RLIMIT_NOFILE counts as.
	fdLimitCeiling = 1 << 20
	// minConnections is the least --max-connections a derived default gives.
	minConnections = 16
)

// FDLimit is RLIMIT_NOFILE as serve left it (RaiseFDLimit), or the
// error that kept it from being read or raised.
type FDLimit struct {
	Soft, Hard uint64
	Err        error
}

// ConnectionLimits settles --max-connections and --max-event-streams. A
// value of 0 is derived from the descriptor limit read at start:
//
//	connections = fd limit − 64 − 3 × database connections (at least 16)
//	streams     = connections × 3/4
//
// so that event streams, which last, always leave a quarter of the
// connections to ordinary requests and health checks, and no connection
// the server accepts can find the descriptors exhausted.
func (c *Config) ConnectionLimits(fdLimit uint64, dbConns int) (conns, streams int, err error) {
	conns, streams = c.MaxConnections, c.MaxEventStreams
	if conns == 0 {
		usable := int64(min(fdLimit, fdLimitCeiling)) - fdReserve - int64(fdsPerDBConn*dbConns)
		conns = int(max(usable, minConnections))
	}
	if streams == 0 {
		streams = max(conns*3/4, 1)
	}
	if streams > conns {
		return 0, 0, fmt.Errorf("--max-event-streams %d is above --max-connections %d: every stream holds a connection", streams, conns)
	}
	return conns, streams, nil
}

// DBConns is how many connections the database may open at once.
func DBConns(d *db.DB) int {
	w, r := d.Stats()
	return w.MaxOpenConnections + r.MaxOpenConnections
}

// LogLimits logs the descriptor limits and the caps derived from them.
func LogLimits(log *slog.Logger, fd FDLimit, conns, streams int) {
	attrs := []any{slog.Uint64("fd_limit", fd.Soft), slog.Uint64("fd_hard_limit", fd.Hard),
		slog.Int("max_connections", conns), slog.Int("max_event_streams", streams)}
	if fd.Err != nil {
		attrs = append(attrs, slog.String("fd_limit_error", fd.Err.Error()))
	}
	log.Info("connection limits", attrs...)
}
