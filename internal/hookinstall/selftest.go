package hookinstall

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/client"
	"github.com/planserver/planserver/internal/hosthook"
	"github.com/planserver/planserver/internal/hosthookproto"
)

// SelfTestConversation is the host conversation id the canary calls carry:
// with --parent, the child of the parent that stands for it is where the
// self-test's calls are recorded.
const SelfTestConversation = "planserver-self-test"

// answer is a host's hook output, read back: the decision ("" for none)
// and the reason the model would get.
type answer struct {
	decision, reason string
	exit             int
	stderr           string
}

// SelfTest sends canary tool calls through the installed hooks exactly as
// the host would (the command through sh -c, the opencode plugin's
// request over HTTP): a Write must be denied in plan mode and get no
// decision in build mode; a Read and the report of its run must pass, and
// the session's enforcement record must show both. It prints each result
// and returns an error naming what failed.
func SelfTest(ctx context.Context, o Options, m Manifest) error {
	o.defaults()
	cl, err := newClient(m.Server, o.Token)
	if err != nil {
		return err
	}
	bound := m.Session
	if bound == "" {
		bound = m.Parent
	}
	sess, err := cl.GetSession(ctx, bound)
	if err != nil {
		return fmt.Errorf("self-test: look up session %q: %w", bound, err)
	}
	plan := sess.EffectiveMode == api.ModePlan
	dir := o.Base
	if dir == "" {
		dir = o.Home
	}
	id := func(what string) string {
		b := make([]byte, 6)
		_, _ = rand.Read(b)
		return SelfTestConversation + "-" + what + "-" + hex.EncodeToString(b)
	}
	run := func(after bool, raw []byte) (answer, error) {
		if o.Host == hosthook.OpenCode {
			return askPlugin(ctx, m, o.Token, raw)
		}
		command := m.Before
		if after {
			command = m.After
		}
		return runCommand(ctx, o.Host, command, raw, dir, o.Env)
	}
	var failed []string
	fail := func(format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		failed = append(failed, msg)
		fmt.Fprintln(o.Out, "self-test FAILED: "+msg)
	}
	// A Write: denied in plan mode, no decision in build mode.
	w, err := run(false, canary(o.Host, false, "write", id("write"), filepath.Join(dir, ".planserver-self-test")))
	switch {
	case err != nil:
		fail("the hook could not be run: %v", err)
	case w.exit != 0:
		fail("the hook command exited %d, so its fallback denied the call: %s", w.exit, strings.TrimSpace(w.stderr))
	case strings.Contains(w.reason, "[planserver hook]"):
		fail("the hook could not ask planserver: %s", w.reason)
	case plan && w.decision == "deny" && strings.Contains(w.reason, "plan mode"):
		fmt.Fprintf(o.Out, "self-test: a Write through the installed hook was denied, as plan mode must (session %q is in plan mode)\n", bound)
	case !plan && w.decision == "":
		fmt.Fprintf(o.Out, "self-test: a Write through the installed hook got no decision, as build mode must (session %q is in build mode)\n", bound)
	default:
		want := "no decision"
		if plan {
			want = "a plan-mode denial"
		}
		fail("a Write got %q (%s), want %s", w.decision, w.reason, want)
	}
	// A Read and the report of its run: judged, so no unjudged run.
	readID := id("read")
	target := filepath.Join(dir, ".planserver-self-test")
	if r, err := run(false, canary(o.Host, false, "read", readID, target)); err != nil || r.exit != 0 || r.decision == "deny" {
		fail("a Read through the installed hook: %q %q (exit %d) %v", r.decision, r.reason, r.exit, err)
	}
	if r, err := run(true, canary(o.Host, true, "read", readID, target)); err != nil || r.exit != 0 || r.decision != "" {
		fail("the report of a run through the installed after-tool hook: %q %q (exit %d, %s) %v", r.decision, r.reason, r.exit, strings.TrimSpace(r.stderr), err)
	} else {
		fmt.Fprintln(o.Out, "self-test: a Read and the report of its run went through the installed hooks")
	}
	// planserver saw both, from this adapter.
	seen := sess
	if m.Session == "" {
		seen = nil
		list, err := cl.ListSessions(ctx, client.SessionQuery{ParentID: m.Parent, ExternalID: SelfTestConversation})
		if err == nil && len(list.Sessions) == 1 {
			seen = list.Sessions[0]
		}
	}
	if seen != nil {
		seen, err = cl.GetSession(ctx, seen.ID)
	}
	adapter := "command"
	if o.Host == hosthook.OpenCode {
		adapter = "plugin"
	}
	switch {
	case err != nil || seen == nil:
		fail("could not read back the session the canary calls acted for: %v", err)
	case !enforced(seen.Enforcement, string(o.Host), adapter):
		fail("session %q records no decision and report from %s (%s): %+v", seen.ID, o.Host, adapter, seen.Enforcement)
	}
	if len(failed) > 0 {
		return fmt.Errorf("self-test failed: %s; run planserver hook doctor %s", strings.Join(failed, "; "), o.Host)
	}
	fmt.Fprintln(o.Out, "self-test passed")
	return nil
}

func enforced(list []api.Enforcement, host, adapter string) bool {
	for _, e := range list {
		if e.Host == host && e.Adapter == adapter && e.LastDecisionAt != nil && e.LastReportAt != nil {
			return true
		}
	}
	return false
}

// canary is host h's hook input for a Write or Read of file, before it
// runs or (after) the report of its run, in conversation
// SelfTestConversation with call id callID.
func canary(h hosthook.Host, after bool, kind, callID, file string) []byte {
	conv := SelfTestConversation
	var in map[string]any
	switch h {
	case hosthook.ClaudeCode:
		tool, input := "Write", map[string]any{"file_path": file, "content": "planserver self-test\n"}
		if kind == "read" {
			tool, input = "Read", map[string]any{"file_path": file}
		}
		in = map[string]any{"session_id": conv, "transcript_path": "", "cwd": filepath.Dir(file), "permission_mode": "default",
			"hook_event_name": "PreToolUse", "tool_name": tool, "tool_input": input, "tool_use_id": callID}
		if after {
			in["hook_event_name"], in["tool_response"] = "PostToolUse", map[string]any{"success": true}
		}
	case hosthook.GeminiCLI:
		tool, input := "write_file", map[string]any{"file_path": file, "content": "planserver self-test\n"}
		if kind == "read" {
			tool, input = "read_file", map[string]any{"file_path": file, "self_test": callID}
		}
		in = map[string]any{"session_id": conv, "transcript_path": "", "cwd": filepath.Dir(file), "hook_event_name": "BeforeTool",
			"timestamp": time.Now().UTC().Format(time.RFC3339), "tool_name": tool, "tool_input": input}
		if after {
			in["hook_event_name"], in["tool_response"] = "AfterTool", map[string]any{"llmContent": ""}
		}
	case hosthook.Cursor:
		tool, input := "Write", map[string]any{"file_path": file, "contents": "planserver self-test\n"}
		if kind == "read" {
			tool, input = "Read", map[string]any{"file_path": file}
		}
		in = map[string]any{"hook_event_name": "preToolUse", "conversation_id": conv, "generation_id": callID,
			"workspace_roots": []string{filepath.Dir(file)}, "tool_name": tool, "tool_input": input, "tool_use_id": callID}
		if after {
			in["hook_event_name"], in["tool_output"] = "postToolUse", ""
		}
	default:
		tool, args := "write", map[string]any{"filePath": file, "content": "planserver self-test\n"}
		if kind == "read" {
			tool, args = "read", map[string]any{"filePath": file}
		}
		in = map[string]any{"tool": tool, "sessionID": conv, "callID": callID, "args": args}
		if after {
			in["event"] = "tool.execute.after"
		}
	}
	raw, _ := json.Marshal(in)
	return raw
}

// runCommand runs a hook command through sh -c, as the hosts run them,
// with raw on stdin, in dir, and reads its answer.
func runCommand(ctx context.Context, h hosthook.Host, command string, raw []byte, dir string, env []string) (answer, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", command)
	cmd.Dir, cmd.Env = dir, env
	var out, errOut bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(raw), &out, &errOut
	err := cmd.Run()
	a := answer{stderr: errOut.String()}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		a.exit = exit.ExitCode()
		a.decision, a.reason = "deny", strings.TrimSpace(errOut.String())
		return a, nil
	case err != nil:
		return a, err
	}
	a.decision, a.reason, err = readAnswer(h, out.Bytes())
	return a, err
}

// askPlugin sends raw as the opencode plugin does.
func askPlugin(ctx context.Context, m Manifest, token string, raw []byte) (answer, error) {
	q := url.Values{}
	if m.Session != "" {
		q.Set("session", m.Session)
	} else {
		q.Set("parent", m.Parent)
	}
	q.Set("mcp", MCPName)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(m.Server, "/")+"/v1/hooks/opencode?"+q.Encode(), bytes.NewReader(raw))
	if err != nil {
		return answer{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(hosthookproto.AdapterHeader, "plugin")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != 200 {
		return answer{}, fmt.Errorf("planserver answered %d: %.200s", resp.StatusCode, body)
	}
	var a answer
	a.decision, a.reason, err = readAnswer(hosthook.OpenCode, body)
	return a, err
}

// readAnswer reads host h's hook output: allow, deny or "" (no decision),
// and the reason the model gets.
func readAnswer(h hosthook.Host, out []byte) (string, string, error) {
	var m map[string]any
	if err := json.Unmarshal(bytes.TrimSpace(out), &m); err != nil {
		return "", "", fmt.Errorf("the hook printed no JSON object: %.200q", out)
	}
	str := func(m map[string]any, k string) string { s, _ := m[k].(string); return s }
	switch h {
	case hosthook.ClaudeCode:
		if o, _ := m["hookSpecificOutput"].(map[string]any); o != nil {
			return str(o, "permissionDecision"), str(o, "permissionDecisionReason"), nil
		}
		if str(m, "decision") == "block" {
			return "deny", str(m, "reason"), nil
		}
		return "", "", nil
	case hosthook.GeminiCLI:
		return str(m, "decision"), str(m, "reason"), nil
	case hosthook.Cursor:
		return str(m, "permission"), str(m, "agent_message"), nil
	}
	d := str(m, "decision")
	if d == "none" {
		d = ""
	}
	return d, str(m, "reason"), nil
}
