package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// side is one half of a comparison: a scenario or its baseline.
type side struct {
	name string
	// op is one request (or one transaction) of worker w, its i-th.
	op func(ctx context.Context, w, i int) error
	// proc is the process doing the work, whose CPU time is counted; nil
	// where the work runs inside planbench (the raw database baselines).
	proc *process
	// replicas are the other processes doing the work beside proc (the
	// PostgreSQL replicas behind one scenario): their CPU time counts
	// with proc's, so that CPU per request is the service's; proc alone
	// is profiled.
	replicas []*process
	// workers overrides -c (the single-writer WAL figures use 1).
	workers int
	// profile names the CPU profile taken during the first measured run
	// (-pprof); empty for none.
	profile string
}

// sample is one measured run of a side.
type sample struct {
	result
	cpu time.Duration // CPU time of side.proc during the run; 0 where not measured
}

func (r sample) cpuPerRequest() time.Duration {
	if r.cpu == 0 || r.requests == 0 {
		return 0
	}
	return r.cpu / time.Duration(r.requests)
}

// row is one line of the report: every run of a scenario and of its
// baseline (none for a scenario reported without one).
type row struct {
	name     string
	runs     []sample
	baseline string
	base     []sample
}

// measure runs one side once for d.
func (b *bench) measure(ctx context.Context, s side, d time.Duration, profile bool) sample {
	workers := s.workers
	if workers == 0 {
		workers = b.o.concurrency
	}
	cpu0 := s.cpu()
	name := ""
	if profile {
		name = s.profile
	}
	res := s.proc.profileWhile(b.o.pprofDir, name, d, func() result {
		return driveFor(ctx, workers, d, s.op)
	})
	return sample{result: res, cpu: s.cpu() - cpu0}
}

// cpu is the CPU time the side's processes have used so far; 0 for a
// side that runs inside planbench.
func (s side) cpu() time.Duration {
	if s.proc == nil {
		return 0
	}
	t := s.proc.cpu()
	for _, p := range s.replicas {
		t += p.cpu()
	}
	return t
}

// compare measures a scenario against its baseline in the same run,
// interleaved (baseline, scenario, baseline, scenario, ...) for -rounds
// rounds after one short unmeasured warm-up of each, so that whatever else
// the machine does in the meantime falls on both alike. The ratio of each
// round is the scenario's rate over the baseline's of the same round.
func (b *bench) compare(ctx context.Context, scenario, baseline side) {
	b.note("%s  vs  %s", scenario.name, baseline.name)
	warm := max(b.o.duration/4, 200*time.Millisecond)
	b.measure(ctx, baseline, warm, false)
	b.measure(ctx, scenario, warm, false)
	r := row{name: scenario.name, baseline: baseline.name}
	for round := 0; round < b.o.rounds; round++ {
		r.base = append(r.base, b.measure(ctx, baseline, b.o.duration, false))
		r.runs = append(r.runs, b.measure(ctx, scenario, b.o.duration, round == 0))
	}
	b.addRow(r)
}

// addRow adds a row to the report and says its figures on the progress
// output at once, so that a run cut off by a time limit (a lent machine's)
// has said what it measured before it was stopped.
func (b *bench) addRow(r row) {
	b.rows = append(b.rows, r)
	rate, base, ratio := figures(r.runs, rateOf), figures(r.base, rateOf), r.ratios()
	b.note("  = %.0f req/s ÷ %.0f req/s: %.2f (%.2f–%.2f), p99 %s", rate.median, base.median,
		ratio.median, ratio.lo, ratio.hi, fmtDur(time.Duration(figures(r.runs, p99Of).median)))
}

// compareAll is compare for a scenario and several baselines measured in
// the same rounds: after a warm-up of each side, every round measures each
// side once, the order turning by one each round so that no side always
// runs after the same one. It adds one row per baseline, each holding the
// scenario's runs of the same rounds, so every ratio is still the
// scenario's rate over a baseline's of one round.
func (b *bench) compareAll(ctx context.Context, scenario side, baselines []side) {
	b.note("%s  vs  %d baselines in the same rounds", scenario.name, len(baselines))
	all := append(slices.Clone(baselines), scenario)
	warm := max(b.o.duration/4, 200*time.Millisecond)
	for _, s := range all {
		b.measure(ctx, s, warm, false)
	}
	runs := make([][]sample, len(all))
	for round := 0; round < b.o.rounds; round++ {
		for k := range all {
			i := (k + round) % len(all)
			runs[i] = append(runs[i], b.measure(ctx, all[i], b.o.duration, round == 0 && i == len(all)-1))
		}
	}
	for k, base := range baselines {
		b.note("  %s", base.name)
		b.addRow(row{name: scenario.name, runs: runs[len(all)-1], baseline: base.name, base: runs[k]})
	}
}

// spread is the median of some figures and their range.
type spread struct{ median, lo, hi float64 }

func spreadOf(xs []float64) spread {
	if len(xs) == 0 {
		return spread{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return spread{median: m, lo: s[0], hi: s[len(s)-1]}
}

func figures(runs []sample, f func(sample) float64) spread {
	xs := make([]float64, len(runs))
	for i, r := range runs {
		xs[i] = f(r)
	}
	return spreadOf(xs)
}

func (r row) ratios() spread {
	xs := make([]float64, 0, len(r.runs))
	for i := range min(len(r.runs), len(r.base)) {
		if b := r.base[i].rps(); b > 0 {
			xs = append(xs, r.runs[i].rps()/b)
		}
	}
	return spreadOf(xs)
}

// cpuRatio is the scenario's CPU per request over the baseline's, median
// over rounds; 0 where either is not measured.
func (r row) cpuRatio() float64 {
	xs := make([]float64, 0, len(r.runs))
	for i := range min(len(r.runs), len(r.base)) {
		a, b := r.runs[i].cpuPerRequest(), r.base[i].cpuPerRequest()
		if a == 0 || b == 0 {
			return 0
		}
		xs = append(xs, float64(a)/float64(b))
	}
	return spreadOf(xs).median
}

func (r row) errors() (n int, first error) {
	for _, x := range append(slices.Clone(r.runs), r.base...) {
		n += x.errors
		if first == nil {
			first = x.firstErr
		}
	}
	return n, first
}

func rateOf(x sample) float64 { return x.rps() }

func p50Of(x sample) float64 { return float64(x.percentile(0.50)) }

func p99Of(x sample) float64 { return float64(x.percentile(0.99)) }

func cpuOf(x sample) float64 { return float64(x.cpuPerRequest()) }

// printTable writes the report: medians over the rounds, with the range of
// the rates and of the ratio.
func printTable(w io.Writer, rows []row) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\treq/s\trange\tp50\tp99\tCPU/req\terrors\tbaseline\treq/s\trange\tCPU/req\tratio\trange\tCPU ratio\t")
	for _, r := range rows {
		rate := figures(r.runs, rateOf)
		n, _ := r.errors()
		cells := []string{r.name, fmt.Sprintf("%.0f", rate.median), rangeOf(rate, "%.0f"),
			fmtDur(time.Duration(figures(r.runs, p50Of).median)), fmtDur(time.Duration(figures(r.runs, p99Of).median)),
			fmtCPU(figures(r.runs, cpuOf).median), fmt.Sprint(n)}
		if r.baseline == "" {
			cells = append(cells, "-", "-", "", "-", "-", "", "-")
		} else {
			base, ratio := figures(r.base, rateOf), r.ratios()
			cpuRatio := "-"
			if c := r.cpuRatio(); c > 0 {
				cpuRatio = fmt.Sprintf("%.2f", c)
			}
			cells = append(cells, r.baseline, fmt.Sprintf("%.0f", base.median), rangeOf(base, "%.0f"),
				fmtCPU(figures(r.base, cpuOf).median), fmt.Sprintf("%.2f", ratio.median), rangeOf(ratio, "%.2f"), cpuRatio)
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
	}
	tw.Flush()
}

func rangeOf(s spread, format string) string {
	return fmt.Sprintf(format+"–"+format, s.lo, s.hi)
}

func fmtDur(d time.Duration) string {
	return fmt.Sprintf("%.2fms", float64(d.Microseconds())/1000)
}

func fmtCPU(ns float64) string {
	if ns == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0fµs", ns/1000)
}

// failures lists the rows whose scenario or baseline had errors: a figure
// measured with errors in it is not a figure, so they fail the run.
func failures(rows []row) error {
	var msgs []string
	for _, r := range rows {
		if n, first := r.errors(); n > 0 {
			msgs = append(msgs, fmt.Sprintf("%s: %d errors, the first: %v", r.name, n, first))
		}
	}
	if len(msgs) == 0 {
		return nil
	}
	return fmt.Errorf("scenarios with errors:\n  %s", strings.Join(msgs, "\n  "))
}
