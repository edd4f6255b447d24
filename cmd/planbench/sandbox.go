package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
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
	if err := b.scopedLatency(ctx, forms[0]); err != nil {
		return err
	}
	return b.planModeShell(ctx)
}

// scopedLatency measures what scoped build adds to a sandboxed command
// over the read-only sandbox: the same bash -c true, run through form
// once with a scope's --allow-write entries (resolved by
// sandbox.WriteTargets at every start, then one Landlock rule each) and
// once read-only, alternating, pair by pair. Two scopes: a plan's usual
// few entries (a file, a folder, a glob), and a glob at the top of the
// project that opens each of the 200 files it matches. Target: p99 added
// under 5 ms.
func (b *bench) scopedLatency(ctx context.Context, form []string) error {
	project := filepath.Join(b.dir, "scoped-project")
	for _, d := range []string{"src", "docs", "web/js"} {
		if err := os.MkdirAll(filepath.Join(project, d), 0o755); err != nil {
			return err
		}
	}
	files := []string{"src/app.go", "docs/guide.md", "web/js/app.js"}
	for i := 0; i < 200; i++ {
		files = append(files, fmt.Sprintf("note%03d.md", i))
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(project, f), []byte("x\n"), 0o644); err != nil {
			return err
		}
	}
	label := filepath.Base(form[0])
	readOnly := append(append([]string(nil), form...), "--read-only", "--", "bash", "-c", "true")
	run := func(argv []string) func() error {
		return func() error {
			var out bytes.Buffer
			c := exec.CommandContext(ctx, argv[0], argv[1:]...)
			c.Dir = project
			c.Stdout, c.Stderr = &out, &out
			if err := c.Run(); err != nil {
				return fmt.Errorf("%q: %v: %s", argv, err, out.String())
			}
			return nil
		}
	}
	for _, sc := range []struct {
		name    string
		entries []string
	}{
		{"src/app.go, docs/, web/**/*.js", []string{"src/app.go", "docs/", "web/**/*.js"}},
		{"*.md at the top (200 files)", []string{"*.md"}},
	} {
		scoped := append(append([]string(nil), form...), "--read-only", "--project", project)
		for _, e := range sc.entries {
			scoped = append(scoped, "--allow-write", e)
		}
		scoped = append(scoped, "--build-scope", "--", "bash", "-c", "true")
		with, without, err := interleave(ctx, 300, run(scoped), run(readOnly))
		if err != nil {
			return fmt.Errorf("scoped sandbox: %w", err)
		}
		b.sandboxNoteVs(fmt.Sprintf("scoped build (%s), bash -c true with --allow-write %s", label, sc.name),
			with, without, "read-only sandbox", 5*time.Millisecond)
	}
	return nil
}

// planModeShell measures the whole of what plan mode adds to one shell
// command, as a host with an HTTP hook pays it: the hook's answer (POST
// /v1/hooks/claude-code, which rewrites the command into the sandbox)
// plus running the rewritten command, against running the command bare.
// Target: p99 added under 10 ms.
func (b *bench) planModeShell(ctx context.Context) error {
	srv, c, err := b.planModeServer("sandbox.db")
	if err != nil {
		return err
	}
	defer srv.stop()
	const command = "ls -la"
	in, err := json.Marshal(map[string]any{"session_id": "bench", "transcript_path": "/tmp/t.jsonl", "cwd": b.dir,
		"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": map[string]any{"command": command}, "tool_use_id": "t"})
	if err != nil {
		return err
	}
	run := func(line string) error {
		c := exec.CommandContext(ctx, "bash", "-c", line)
		c.Dir = b.dir
		var out bytes.Buffer
		c.Stdout, c.Stderr = &out, &out
		if err := c.Run(); err != nil {
			return fmt.Errorf("%q: %v: %s", line, err, out.String())
		}
		return nil
	}
	planned := func() error {
		resp, err := c.Post(srv.base+"/v1/hooks/claude-code?session=bench", "application/json", bytes.NewReader(in))
		if err != nil {
			return err
		}
		var answer struct {
			HookSpecificOutput struct {
				UpdatedInput struct {
					Command string `json:"command"`
				} `json:"updatedInput"`
			} `json:"hookSpecificOutput"`
		}
		err = json.NewDecoder(resp.Body).Decode(&answer)
		resp.Body.Close()
		if err != nil {
			return err
		}
		rewritten := answer.HookSpecificOutput.UpdatedInput.Command
		if !strings.Contains(rewritten, "--read-only") {
			return fmt.Errorf("the hook did not rewrite %q into the sandbox (is the sandbox available here?)", command)
		}
		return run(rewritten)
	}
	with, bare, err := interleave(ctx, 300, planned, func() error { return run(command) })
	if err != nil {
		return fmt.Errorf("plan-mode shell: %w", err)
	}
	b.sandboxNote("plan mode, "+command+": the hook's answer (HTTP form) and the sandboxed run", with, bare, 10*time.Millisecond)
	return nil
}

// sandboxNote reports one sandbox scenario: the sandboxed and bare runs'
// percentiles and the added time, pair by pair, against the target.
func (b *bench) sandboxNote(name string, in, bare []time.Duration, target time.Duration) {
	b.sandboxNoteVs(name, in, bare, "bare", target)
}

// sandboxNoteVs is sandboxNote against a baseline named baseName.
func (b *bench) sandboxNoteVs(name string, in, bare []time.Duration, baseName string, target time.Duration) {
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
	b.notes = append(b.notes, fmt.Sprintf("%s: added p50 %s, p99 %s over %d runs (target p99 added < %s: %s); sandboxed p50 %s, p99 %s; %s p50 %s, p99 %s",
		name, ms(percentile(added, 0.5)), ms(p99), len(in), ms(target), verdict,
		ms(percentile(in, 0.5)), ms(percentile(in, 0.99)), baseName, ms(percentile(bare, 0.5)), ms(percentile(bare, 0.99))))
}
