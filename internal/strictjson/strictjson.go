// Package strictjson finds what encoding/json accepts in a JSON text but
// readers may take two ways: an object that names a member twice (one
// parser keeps the first, encoding/json the last) and, where the reader on
// the other side matches names without regard to case, two names equal but
// for case. The API's request decoding (internal/http/request) and the MCP
// gate (internal/mcp) both check with it, and each words its own refusal.
//
// The walk skips string values without decoding them, so a 1 MiB plan
// costs one scan of its bytes (it was a token walk and a second decode,
// 12% of a PUT's CPU). It judges no syntax: on anything that is not JSON
// it stops early without an error, so a caller checks well-formedness
// itself (json.Decoder, json.Valid).
package strictjson

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// Options tune Check.
type Options struct {
	// FoldCase counts member names equal but for case as a repeat.
	FoldCase bool
	// MaxDepth, when above zero, bounds the nesting: a value inside more
	// than MaxDepth arrays and objects is *TooDeep.
	MaxDepth int
	// Top, when not nil, is called with the name of each member of the
	// top-level object, in order.
	Top func(name string)
}

// Repeat is an object that names a member twice.
type Repeat struct {
	// Path is the repeated member's path: members joined by dots, array
	// elements as [i] ("steps[2].deps").
	Path string
	// First and Name are the first spelling and the repeat's; equal when
	// the member is repeated exactly.
	First, Name string
}

func (r *Repeat) Error() string {
	if r.First == r.Name {
		return fmt.Sprintf("member %q appears twice in one object", r.Name)
	}
	return fmt.Sprintf("members %q and %q differ only in case", r.First, r.Name)
}

// TooDeep is a value nested deeper than Options.MaxDepth.
type TooDeep struct{ MaxDepth int }

func (e *TooDeep) Error() string { return fmt.Sprintf("nests deeper than %d", e.MaxDepth) }

// Check walks b and returns the first *Repeat or *TooDeep in it, in the
// order of the text; nil when there is none.
func Check(b []byte, opt Options) error {
	s := scan{b: b, opt: opt}
	return s.value(0)
}

// scan walks well-formed JSON (on anything else it stops early, without
// an error).
type scan struct {
	b   []byte
	i   int
	opt Options
	// path is the containers around the value being read, for Repeat's
	// path.
	path []pathSegment
}

type pathSegment struct {
	key     string // in an object
	index   int    // in an array
	inArray bool
}

func (s *scan) fieldPath(key string) string {
	var b strings.Builder
	for _, seg := range s.path {
		if seg.inArray {
			fmt.Fprintf(&b, "[%d]", seg.index)
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(seg.key)
	}
	if b.Len() > 0 {
		b.WriteByte('.')
	}
	b.WriteString(key)
	return b.String()
}

func (s *scan) space() {
	for s.i < len(s.b) && (s.b[s.i] == ' ' || s.b[s.i] == '\t' || s.b[s.i] == '\n' || s.b[s.i] == '\r') {
		s.i++
	}
}

func (s *scan) value(depth int) error {
	if s.opt.MaxDepth > 0 && depth > s.opt.MaxDepth {
		return &TooDeep{MaxDepth: s.opt.MaxDepth}
	}
	s.space()
	if s.i >= len(s.b) {
		return nil
	}
	switch s.b[s.i] {
	case '{':
		return s.object(depth)
	case '[':
		return s.array(depth)
	case '"':
		s.skipString()
	default: // number, true, false, null
		for s.i < len(s.b) && !strings.ContainsRune(",}] \t\r\n", rune(s.b[s.i])) {
			s.i++
		}
	}
	return nil
}

// smallObject is how many members an object's names are kept in a slice
// for; a larger object switches to a map.
const smallObject = 16

// key is what two member names share when they count as one.
func (s *scan) key(name string) string {
	if s.opt.FoldCase {
		return strings.ToLower(strings.ToUpper(name))
	}
	return name
}

func (s *scan) object(depth int) error {
	s.i++ // {
	// keys and names: the keys seen (and the first spelling of each), in
	// a slice while the object is small, then in a map.
	var keys, names []string
	var many map[string]string
	for {
		s.space()
		if s.i >= len(s.b) {
			return nil
		}
		switch s.b[s.i] {
		case '}':
			s.i++
			return nil
		case ',':
			s.i++
			continue
		case '"':
		default:
			return nil
		}
		name, ok := s.name()
		if !ok {
			return nil
		}
		key := s.key(name)
		first, seen := many[key]
		if i := slices.Index(keys, key); i >= 0 {
			first, seen = names[i], true
		}
		if seen {
			return &Repeat{Path: s.fieldPath(name), First: first, Name: name}
		}
		if many != nil {
			many[key] = name
		} else if keys, names = append(keys, key), append(names, name); len(keys) > smallObject {
			many = make(map[string]string, 2*len(keys))
			for i, k := range keys {
				many[k] = names[i]
			}
			keys, names = nil, nil
		}
		if depth == 0 && s.opt.Top != nil {
			s.opt.Top(name)
		}
		s.space()
		if s.i >= len(s.b) || s.b[s.i] != ':' {
			return nil
		}
		s.i++
		s.path = append(s.path, pathSegment{key: name})
		err := s.value(depth + 1)
		s.path = s.path[:len(s.path)-1]
		if err != nil {
			return err
		}
	}
}

func (s *scan) array(depth int) error {
	s.i++ // [
	index := 0
	for {
		s.space()
		if s.i >= len(s.b) {
			return nil
		}
		switch s.b[s.i] {
		case ']':
			s.i++
			return nil
		case ',':
			s.i++
			index++
			continue
		}
		s.path = append(s.path, pathSegment{index: index, inArray: true})
		start := s.i
		err := s.value(depth + 1)
		s.path = s.path[:len(s.path)-1]
		if err != nil || s.i == start {
			return err // s.i == start: not JSON, stop
		}
	}
}

// skipString moves past the string starting at s.i, and reports whether
// it ended (its closing quote is in b).
func (s *scan) skipString() bool {
	s.i++ // "
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case '\\':
			s.i += 2
		case '"':
			s.i++
			return true
		default:
			s.i++
		}
	}
	return false
}

// name reads a member name as encoding/json decodes it: "mo\u0064e" is
// mode, and invalid UTF-8 is U+FFFD; false when the name does not end.
func (s *scan) name() (string, bool) {
	start := s.i
	if !s.skipString() {
		return "", false
	}
	raw := s.b[start:s.i]
	if !slices.Contains(raw, '\\') && utf8.Valid(raw) {
		return string(raw[1 : len(raw)-1]), true
	}
	var name string
	_ = json.Unmarshal(raw, &name)
	return name, true
}
