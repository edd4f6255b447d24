package proxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/planserver/planserver/internal/strictjson"
)

// The gate judges JSON-RPC messages that another program then executes:
// if the two read one message differently, the gate judges one call and
// the upstream runs another. encoding/json matches member names without
// regard to case and keeps the last of repeated ones; the Go SDK matches
// them exactly; other servers keep the first. So every message the gate
// judges is read exactly (member names case-sensitive), and refused when
// any reader could take it another way: a member named twice, or two
// names equal but for case, in any object; a member of the envelope or of
// a call's params spelled in another case; text that is not UTF-8; an id
// that is neither a string nor an integer a float64 holds exactly. What
// passes means the same to every reader, so the gate forwards the bytes
// it judged.

// wireMessage is what the gate reads of one JSON-RPC message.
type wireMessage struct {
	// ID is the raw id; nil when absent or null (a notification).
	ID json.RawMessage
	// Method is the method of a request or notification; "" for a
	// response.
	Method string
	// Tool is the params.name of a tools/call.
	Tool string
}

// maxDepth bounds the nesting of a judged message, like the SDK's.
const maxDepth = 1000

var (
	envelopeMembers = []string{"jsonrpc", "id", "method", "params", "result", "error"}
	callMembers     = []string{"name", "arguments", "_meta"}
)

// parseMessage reads one JSON-RPC message exactly, or says why it is
// ambiguous or malformed.
func parseMessage(raw []byte) (wireMessage, error) {
	var m wireMessage
	if err := checkUnambiguous(raw); err != nil {
		return m, err
	}
	top, err := object(raw, envelopeMembers, "message")
	if err != nil {
		return m, err
	}
	var version string
	if v, ok := top["jsonrpc"]; !ok || json.Unmarshal(v, &version) != nil || version != "2.0" {
		return m, errors.New(`"jsonrpc" must be "2.0"`)
	}
	if id, ok := top["id"]; ok && string(id) != "null" {
		if !validID(id) {
			return m, errors.New(`"id" must be a string or an integer of at most 2^53 in magnitude`)
		}
		m.ID = id
	}
	method, hasMethod := top["method"]
	if !hasMethod {
		return m, nil
	}
	if json.Unmarshal(method, &m.Method) != nil || m.Method == "" {
		return m, errors.New(`"method" must be a non-empty string`)
	}
	if m.Method != "tools/call" {
		return m, nil
	}
	params, err := object(top["params"], callMembers, "params")
	if err != nil {
		return m, err
	}
	if n, ok := params["name"]; !ok || json.Unmarshal(n, &m.Tool) != nil || m.Tool == "" {
		return m, errors.New(`a tools/call needs "params.name", a non-empty string`)
	}
	return m, nil
}

// object decodes raw as a JSON object whose member names are exact: a
// name that equals one of known but for case is refused (encoding/json
// would read it as that member).
func object(raw json.RawMessage, known []string, what string) (map[string]json.RawMessage, error) {
	var out map[string]json.RawMessage
	if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '{' || json.Unmarshal(t, &out) != nil {
		return nil, fmt.Errorf("%s must be a JSON object", what)
	}
	for name := range out {
		for _, k := range known {
			if name != k && strings.EqualFold(name, k) {
				return nil, fmt.Errorf("%s has a member %q: member names are case-sensitive (%q)", what, name, k)
			}
		}
	}
	return out, nil
}

// validID reports whether raw is a string or an integer that a float64
// holds exactly, so every reader (the SDK decodes ids as float64) gets the
// same id back.
func validID(raw json.RawMessage) bool {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return true
	}
	digits := strings.TrimPrefix(string(raw), "-")
	if digits == "" || len(digits) > 16 || (len(digits) > 1 && digits[0] == '0') {
		return false
	}
	var n int64
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
		n = n*10 + int64(c-'0')
	}
	return n <= 1<<53
}

// checkUnambiguous refuses raw unless it is one well-formed JSON value in
// UTF-8, nested at most maxDepth deep, in which no object has two members
// whose names are equal or equal but for case (strictjson judges those).
func checkUnambiguous(raw []byte) error {
	if !utf8.Valid(raw) {
		return errors.New("the message is not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	var value json.RawMessage
	if err := dec.Decode(&value); err != nil {
		return fmt.Errorf("malformed JSON: %v", err)
	}
	var repeat *strictjson.Repeat
	switch err := strictjson.Check(value, strictjson.Options{FoldCase: true, MaxDepth: maxDepth}); {
	case errors.As(err, &repeat) && repeat.First == repeat.Name:
		return fmt.Errorf("member %q appears twice in one object", repeat.Name)
	case errors.As(err, &repeat):
		return fmt.Errorf("members %q and %q differ only in case: readers would take either", repeat.First, repeat.Name)
	case err != nil:
		return fmt.Errorf("the message nests deeper than %d", maxDepth)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("the message holds more than one JSON value")
	}
	return nil
}

// refusal is the JSON-RPC error answering a message the gate cannot read
// exactly (invalid request, id null: the id itself may be what is
// ambiguous).
func refusal(err error) []byte {
	out, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{
		"code": -32600, "message": "planserver gate refused an ambiguous or malformed message: " + err.Error()}})
	return append(out, '\n')
}
