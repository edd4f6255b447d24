// Package hosttest is a scripted model endpoint for driving real agent
// hosts (Claude Code, opencode, Codex, Gemini CLI) in tests: one loopback
// HTTP server that speaks the Anthropic Messages API, the OpenAI chat
// completions API, the OpenAI Responses API and the Gemini API, each
// streaming as the hosts expect, and answers every request from a script
// instead of a model. It is imported only by tests.
//
// A script is a list of turns ("call Bash with {command: ls}", "say
// done"). The server is stateless, like a real model API: the host sends
// the whole conversation each time, so the turn to play is read from the
// request itself. Every tool call id the server hands out names its script
// and turn (toolu_s0t2n0, call_s0t2n0), and the next turn is one past the
// highest turn whose id the conversation carries. A conversation without
// ids is matched to a script by its marker, a word the script's first
// prompt contains (the test's -p prompt, or the prompt a scripted Agent
// call gives its sub-agent). A request that matches no script, or offers
// no tools (a host's side calls: titles, summaries), gets a short text
// answer and plays no turn.
//
// Every request is recorded, so a test reads what reached the model: the
// output of a tool call (ToolResult) is how it checks that `ls` ran, or
// that a write was refused with planserver's reason.
package hosttest

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Turn is one answer of the model: text, tool calls, or both. A turn with
// no tool calls ends the conversation (the host prints the text and stops).
type Turn struct {
	Text  string
	Calls []Call
}

// Call is one tool call: the tool's name as the host spells it (Claude
// Code's Bash, Write, Edit, Agent; opencode's bash, write; an MCP tool as
// the host names it) and its input, marshalled to JSON as is.
type Call struct {
	Name  string
	Input any
	// InputFrom, when set, makes the input from the request being
	// answered: for inputs only the host knows, such as the plan file
	// path Claude Code names in its plan-mode instructions.
	InputFrom func(request []byte) any
	// NameFrom, when set, picks the tool's name from the request: for a
	// tool whose name the host makes up (an MCP tool, which each host
	// prefixes its own way); ToolEndingIn is the usual one.
	NameFrom func(request []byte) string
}

// ToolEndingIn picks, from the tools a request offers the model, the one
// whose name ends in suffix (write_session_plan finds Claude Code's
// mcp__planserver__write_session_plan and opencode's
// planserver_write_session_plan alike); "" when none does, which a host
// reports as an unknown tool and the test sees in the tool result.
func ToolEndingIn(suffix string) func(request []byte) string {
	return func(request []byte) string {
		for _, name := range OfferedTools(request) {
			if strings.HasSuffix(name, suffix) {
				return name
			}
		}
		return ""
	}
}

// OfferedTools lists the names of the tools a request offers the model
// (Anthropic, chat completions, Responses and Gemini requests).
func OfferedTools(request []byte) []string {
	var req struct {
		Tools []struct {
			Type  string `json:"type"`
			Name  string `json:"name"`
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"` // a Responses namespace (Codex's MCP servers)
			Function *struct {
				Name string `json:"name"`
			} `json:"function"`
			FunctionDeclarations []struct {
				Name string `json:"name"`
			} `json:"functionDeclarations"`
		} `json:"tools"`
	}
	_ = json.Unmarshal(request, &req)
	var names []string
	for _, t := range req.Tools {
		switch {
		case t.Type == "namespace":
			// Codex calls a namespaced tool by its joined name.
			for _, f := range t.Tools {
				names = append(names, t.Name+"__"+f.Name)
			}
		case t.Name != "":
			names = append(names, t.Name)
		case t.Function != nil:
			names = append(names, t.Function.Name)
		}
		for _, f := range t.FunctionDeclarations {
			names = append(names, f.Name)
		}
	}
	return names
}

// Script is the turns of one conversation. Marker is a word (unique to the
// test) that the conversation's first user message contains.
type Script struct {
	Marker string
	Turns  []Turn
}

// Say is a turn that only answers text.
func Say(text string) Turn { return Turn{Text: text} }

// Use is a turn that calls one tool.
func Use(name string, input any) Turn { return Turn{Calls: []Call{{Name: name, Input: input}}} }

// Request is one request the model endpoint received.
type Request struct {
	Path   string
	Body   []byte
	Script int // the script it played, -1 for none
	Turn   int // the turn it played, -1 for none
}

// Model is the scripted endpoint. URL is its base (http://127.0.0.1:PORT).
type Model struct {
	URL     string
	scripts []Script

	mu       sync.Mutex
	requests []Request
}

// Start serves scripts on a free loopback port until the test ends.
func Start(t testing.TB, scripts ...Script) *Model {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m := &Model{URL: "http://" + ln.Addr().String(), scripts: scripts}
	srv := &http.Server{Handler: m}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return m
}

// Requests returns what the endpoint has received so far.
func (m *Model) Requests() []Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Request(nil), m.requests...)
}

// Played reports whether the endpoint has played turn turn of script
// script: the host came back for it.
func (m *Model) Played(script, turn int) bool {
	for _, r := range m.Requests() {
		if r.Script == script && r.Turn == turn {
			return true
		}
	}
	return false
}

// CallID is the id the endpoint gives call n of turn turn of script
// script, in the form of the API at path (toolu_… for Anthropic, call_…
// otherwise).
func CallID(api string, script, turn, n int) string {
	prefix := "call_"
	if api == "anthropic" {
		prefix = "toolu_"
	}
	return fmt.Sprintf("%ss%dt%dn%d", prefix, script, turn, n)
}

var idPattern = regexp.MustCompile(`(?:toolu|call)_s(\d+)t(\d+)n\d+`)

// locate finds the script and turn a request plays: -1, -1 for a request
// that belongs to no script.
func (m *Model) locate(body []byte, hasTools bool) (int, int) {
	if !hasTools {
		return -1, -1
	}
	script, turn := -1, -1
	for _, match := range idPattern.FindAllSubmatch(body, -1) {
		s, _ := strconv.Atoi(string(match[1]))
		n, _ := strconv.Atoi(string(match[2]))
		if s >= len(m.scripts) {
			continue
		}
		if script == -1 || s == script && n > turn {
			script, turn = s, n
		}
	}
	if script >= 0 {
		return script, turn + 1
	}
	// A first request: the marker decides. The last script listed wins,
	// so a sub-agent's script (listed after its parent's) is found even
	// where its prompt quotes the parent's marker.
	for i := len(m.scripts) - 1; i >= 0; i-- {
		if m.scripts[i].Marker != "" && firstUserText(body, m.scripts[i].Marker) {
			return i, 0
		}
	}
	return -1, -1
}

// firstUserText reports whether a user message of an Anthropic,
// chat-completions, Responses or Gemini request body contains marker (not
// always the first: Codex sends its environment as a user message before
// the prompt). It is asked only of a conversation that carries no call ids
// yet, so a marker quoted later (a sub-agent's prompt in its parent's
// history) cannot mislead it.
func firstUserText(body []byte, marker string) bool {
	var req struct {
		Messages []json.RawMessage `json:"messages"` // Anthropic, chat completions
		Input    json.RawMessage   `json:"input"`    // Responses
		Contents []json.RawMessage `json:"contents"` // Gemini
	}
	if json.Unmarshal(body, &req) != nil {
		return false
	}
	var items []json.RawMessage
	switch {
	case len(req.Messages) > 0:
		items = req.Messages
	case len(req.Contents) > 0:
		items = req.Contents
	case len(req.Input) > 0:
		if json.Unmarshal(req.Input, &items) != nil {
			return strings.Contains(string(req.Input), marker)
		}
	}
	for _, raw := range items {
		var msg struct {
			Role string `json:"role"`
		}
		_ = json.Unmarshal(raw, &msg)
		if msg.Role == "user" && strings.Contains(string(raw), marker) {
			return true
		}
	}
	return false
}

func (m *Model) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var probe struct {
		Tools  []json.RawMessage `json:"tools"`
		Stream bool              `json:"stream"`
	}
	_ = json.Unmarshal(body, &probe)
	path := r.URL.Path
	api := ""
	switch {
	case strings.HasSuffix(path, "/messages/count_tokens"):
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"input_tokens":100}`)
		m.record(path, body, -1, -1)
		return
	case strings.HasSuffix(path, "/messages"):
		api = "anthropic"
	case strings.HasSuffix(path, "/chat/completions"):
		api = "chat"
	case strings.HasSuffix(path, "/responses"):
		api = "responses"
	case strings.Contains(path, ":streamGenerateContent") || strings.Contains(path, ":generateContent"):
		api = "gemini"
		probe.Stream = strings.Contains(path, ":streamGenerateContent")
	case strings.HasSuffix(path, "/models"):
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"object":"list","data":[{"id":"scripted","object":"model","created":0,"owned_by":"planserver-tests"}],"models":[]}`)
		m.record(path, body, -1, -1)
		return
	default:
		m.record(path, body, -1, -1)
		http.Error(w, `{"error":{"type":"not_found_error","message":"the scripted model serves only model calls"}}`, http.StatusNotFound)
		return
	}
	script, turn := m.locate(body, len(probe.Tools) > 0)
	m.record(path, body, script, turn)
	answer := Say("ok")
	if script >= 0 {
		if turn < len(m.scripts[script].Turns) {
			answer = m.scripts[script].Turns[turn]
		} else {
			answer = Say("done")
		}
	}
	var calls []wireCall
	for n, c := range answer.Calls {
		in := c.Input
		if c.InputFrom != nil {
			in = c.InputFrom(body)
		}
		name := c.Name
		if c.NameFrom != nil {
			name = c.NameFrom(body)
		}
		input, err := json.Marshal(in)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		calls = append(calls, wireCall{id: CallID(api, script, turn, n), name: name, input: input})
	}
	switch api {
	case "anthropic":
		writeAnthropic(w, answer.Text, calls, probe.Stream)
	case "chat":
		writeChat(w, answer.Text, calls, probe.Stream)
	case "responses":
		writeResponses(w, answer.Text, calls)
	case "gemini":
		writeGemini(w, answer.Text, calls, probe.Stream)
	}
}

func (m *Model) record(path string, body []byte, script, turn int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.requests = append(m.requests, Request{Path: path, Body: body, Script: script, Turn: turn})
	// HOSTTEST_DUMP names a directory to keep every request in, for
	// finding out what a new host version sends.
	if dir := os.Getenv("HOSTTEST_DUMP"); dir != "" {
		_ = os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s-%d.json", strings.ReplaceAll(strings.Trim(path, "/"), "/", "_"), len(m.requests))), body, 0o644)
	}
}

type wireCall struct {
	id, name string
	input    json.RawMessage
}

// sse writes one server-sent event (event may be empty) and flushes it.
func sse(w http.ResponseWriter, event string, data any) {
	b, _ := json.Marshal(data)
	if event != "" {
		fmt.Fprintf(w, "event: %s\n", event)
	}
	fmt.Fprintf(w, "data: %s\n\n", b)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

type obj = map[string]any

// writeAnthropic answers a Messages API call: message_start, one content
// block per text and tool_use (the input streamed as input_json_delta),
// message_delta with the stop reason, message_stop.
func writeAnthropic(w http.ResponseWriter, text string, calls []wireCall, stream bool) {
	stop := "end_turn"
	if len(calls) > 0 {
		stop = "tool_use"
	}
	var content []obj
	if text != "" || len(calls) == 0 {
		content = append(content, obj{"type": "text", "text": text})
	}
	for _, c := range calls {
		content = append(content, obj{"type": "tool_use", "id": c.id, "name": c.name, "input": c.input})
	}
	usage := obj{"input_tokens": 100, "output_tokens": 10, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
	msg := obj{"id": "msg_scripted", "type": "message", "role": "assistant", "model": "claude-scripted",
		"content": content, "stop_reason": stop, "stop_sequence": nil, "usage": usage}
	if !stream {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(msg)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	start := obj{}
	for k, v := range msg {
		start[k] = v
	}
	start["content"] = []obj{}
	start["stop_reason"] = nil
	sse(w, "message_start", obj{"type": "message_start", "message": start})
	for i, block := range content {
		if block["type"] == "text" {
			sse(w, "content_block_start", obj{"type": "content_block_start", "index": i, "content_block": obj{"type": "text", "text": ""}})
			sse(w, "content_block_delta", obj{"type": "content_block_delta", "index": i, "delta": obj{"type": "text_delta", "text": block["text"]}})
		} else {
			sse(w, "content_block_start", obj{"type": "content_block_start", "index": i,
				"content_block": obj{"type": "tool_use", "id": block["id"], "name": block["name"], "input": obj{}}})
			sse(w, "content_block_delta", obj{"type": "content_block_delta", "index": i,
				"delta": obj{"type": "input_json_delta", "partial_json": string(block["input"].(json.RawMessage))}})
		}
		sse(w, "content_block_stop", obj{"type": "content_block_stop", "index": i})
	}
	sse(w, "message_delta", obj{"type": "message_delta", "delta": obj{"stop_reason": stop, "stop_sequence": nil}, "usage": obj{"output_tokens": 10}})
	sse(w, "message_stop", obj{"type": "message_stop"})
}

// writeChat answers a chat completions call, streamed as chunks ending in
// data: [DONE], or as one completion.
func writeChat(w http.ResponseWriter, text string, calls []wireCall, stream bool) {
	finish := "stop"
	if len(calls) > 0 {
		finish = "tool_calls"
	}
	var toolCalls []obj
	for i, c := range calls {
		toolCalls = append(toolCalls, obj{"index": i, "id": c.id, "type": "function",
			"function": obj{"name": c.name, "arguments": string(c.input)}})
	}
	usage := obj{"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}
	if !stream {
		msg := obj{"role": "assistant", "content": text}
		if len(toolCalls) > 0 {
			msg["tool_calls"] = toolCalls
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(obj{"id": "chatcmpl-scripted", "object": "chat.completion", "created": 0, "model": "scripted",
			"choices": []obj{{"index": 0, "message": msg, "finish_reason": finish}}, "usage": usage})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	chunk := func(delta obj, finish any, usage any) obj {
		c := obj{"id": "chatcmpl-scripted", "object": "chat.completion.chunk", "created": 0, "model": "scripted",
			"choices": []obj{{"index": 0, "delta": delta, "finish_reason": finish}}}
		if usage != nil {
			c["usage"] = usage
		}
		return c
	}
	sse(w, "", chunk(obj{"role": "assistant", "content": ""}, nil, nil))
	if text != "" {
		sse(w, "", chunk(obj{"content": text}, nil, nil))
	}
	if len(toolCalls) > 0 {
		sse(w, "", chunk(obj{"tool_calls": toolCalls}, nil, nil))
	}
	sse(w, "", chunk(obj{}, finish, usage))
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// writeResponses answers an OpenAI Responses API call (Codex), always
// streamed: response.created, one output item per message and
// function_call, response.completed.
func writeResponses(w http.ResponseWriter, text string, calls []wireCall) {
	w.Header().Set("Content-Type", "text/event-stream")
	resp := obj{"id": "resp_scripted", "object": "response", "created_at": 0, "model": "scripted", "status": "in_progress", "output": []obj{}}
	sse(w, "response.created", obj{"type": "response.created", "response": resp})
	var output []obj
	if text != "" || len(calls) == 0 {
		output = append(output, obj{"type": "message", "id": "msg_scripted", "role": "assistant", "status": "completed",
			"content": []obj{{"type": "output_text", "text": text, "annotations": []obj{}}}})
	}
	for _, c := range calls {
		item := obj{"type": "function_call", "id": "fc_" + c.id, "call_id": c.id, "name": c.name,
			"arguments": string(c.input), "status": "completed"}
		// A tool of a namespace (OfferedTools joins them with "__") is
		// called by its own name within the namespace.
		if i := strings.LastIndex(c.name, "__"); i > 0 && strings.HasPrefix(c.name, "mcp__") {
			item["namespace"], item["name"] = c.name[:i], c.name[i+2:]
		}
		output = append(output, item)
	}
	for i, item := range output {
		sse(w, "response.output_item.added", obj{"type": "response.output_item.added", "output_index": i, "item": item})
		if item["type"] == "message" {
			sse(w, "response.output_text.delta", obj{"type": "response.output_text.delta", "output_index": i, "item_id": item["id"],
				"content_index": 0, "delta": text})
		}
		sse(w, "response.output_item.done", obj{"type": "response.output_item.done", "output_index": i, "item": item})
	}
	resp["status"] = "completed"
	resp["output"] = output
	resp["usage"] = obj{"input_tokens": 100, "output_tokens": 10, "total_tokens": 110,
		"input_tokens_details": obj{"cached_tokens": 0}, "output_tokens_details": obj{"reasoning_tokens": 0}}
	sse(w, "response.completed", obj{"type": "response.completed", "response": resp})
}

// writeGemini answers a generateContent or streamGenerateContent call
// (with alt=sse) as one candidate.
func writeGemini(w http.ResponseWriter, text string, calls []wireCall, stream bool) {
	var parts []obj
	if text != "" || len(calls) == 0 {
		parts = append(parts, obj{"text": text})
	}
	for _, c := range calls {
		var args any
		_ = json.Unmarshal(c.input, &args)
		parts = append(parts, obj{"functionCall": obj{"id": c.id, "name": c.name, "args": args}})
	}
	answer := obj{"candidates": []obj{{"content": obj{"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}},
		"usageMetadata": obj{"promptTokenCount": 100, "candidatesTokenCount": 10, "totalTokenCount": 110}, "modelVersion": "scripted"}
	if !stream {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(answer)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	sse(w, "", answer)
}

// ToolResult returns what the host sent back to the model as the output of
// the tool call with id id (Anthropic tool_result, chat completions tool
// message, Responses function_call_output, Gemini functionResponse), and
// whether one arrived. Several blocks of text are joined by newlines.
func (m *Model) ToolResult(id string) (string, bool) {
	for _, r := range m.Requests() {
		if out, ok := toolResult(r.Body, id); ok {
			return out, true
		}
	}
	return "", false
}

func toolResult(body []byte, id string) (string, bool) {
	var req struct {
		Messages []struct {
			Role       string          `json:"role"`
			ToolCallID string          `json:"tool_call_id"`
			Content    json.RawMessage `json:"content"`
		} `json:"messages"`
		Input    json.RawMessage `json:"input"`
		Contents []struct {
			Parts []struct {
				FunctionResponse *struct {
					ID       string          `json:"id"`
					Response json.RawMessage `json:"response"`
				} `json:"functionResponse"`
			} `json:"parts"`
		} `json:"contents"`
	}
	if json.Unmarshal(body, &req) != nil {
		return "", false
	}
	for _, msg := range req.Messages {
		if msg.Role == "tool" && msg.ToolCallID == id {
			return text(msg.Content), true
		}
		var blocks []struct {
			Type      string          `json:"type"`
			ToolUseID string          `json:"tool_use_id"`
			Content   json.RawMessage `json:"content"`
			IsError   bool            `json:"is_error"`
		}
		if json.Unmarshal(msg.Content, &blocks) != nil {
			continue
		}
		for _, b := range blocks {
			if b.Type == "tool_result" && b.ToolUseID == id {
				return text(b.Content), true
			}
		}
	}
	var items []struct {
		Type   string          `json:"type"`
		CallID string          `json:"call_id"`
		Output json.RawMessage `json:"output"`
	}
	if json.Unmarshal(req.Input, &items) == nil {
		for _, it := range items {
			if it.Type == "function_call_output" && it.CallID == id {
				return text(it.Output), true
			}
		}
	}
	for _, c := range req.Contents {
		for _, p := range c.Parts {
			if p.FunctionResponse != nil && p.FunctionResponse.ID == id {
				return string(p.FunctionResponse.Response), true
			}
		}
	}
	return "", false
}

// text flattens a JSON string, or a list of text blocks, to its text.
func text(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &blocks) == nil {
		var parts []string
		for _, b := range blocks {
			if b.Text != "" {
				parts = append(parts, b.Text)
			}
		}
		return strings.Join(parts, "\n")
	}
	return string(raw)
}
