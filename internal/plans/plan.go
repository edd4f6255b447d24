// Package plans owns shared plans: named Markdown documents that many agents
// and sessions read and write, with a free-form status, structured steps,
// a revision bumped by every write, and the history of earlier revisions.
// It holds the domain types, the name rule, the YAML document format and
// the store. It never imports net/http.
package plans

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/planserver/planserver/internal/apierr"
	"github.com/planserver/planserver/internal/validation"
)

// Limits on a plan's short fields, in characters.
const (
	MaxTitle  = 1024
	MaxAuthor = 256
	MaxStatus = 256
)

// Plan is a shared plan document at one revision.
type Plan struct {
	Name      string     `json:"name"`
	Title     string     `json:"title"`
	Content   string     `json:"content"`
	Author    string     `json:"author"`
	Status    string     `json:"status"`
	Steps     []StepView `json:"steps"`
	Progress  Progress   `json:"progress"`
	Revision  int64      `json:"revision"`
	CreatedAt string     `json:"created_at"`
	UpdatedAt string     `json:"updated_at"`
}

// Summary is a plan without its content or steps, but with their progress:
// what lists and events carry, so listing plans never costs their bodies.
type Summary struct {
	Name      string   `json:"name"`
	Title     string   `json:"title"`
	Author    string   `json:"author"`
	Status    string   `json:"status"`
	Progress  Progress `json:"progress"`
	Revision  int64    `json:"revision"`
	CreatedAt string   `json:"created_at"`
	UpdatedAt string   `json:"updated_at"`
}

// Summary returns p without its content and steps.
func (p *Plan) Summary() Summary {
	return Summary{Name: p.Name, Title: p.Title, Author: p.Author, Status: p.Status, Progress: p.Progress,
		Revision: p.Revision, CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt}
}

// StatusView is a plan's status and revision without anything else, for
// get_plan_status and set_plan_status.
type StatusView struct {
	Name     string `json:"name"`
	Status   string `json:"status"`
	Revision int64  `json:"revision"`
}

// RevisionSummary is one entry of a plan's history.
type RevisionSummary struct {
	Revision  int64  `json:"revision"`
	Author    string `json:"author"`
	Status    string `json:"status"`
	UpdatedAt string `json:"updated_at"`
}

// Warning names a stored plan a list skipped because it could not be read,
// so a client can notice and repair it (for instance by deleting it).
type Warning struct {
	Name    string `json:"name"`
	Message string `json:"message"`
}

// ValidateName checks a plan name against the rule of API.md. Names are
// lower-case slugs so two spellings can never name one plan and a name is
// safe in any URL or file path as it is: no "/", no "..", nothing to escape.
func ValidateName(name string) error {
	if !validation.PlanName.MatchString(name) {
		return apierr.Invalid("name", "plan name %q must match %s", name, validation.PlanName.String())
	}
	return nil
}

// Change is one write to a plan. A nil field keeps the plan's current value
// (on create, its zero value); an empty one clears it.
type Change struct {
	Title   *string
	Content *string
	Author  *string
	Status  *string
	// Steps nil keeps the current steps; an empty, non-nil slice clears
	// them. They come from ParseSteps, which validated them.
	Steps Steps
	// contentOptional lets a write leave the content out although it
	// replaces the plan: a YAML document in the plan & action item format
	// carries steps, and may carry no Markdown at all (DecodeYAML).
	contentOptional bool
}

// validate checks c's fields; contentRequired is set for writes that
// replace the content (every PUT of the plan or of its content).
// maxContent is the content limit in bytes (payload_too_large above).
func (c Change) validate(contentRequired bool, maxContent int64) error {
	var fields []apierr.FieldError
	add := func(field, msg string) { fields = append(fields, apierr.FieldError{Field: field, Message: msg}) }
	if c.Content == nil && contentRequired && !c.contentOptional {
		add("content", "is required")
	}
	if c.Content != nil {
		switch {
		case int64(len(*c.Content)) > maxContent:
			return apierr.New(apierr.PayloadTooLarge, "content is %d bytes, above the limit of %d bytes (--max-plan-bytes)",
				len(*c.Content), maxContent)
		case strings.TrimSpace(*c.Content) == "":
			add("content", "must not be empty")
		case !utf8.ValidString(*c.Content):
			add("content", "must be UTF-8 text")
		}
	}
	for _, f := range []struct {
		name string
		v    *string
		max  int
	}{{"title", c.Title, MaxTitle}, {"author", c.Author, MaxAuthor}, {"status", c.Status, MaxStatus}} {
		switch {
		case f.v == nil:
		case !utf8.ValidString(*f.v):
			add(f.name, "must be UTF-8 text")
		case utf8.RuneCountInString(*f.v) > f.max:
			add(f.name, "must be at most "+strconv.Itoa(f.max)+" characters")
		}
	}
	if len(fields) > 0 {
		return apierr.InvalidFields(fields)
	}
	return nil
}
