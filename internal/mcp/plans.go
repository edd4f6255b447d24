package mcp

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/apierr"
	"github.com/planserver/planserver/internal/plans"
)

// The shared-plan tools: each is the HTTP route of its Operation, with the
// plan's name (a path parameter there) as an argument.

// planName is the argument naming a shared plan.
type planName struct {
	Name string `json:"name"`
}

type writePlanIn struct {
	planName
	api.PlanWrite
}

func (e *Endpoint) writePlan(ctx context.Context, _ *sdk.CallToolRequest, in writePlanIn) (*sdk.CallToolResult, *api.Plan, error) {
	const tool = "write_plan"
	if err := e.allow(ctx, tool, ""); err != nil {
		return nil, nil, e.fail(tool, err)
	}
	ch, err := plans.ChangeOf(in.PlanWrite)
	if err != nil {
		return nil, nil, e.fail(tool, err)
	}
	pre, err := e.pre(in.LastKnownRevision)
	if err != nil {
		return nil, nil, e.fail(tool, err)
	}
	p, _, err := e.b.Plans.Put(ctx, in.Name, ch, pre)
	if err != nil {
		return nil, nil, e.fail(tool, err)
	}
	return nil, p, nil
}

type readPlanIn struct {
	planName
	// Offset and Limit select lines of the content, like an editor's read
	// tool: the first line to return (from 1) and how many.
	Offset *int `json:"offset,omitempty"`
	Limit  *int `json:"limit,omitempty"`
}

// lineWindow says which lines of the content a read returned.
type lineWindow struct {
	// Offset is the first line returned (1 is the first line).
	Offset int `json:"offset"`
	// Count is how many lines were returned.
	Count int `json:"count"`
	// Total is how many lines the whole content has.
	Total int `json:"total"`
}

type readPlanOut struct {
	api.Plan
	// Lines is the part of the content returned.
	Lines lineWindow `json:"lines"`
}

func (e *Endpoint) readPlan(ctx context.Context, _ *sdk.CallToolRequest, in readPlanIn) (*sdk.CallToolResult, *readPlanOut, error) {
	const tool = "read_plan"
	if err := e.allow(ctx, tool, ""); err != nil {
		return nil, nil, e.fail(tool, err)
	}
	if err := plans.ValidateName(in.Name); err != nil {
		return nil, nil, e.fail(tool, err)
	}
	p, err := e.b.Plans.Get(ctx, in.Name)
	if err != nil {
		return nil, nil, e.fail(tool, err)
	}
	content, window, err := lineRange(p.Content, in.Offset, in.Limit)
	if err != nil {
		return nil, nil, e.fail(tool, err)
	}
	out := &readPlanOut{Plan: *p, Lines: window}
	out.Content = content
	return nil, out, nil
}

// lineRange returns limit lines of content from line offset (1-based; nil
// for the whole content), with their line endings, and which lines they
// are. Errors: invalid_argument.
func lineRange(content string, offset, limit *int) (string, lineWindow, error) {
	lines := strings.SplitAfter(content, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	total := len(lines)
	first, n := 1, total
	if offset != nil {
		if *offset < 1 {
			return "", lineWindow{}, apierr.Invalid("offset", "must be 1 or more (the first line is 1), got %d", *offset)
		}
		if *offset > total && total > 0 {
			return "", lineWindow{}, apierr.Invalid("offset", "is line %d, but the content has %d lines", *offset, total)
		}
		first, n = *offset, total-*offset+1
	}
	if limit != nil {
		if *limit < 1 {
			return "", lineWindow{}, apierr.Invalid("limit", "must be 1 or more, got %d", *limit)
		}
		n = min(n, *limit)
	}
	if total == 0 {
		return "", lineWindow{Offset: 1, Count: 0, Total: 0}, nil
	}
	return strings.Join(lines[first-1:first-1+n], ""), lineWindow{Offset: first, Count: n, Total: total}, nil
}

func (e *Endpoint) listPlans(ctx context.Context, _ *sdk.CallToolRequest, in plans.ListQuery) (*sdk.CallToolResult, *api.PlanPage, error) {
	const tool = "list_plans"
	if err := e.allow(ctx, tool, ""); err != nil {
		return nil, nil, e.fail(tool, err)
	}
	page, err := e.b.Plans.List(ctx, in)
	if err != nil {
		return nil, nil, e.fail(tool, err)
	}
	return nil, page, nil
}

type deletePlanIn struct {
	planName
	LastKnownRevision *int64 `json:"last_known_revision,omitempty"`
}

type deletedOut struct {
	Deleted string `json:"deleted"`
}

func (e *Endpoint) deletePlan(ctx context.Context, _ *sdk.CallToolRequest, in deletePlanIn) (*sdk.CallToolResult, *deletedOut, error) {
	const tool = "delete_plan"
	if err := e.allow(ctx, tool, ""); err != nil {
		return nil, nil, e.fail(tool, err)
	}
	pre, err := e.pre(in.LastKnownRevision)
	if err != nil {
		return nil, nil, e.fail(tool, err)
	}
	if err := e.b.Plans.Delete(ctx, in.Name, pre); err != nil {
		return nil, nil, e.fail(tool, err)
	}
	return nil, &deletedOut{Deleted: in.Name}, nil
}

type setPlanStatusIn struct {
	planName
	api.PlanStatusWrite
}

func (e *Endpoint) setPlanStatus(ctx context.Context, _ *sdk.CallToolRequest, in setPlanStatusIn) (*sdk.CallToolResult, *api.PlanStatus, error) {
	const tool = "set_plan_status"
	if err := e.allow(ctx, tool, ""); err != nil {
		return nil, nil, e.fail(tool, err)
	}
	if in.Status == nil {
		return nil, nil, e.fail(tool, apierr.Invalid("status", "is required"))
	}
	pre, err := e.pre(in.LastKnownRevision)
	if err != nil {
		return nil, nil, e.fail(tool, err)
	}
	v, err := e.b.Plans.SetStatus(ctx, in.Name, *in.Status, pre)
	if err != nil {
		return nil, nil, e.fail(tool, err)
	}
	return nil, v, nil
}

func (e *Endpoint) getPlanStatus(ctx context.Context, _ *sdk.CallToolRequest, in planName) (*sdk.CallToolResult, *api.PlanStatus, error) {
	const tool = "get_plan_status"
	if err := e.allow(ctx, tool, ""); err != nil {
		return nil, nil, e.fail(tool, err)
	}
	v, err := e.b.Plans.GetStatus(ctx, in.Name)
	if err != nil {
		return nil, nil, e.fail(tool, err)
	}
	return nil, v, nil
}

// Edit is one exact replacement of edit_plan.
type Edit struct {
	OldString  string `json:"old_string"`
	NewString  string `json:"new_string"`
	ReplaceAll bool   `json:"replace_all,omitempty"`
}

type editPlanIn struct {
	planName
	// One replacement, like an editor's edit tool...
	OldString  *string `json:"old_string,omitempty" jsonschema:"The exact text to replace; it must occur exactly once unless replace_all."`
	NewString  *string `json:"new_string,omitempty" jsonschema:"The text to put in its place."`
	ReplaceAll bool    `json:"replace_all,omitempty" jsonschema:"Replace every occurrence of old_string."`
	// ...or several, applied in order.
	Edits             []Edit `json:"edits,omitempty" jsonschema:"Several replacements, applied in order to the result of the previous one; all are made or none. Instead of old_string and new_string."`
	LastKnownRevision *int64 `json:"last_known_revision,omitempty"`
}

type editPlanOut struct {
	api.PlanSummary
	// Replacements is how many occurrences were replaced in all.
	Replacements int `json:"replacements"`
}

// editRetries bounds how often an edit without last_known_revision is
// tried again when another write lands between its read and its write.
const editRetries = 5

// editPlan reads the plan, applies the edits to its content and writes it
// back as a write_plan that changes only the content. The write names the
// revision the edits were applied to, so a concurrent write is never lost:
// with last_known_revision that is a version conflict for the model to
// handle; without, the edits are applied again to the newer content.
func (e *Endpoint) editPlan(ctx context.Context, _ *sdk.CallToolRequest, in editPlanIn) (*sdk.CallToolResult, *editPlanOut, error) {
	const tool = "edit_plan"
	if err := e.allow(ctx, tool, ""); err != nil {
		return nil, nil, e.fail(tool, err)
	}
	edits, err := editsOf(in)
	if err != nil {
		return nil, nil, e.fail(tool, err)
	}
	if err := plans.ValidateName(in.Name); err != nil {
		return nil, nil, e.fail(tool, err)
	}
	for attempt := 1; ; attempt++ {
		cur, err := e.b.Plans.Get(ctx, in.Name)
		if err != nil {
			return nil, nil, e.fail(tool, err)
		}
		expect := cur.Revision
		if in.LastKnownRevision != nil {
			expect = *in.LastKnownRevision
		}
		pre, err := e.pre(&expect)
		if err != nil {
			return nil, nil, e.fail(tool, err)
		}
		if err := pre.Check(fmt.Sprintf("plan %q", in.Name), true, cur.Revision); err != nil {
			return nil, nil, e.fail(tool, err)
		}
		content, n, err := ApplyEdits(cur.Content, edits, e.b.MaxPlanBytes)
		if err != nil {
			return nil, nil, e.fail(tool, err)
		}
		p, _, err := e.b.Plans.Put(ctx, in.Name, plans.Change{Content: &content}, pre)
		if apierr.CodeOf(err) == apierr.VersionConflict && in.LastKnownRevision == nil && attempt < editRetries {
			continue // another write landed after the read: edit the newer text
		}
		if err != nil {
			return nil, nil, e.fail(tool, err)
		}
		return nil, &editPlanOut{PlanSummary: p.Summary(), Replacements: n}, nil
	}
}

// editsOf returns the edits of a call, given either as old_string and
// new_string or as edits. Errors: invalid_argument.
func editsOf(in editPlanIn) ([]Edit, error) {
	single := in.OldString != nil || in.NewString != nil
	switch {
	case single && len(in.Edits) > 0:
		return nil, apierr.Invalid("edits", "give either old_string and new_string, or edits, not both")
	case single && (in.OldString == nil || in.NewString == nil):
		return nil, apierr.Invalid("new_string", "old_string and new_string go together: send both")
	case single:
		return []Edit{{OldString: *in.OldString, NewString: *in.NewString, ReplaceAll: in.ReplaceAll}}, nil
	case in.ReplaceAll:
		return nil, apierr.Invalid("replace_all", "goes with old_string; inside edits, set it on each edit")
	case len(in.Edits) == 0:
		return nil, apierr.Invalid("old_string", "nothing to edit: send old_string and new_string, or edits")
	case len(in.Edits) > maxEdits:
		return nil, apierr.Invalid("edits", "at most %d edits at once, got %d", maxEdits, len(in.Edits))
	}
	return in.Edits, nil
}

// maxEdits bounds the edits of one call.
const maxEdits = 100

// ApplyEdits applies edits to content in order and returns the result and
// how many occurrences were replaced. Each old_string must be non-empty,
// differ from its new_string, and occur in the text it applies to exactly
// once, or at least once with replace_all. It changes nothing unless every
// edit applies. The size of each edit's result is computed before it is
// built, so no edit allocates more than maxBytes (--max-plan-bytes): a
// replace_all of a short string by a long one can multiply a plan, and
// the plan it would make is refused as a PUT of it would be. The work is
// bounded by maxBytes times the number of edits (at most maxEdits).
// Errors: invalid_argument, naming the edit and what to do;
// payload_too_large, naming the limit.
func ApplyEdits(content string, edits []Edit, maxBytes int64) (string, int, error) {
	if len(edits) > maxEdits {
		return "", 0, apierr.Invalid("edits", "at most %d edits at once, got %d", maxEdits, len(edits))
	}
	total := 0
	for i, ed := range edits {
		field := "old_string"
		if len(edits) > 1 {
			field = fmt.Sprintf("edits[%d].old_string", i)
		}
		switch n := strings.Count(content, ed.OldString); {
		case ed.OldString == "":
			return "", 0, apierr.Invalid(field, "is empty; give the exact text to replace")
		case ed.OldString == ed.NewString:
			return "", 0, apierr.Invalid(field, "is the same as new_string; nothing would change")
		case n == 0:
			return "", 0, apierr.Invalid(field, "does not occur in the plan's content%s; read_plan shows the current text (whitespace and line breaks must match exactly)",
				afterEarlier(i))
		case n > 1 && !ed.ReplaceAll:
			return "", 0, apierr.Invalid(field, "occurs %d times%s; include more of the surrounding text so it occurs once, or set replace_all", n, afterEarlier(i))
		default:
			if size, ok := editedSize(int64(len(content)), int64(n), int64(len(ed.OldString)), int64(len(ed.NewString)), maxBytes); !ok {
				return "", 0, apierr.New(apierr.PayloadTooLarge, "%s: replacing its %d occurrence(s) would make the plan's content %s bytes, "+
					"above the limit of %d bytes (--max-plan-bytes)", field, n, size, maxBytes)
			}
			total += n
			content = strings.ReplaceAll(content, ed.OldString, ed.NewString)
		}
	}
	return content, total, nil
}

// editedSize is the length of a text of length size after n occurrences
// of a string of length oldLen are replaced by one of length newLen, and
// whether it is at most maxBytes; computed without overflow, and named
// "more than maxBytes" when it would not fit an int64.
func editedSize(size, n, oldLen, newLen, maxBytes int64) (string, bool) {
	if newLen <= oldLen {
		return strconv.FormatInt(size-n*(oldLen-newLen), 10), size-n*(oldLen-newLen) <= maxBytes
	}
	grow := newLen - oldLen
	if size > maxBytes || n > (maxBytes-size)/grow {
		if n > (math.MaxInt64-size)/grow {
			return fmt.Sprintf("more than %d", maxBytes), false
		}
		return strconv.FormatInt(size+n*grow, 10), false
	}
	return strconv.FormatInt(size+n*grow, 10), true
}

func afterEarlier(i int) string {
	if i == 0 {
		return ""
	}
	return " (after the edits before it)"
}
