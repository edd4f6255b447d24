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

	"github.com/go-playground/validator/v10"

	"github.com/planserver/planserver/internal/apierr"
)

// The identifier rules of API.md, each defined once.
var (
	SessionID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)
	PlanName  = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,127}$`)
	// StepID is also the pattern of a step id in plan-schema.json.
	StepID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)
)

// rules maps each custom tag to its check and the message a client reads.
var rules = map[string]struct {
	re  *regexp.Regexp
	msg string
}{
	"session_id": {SessionID, "must match ^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"},
	"plan_name":  {PlanName, "must match ^[a-z0-9][a-z0-9_-]{0,127}$"},
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
	for tag, r := range rules {
		re := r.re
		if err := v.RegisterValidation(tag, func(fl validator.FieldLevel) bool {
			return re.MatchString(fl.Field().String())
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
	if r, ok := rules[fe.Tag()]; ok {
		return r.msg
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
