package proxy

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	segjson "github.com/segmentio/encoding/json"
)

// sdkToolName reads params.name as the SDK's server does: its JSON decoder
// (segmentio's, struct fields matched exactly).
func sdkToolName(params json.RawMessage) (string, bool) {
	var p struct {
		Name string `json:"name"`
	}
	dec := segjson.NewDecoder(bytes.NewReader(params))
	dec.DontMatchCaseInsensitiveStructFields()
	if dec.Decode(&p) != nil {
		return "", false
	}
	return p.Name, true
}

// stdlibToolName reads params.name as encoding/json does (case-insensitive,
// last one wins), the reading of many servers written in Go.
func stdlibToolName(params json.RawMessage) (string, bool) {
	var p struct {
		Name string `json:"name"`
	}
	if json.Unmarshal(params, &p) != nil {
		return "", false
	}
	return p.Name, true
}

// FuzzGateParser: any message the gate's parser accepts is read the same
// way by the official SDK's JSON-RPC decoding and by encoding/json: the
// same kind (request or response), method, id and called tool. A message
// they would read differently must be refused. The seeds run in make test.
func FuzzGateParser(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"peek","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"peek","Name":"smash"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"peek","name":"smash"}}`,
		`{"jsonrpc":"2.0","id":1,"Method":"tools/call","params":{"name":"smash"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","METHOD":"tools/call","params":{"name":"smash"}}`,
		`{"jsonrpc":"2.0","id":"a","method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":9007199254740993,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":1.5,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"smash"}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":3,"result":{}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"pe\u0065k"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"nam\u0065":"peek","name":"smash"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"pe` + "\xff" + `k"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"\u212Aey":"x","name":"k"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"peek"}} {"x":1}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		m, err := parseMessage(raw)
		if err != nil {
			return // refused: nothing to compare
		}
		msg, err := jsonrpc.DecodeMessage(raw)
		if err != nil {
			// The SDK refuses it too: the upstream runs nothing.
			return
		}
		switch x := msg.(type) {
		case *jsonrpc.Request:
			if x.Method != m.Method {
				t.Fatalf("gate read method %q, SDK %q: %s", m.Method, x.Method, raw)
			}
			if x.ID.IsValid() != (m.ID != nil) {
				t.Fatalf("gate read id %s, SDK %v: %s", m.ID, x.ID.Raw(), raw)
			}
			if x.ID.IsValid() {
				sdkID, _ := json.Marshal(x.ID.Raw())
				var gateID any
				_ = json.Unmarshal(m.ID, &gateID)
				want, _ := json.Marshal(gateID)
				if f, ok := gateID.(float64); ok {
					want, _ = json.Marshal(int64(f))
				}
				if string(sdkID) != string(want) {
					t.Fatalf("gate read id %s, SDK %s: %s", m.ID, sdkID, raw)
				}
			}
			if m.Method == "tools/call" {
				if name, ok := sdkToolName(x.Params); ok && name != m.Tool {
					t.Fatalf("gate read tool %q, SDK %q: %s", m.Tool, name, raw)
				}
				if name, ok := stdlibToolName(x.Params); ok && name != m.Tool {
					t.Fatalf("gate read tool %q, encoding/json %q: %s", m.Tool, name, raw)
				}
			}
		case *jsonrpc.Response:
			if m.Method != "" {
				t.Fatalf("gate read a %q request, SDK a response: %s", m.Method, raw)
			}
		}
	})
}
