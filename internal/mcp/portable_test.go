package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/planserver/planserver/internal/apitest"
)

// hostSchemaKeywords are the schema keywords that the strictest common
// hosts read in a tool's input schema: Gemini's function declarations (an
// OpenAPI 3.0 subset: type, format, description, nullable, enum, items,
// min/maxItems, properties, required, min/maxLength, pattern, minimum,
// maximum, default, title) and OpenAI-compatible function calling, which
// also wants additionalProperties. Anything else (uniqueItems, const,
// $ref, $defs, oneOf, allOf, not, if/then/else, patternProperties, …) is
// rejected or silently dropped by one of them.
var hostSchemaKeywords = map[string]bool{
	"type": true, "format": true, "description": true, "enum": true, "items": true,
	"minItems": true, "maxItems": true, "properties": true, "required": true,
	"minLength": true, "maxLength": true, "pattern": true, "minimum": true,
	"maximum": true, "default": true, "title": true, "additionalProperties": true,
}

// hostFormats are the string formats Gemini's function declarations accept.
var hostFormats = map[string]bool{"date-time": true, "enum": true}

// schemaProblems lists what in the input schema s (as sent on the wire) a
// strict host rejects: the top must be an object without a union, every
// schema below has exactly one type (a string, never a list), and only the
// keywords and formats above appear.
func schemaProblems(s map[string]any) []string {
	var problems []string
	if s["type"] != "object" {
		problems = append(problems, fmt.Sprintf("the top is of type %v, not object", s["type"]))
	}
	var check func(path string, n map[string]any)
	check = func(path string, n map[string]any) {
		if _, ok := n["type"].(string); !ok {
			problems = append(problems, fmt.Sprintf("%s: type %v is not one type", path, n["type"]))
		}
		for kw, v := range n {
			if !hostSchemaKeywords[kw] {
				problems = append(problems, fmt.Sprintf("%s: keyword %s", path, kw))
			}
			if kw == "format" && !hostFormats[fmt.Sprint(v)] {
				problems = append(problems, fmt.Sprintf("%s: format %v", path, v))
			}
		}
		if props, ok := n["properties"].(map[string]any); ok {
			for name, p := range props {
				sub, ok := p.(map[string]any)
				if !ok {
					problems = append(problems, fmt.Sprintf("%s.properties.%s: not a schema object", path, name))
					continue
				}
				check(path+".properties."+name, sub)
			}
		}
		if items, ok := n["items"]; ok {
			sub, ok := items.(map[string]any)
			if !ok {
				problems = append(problems, path+".items: not a schema object")
				return
			}
			check(path+".items", sub)
		}
		if ap, ok := n["additionalProperties"]; ok && ap != false {
			if sub, ok := ap.(map[string]any); ok {
				check(path+".additionalProperties", sub)
			}
		}
	}
	check("inputSchema", s)
	sort.Strings(problems)
	return problems
}

// typeLists finds every "type" given as a list anywhere in s: the
// MCP Inspector's portability warning, for output schemas as well.
func typeLists(path string, v any) []string {
	var found []string
	switch n := v.(type) {
	case map[string]any:
		if _, ok := n["type"].([]any); ok {
			found = append(found, path)
		}
		for k, sub := range n {
			found = append(found, typeLists(path+"."+k, sub)...)
		}
	case []any:
		for i, sub := range n {
			found = append(found, typeLists(fmt.Sprintf("%s[%d]", path, i), sub)...)
		}
	}
	return found
}

// TestToolSchemasPortable checks every tool's schemas as a client receives
// them: input schemas within the strictest hosts' subset, and no type
// lists in output schemas either.
func TestToolSchemasPortable(t *testing.T) {
	env := apitest.New(t)
	session(t, env, map[string]any{"id": "s"})
	c := connect(t, env, clientOpts{session: "s"})
	res, err := c.cs.ListTools(context.Background(), &sdk.ListToolsParams{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tools) == 0 {
		t.Fatal("no tools listed")
	}
	for _, tool := range res.Tools {
		raw, err := json.Marshal(tool)
		if err != nil {
			t.Fatal(err)
		}
		var wire struct {
			InputSchema  map[string]any `json:"inputSchema"`
			OutputSchema map[string]any `json:"outputSchema"`
		}
		if err := json.Unmarshal(raw, &wire); err != nil {
			t.Fatal(err)
		}
		if p := schemaProblems(wire.InputSchema); len(p) > 0 {
			t.Errorf("%s: input schema not portable:\n  %s", tool.Name, strings.Join(p, "\n  "))
		}
		if p := typeLists("outputSchema", wire.OutputSchema); len(p) > 0 {
			t.Errorf("%s: type lists in the output schema: %v", tool.Name, p)
		}
	}
}

// TestSchemaProblemsFindsWhatHostsReject makes sure the check above can
// fail: each schema here breaks one rule.
func TestSchemaProblemsFindsWhatHostsReject(t *testing.T) {
	for _, tc := range []struct{ schema, want string }{
		{`{"type":"array"}`, "not object"},
		{`{"type":"object","properties":{"a":{"type":["null","string"]}}}`, "is not one type"},
		{`{"type":"object","properties":{"a":{"$ref":"#/$defs/x","type":"string"}}}`, "keyword $ref"},
		{`{"type":"object","oneOf":[{"type":"object"}]}`, "keyword oneOf"},
		{`{"type":"object","properties":{"a":{"type":"array","uniqueItems":true,"items":{"type":"string"}}}}`, "keyword uniqueItems"},
		{`{"type":"object","properties":{"a":{"type":"string","format":"uri"}}}`, "format uri"},
		{`{"type":"object","properties":{"a":{"type":"array","items":{"anyOf":[{"type":"string"}]}}}}`, "keyword anyOf"},
	} {
		var s map[string]any
		if err := json.Unmarshal([]byte(tc.schema), &s); err != nil {
			t.Fatal(err)
		}
		p := schemaProblems(s)
		if !slices.ContainsFunc(p, func(x string) bool { return strings.Contains(x, tc.want) }) {
			t.Errorf("%s: problems %v lack %q", tc.schema, p, tc.want)
		}
	}
}
