package request

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/planserver/planserver/internal/apierr"
)

// checkMembers refuses what encoding/json accepts but a request must not
// say, in one pass over a body that json.Decoder has already accepted:
//
//   - an object, at any depth, that names a member twice:
//     {"mode":"plan","mode":"build"}. encoding/json keeps the last one,
//     other parsers the first; a request whose meaning depends on the
//     parser is refused, not guessed. The error names the member's path.
//   - a top-level member whose name matches a field of the struct dst only
//     case-insensitively. encoding/json accepts {"MODE": "plan"} for mode;
//     a typo must be a 400, not silently decide a gating question.
//
// A repeated member anywhere wins over a wrong-case one. The walk skips
// string values without decoding them, so a 1 MiB plan costs one scan of
// its bytes (it was a token walk and a second decode, 12% of a PUT's CPU).
func checkMembers(body []byte, dst any) error {
	s := memberScan{b: body, known: fieldNames(dst)}
	if err := s.value(true); err != nil {
		return err
	}
	if s.anyUnknown {
		return apierr.Invalid(s.unknown, "unknown field (member names are case-sensitive)")
	}
	return nil
}

// memberScan walks well-formed JSON (on anything else it stops early,
// without an error: the decoder has judged it already).
type memberScan struct {
	b []byte
	i int
	// known holds the member names dst decodes at the top level; nil when
	// dst is not a struct.
	known map[string]bool
	// unknown is the first (by name) top-level member not in known, when
	// anyUnknown.
	unknown    string
	anyUnknown bool
	// path is the containers around the value being read, for the error's
	// field.
	path []pathSegment
}

type pathSegment struct {
	key     string // in an object
	index   int    // in an array
	inArray bool
}

func (s *memberScan) fieldPath(key string) string {
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

func (s *memberScan) space() {
	for s.i < len(s.b) && (s.b[s.i] == ' ' || s.b[s.i] == '\t' || s.b[s.i] == '\n' || s.b[s.i] == '\r') {
		s.i++
	}
}

func (s *memberScan) value(top bool) error {
	s.space()
	if s.i >= len(s.b) {
		return nil
	}
	switch s.b[s.i] {
	case '{':
		return s.object(top)
	case '[':
		return s.array()
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

func (s *memberScan) object(top bool) error {
	s.i++ // {
	var names []string
	var many map[string]bool
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
		name := s.name()
		if slices.Contains(names, name) || many[name] {
			return apierr.Invalid(s.fieldPath(name), "member appears more than once in one object; send it once")
		}
		if many != nil {
			many[name] = true
		} else if names = append(names, name); len(names) > smallObject {
			many = make(map[string]bool, 2*len(names))
			for _, n := range names {
				many[n] = true
			}
			names = nil
		}
		if top && s.known != nil && !s.known[name] && (!s.anyUnknown || name < s.unknown) {
			s.unknown, s.anyUnknown = name, true
		}
		s.space()
		if s.i >= len(s.b) || s.b[s.i] != ':' {
			return nil
		}
		s.i++
		s.path = append(s.path, pathSegment{key: name})
		err := s.value(false)
		s.path = s.path[:len(s.path)-1]
		if err != nil {
			return err
		}
	}
}

func (s *memberScan) array() error {
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
		err := s.value(false)
		s.path = s.path[:len(s.path)-1]
		if err != nil || s.i == start {
			return err // s.i == start: not JSON, stop
		}
	}
}

// skipString moves past the string starting at s.i.
func (s *memberScan) skipString() {
	s.i++ // "
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case '\\':
			s.i += 2
		case '"':
			s.i++
			return
		default:
			s.i++
		}
	}
}

// name reads a member name as encoding/json decodes it: "mo\u0064e" is
// mode, and invalid UTF-8 is U+FFFD.
func (s *memberScan) name() string {
	start := s.i
	s.skipString()
	raw := s.b[start:min(s.i, len(s.b))]
	if !slices.Contains(raw, '\\') && utf8.Valid(raw) {
		return string(raw[1 : len(raw)-1])
	}
	var name string
	_ = json.Unmarshal(raw, &name)
	return name
}

// fieldNamesByType caches fieldNames per struct type.
var fieldNamesByType sync.Map // reflect.Type → map[string]bool

// fieldNames is the set of member names encoding/json decodes into dst's
// struct type, or nil when dst is not a struct.
func fieldNames(dst any) map[string]bool {
	t := reflect.TypeOf(dst)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	if names, ok := fieldNamesByType.Load(t); ok {
		return names.(map[string]bool)
	}
	names := map[string]bool{}
	jsonNames(t, names)
	fieldNamesByType.Store(t, names)
	return names
}

// jsonNames collects the member names encoding/json decodes into struct
// type t, flattening embedded structs without a name of their own.
func jsonNames(t reflect.Type, names map[string]bool) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				jsonNames(ft, names)
				continue
			}
		}
		if name == "" {
			name = f.Name
		}
		names[name] = true
	}
}
