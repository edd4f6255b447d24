package main

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// sandboxLatency measures what the read-only sandbox adds to a command,
// which plan mode pays on every shell command (the hook's answer comes on
// top: the hooks section): /bin/true and bash -c true, each run through
// the lean planserver-sandbox (what a hook's rewritten command names when
// make build put it beside planserver) and through planserver sandbox,
// against the bare command, alternating, one at a time as a host runs
// them. The added time is taken pair by pair (each sandboxed run minus
// the bare run after it). Target: p99 added under 10 ms.
func (b *bench) sandboxLatency(ctx context.Context) error {
	forms := [][]string{{b.o.bin, "sandbox"}}
	if lean := filepath.Join(filepath.Dir(b.o.bin), "planserver-sandbox"); fileExists(lean) {
		forms = append([][]string{{lean}}, forms...)
	}
	probe := append(append([]string(nil), forms[0]...), "--read-only", "--", "/bin/true")
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, probe[0], probe[1:]...)
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		b.notes = append(b.notes, fmt.Sprintf("sandbox: not measured, the sandbox does not run here (%v): %s", err, strings.TrimSpace(stderr.String())))
		return nil
	}
	for _, form := range forms {
		n := 300
		if len(form) > 1 {
			n = 100 // planserver sandbox: the big binary, started twice
		}
		label := filepath.Base(form[0])
		if len(form) > 1 {
			label += " " + form[1]
		}
		for _, command := range [][]string{{"/bin/true"}, {"bash", "-c", "true"}} {
			sandboxed := append(append(append([]string(nil), form...), "--read-only", "--"), command...)
			run := func(argv []string) func() error {
				return func() error {
					var out bytes.Buffer
					c := exec.CommandContext(ctx, argv[0], argv[1:]...)
					c.Stdout, c.Stderr = &out, &out
					if err := c.Run(); err != nil {
						return fmt.Errorf("%q: %v: %s", argv, err, out.String())
					}
					return nil
				}
			}
			in, bare, err := interleave(ctx, n, run(sandboxed), run(command))
			if err != nil {
				return fmt.Errorf("sandbox: %w", err)
			}
			b.sandboxNote(fmt.Sprintf("sandbox (%s), %s", label, strings.Join(command, " ")), in, bare, 10*time.Millisecond)
		}
	}
	return nil
}

// sandboxNote reports one sandbox scenario: the sandboxed and bare runs'
// percentiles and the added time, pair by pair, against the target.
func (b *bench) sandboxNote(name string, in, bare []time.Duration, target time.Duration) {
	added := make([]time.Duration, len(in))
	for i := range in {
		added[i] = in[i] - bare[i]
	}
	p99 := percentile(added, 0.99)
	verdict := "met"
	if p99 >= target {
		verdict = "MISSED"
	}
	ms := func(t time.Duration) string { return fmt.Sprintf("%.2f ms", float64(t)/float64(time.Millisecond)) }
	b.notes = append(b.notes, fmt.Sprintf("%s: added p50 %s, p99 %s over %d runs (target p99 added < %s: %s); sandboxed p50 %s, p99 %s; bare p50 %s, p99 %s",
		name, ms(percentile(added, 0.5)), ms(p99), len(in), ms(target), verdict,
		ms(percentile(in, 0.5)), ms(percentile(in, 0.99)), ms(percentile(bare, 0.5)), ms(percentile(bare, 0.99))))
}
