package validation

import (
	"strings"
	"testing"

	"github.com/planserver/planserver/internal/apierr"
)

type item struct {
	Status string `json:"status" validate:"required,oneof=pending done"`
}

type input struct {
	ID    string `json:"id" validate:"omitempty,session_id"`
	Plan  string `json:"plan" validate:"omitempty,plan_name"`
	Title string `json:"title" validate:"max=5"`
	Items []item `json:"items" validate:"max=2,dive"`
	Skip  string `json:"-"`
	Limit int    `json:"limit" validate:"lte=10"`
}

func TestStructNamesFieldsAsClientsSentThem(t *testing.T) {
	err := Struct(input{
		ID: "-bad", Plan: "Bad", Title: "toolong", Limit: 11,
		Items: []item{{Status: "pending"}, {Status: "nope"}, {}},
	})
	e, ok := apierr.As(err)
	if !ok || e.Code != apierr.InvalidArgument {
		t.Fatalf("Struct = %v, want invalid_argument", err)
	}
	got := map[string]string{}
	for _, f := range e.Fields {
		got[f.Field] = f.Message
	}
	want := map[string]string{
		"id":    "must match ^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$",
		"plan":  "must match ^[a-z0-9][a-z0-9_-]{0,127}$",
		"title": "must be at most 5 characters",
		"items": "must be at most 2 items",
		"limit": "must be at most 10",
	}
	for field, msg := range want {
		if got[field] != msg {
			t.Errorf("%s: %q, want %q", field, got[field], msg)
		}
	}
	if len(e.Fields) != 5 || !strings.HasPrefix(e.Detail, "5 invalid fields") {
		t.Errorf("fields %v, detail %q", e.Fields, e.Detail)
	}
	// dive reports elements by index, with their JSON names.
	if err := Struct(input{Items: []item{{Status: "pending"}, {Status: "nope"}}}); err == nil ||
		!strings.Contains(err.Error(), "items[1].status: must be one of: pending, done") {
		t.Errorf("dive: %v", err)
	}
	if err := Struct(input{Items: []item{{}}}); err == nil || !strings.Contains(err.Error(), "items[0].status: is required") {
		t.Errorf("required: %v", err)
	}
}

func TestStructAcceptsValidAndNonStructs(t *testing.T) {
	if err := Struct(input{ID: "ses.1", Plan: "release-1", Title: "ok", Items: []item{{Status: "done"}}}); err != nil {
		t.Errorf("valid input: %v", err)
	}
	if err := Struct(map[string]any{"anything": 1}); err != nil {
		t.Errorf("a map: %v", err)
	}
	v := input{}
	if err := Struct(&v); err != nil {
		t.Errorf("a pointer to a valid struct: %v", err)
	}
}

func TestPlanContent(t *testing.T) {
	cases := []struct {
		content string
		code    apierr.Code
	}{
		{"# plan", ""},
		{"", apierr.InvalidArgument},
		{" \n\t", apierr.InvalidArgument},
		{"\xff\xfe", apierr.InvalidArgument},
		{strings.Repeat("x", 10), ""},
		{strings.Repeat("x", 11), apierr.PayloadTooLarge},
	}
	for _, c := range cases {
		err := PlanContent("content", c.content, 10)
		got := apierr.Code("")
		if err != nil {
			got = apierr.CodeOf(err)
		}
		if got != c.code {
			t.Errorf("%q: %v, want %s", c.content, err, c.code)
		}
	}
}
