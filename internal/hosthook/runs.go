package hosthook

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// RunKeys are the keys under which the decision about call c is recorded,
// and by which a report of its run (c.Phase After) finds that decision: a
// tool run with no decision behind it, or a run of a tool planserver
// denied, is one nobody judged.
//
// Where the host sends its own id of the call, the same before and after
// (Claude Code's tool_use_id, opencode's callID, Cursor's tool_use_id),
// that id is the key. Where it sends none (Gemini CLI, Cursor's shell and
// MCP events), the key is a digest of what identifies the call: the host,
// the pair of events it came through, the conversation, the tool and its
// input. A host reports the input it ran, so a call whose input planserver
// rewrote (a command put in the sandbox) is also recorded under the
// digest of rewritten, the whole input it runs with.
func RunKeys(c Call, rewritten map[string]json.RawMessage) []string {
	if c.RunID != "" {
		return []string{"id:" + c.RunID}
	}
	keys := []string{digest(c, c.runInput())}
	if rewritten != nil {
		if k := digest(c, rewritten); k != keys[0] {
			keys = append(keys, k)
		}
	}
	return keys
}

// runInput is what identifies c's call beside its tool: its input where
// the host sends one, else what the event names (a Cursor shell event's
// command, an MCP event's server).
func (c Call) runInput() map[string]json.RawMessage {
	if c.Input != nil {
		return c.Input
	}
	out := map[string]json.RawMessage{}
	for name, v := range map[string]string{"command": c.Command, "path": c.Path, "mcp_url": c.MCPURL} {
		if v != "" {
			raw, _ := json.Marshal(v)
			out[name] = raw
		}
	}
	return out
}

// channel names the pair of events a call comes through, so that one run
// reported through two pairs (Cursor fires preToolUse and
// beforeShellExecution for a shell command) is matched twice, each report
// to its own decision.
func (c Call) channel() string {
	switch c.Event {
	case cursorShell, cursorAfterShell:
		return "shell"
	case cursorMCP, cursorAfterMCP:
		return "mcp"
	case cursorRead:
		return "read"
	}
	return "tool"
}

func digest(c Call, input map[string]json.RawMessage) string {
	h := sha256.New()
	for _, part := range []string{string(c.Host), c.channel(), c.Conversation, c.Tool} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	h.Write(canonical(input))
	return "sum:" + hex.EncodeToString(h.Sum(nil)[:16])
}

// canonical is input as JSON with every object's members sorted and the
// numbers as the host wrote them, so that the same input digests alike
// however a host orders or spaces it.
func canonical(input map[string]json.RawMessage) []byte {
	obj := make(map[string]any, len(input))
	for k, raw := range input {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var v any
		if dec.Decode(&v) != nil {
			v = string(raw)
		}
		obj[k] = v
	}
	out, _ := json.Marshal(obj)
	return out
}

// Reported says a report of the call's run follows through the hooks
// planserver hook install wires, so its decision is worth recording:
// Cursor's beforeReadFile has no after-event.
func (c Call) Reported() bool { return c.Event != cursorRead }
