package hosts

import (
	"os"
	"strings"
	"testing"

	"github.com/planserver/planserver/internal/hosttest"
)

func dump(t *testing.T, m *hosttest.Model) {
	if d := os.Getenv("HOSTS_DUMP"); d != "" {
		for i, r := range m.Requests() {
			_ = os.WriteFile(d+"/"+strings.ReplaceAll(t.Name(), "/", "_")+"-"+string(rune('a'+i))+".json", r.Body, 0o644)
		}
	}
}

func TestProbeExitPlanMode(t *testing.T) {
	if os.Getenv("HOSTS_PROBE") == "" {
		t.Skip("probe")
	}
	dir := project(t)
	model := hosttest.Start(t, hosttest.Script{Marker: "PROBE", Turns: []hosttest.Turn{
		{Calls: []hosttest.Call{{Name: "Write", InputFrom: func(b []byte) any {
			return map[string]any{"file_path": claudePlanFile(b), "content": "# Plan\n1. x\n"}
		}}}},
		hosttest.Use("ExitPlanMode", map[string]any{}),
		hosttest.Say("done"),
	}})
	egress := hosttest.StartEgress(t)
	extra := strings.Fields(os.Getenv("HOSTS_PROBE"))
	settings := `{"hooks":{"PreToolUse":[{"matcher":"*","hooks":[{"type":"command","command":"cat >> /tmp/dump/hookin.jsonl; echo '{}'"}]}]}}`
	out, err := claude(t, model, egress, dir, "PROBE: x", nil, append(extra, "--settings", settings)...)
	t.Logf("%v %s", err, out)
	r, _ := model.ToolResult(hosttest.CallID("anthropic", 0, 0, 0))
	t.Logf("result: %s", r)
	dump(t, model)
}

// claudePlanFile finds the plan file Claude Code names in its plan-mode
// instructions ("You should create your plan at PATH using the Write tool").
func claudePlanFile(body []byte) string {
	s := string(body)
	const before = "create your plan at "
	i := strings.Index(s, before)
	if i < 0 {
		return ""
	}
	s = s[i+len(before):]
	if j := strings.Index(s, " using the Write tool"); j >= 0 {
		return s[:j]
	}
	return ""
}
