package http

import (
	"database/sql"
	"os"
	"runtime"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/planserver/planserver/internal/db"
)

// registerProcessMetrics registers what an operator's dashboard needs to
// know about this process beside its requests: which build runs, and the
// database's state. Each value is read when /metrics is scraped.
func registerProcessMetrics(reg prometheus.Registerer, d *db.DB, version string) {
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name:        "planserver_build_info",
		Help:        "Always 1; the labels say which planserver build runs.",
		ConstLabels: prometheus.Labels{"version": version, "goversion": runtime.Version()},
	}, func() float64 { return 1 }))
	// A WAL that keeps growing means checkpoints cannot finish, e.g.
	// behind a reader that never lets go of its snapshot.
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "planserver_db_wal_bytes",
		Help: "Size of the database's write-ahead log file (DB-wal), in bytes.",
	}, func() float64 {
		st, err := os.Stat(d.Path + "-wal")
		if err != nil {
			return 0
		}
		return float64(st.Size())
	}))
	stats := map[string]func() sql.DBStats{
		"writer": func() sql.DBStats { w, _ := d.Stats(); return w },
		"reader": func() sql.DBStats { _, r := d.Stats(); return r },
	}
	for pool, stat := range stats {
		labels := prometheus.Labels{"pool": pool}
		reg.MustRegister(
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name:        "planserver_db_connections_open",
				Help:        "Database connections open, by pool (one writer; readers).",
				ConstLabels: labels,
			}, func() float64 { return float64(stat().OpenConnections) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name:        "planserver_db_connections_in_use",
				Help:        "Database connections in use by a query or transaction now, by pool.",
				ConstLabels: labels,
			}, func() float64 { return float64(stat().InUse) }),
		)
	}
	// Group commit: how many write transactions wait for the writer. A
	// queue that stays long means writes arrive faster than the disk
	// commits them.
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "planserver_db_writer_queue",
		Help: "Write transactions waiting for the writer now (group commit runs them together).",
	}, func() float64 { return float64(d.QueueLength()) }))
	// PostgreSQL's write lock (db.LockStats): the sums over the commits
	// that took it, so that rate(held)/rate(commits) is the mean hold.
	lock := func(pick func(commits, writes int64, held, waited time.Duration) float64) func() float64 {
		return func() float64 { return pick(d.LockStats()) }
	}
	reg.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "planserver_db_write_lock_commits_total",
			Help: "Commits that took PostgreSQL's write lock (0 on SQLite).",
		}, lock(func(c, _ int64, _, _ time.Duration) float64 { return float64(c) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "planserver_db_write_lock_writes_total",
			Help: "Writes committed under PostgreSQL's write lock; over commits, the writes per commit.",
		}, lock(func(_, w int64, _, _ time.Duration) float64 { return float64(w) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "planserver_db_write_lock_held_seconds_total",
			Help: "Time PostgreSQL's write lock was held, from the round trip that took it to the commit's return.",
		}, lock(func(_, _ int64, h, _ time.Duration) float64 { return h.Seconds() })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "planserver_db_write_lock_wait_seconds_total",
			Help: "Time spent in the round trip that took PostgreSQL's write lock, the wait for it included.",
		}, lock(func(_, _ int64, _, w time.Duration) float64 { return w.Seconds() })),
	)
}
