package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// hookInput is Claude Code's PreToolUse input for a Write in plan mode:
// the call the hook denies (and records as tool_call.denied), so each
// call does the whole work, the event write included. A Read measures
// the path that writes nothing.
var hookInputs = map[string]string{
	"Write (deny, writes an event)": `{"session_id":"bench","transcript_path":"/tmp/t.jsonl","cwd":"/tmp","hook_event_name":"PreToolUse",` +
		`"tool_name":"Write","tool_input":{"file_path":"/tmp/x","content":"x"},"tool_use_id":"t"}`,
	"Bash ls (rewritten into the sandbox)": `{"session_id":"bench","transcript_path":"/tmp/t.jsonl","cwd":"/tmp","hook_event_name":"PreToolUse",` +
		`"tool_name":"Bash","tool_input":{"command":"ls -la | grep go","description":"d"},"tool_use_id":"t"}`,
}

// hookLatency measures the latency a host hook adds to each tool call,
// one call at a time as a host makes them: the HTTP form (POST
// /v1/hooks/claude-code, what a host calling HTTP hooks waits for) against
// GET /healthz on the same connection (the loopback round trip), and the
// command form (planserver-hook claude-code and planserver hook
// claude-code, a process per call) against starting /bin/true. Targets: p99 under 2 ms (HTTP) and 15 ms (command).
func (b *bench) hookLatency(ctx context.Context) error {
	srv, c, err := b.planModeServer("hooks.db")
	if err != nil {
		return err
	}
	defer srv.stop()
	httpN, cmdN := 2000, 300
	for _, name := range []string{"Write (deny, writes an event)", "Bash ls (rewritten into the sandbox)"} {
		in := hookInputs[name]
		hook := func() error {
			return expect(c, "POST", srv.base+"/v1/hooks/claude-code?session=bench", strings.NewReader(in), jsonHeader, 200)
		}
		health := func() error { return expect(c, "GET", srv.base+"/healthz", nil, nil, 200) }
		h, base, err := interleave(ctx, httpN, hook, health)
		if err != nil {
			return fmt.Errorf("hook HTTP form: %w", err)
		}
		b.latencyNote("hook, HTTP form, "+name, h, base, "GET /healthz", 2*time.Millisecond)

		// The command form twice: the lean planserver-hook that make build
		// puts beside planserver (what planserver hook install writes), and
		// planserver hook itself.
		forms := [][]string{{b.o.bin, "hook"}}
		if lean := filepath.Join(filepath.Dir(b.o.bin), "planserver-hook"); fileExists(lean) {
			forms = append([][]string{{lean}}, forms...)
		}
		for _, form := range forms {
			command := func() error {
				argv := append(append([]string(nil), form...), "claude-code", "--session", "bench")
				cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
				cmd.Env = append(os.Environ(), "PLANSERVER_URL="+srv.base, "PLANSERVER_TOKEN=")
				cmd.Stdin = strings.NewReader(in)
				var out bytes.Buffer
				cmd.Stdout = &out
				if err := cmd.Run(); err != nil {
					return err
				}
				if bytes.Contains(out.Bytes(), []byte("could not be asked")) {
					return fmt.Errorf("the hook did not reach planserver: %s", out.String())
				}
				return nil
			}
			trueCmd := func() error { return exec.CommandContext(ctx, "/bin/true").Run() }
			cm, base, err := interleave(ctx, cmdN, command, trueCmd)
			if err != nil {
				return fmt.Errorf("hook command form: %w", err)
			}
			label := filepath.Base(form[0])
			if len(form) > 1 {
				label += " " + form[1]
			}
			b.latencyNote("hook, command form ("+label+"), "+name, cm, base, "exec /bin/true", 15*time.Millisecond)
		}
	}
	return nil
}

// planModeServer starts a server on a fresh database named db in the
// bench's directory, with session "bench" in plan mode, the one a host's
// hook calls name, and a client that keeps one connection to it, as a
// host does. The caller stops the server.
func (b *bench) planModeServer(db string) (*process, *http.Client, error) {
	srv, err := startServer(b.o, filepath.Join(b.dir, db), "normal")
	if err != nil {
		return nil, nil, err
	}
	if err := expect(b.c, "POST", srv.base+"/v1/sessions", strings.NewReader(`{"id":"bench","mode":"plan"}`), jsonHeader, 201); err != nil {
		srv.stop()
		return nil, nil, err
	}
	return srv, &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}, nil
}

// interleave runs n calls of a and of its baseline b, alternating, and
// returns their latencies.
func interleave(ctx context.Context, n int, a, b func() error) (la, lb []time.Duration, err error) {
	for i := 0; i < n && ctx.Err() == nil; i++ {
		for _, side := range []struct {
			f   func() error
			out *[]time.Duration
		}{{a, &la}, {b, &lb}} {
			begin := time.Now()
			if err := side.f(); err != nil {
				return nil, nil, err
			}
			*side.out = append(*side.out, time.Since(begin))
		}
	}
	return la, lb, ctx.Err()
}

func percentile(d []time.Duration, p float64) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

// latencyNote reports one latency scenario with its baseline and target.
func (b *bench) latencyNote(name string, d, base []time.Duration, baseName string, target time.Duration) {
	p99 := percentile(d, 0.99)
	verdict := "met"
	if p99 >= target {
		verdict = "MISSED"
	}
	ms := func(t time.Duration) string { return fmt.Sprintf("%.2f ms", float64(t)/float64(time.Millisecond)) }
	b.notes = append(b.notes, fmt.Sprintf("%s: p50 %s, p99 %s over %d calls (target p99 < %s: %s); baseline %s p50 %s, p99 %s",
		name, ms(percentile(d, 0.5)), ms(p99), len(d), ms(target), verdict, baseName, ms(percentile(base, 0.5)), ms(percentile(base, 0.99))))
}

func fileExists(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}
