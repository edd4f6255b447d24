package serveconfig

import "runtime/debug"

// defaultGCPercent is the garbage collector's target when GOGC is not set:
// the heap may grow to three times the live heap (Go's own default is two)
// before a collection. A request's garbage (its JSON, its log record, its
// rows) dies with the request, so collecting half as often costs a few tens
// of MiB of peak RSS and buys CPU for requests: on the make-bench machine
// GOGC=200 moved PUT from 0.25× to 0.34× its raw-SQLite baseline and GET a
// plan from 0.71× to 0.80× its chi baseline, peak RSS 52 → 87 MiB (the
// numbers and the other settings tried are in docs/benchmarks.md).
const defaultGCPercent = 200

// TuneGC sets defaultGCPercent unless the operator set GOGC, which the Go
// runtime has already applied and which wins (GOMEMLIMIT works beside
// either). It returns the percent in force and where it came from, for the
// start-up log.
func TuneGC(getenv func(string) string) (percent int, source string) {
	if getenv("GOGC") != "" {
		percent = debug.SetGCPercent(-1)
		debug.SetGCPercent(percent)
		return percent, "GOGC"
	}
	debug.SetGCPercent(defaultGCPercent)
	return defaultGCPercent, "default"
}
