package plans

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/planserver/planserver/internal/apierr"
)

// yamlFields are the fields of the YAML form of a plan as clients write
// it: the plan & action item format of the seeds, with the plan's fields
// at the top level. The name is in the URL and the revision in the ETag,
// so neither is here; a document read with GET can be edited and PUT back
// unchanged.
var yamlFields = []string{"title", "author", "status", "steps", "content"}

// DecodeYAML reads a plan written as a YAML document into a Change. Fields
// left out (or null) keep their current value, exactly as in the JSON
// form, with one difference: a document that carries steps may leave the
// content out (it keeps the current content; a new plan starts with none),
// because the plan & action item format of the seeds is steps alone.
// Unknown fields, several documents and anything but a mapping are
// invalid_argument errors; so are steps that ParseSteps refuses. Every
// error in the document is reported, each with its field and line, in
// words a writer of YAML reads (never Go's types).
func DecodeYAML(body []byte) (Change, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return Change{}, apierr.New(apierr.InvalidArgument, "request body is empty; send a YAML document")
	}
	dec := yaml.NewDecoder(bytes.NewReader(body))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		return Change{}, yamlError(err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return Change{}, apierr.New(apierr.InvalidArgument, "request body holds more than one YAML document")
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if root.Kind != yaml.MappingNode {
		return Change{}, apierr.New(apierr.InvalidArgument, "line %d: the document is %s; a plan is a mapping of its fields (%s)",
			root.Line, yamlKind(root), strings.Join(yamlFields, ", "))
	}
	var (
		ch     Change
		fields []apierr.FieldError
		steps  *yaml.Node
	)
	bad := func(field string, n *yaml.Node, format string, args ...any) {
		fields = append(fields, apierr.FieldError{Field: field, Message: fmt.Sprintf("line %d: ", n.Line) + fmt.Sprintf(format, args...)})
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			bad("(key)", k, "a field's name must be plain text, not %s", yamlKind(k))
			continue
		}
		if seen[k.Value] {
			bad(k.Value, k, "appears twice")
			continue
		}
		seen[k.Value] = true
		var into **string
		switch k.Value {
		case "title":
			into = &ch.Title
		case "author":
			into = &ch.Author
		case "status":
			into = &ch.Status
		case "content":
			into = &ch.Content
		case "steps":
			steps = v
			continue
		default:
			bad(k.Value, k, "unknown field (a plan has %s)", strings.Join(yamlFields, ", "))
			continue
		}
		if v.Kind != yaml.ScalarNode && v.Kind != yaml.AliasNode {
			bad(k.Value, v, "must be text, not %s", yamlKind(v))
			continue
		}
		if err := v.Decode(into); err != nil {
			bad(k.Value, v, "must be text")
		}
	}
	// A left-out field is nil; null is the same.
	if steps != nil && steps.ShortTag() != "!!null" {
		c := yamlToJSON{limit: 4*len(body) + 4096}
		if err := c.convert(steps, 0); err != nil {
			fields = append(fields, apierr.FieldError{Field: "steps", Message: err.Error()})
		} else if parsed, err := ParseSteps(c.buf.Bytes()); err != nil {
			e, ok := apierr.As(err)
			if !ok || len(e.Fields) == 0 {
				return Change{}, err
			}
			fields = append(fields, e.Fields...)
		} else {
			ch.Steps = parsed
			ch.contentOptional = true
		}
	}
	if len(fields) > 0 {
		return Change{}, apierr.InvalidFields(fields[:min(len(fields), maxFieldErrors)])
	}
	return ch, nil
}

// yamlKind names what a YAML node is, for messages.
func yamlKind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a mapping"
	case yaml.AliasNode:
		return "an alias"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return "null"
		case "!!int", "!!float":
			return "a number"
		case "!!bool":
			return "true or false"
		}
		return "text"
	}
	return "empty"
}

// yamlError turns a yaml.v3 syntax error into an invalid_argument error
// that keeps yaml's line numbers.
func yamlError(err error) error {
	if errors.Is(err, io.EOF) {
		return apierr.New(apierr.InvalidArgument, "request body holds no YAML document")
	}
	return apierr.New(apierr.InvalidArgument, "malformed YAML: %s", strings.TrimPrefix(err.Error(), "yaml: "))
}

// yamlOut fixes the order of the fields of a YAML plan: the short fields
// first, then the steps, then the Markdown body, which is usually longest
// (and left out when the plan has none, as a plan imported from steps
// alone). Steps leave out their empty optional fields and everything
// derived at read time, so the document is the plan as written.
type yamlOut struct {
	Title   string `yaml:"title"`
	Author  string `yaml:"author"`
	Status  string `yaml:"status"`
	Steps   []Step `yaml:"steps"`
	Content string `yaml:"content,omitempty"`
}

// EncodeYAML writes p as a YAML document that DecodeYAML reads back to the
// same plan. A leading comment names the plan and its revision, which YAML
// readers ignore.
func EncodeYAML(p *Plan) ([]byte, error) {
	out := yamlOut{Title: p.Title, Author: p.Author, Status: p.Status, Content: p.Content, Steps: make([]Step, len(p.Steps))}
	for i := range p.Steps {
		out.Steps[i] = p.Steps[i].Step
	}
	var doc yaml.Node
	if err := doc.Encode(out); err != nil {
		return nil, fmt.Errorf("encode plan %q as YAML: %w", p.Name, err)
	}
	doc.HeadComment = fmt.Sprintf("Plan %q, revision %d, updated %s.\nEdit and PUT it back with If-Match: \"%d\" to detect concurrent changes.",
		p.Name, p.Revision, p.UpdatedAt, p.Revision)
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, fmt.Errorf("encode plan %q as YAML: %w", p.Name, err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("encode plan %q as YAML: %w", p.Name, err)
	}
	return buf.Bytes(), nil
}

// maxYAMLDepth bounds the nesting of steps written as YAML, so a hostile
// document cannot exhaust the stack.
const maxYAMLDepth = 64

// yamlToJSON writes YAML nodes as JSON, keeping the order of mapping keys so
// steps round-trip between the two forms as written. limit bounds the JSON
// it writes: aliases repeat their anchor's value, and a few nested aliases
// could otherwise expand a small document into gigabytes.
type yamlToJSON struct {
	buf   bytes.Buffer
	limit int
}

func (c *yamlToJSON) convert(n *yaml.Node, depth int) error {
	if depth > maxYAMLDepth {
		return fmt.Errorf("nested deeper than %d levels", maxYAMLDepth)
	}
	if c.buf.Len() > c.limit {
		return fmt.Errorf("expands to more than %d bytes of JSON (aliases?)", c.limit)
	}
	buf := &c.buf
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) != 1 {
			return fmt.Errorf("line %d: empty document", n.Line)
		}
		return c.convert(n.Content[0], depth+1)
	case yaml.AliasNode:
		// An alias is its anchor's value again; the depth bound stops
		// aliases that expand without end.
		return c.convert(n.Alias, depth+1)
	case yaml.SequenceNode:
		buf.WriteByte('[')
		for i, item := range n.Content {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := c.convert(item, depth+1); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
		return nil
	case yaml.MappingNode:
		buf.WriteByte('{')
		seen := make(map[string]bool, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode {
				return fmt.Errorf("line %d: mapping keys must be plain scalars", k.Line)
			}
			if seen[k.Value] {
				return fmt.Errorf("line %d: key %q appears twice in one mapping", k.Line, k.Value)
			}
			seen[k.Value] = true
			if i > 0 {
				buf.WriteByte(',')
			}
			key, _ := json.Marshal(k.Value)
			buf.Write(key)
			buf.WriteByte(':')
			if err := c.convert(v, depth+1); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
		return nil
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			buf.WriteString("null")
			return nil
		case "!!bool", "!!int", "!!float":
			var v any
			if err := n.Decode(&v); err != nil {
				return fmt.Errorf("line %d: %v", n.Line, err)
			}
			if lit := []byte(n.Value); n.ShortTag() != "!!bool" && json.Valid(lit) {
				buf.Write(lit) // keep the number as written: 1.50 stays 1.50
				return nil
			}
			raw, err := json.Marshal(v)
			if err != nil {
				return fmt.Errorf("line %d: %s has no JSON equivalent", n.Line, n.Value)
			}
			buf.Write(raw)
			return nil
		}
		// Strings, and timestamps and the like, which stay text as they
		// do when yaml.v3 decodes into an interface.
		raw, _ := json.Marshal(n.Value)
		buf.Write(raw)
		return nil
	}
	return fmt.Errorf("line %d: unsupported YAML node", n.Line)
}
