package http

import (
	"database/sql"
	"os"
	"runtime"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/planserver/planserver/internal/sqlite"
)

// registerProcessMetrics registers what an operator's dashboard needs to
// know about this process beside its requests: which build runs, and the
// database's state. Each value is read when /metrics is scraped.
func registerProcessMetrics(reg prometheus.Registerer, db *sqlite.DB, version string) {
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
		st, err := os.Stat(db.Path + "-wal")
		if err != nil {
			return 0
		}
		return float64(st.Size())
	}))
	for pool, conns := range map[string]*sql.DB{"writer": db.Writer, "reader": db.Reader} {
		labels := prometheus.Labels{"pool": pool}
		reg.MustRegister(
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name:        "planserver_db_connections_open",
				Help:        "Database connections open, by pool (one writer; readers).",
				ConstLabels: labels,
			}, func() float64 { return float64(conns.Stats().OpenConnections) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name:        "planserver_db_connections_in_use",
				Help:        "Database connections in use by a query or transaction now, by pool.",
				ConstLabels: labels,
			}, func() float64 { return float64(conns.Stats().InUse) }),
		)
	}
}
