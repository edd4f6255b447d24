package request

import (
	"errors"
	"reflect"
	"strings"
	"sync"

	"github.com/planserver/planserver/internal/apierr"
	"github.com/planserver/planserver/internal/strictjson"
)

// checkMembers refuses what encoding/json accepts but a request must not
// say, in one pass (strictjson's) over a body that json.Decoder has
// already accepted:
//
//   - an object, at any depth, that names a member twice:
//     {"mode":"plan","mode":"build"}. encoding/json keeps the last one,
//     other parsers the first; a request whose meaning depends on the
//     parser is refused, not guessed. The error names the member's path.
//   - a top-level member whose name matches a field of the struct dst only
//     case-insensitively. encoding/json accepts {"MODE": "plan"} for mode;
//     a typo must be a 400, not silently decide a gating question.
//
// A repeated member anywhere wins over a wrong-case one.
func checkMembers(body []byte, dst any) error {
	known := fieldNames(dst)
	// unknown is the first (by name) top-level member not in known, when
	// anyUnknown.
	var (
		unknown    string
		anyUnknown bool
	)
	opt := strictjson.Options{}
	if known != nil {
		opt.Top = func(name string) {
			if !known[name] && (!anyUnknown || name < unknown) {
				unknown, anyUnknown = name, true
			}
		}
	}
	var repeat *strictjson.Repeat
	if err := strictjson.Check(body, opt); errors.As(err, &repeat) {
		return apierr.Invalid(repeat.Path, "member appears more than once in one object; send it once")
	}
	if anyUnknown {
		return apierr.Invalid(unknown, "unknown field (member names are case-sensitive)")
	}
	return nil
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
