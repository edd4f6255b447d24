package hosttest

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

func post(t *testing.T, url, body string) string {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// The turn comes from the ids the conversation carries, the script from
// the marker; a sub-agent's first request finds its own script although
// its parent's marker is older; a side call without tools plays nothing.
func TestModelPlaysTurnsFromTheConversation(t *testing.T) {
	m := Start(t,
		Script{Marker: "MAIN", Turns: []Turn{Use("Bash", map[string]any{"command": "ls"}), Use("Agent", map[string]any{"prompt": "SUB go"}), Say("main done")}},
		Script{Marker: "SUB", Turns: []Turn{Use("Bash", map[string]any{"command": "echo"}), Say("sub done")}},
	)
	tools := `"tools":[{"name":"Bash"}],"stream":true`
	first := post(t, m.URL+"/v1/messages", `{"messages":[{"role":"user","content":"MAIN: go"}],`+tools+`}`)
	for _, want := range []string{"event: message_start", `"id":"toolu_s0t0n0"`, `"name":"Bash"`, `input_json_delta`, `"partial_json":"{\"command\":\"ls\"}"`, `"stop_reason":"tool_use"`, "event: message_stop"} {
		if !strings.Contains(first, want) {
			t.Errorf("first answer lacks %s:\n%s", want, first)
		}
	}
	second := post(t, m.URL+"/v1/messages", `{"messages":[{"role":"user","content":"MAIN: go"},
		{"role":"assistant","content":[{"type":"tool_use","id":"toolu_s0t0n0","name":"Bash","input":{}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_s0t0n0","content":[{"type":"text","text":"a.go\nb.go"}]}]}],`+tools+`}`)
	if !strings.Contains(second, `"id":"toolu_s0t1n0"`) || !strings.Contains(second, `"name":"Agent"`) {
		t.Errorf("second answer is not turn 1 (Agent):\n%s", second)
	}
	sub := post(t, m.URL+"/v1/messages", `{"messages":[{"role":"user","content":"SUB go (MAIN asked)"}],`+tools+`}`)
	if !strings.Contains(sub, `"id":"toolu_s1t0n0"`) {
		t.Errorf("the sub-agent's first request did not play its own script:\n%s", sub)
	}
	side := post(t, m.URL+"/v1/messages", `{"messages":[{"role":"user","content":"MAIN: title this"}]}`)
	if !strings.Contains(side, `"text":"ok"`) || strings.Contains(side, "tool_use") {
		t.Errorf("a request without tools should get plain text:\n%s", side)
	}
	if out, ok := m.ToolResult("toolu_s0t0n0"); !ok || out != "a.go\nb.go" {
		t.Errorf("ToolResult = %q, %v", out, ok)
	}
	if !m.Played(0, 1) || m.Played(0, 2) || !m.Played(1, 0) {
		t.Errorf("Played: %+v", m.Requests())
	}
}

// The same script over chat completions, Responses and Gemini, each in its
// own wire format, and their tool results read back.
func TestModelSpeaksEachAPI(t *testing.T) {
	m := Start(t, Script{Marker: "GO", Turns: []Turn{
		{Calls: []Call{{NameFrom: ToolEndingIn("write_session_plan"), Input: map[string]any{"content": "x"}}}},
		Say("done"),
	}})
	chat := post(t, m.URL+"/v1/chat/completions", `{"stream":true,"messages":[{"role":"user","content":"GO"}],"tools":[{"type":"function","function":{"name":"planserver_write_session_plan"}}]}`)
	if !strings.Contains(chat, `"id":"call_s0t0n0"`) || !strings.Contains(chat, `"name":"planserver_write_session_plan"`) ||
		!strings.Contains(chat, `"finish_reason":"tool_calls"`) || !strings.HasSuffix(chat, "data: [DONE]\n\n") {
		t.Errorf("chat completions answer:\n%s", chat)
	}
	resp := post(t, m.URL+"/v1/responses", `{"input":[{"type":"message","role":"developer","content":"x"},{"type":"message","role":"user","content":[{"type":"input_text","text":"GO"}]}],
		"tools":[{"type":"namespace","name":"mcp__planserver","tools":[{"type":"function","name":"write_session_plan"}]}]}`)
	if !strings.Contains(resp, `"namespace":"mcp__planserver"`) || !strings.Contains(resp, `"name":"write_session_plan"`) || !strings.Contains(resp, "event: response.completed") {
		t.Errorf("Responses answer:\n%s", resp)
	}
	gem := post(t, m.URL+"/v1beta/models/g:streamGenerateContent?alt=sse", `{"contents":[{"role":"user","parts":[{"text":"GO"}]}],"tools":[{"functionDeclarations":[{"name":"mcp_planserver_write_session_plan"}]}]}`)
	if !strings.Contains(gem, `"functionCall":{"args":{"content":"x"},"id":"call_s0t0n0","name":"mcp_planserver_write_session_plan"}`) {
		t.Errorf("Gemini answer:\n%s", gem)
	}
	post(t, m.URL+"/v1/chat/completions", `{"messages":[{"role":"user","content":"GO"},{"role":"tool","tool_call_id":"call_s0t0n0","content":"chat out"}],"tools":[{"type":"function","function":{"name":"f"}}]}`)
	post(t, m.URL+"/v1/responses", `{"input":[{"type":"function_call_output","call_id":"call_r","output":"resp out"}],"tools":[{"type":"function","name":"f"}]}`)
	for id, want := range map[string]string{"call_s0t0n0": "chat out", "call_r": "resp out"} {
		if out, ok := m.ToolResult(id); !ok || out != want {
			t.Errorf("ToolResult(%s) = %q, %v; want %q", id, out, ok, want)
		}
	}
}

// The egress proxy records where a client meant to go and refuses; the
// request never leaves loopback (the proxy dials nothing).
func TestEgressRecordsAndRefuses(t *testing.T) {
	e := StartEgress(t)
	proxy, _ := url.Parse(e.URL)
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxy)}}
	resp, err := client.Get("http://telemetry.example.invalid/v1/batch")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("status %d, want 403", resp.StatusCode)
	}
	if _, err := client.Get("https://updates.example.invalid/"); err == nil {
		t.Error("a CONNECT through the proxy succeeded")
	}
	got := e.Targets()
	if len(got) != 2 || got[0] != "GET http://telemetry.example.invalid/v1/batch" || got[1] != "updates.example.invalid:443" {
		t.Errorf("Targets = %q", got)
	}
}
