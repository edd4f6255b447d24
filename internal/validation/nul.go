package validation

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/planserver/planserver/internal/apierr"
)

// NUL (U+0000) is refused in every text a client sends, on both engines:
// PostgreSQL's text cannot hold it (a NUL there was a 500 on every write
// that carried one), and one rule for both engines keeps a database
// copyable from SQLite to PostgreSQL. Databases written before the rule
// may hold NULs; they stay readable, and planserver copy reports them
// (--replace-nul).

// nulMessage is the message of a field that holds a NUL.
const nulMessage = "must not contain the NUL character (U+0000, \\u0000 in JSON): PostgreSQL cannot store it, so planserver refuses it on every engine"

// NoNUL refuses a NUL in s, the value of field.
func NoNUL(field, s string) error {
	if strings.IndexByte(s, 0) >= 0 {
		return apierr.Invalid(field, nulMessage)
	}
	return nil
}

// nulEscape is how JSON spells a NUL inside a string (a raw NUL byte is
// not valid JSON).
var nulEscape = []byte(`\u0000`)

// NoNULInJSON refuses well-formed JSON raw that holds a NUL in any string,
// member names included, naming the first such field by its path under
// prefix (e.g. "steps[2].description"). Bodies without the escape cost one
// scan of their bytes; the walk that names the field runs only when the
// escape is there.
func NoNULInJSON(prefix string, raw []byte) error {
	if !bytes.Contains(raw, nulEscape) {
		return nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil // not well-formed: the decoder's error is the one to give
	}
	if path, ok := nulPath(prefix, v); ok {
		if path == "" {
			path = "body"
		}
		return apierr.Invalid(path, nulMessage)
	}
	return nil
}

// nulPath finds the first string holding a NUL in v (members in name
// order), and its path.
func nulPath(path string, v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return path, strings.IndexByte(x, 0) >= 0
	case []any:
		for i, e := range x {
			if p, ok := nulPath(fmt.Sprintf("%s[%d]", path, i), e); ok {
				return p, true
			}
		}
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			p := k
			if path != "" {
				p = path + "." + k
			}
			if strings.IndexByte(k, 0) >= 0 {
				return p, true
			}
			if p, ok := nulPath(p, x[k]); ok {
				return p, true
			}
		}
	}
	return "", false
}
