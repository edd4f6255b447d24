package http_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/apitest"
	"github.com/planserver/planserver/internal/sessions"
)

// reportRun posts a host's after-tool report to the HTTP form: it is always
// answered with no decision, in the host's format.
func reportRun(t *testing.T, env *apitest.Env, host, query string, raw []byte) {
	t.Helper()
	dec, out := hookCall(t, env, host, query, raw)
	if perm, _ := verdict(t, host, out); dec != "none" || perm != "" {
		t.Fatalf("a report of %s was answered %q %v, want no decision", host, dec, out)
	}
}

// postOf turns a Claude Code PreToolUse fixture into the PostToolUse
// report of the same call.
func postOf(t *testing.T, raw []byte) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	m["hook_event_name"] = "PostToolUse"
	m["tool_response"] = map[string]any{"success": true}
	out, _ := json.Marshal(m)
	return out
}

// TestHookUnjudgedRuns: each after-tool report is matched to the decision
// made before the run. A run planserver never decided, or a run of a tool
// it denied, is a tool_call.unjudged event (host, tool, agent, session,
// tool_use_id), counted on the adapter's enforcement record and in
// planserver_hook_unjudged_runs_total; a judged run is none of these, and
// a report never blocks anything.
func TestHookUnjudgedRuns(t *testing.T) {
	env := apitest.New(t)
	createSession(t, env, map[string]any{"id": "s", "mode": "plan"})
	createSession(t, env, map[string]any{"id": "b"})

	// Judged: a Read allowed, then run; a Bash ls sandboxed (Gemini CLI,
	// which sends no id: matched by content, the rewritten input as run).
	read := fixture(t, "claude-code", "read")
	if dec, _ := hookCall(t, env, "claude-code", "session=s", read); dec != "allow" {
		t.Fatalf("Read: %s", dec)
	}
	reportRun(t, env, "claude-code", "session=s", postOf(t, read))
	_, ls := hookCall(t, env, "gemini-cli", "session=s", fixture(t, "gemini-cli", "shell_ls"))
	var gem map[string]any
	_ = json.Unmarshal(fixture(t, "gemini-cli", "shell_ls"), &gem)
	gem["hook_event_name"] = "AfterTool"
	if hso, _ := ls["hookSpecificOutput"].(map[string]any); hso != nil {
		gem["tool_input"] = hso["tool_input"] // what Gemini CLI runs, and reports
	}
	raw, _ := json.Marshal(gem)
	reportRun(t, env, "gemini-cli", "session=s", raw)
	// Build mode decides nothing, and its runs are judged all the same.
	reportRun(t, env, "claude-code", "session=b", postOf(t, func() []byte {
		w := fixture(t, "claude-code", "write")
		hookCall(t, env, "claude-code", "session=b", w)
		return w
	}()))
	if got := eventData(t, env, "tool_call.unjudged", "s"); len(got) != 0 {
		t.Fatalf("judged runs made tool_call.unjudged events: %v", got)
	}

	// Unjudged: a Write reported with no decision before it (the
	// before-hook removed); a Write run although denied (a host that
	// ignored the answer); the same report again (its decision used up).
	write := fixture(t, "claude-code", "write")
	reportRun(t, env, "claude-code", "session=s", postOf(t, fixture(t, "claude-code", "subagent_write")))
	if dec, _ := hookCall(t, env, "claude-code", "session=s", write); dec != "deny" {
		t.Fatalf("Write in plan mode: %s", dec)
	}
	reportRun(t, env, "claude-code", "session=s", postOf(t, write))
	reportRun(t, env, "claude-code", "session=s", postOf(t, write))
	got := eventData(t, env, "tool_call.unjudged", "s")
	if len(got) != 3 {
		t.Fatalf("tool_call.unjudged events = %d, want 3: %v", len(got), got)
	}
	want := []map[string]any{
		{"host": "claude-code", "tool": "Write", "agent": "a1b2c3", "agent_type": "general-purpose", "session": "s",
			"tool_use_id": "toolu_01SUBW", "reason": "no_decision", "effective_mode": "plan", "adapter": "http"},
		{"tool": "Write", "agent": "", "tool_use_id": "toolu_01ABC123", "reason": "denied"},
		{"tool": "Write", "tool_use_id": "toolu_01ABC123", "reason": "no_decision"},
	}
	for i, w := range want {
		for k, v := range w {
			if got[i][k] != v {
				t.Errorf("unjudged event %d: %s = %v, want %v (%v)", i, k, got[i][k], v, got[i])
			}
		}
	}
	s := getSession(t, env, "s")
	var cc *api.Enforcement
	for i := range s.Enforcement {
		if s.Enforcement[i].Host == "claude-code" {
			cc = &s.Enforcement[i]
		}
	}
	if cc == nil || cc.UnjudgedRuns != 3 || cc.LastUnjudged == nil || cc.LastUnjudged.Reason != "no_decision" ||
		cc.LastReportAt == nil || cc.LastDecisionAt == nil {
		t.Fatalf("enforcement after unjudged runs: %+v", s.Enforcement)
	}
	r := env.Call("GET", "/metrics", nil)
	for _, line := range []string{`planserver_hook_unjudged_runs_total{host="claude-code",reason="denied"} 1`,
		`planserver_hook_unjudged_runs_total{host="claude-code",reason="no_decision"} 2`,
		`planserver_hook_unjudged_runs_total{host="gemini-cli",reason="no_decision"} 0`} {
		if !strings.Contains(string(r.Body), line) {
			t.Errorf("/metrics lacks %s", line)
		}
	}

	// A report nobody can read, or of an unknown session, still blocks
	// nothing (and records nothing).
	reportRun(t, env, "claude-code", "session=s", []byte(`{"hook_event_name":"PostToolUse"}`))
	reportRun(t, env, "claude-code", "session=nobody", postOf(t, write))
	reportRun(t, env, "opencode", "session=s", []byte(`{"event":"tool.execute.after","tool":7}`))
	if n := len(eventData(t, env, "tool_call.unjudged", "s")); n != 3 {
		t.Errorf("unreadable reports made events: %d", n)
	}

	// A decision waits for its report HookDecisionLifetime, then is pruned:
	// a report after that finds none.
	edit := fixture(t, "claude-code", "edit")
	hookCall(t, env, "claude-code", "session=b", edit)
	if n, err := env.App.PruneHookDecisions(context.Background(), time.Now().Add(sessions.HookDecisionLifetime-time.Minute)); err != nil || n != 0 {
		t.Fatalf("prune within the lifetime: %d %v", n, err)
	}
	if n, err := env.App.PruneHookDecisions(context.Background(), time.Now().Add(sessions.HookDecisionLifetime+time.Minute)); err != nil || n < 1 {
		t.Fatalf("prune after the lifetime: %d %v", n, err)
	}
	reportRun(t, env, "claude-code", "session=b", postOf(t, edit))
	if got := eventData(t, env, "tool_call.unjudged", "b"); len(got) != 1 || got[0]["effective_mode"] != "build" {
		t.Errorf("a report after its decision was pruned: %v", got)
	}
	if n := countRows(t, env, "hook_decisions", "1 = 1"); n != 0 {
		t.Errorf("hook_decisions left: %d", n)
	}
}
