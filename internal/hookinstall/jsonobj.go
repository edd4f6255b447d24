package hookinstall

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// object is a JSON object that keeps its members' order, so that an
// install changes only what it must in a user's settings file.
type object struct {
	keys []string
	vals map[string]json.RawMessage
}

func (o *object) UnmarshalJSON(raw []byte) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return errors.New("not a JSON object")
	}
	o.keys, o.vals = nil, map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		k, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return err
		}
		o.set(k, v)
	}
	_, err = dec.Token()
	return err
}

func (o *object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kr, _ := json.Marshal(k)
		b.Write(kr)
		b.WriteByte(':')
		b.Write(o.vals[k])
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func (o *object) set(k string, v json.RawMessage) {
	if o.vals == nil {
		o.vals = map[string]json.RawMessage{}
	}
	if _, ok := o.vals[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.vals[k] = v
}

func (o *object) has(k string) bool { _, ok := o.vals[k]; return ok }

func (o *object) remove(k string) {
	if !o.has(k) {
		return
	}
	delete(o.vals, k)
	for i, key := range o.keys {
		if key == k {
			o.keys = append(o.keys[:i], o.keys[i+1:]...)
			break
		}
	}
}

// child returns member k as an object (empty when absent).
func (o *object) child(k string) (*object, error) {
	c := &object{}
	if raw, ok := o.vals[k]; ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, c); err != nil {
			return nil, fmt.Errorf("%q is not a JSON object", k)
		}
	}
	return c, nil
}

// setChild sets member k to c, or removes it when c is empty and drop.
func (o *object) setChild(k string, c *object, drop bool) {
	if drop && len(c.keys) == 0 {
		o.remove(k)
		return
	}
	raw, _ := c.MarshalJSON()
	o.set(k, raw)
}

// setList sets member k to list, or removes it when list is empty.
func (o *object) setList(k string, list []any) error {
	if len(list) == 0 {
		o.remove(k)
		return nil
	}
	raw, err := json.Marshal(list)
	if err != nil {
		return err
	}
	o.set(k, raw)
	return nil
}

// sameJSON reports whether a and b are the same JSON value, whatever
// their spacing and member order.
func sameJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	ra, _ := json.Marshal(x)
	rb, _ := json.Marshal(y)
	return bytes.Equal(ra, rb)
}

// indent renders root as the settings file's text: two-space indented,
// ending in a newline. Unchanged content keeps before's formatting.
func indent(root *object, before string) (string, error) {
	raw, err := root.MarshalJSON()
	if err != nil {
		return "", err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, raw, "", "  "); err != nil {
		return "", err
	}
	after := out.String() + "\n"
	if bytes.TrimSpace([]byte(before)) != nil && sameJSON([]byte(before), []byte(after)) {
		return before, nil
	}
	return after, nil
}
