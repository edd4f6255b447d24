// Package plans owns shared plans: named Markdown documents that many agents
// and sessions read and write, with a free-form status, structured steps,
// a revision bumped by every write, and the history of earlier revisions.
// It holds the domain types, the name rule, the YAML document format and
// the store. It never imports net/http.
package plans

import (
	"bytes"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/apierr"
	"github.com/planserver/planserver/internal/validation"
)

// Plan is a shared plan document at one revision.
type Plan = api.Plan

// Summary is a plan without its content or steps, but with their progress:
// what lists and events carry, so listing plans never costs their bodies.
type Summary = api.PlanSummary

// StatusView is a plan's status and revision, for get_plan_status and
// set_plan_status.
type StatusView = api.PlanStatus

// RevisionSummary is one entry of a plan's history.
type RevisionSummary = api.RevisionSummary

// Warning names a stored plan a list skipped because it could not be read.
type Warning = api.PlanWarning

// ValidateName checks a plan name against validation.PlanName, the rule
// the contract states (api/openapi.yaml, the name parameter). Names are
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

// ChangeOf turns a write_plan body (PUT /v1/plans/{name} in JSON, or the
// MCP tool's arguments) into a Change, so every transport reads it the
// same way. Fields left out, or null, keep their current value; the steps
// are parsed and validated (ParseSteps).
func ChangeOf(req api.PlanWrite) (Change, error) {
	ch := Change{Title: req.Title, Content: req.Content, Author: req.Author, Status: req.Status}
	if len(req.Steps) > 0 && !bytes.Equal(req.Steps, []byte("null")) {
		var err error
		if ch.Steps, err = ParseSteps(req.Steps); err != nil {
			return Change{}, err
		}
	}
	return ch, nil
}

// validate checks c's fields; contentRequired is set for writes that
// replace the content (every PUT of the plan or of its content).
// maxContent is the content limit in bytes (payload_too_large above).
func (c Change) validate(contentRequired bool, maxContent int64) error {
	var fields []apierr.FieldError
	if c.Content == nil && contentRequired && !c.contentOptional {
		fields = append(fields, apierr.FieldError{Field: "content", Message: "is required"})
	}
	if c.Content != nil {
		err := validation.PlanContent("content", *c.Content, maxContent)
		if e, ok := apierr.As(err); ok && e.Code == apierr.InvalidArgument {
			fields = append(fields, e.Fields...)
		} else if err != nil {
			return err
		}
	}
	for _, f := range []struct {
		name, rule string
		v          *string
	}{{"title", "title", c.Title}, {"author", "author", c.Author}, {"status", "status", c.Status}} {
		if f.v == nil {
			continue
		}
		if msg := validation.RuleMessage(f.rule, *f.v); msg != "" {
			fields = append(fields, apierr.FieldError{Field: f.name, Message: msg})
		}
	}
	if len(fields) > 0 {
		return apierr.InvalidFields(fields)
	}
	return nil
}
