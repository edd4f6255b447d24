package mcp

import (
	"slices"

	"github.com/google/jsonschema-go/jsonschema"
)

// Tool schemas are read by every host's function-calling dialect, and the
// strictest of them (Gemini's function declarations, an OpenAPI 3.0 subset;
// OpenAI-compatible function calling) reject what plain JSON Schema allows:
// a type given as a list, $ref, unions at the top, keywords they do not
// know. portableInput and portableOutput rewrite the schemas the SDK infers
// from Go types into the form every host accepts; TestToolSchemasPortable
// holds every advertised schema to the hosts' rules.

// portableInput rewrites an input schema in place: an optional argument is
// one that is left out, so a pointer field's ["null", T] becomes plain T,
// and keywords outside the common subset that the server checks again
// anyway (uniqueItems: plan-schema.json validates steps on every write) go.
func portableInput(s *jsonschema.Schema) {
	walkSchema(s, func(n *jsonschema.Schema) {
		if t, ok := nonNullType(n.Types); ok {
			n.Types, n.Type = nil, t
		}
		n.UniqueItems = false
	})
}

// portableOutput rewrites an output schema in place. Output may hold null
// (a session without a review), and the SDK validates every result against
// the schema, so ["null", T] becomes anyOf [T-with-its-constraints, null]:
// each branch has one type.
func portableOutput(s *jsonschema.Schema) {
	walkSchema(s, func(n *jsonschema.Schema) {
		t, ok := nonNullType(n.Types)
		if !ok {
			return
		}
		branch := *n
		branch.Types, branch.Type, branch.Description = nil, t, ""
		*n = jsonschema.Schema{Description: n.Description,
			AnyOf: []*jsonschema.Schema{&branch, {Type: "null"}}}
	})
}

// nonNullType is T of a type list ["null", T] or [T, "null"].
func nonNullType(types []string) (string, bool) {
	if len(types) != 2 || !slices.Contains(types, "null") {
		return "", false
	}
	if types[0] == "null" {
		return types[1], true
	}
	return types[0], true
}

// walkSchema calls f on s and then on every schema below it that a tool
// schema uses (properties, items, anyOf branches).
func walkSchema(s *jsonschema.Schema, f func(*jsonschema.Schema)) {
	if s == nil {
		return
	}
	f(s)
	for _, p := range s.Properties {
		walkSchema(p, f)
	}
	walkSchema(s.Items, f)
	walkSchema(s.AdditionalProperties, f)
	for _, b := range s.AnyOf {
		walkSchema(b, f)
	}
}
