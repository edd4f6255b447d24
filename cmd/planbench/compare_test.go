package main

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestParseCPUs(t *testing.T) {
	for in, want := range map[string]cpuSet{
		"0":        {0},
		"0-3":      {0, 1, 2, 3},
		"8-9,2,2":  {2, 8, 9},
		" 1 , 3-4": {1, 3, 4},
	} {
		got, err := parseCPUs(in)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("parseCPUs(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "a", "3-1", "-1", "1-", "1,,2"} {
		if got, err := parseCPUs(bad); err == nil {
			t.Errorf("parseCPUs(%q) = %v, want an error", bad, got)
		}
	}
}

func TestSpreadIsMedianAndRange(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want spread
	}{
		{[]float64{3, 1, 2}, spread{2, 1, 3}},
		{[]float64{4, 1, 3, 2}, spread{2.5, 1, 4}},
		{[]float64{5}, spread{5, 5, 5}},
		{nil, spread{}},
	} {
		if got := spreadOf(c.in); got != c.want {
			t.Errorf("spreadOf(%v) = %+v, want %+v", c.in, got, c.want)
		}
	}
}

// A ratio is taken round by round: a scenario measured while the machine
// was slow is compared with its baseline of the same round.
func TestRatiosPairRounds(t *testing.T) {
	at := func(requests int) sample {
		return sample{result: result{requests: requests, elapsed: time.Second}}
	}
	r := row{
		runs: []sample{at(50), at(100), at(90)},
		base: []sample{at(100), at(400), at(100)},
	}
	if got := r.ratios(); got != (spread{0.5, 0.25, 0.9}) {
		t.Errorf("ratios = %+v", got)
	}
}

func TestCPUPerRequest(t *testing.T) {
	s := sample{result: result{requests: 1000, elapsed: time.Second}, cpu: 300 * time.Millisecond}
	if got := s.cpuPerRequest(); got != 300*time.Microsecond {
		t.Errorf("cpu per request = %v", got)
	}
	r := row{runs: []sample{s}, base: []sample{{result: result{requests: 1000}, cpu: 100 * time.Millisecond}}}
	if got := r.cpuRatio(); got != 3 {
		t.Errorf("cpu ratio = %v", got)
	}
	r.base[0].cpu = 0 // not measured
	if got := r.cpuRatio(); got != 0 {
		t.Errorf("cpu ratio against an unmeasured baseline = %v", got)
	}
}

func TestErrorsFailTheRun(t *testing.T) {
	clean := row{name: "clean", runs: []sample{{result: result{requests: 10}}}}
	if err := failures([]row{clean}); err != nil {
		t.Fatalf("no errors: %v", err)
	}
	broken := row{name: "broken", runs: []sample{{result: result{requests: 10}}},
		base: []sample{{result: result{requests: 10, errors: 2, firstErr: errors.New("503")}}}}
	err := failures([]row{clean, broken})
	if err == nil || !strings.Contains(err.Error(), "broken: 2 errors, the first: 503") || strings.Contains(err.Error(), "clean") {
		t.Errorf("a baseline with errors: %v", err)
	}
}

func TestFlagsRefuseWhatCannotBeMeasured(t *testing.T) {
	for _, args := range [][]string{
		{"-rounds", "2"},
		{"-server-env", "GOGC"},
		{"-only", "everything"},
		{"-cpus", "1", "-server-cpus", "0"},
		{"-server-cpus", "x"},
		{"extra"},
	} {
		if err := run(args, io.Discard, io.Discard); err == nil {
			t.Errorf("planbench %v: no error", args)
		}
	}
}

// A load generator re-executed on its CPUs takes the split from its
// environment: it can no longer see the server's CPUs to split them.
func TestPinnedSplitComesFromTheEnvironment(t *testing.T) {
	t.Setenv(pinnedEnv, "0-1;2,3")
	server, client, ok, err := pinned()
	if err != nil || !ok || !slices.Equal(server, cpuSet{0, 1}) || !slices.Equal(client, cpuSet{2, 3}) {
		t.Errorf("pinned() = %v %v %v %v", server, client, ok, err)
	}
	t.Setenv(pinnedEnv, "0-1")
	if _, _, _, err := pinned(); err == nil {
		t.Error("a split without its client half was accepted")
	}
	t.Setenv(pinnedEnv, "")
	if _, _, ok, err := pinned(); ok || err != nil {
		t.Errorf("not pinned: %v %v", ok, err)
	}
}

// TestTeamIsOptIn: a plain run (make bench) leaves out the team section,
// which takes minutes; -only team runs it and nothing else.
func TestTeamIsOptIn(t *testing.T) {
	var all options
	for _, s := range sections {
		if got, want := all.runs(s), s != "team"; got != want {
			t.Errorf("a run without -only runs %s: %v, want %v", s, got, want)
		}
	}
	team := options{only: []string{"team"}}
	for _, s := range sections {
		if got, want := team.runs(s), s == "team"; got != want {
			t.Errorf("-only team runs %s: %v, want %v", s, got, want)
		}
	}
	if err := run([]string{"-only", "team", "-team-scale", "2"}, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "-team-scale") {
		t.Errorf("-team-scale 2: %v, want an error naming it", err)
	}
}

// compareAll measures every side once a round, turning the order each
// round, and pairs the scenario's runs with each baseline's of the same
// rounds.
func TestCompareAllTurnsTheOrderAndPairsRounds(t *testing.T) {
	var (
		mu    sync.Mutex
		order []string
	)
	sideOf := func(name string, perOp time.Duration) side {
		return side{name: name, workers: 1, op: func(ctx context.Context, w, i int) error {
			if i == 0 { // the first op of a measured run
				mu.Lock()
				order = append(order, name)
				mu.Unlock()
			}
			time.Sleep(perOp)
			return nil
		}}
	}
	b := &bench{o: options{duration: 20 * time.Millisecond, rounds: 3}, note: func(string, ...any) {}}
	b.compareAll(context.Background(), sideOf("S", 2*time.Millisecond),
		[]side{sideOf("A", time.Millisecond), sideOf("B", 4*time.Millisecond)})
	// Three warm-ups, then rounds A B S, B S A, S A B.
	want := []string{"A", "B", "S", "A", "B", "S", "B", "S", "A", "S", "A", "B"}
	if !slices.Equal(order, want) {
		t.Errorf("order %v, want %v", order, want)
	}
	if len(b.rows) != 2 || b.rows[0].baseline != "A" || b.rows[1].baseline != "B" || b.rows[0].name != "S" {
		t.Fatalf("rows %+v", b.rows)
	}
	for _, r := range b.rows {
		if len(r.runs) != 3 || len(r.base) != 3 {
			t.Fatalf("row %s: %d runs, %d baseline runs", r.baseline, len(r.runs), len(r.base))
		}
	}
	// A op takes 1 ms, S 2 ms, B 4 ms: S ÷ A about 0.5, S ÷ B about 2.
	if a, bb := b.rows[0].ratios().median, b.rows[1].ratios().median; !(a < 0.8 && bb > 1.3) {
		t.Errorf("S ÷ A %.2f, S ÷ B %.2f; want about 0.5 and 2", a, bb)
	}
}
