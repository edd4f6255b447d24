package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/planserver/planserver/internal/plans"
	"github.com/planserver/planserver/internal/revision"
	"github.com/planserver/planserver/internal/sessions"
)

// addTools registers every tool of Operations with its handler.
func (e *Endpoint) addTools() {
	addTool(e, "write_plan", []string{"name", "content"}, e.writePlan)
	addTool(e, "read_plan", []string{"name"}, e.readPlan)
	addTool(e, "list_plans", nil, e.listPlans)
	addTool(e, "delete_plan", []string{"name"}, e.deletePlan)
	addTool(e, "set_plan_status", []string{"name", "status"}, e.setPlanStatus)
	addTool(e, "get_plan_status", []string{"name"}, e.getPlanStatus)
	addTool(e, "edit_plan", []string{"name"}, e.editPlan)
	addTool(e, "write_session_plan", []string{"content"}, e.writeSessionPlan("write_session_plan"))
	addTool(e, "read_session_plan", nil, e.readSessionPlan)
	addTool(e, "exit_plan_mode", nil, e.requestReview("exit_plan_mode"))
	addTool(e, "plan_enter", nil, e.planEnter)
	addTool(e, "plan_write", []string{"content"}, e.writeSessionPlan("plan_write"))
	addTool(e, "plan_exit", nil, e.requestReview("plan_exit"))
	addTool(e, "todo_write", []string{"todos"}, e.todoWrite)
	addTool(e, "list_steps", []string{"name"}, e.listSteps)
	addTool(e, "claim_step", []string{"name"}, e.claimStep)
	addTool(e, "report_step", []string{"name", "step_id", "outcome"}, e.reportStep)
	for _, op := range Operations {
		if !e.registered[op.Name] {
			panic(fmt.Sprintf("mcp: operation %s has no handler", op.Name))
		}
	}
}

// addTool registers the handler of the operation called name. Its input
// schema is generated from In, which is built from the api types of the
// operation's HTTP route; required lists the arguments that must be sent
// (optional ones are pointers or omitempty in the api types, but inference
// would call every field without omitempty required). The output schema
// is generated from Out the way the SDK would, then made portable.
func addTool[In, Out any](e *Endpoint, name string, required []string,
	h func(context.Context, *sdk.CallToolRequest, In) (*sdk.CallToolResult, Out, error)) {
	op, ok := e.ops[name]
	if !ok {
		panic(fmt.Sprintf("mcp: tool %s is not in Operations", name))
	}
	destructive, openWorld := op.Destructive && !op.ReadOnly, false
	tool := &sdk.Tool{
		Name:         op.Name,
		Title:        op.Title,
		Description:  op.Description,
		InputSchema:  inputSchema[In](required),
		OutputSchema: outputSchema[Out](),
		Annotations: &sdk.ToolAnnotations{
			Title:           op.Title,
			ReadOnlyHint:    op.ReadOnly,
			DestructiveHint: &destructive,
			IdempotentHint:  op.Idempotent,
			OpenWorldHint:   &openWorld,
		},
	}
	sdk.AddTool(e.server, tool, h)
	if e.registered == nil {
		e.registered = map[string]bool{}
	}
	e.registered[name] = true
}

// stepsSchema is the schema of a plan's steps: the Step of plan-schema.json,
// the very schema every write of steps is validated against.
var stepsSchema = func() *jsonschema.Schema {
	var doc struct {
		Definitions map[string]json.RawMessage `json:"definitions"`
	}
	if err := json.Unmarshal(plans.PlanSchemaJSON(), &doc); err != nil {
		panic(err)
	}
	step := new(jsonschema.Schema)
	if err := json.Unmarshal(doc.Definitions["Step"], step); err != nil {
		panic(err)
	}
	maxItems := 1000
	return &jsonschema.Schema{Types: []string{"array", "null"}, MaxItems: &maxItems, Items: step,
		Description: "The plan's structured steps (the plan & action item format); left out keeps them, [] clears them."}
}()

// argDocs describe the arguments that recur across tools.
var argDocs = map[string]string{
	"name":                "The shared plan's name: lowercase letters, digits, '-' and '_' (e.g. release, db-migration).",
	"content":             "The full plan content (Markdown). Replaces the existing content.",
	"title":               "Optional human-readable title; left out keeps the current one.",
	"author":              "Optional label of who is writing (typically the agent's name); left out, the revision is your token's name (anonymous without auth).",
	"status":              "A free-form status such as in-progress, blocked or done.",
	"last_known_revision": "Optional optimistic-lock guard: the revision you last read. If the plan changed since, nothing is written and the error names the current revision. 0 means the plan must not exist yet.",
	"rationale":           "Optional: why the plan is ready, for the human reviewer.",
	"todos":               "The whole list, in order; it replaces the current one.",
	"step_id":             "The step's id.",
	"worker":              "Who works on the step (holds the claim); defaults to the bound session's id, else your token's name.",
	"owner":               "Only steps of this owner (role or agent).",
	"lease_seconds":       fmt.Sprintf("How long the claim holds (default %d); claim again to renew.", plans.DefaultLeaseSeconds),
	"ready":               "true: only the steps that can start now; false: only those that cannot.",
	"offset":              "The first line of content to return, counting from 1.",
	"limit":               "How many lines (read_plan) or plans (list_plans) to return.",
	"page_token":          "next_page_token of the previous page.",
	"outcome":             "success (the step becomes complete), failure or blocked (it becomes blocked).",
	"details":             "What was done, or what went wrong.",
	"artifacts":           "Files, tests and their results the report points at.",
}

// inputSchema generates the input schema of In. The required arguments are
// the ones listed at the top, and in nested objects the fields the api
// types mark validate:"required".
func inputSchema[In any](required []string) *jsonschema.Schema {
	t := reflect.TypeFor[In]()
	s, err := jsonschema.ForType(t, &jsonschema.ForOptions{
		TypeSchemas: map[reflect.Type]*jsonschema.Schema{reflect.TypeFor[json.RawMessage](): stepsSchema},
	})
	if err != nil {
		panic(fmt.Sprintf("mcp: input schema of %s: %v", t, err))
	}
	requiredFromTags(t, s)
	s.Required = required
	if s.Properties == nil {
		s.Properties = map[string]*jsonschema.Schema{} // an object with no arguments
	}
	for name, p := range s.Properties {
		if p.Description == "" {
			p.Description = argDocs[name]
		}
	}
	portableInput(s)
	return s
}

// outputSchema generates the output schema of Out (of what it points to,
// as the SDK does) in the portable form.
func outputSchema[Out any]() *jsonschema.Schema {
	t := reflect.TypeFor[Out]()
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	s, err := jsonschema.ForType(t, &jsonschema.ForOptions{})
	if err != nil {
		panic(fmt.Sprintf("mcp: output schema of %s: %v", t, err))
	}
	portableOutput(s)
	return s
}

// requiredFromTags sets the required properties of the objects in s from
// the validate:"required" tags of the struct types they were generated
// from.
func requiredFromTags(t reflect.Type, s *jsonschema.Schema) {
	if s == nil {
		return
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		requiredFromTags(t.Elem(), s.Items)
	case reflect.Struct:
		s.Required = nil
		for _, f := range reflect.VisibleFields(t) {
			if f.Anonymous || !f.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" || name == "-" {
				continue
			}
			if strings.Contains(","+f.Tag.Get("validate")+",", ",required,") {
				s.Required = append(s.Required, name)
			}
			requiredFromTags(f.Type, s.Properties[name])
		}
	}
}

// pre is the precondition of a write that names last_known_revision (or
// not): the body field of the HTTP routes, held to --require-preconditions
// the same way.
func (e *Endpoint) pre(lastKnown *int64) (revision.Precondition, error) {
	return revision.New(revision.Match{}, revision.Match{}, lastKnown, e.b.RequirePreconditions)
}

// allow is the access check of tool on session target ("" for none), with
// the action of the tool's HTTP route.
func (e *Endpoint) allow(ctx context.Context, tool, target string) error {
	var hidden error
	if target != "" {
		hidden = sessions.NotFound(target)
	}
	return e.b.Access.Authorize(ctx, e.ops[tool].Action, target, hidden)
}

// bound returns the session the call is bound to, after the access check
// of tool on it. The gate has made sure a session tool has one.
func (e *Endpoint) bound(ctx context.Context, tool string) (*sessions.Session, error) {
	s := sessionFrom(ctx)
	if s == nil {
		return nil, failure{noSession(tool)}
	}
	return s, e.allow(ctx, tool, s.ID)
}
