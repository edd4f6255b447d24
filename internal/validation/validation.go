// Package validation owns field validation: one go-playground/validator
// instance that reports fields by the JSON names clients sent (e.g.
// "todos[1].status"), the custom rules planserver's identifiers follow, and
// the translation of its errors into apierr field errors.
package validation

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/go-playground/validator/v10"

	"github.com/planserver/planserver/internal/apierr"
)

// The identifier rules, each defined once; the contract (api/openapi.yaml)
// states the same patterns.
var (
	SessionID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)
	PlanName  = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,127}$`)
	// StepID is also the pattern of a step id in plan-schema.json.
	StepID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)
)

// Limits of the short text fields, in characters.
const (
	MaxTitle  = 1024
	MaxAuthor = 256
	MaxStatus = 256
)

// rules maps each custom tag to its check, which returns the message a
// client reads, or "" when the value is valid. Each rule is defined here
// once and used as a struct tag (validate:"title") or through RuleMessage.
var rules = map[string]func(s string) string{
	"session_id": matches(SessionID),
	"plan_name":  matches(PlanName),
	"title":      text(MaxTitle),
	"author":     text(MaxAuthor),
	"status":     text(MaxStatus),
	// external_id is a host's own conversation id (Claude Code's
	// session_id, Cursor's conversation_id): hosts choose its shape, so any
	// printable text up to MaxExternalID bytes.
	"external_id": externalID,
}

// MaxExternalID bounds a session's external_id, in bytes.
const MaxExternalID = 256

func externalID(s string) string {
	switch {
	case s == "":
		return "must not be empty"
	case len(s) > MaxExternalID:
		return fmt.Sprintf("must be at most %d bytes", MaxExternalID)
	case !utf8.ValidString(s):
		return "must be UTF-8 text"
	case strings.IndexFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0:
		return "must not contain control characters"
	}
	return ""
}

func matches(re *regexp.Regexp) func(string) string {
	return func(s string) string {
		if re.MatchString(s) {
			return ""
		}
		return "must match " + re.String()
	}
}

// BadStepID is the error of a step id that does not match StepID, quoting
// it as it was sent; every transport answers a malformed step id with it.
func BadStepID(sent string) error {
	return apierr.Invalid("step_id", "step id %q must match %s", sent, StepID.String())
}

// text is the rule of a short text field: UTF-8, at most limit characters.
func text(limit int) func(string) string {
	return func(s string) string {
		switch {
		case !utf8.ValidString(s):
			return "must be UTF-8 text"
		case utf8.RuneCountInString(s) > limit:
			return fmt.Sprintf("must be at most %d characters", limit)
		}
		return ""
	}
}

// RuleMessage returns what is wrong with s under the custom rule tag, or
// "" when nothing is.
func RuleMessage(tag, s string) string {
	if strings.IndexByte(s, 0) >= 0 {
		return nulMessage
	}
	return rules[tag](s)
}

var validate = newValidator()

func newValidator() *validator.Validate {
	v := validator.New(validator.WithRequiredStructEnabled())
	v.RegisterTagNameFunc(func(f reflect.StructField) string {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			return ""
		}
		if name == "" {
			return f.Name
		}
		return name
	})
	for tag, check := range rules {
		if err := v.RegisterValidation(tag, func(fl validator.FieldLevel) bool {
			return check(fl.Field().String()) == ""
		}); err != nil {
			panic(err)
		}
	}
	return v
}

// Struct validates s and returns an invalid_argument *apierr.Error listing
// every failing field, or nil. Values that are not structs (a map decoded
// from a merge patch, say) carry no tags and pass.
func Struct(s any) error {
	v := reflect.ValueOf(s)
	for v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return nil
	}
	err := validate.Struct(s)
	if err == nil {
		return nil
	}
	var verrs validator.ValidationErrors
	if !errors.As(err, &verrs) {
		return fmt.Errorf("validate: %w", err)
	}
	fields := make([]apierr.FieldError, 0, len(verrs))
	for _, fe := range verrs {
		fields = append(fields, apierr.FieldError{Field: fieldPath(fe.Namespace()), Message: message(fe)})
	}
	return apierr.InvalidFields(fields)
}

// fieldPath drops the Go struct name validator puts first.
func fieldPath(ns string) string {
	if _, rest, ok := strings.Cut(ns, "."); ok {
		return rest
	}
	return ns
}

func message(fe validator.FieldError) string {
	if check, ok := rules[fe.Tag()]; ok {
		v := fe.Value()
		if p, ok := v.(*string); ok && p != nil {
			v = *p
		}
		return check(fmt.Sprint(v))
	}
	unit := "characters"
	switch fe.Kind() {
	case reflect.Slice, reflect.Array, reflect.Map:
		unit = "items"
	case reflect.Int, reflect.Int64, reflect.Int32, reflect.Float64:
		unit = ""
	}
	switch fe.Tag() {
	case "required":
		return "is required"
	case "oneof":
		return "must be one of: " + strings.ReplaceAll(fe.Param(), " ", ", ")
	case "max", "lte":
		if unit == "" {
			return "must be at most " + fe.Param()
		}
		return fmt.Sprintf("must be at most %s %s", fe.Param(), unit)
	case "min", "gte":
		if unit == "" {
			return "must be at least " + fe.Param()
		}
		return fmt.Sprintf("must be at least %s %s", fe.Param(), unit)
	case "gt":
		return "must be greater than " + fe.Param()
	case "unique":
		return "must not repeat a value"
	}
	return "is invalid (" + fe.Tag() + ")"
}

// PlanContent is the content rule of every plan, session plan and shared
// plan alike: valid UTF-8, not blank (a plan of whitespace is no plan), at
// most maxBytes bytes (413 payload_too_large above). field names the
// content in errors.
func PlanContent(field, content string, maxBytes int64) error {
	switch {
	case int64(len(content)) > maxBytes:
		return apierr.New(apierr.PayloadTooLarge, "%s is %d bytes, above the limit of %d bytes (--max-plan-bytes)",
			field, len(content), maxBytes)
	case strings.TrimSpace(content) == "":
		return apierr.Invalid(field, "must not be empty")
	case !utf8.ValidString(content):
		return apierr.Invalid(field, "must be UTF-8 text")
	}
	return NoNUL(field, content)
}
