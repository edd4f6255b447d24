// Claude Code 2.1 reads ExitPlanMode's plan from the plan file it names
// under ~/.claude/plans/, which the model writes first: the hook lets that
// one file through (internal/hosthook, claudePlanFile) and judges every other
// write as before.

package hosts

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/planserver/planserver/internal/hosttest"
)

// TestClaudeCodeExitPlanMode: Claude Code's own ExitPlanMode becomes
// planserver's review. In Claude Code 2.1 the model writes its plan to the
// plan file Claude Code names (the hook lets that one file through), then
// calls ExitPlanMode, whose hook input carries the file's text: planserver
// stores it as the session plan's next revision, requests a review, and
// denies the call with the review URL.
func TestClaudeCodeExitPlanMode(t *testing.T) {
	for _, form := range hookForms {
		t.Run(form, func(t *testing.T) {
			srv, dir := planSession(t)
			before := hashDir(t, dir)
			egress := hosttest.StartEgress(t)
			model := hosttest.Start(t, reviewScript()...)
			out, err := claude(t, model, egress, dir, "REVIEW-RUN: ask for review", hookEnv(srv.URL, "cc"),
				append([]string{"--settings", hookSettings(t, form, srv.URL, "cc")}, reviewArgs...)...)
			if err != nil {
				t.Fatalf("claude: %v\n%s", err, out)
			}
			if after := hashDir(t, dir); after != before {
				t.Errorf("ExitPlanMode changed the working directory:\n%s", listDir(t, dir))
			}
			for turn, want := range map[int]string{0: "File created", 1: "/ui/sessions/cc/review"} {
				r, ok := model.ToolResult(hosttest.CallID("anthropic", 0, turn, 0))
				if !ok || !strings.Contains(r, want) {
					t.Errorf("turn %d: the model got %q, want %q", turn, r, want)
				}
			}
			var plan struct {
				Content  string `json:"content"`
				Revision int    `json:"revision"`
			}
			srv.call("GET", "/v1/sessions/cc/plan", "", 200, &plan)
			if !strings.Contains(plan.Content, "Bump Version in src/util.go") {
				t.Errorf("the session plan after ExitPlanMode: %+v", plan)
			}
			var session struct {
				Review *struct {
					State        string `json:"state"`
					PlanRevision int    `json:"plan_revision"`
				} `json:"review"`
			}
			srv.call("GET", "/v1/sessions/cc", "", 200, &session)
			if session.Review == nil || session.Review.State != "pending" || session.Review.PlanRevision != plan.Revision {
				t.Errorf("the review after ExitPlanMode: %+v (plan revision %d)", session.Review, plan.Revision)
			}
		})
	}
}

// reviewScript asks for the review as Claude Code 2.1 does: the model
// writes its plan to the plan file Claude Code names, then calls
// ExitPlanMode, whose hook input carries the file's text as plan.
func reviewScript() []hosttest.Script {
	return []hosttest.Script{{Marker: "REVIEW-RUN", Turns: []hosttest.Turn{
		// Claude Code reads the plan from its plan file, which the model
		// writes first (the one file its own plan mode lets it write).
		{Calls: []hosttest.Call{{Name: "Write", InputFrom: func(request []byte) any {
			return map[string]any{"file_path": claudePlanFile(request), "content": "# Plan\n1. Bump Version in src/util.go\n2. Write marker.txt\n"}
		}}}},
		hosttest.Use("ExitPlanMode", map[string]any{}),
		hosttest.Say("waiting for the review"),
	}}}
}

// reviewArgs make Claude Code offer ExitPlanMode under -p: it is offered
// only in Claude Code's own plan mode, and, without a terminal, only with
// a permission prompt tool (stdio: the SDK's control channel, which the
// hook's answer leaves unused).
var reviewArgs = []string{"--permission-mode", "plan", "--permission-prompt-tool", "stdio"}

// claudePlanFile finds the plan file Claude Code names in its plan-mode
// instructions ("You should create your plan at PATH using the Write
// tool"), in the request the scripted model answers.
func claudePlanFile(request []byte) string {
	var req struct {
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	_ = json.Unmarshal(request, &req)
	const before, after = "create your plan at ", " using the Write tool"
	for _, m := range req.Messages {
		var text string
		var blocks []struct {
			Text string `json:"text"`
		}
		if json.Unmarshal(m.Content, &blocks) == nil {
			for _, b := range blocks {
				text += b.Text + "\n"
			}
		} else {
			_ = json.Unmarshal(m.Content, &text)
		}
		if _, rest, ok := strings.Cut(text, before); ok {
			if path, _, ok := strings.Cut(rest, after); ok {
				return path
			}
		}
	}
	return ""
}
