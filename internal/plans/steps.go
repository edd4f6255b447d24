package plans

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/apierr"
	"github.com/planserver/planserver/internal/db"
	"github.com/planserver/planserver/internal/scope"
	"github.com/planserver/planserver/internal/validation"
)

// Step statuses. A step is pending until it is started (claimed or set
// in_progress), then complete or blocked.
const (
	StepPending    = api.StepPending
	StepInProgress = api.StepInProgress
	StepComplete   = api.StepComplete
	StepBlocked    = api.StepBlocked
)

// StepStatuses lists the step statuses in lifecycle order.
var StepStatuses = []string{StepPending, StepInProgress, StepComplete, StepBlocked}

// Lease bounds of a claim, in seconds.
const (
	DefaultLeaseSeconds = 300
	MaxLeaseSeconds     = 86400
)

// Step is one action item of a plan, in the plan & action item format of
// the seeds, plus the claim a worker holds on it: the stored form, and the
// form written in JSON and YAML documents.
type Step = api.Step

// StepView is a step as reads show it, with what is evaluated against the
// clock at read time.
type StepView = api.StepView

// Steps are a plan's steps in plan order, the order claims follow.
type Steps []Step

// MarshalJSON encodes nil as [] so a plan always has a steps array.
func (s Steps) MarshalJSON() ([]byte, error) {
	if s == nil {
		return []byte("[]"), nil
	}
	return json.Marshal([]Step(s))
}

// encode returns the steps as the JSON text stored in the database.
func (s Steps) encode() string {
	raw, err := s.MarshalJSON()
	if err != nil {
		panic(fmt.Sprintf("encode steps: %v", err)) // strings and bools only
	}
	return string(raw)
}

// index returns the position of the step with id, or -1.
func (s Steps) index(id string) int {
	for i := range s {
		if s[i].ID == id {
			return i
		}
	}
	return -1
}

// leaseExpired reports whether s is an in_progress step whose claim ran out
// at or before now. An unreadable expiry counts as expired, so a damaged
// claim can never lock a step forever.
func leaseExpired(s *Step, now time.Time) bool {
	if s.Status != StepInProgress || s.ClaimExpiresAt == nil {
		return false
	}
	t, err := time.Parse(time.RFC3339Nano, *s.ClaimExpiresAt)
	return err != nil || !now.Before(t)
}

// A lease is one claim as a write leaves it: the step, its holder, and its
// end. Renewing a claim or taking a step over starts another lease; each
// lease that runs out is reported once (step.claim_expired, leases.go).
type lease struct {
	stepID, claimedBy, expiresAt string
}

// leaseIn returns the lease s holds, and false when it holds none: only an
// in_progress step is claimed.
func leaseIn(s *Step) (lease, bool) {
	if s.Status != StepInProgress || s.ClaimedBy == nil || s.ClaimExpiresAt == nil {
		return lease{}, false
	}
	return lease{stepID: s.ID, claimedBy: *s.ClaimedBy, expiresAt: *s.ClaimExpiresAt}, true
}

// leaseChanges compares the steps a write replaces (old) with the steps it
// stores (next), matching steps by id: ended lists the positions in old of
// the steps whose lease the write ends (the step is gone, released,
// renewed or taken over), started the positions in next of the steps whose
// lease it starts. A lease both hold unchanged is in neither.
func leaseChanges(old, next Steps) (ended, started []int) {
	kept := make(map[lease]bool)
	for i := range next {
		if l, ok := leaseIn(&next[i]); ok {
			kept[l] = true
		}
	}
	had := make(map[lease]bool)
	for i := range old {
		if l, ok := leaseIn(&old[i]); ok {
			had[l] = true
			if !kept[l] {
				ended = append(ended, i)
			}
		}
	}
	for i := range next {
		if l, ok := leaseIn(&next[i]); ok && !had[l] {
			started = append(started, i)
		}
	}
	return ended, started
}

// claimable reports whether a worker may take s now, its deps aside:
// pending, or in progress under a lease that has run out.
func claimable(s *Step, now time.Time) bool {
	return s.Status == StepPending || leaseExpired(s, now)
}

// heldBy reports whether worker holds the claim on s (expired or not).
func heldBy(s *Step, worker string) bool {
	return s.Status == StepInProgress && s.ClaimedBy != nil && *s.ClaimedBy == worker
}

// claim makes s in_progress under worker's lease of lease seconds from now.
func claim(s *Step, worker string, now time.Time, lease int) {
	expires := db.FormatTime(now.Add(time.Duration(lease) * time.Second))
	s.Status = StepInProgress
	s.ClaimedBy = &worker
	s.ClaimExpiresAt = &expires
}

// release drops any claim on s.
func release(s *Step) { s.ClaimedBy, s.ClaimExpiresAt = nil, nil }

// completeIDs returns the ids of the complete steps.
func (s Steps) completeIDs() map[string]bool {
	done := make(map[string]bool, len(s))
	for i := range s {
		if s[i].Status == StepComplete {
			done[s[i].ID] = true
		}
	}
	return done
}

// IncompleteDeps returns the deps of step i that are not complete, in the
// order the step lists them. A dep naming no step counts as incomplete.
func (s Steps) IncompleteDeps(i int) []string {
	done := s.completeIDs()
	var out []string
	for _, d := range s[i].Deps {
		if !done[d] {
			out = append(out, d)
		}
	}
	return out
}

// Ready returns the positions of the steps a worker may take now, in plan
// order: steps that are pending, or in progress under an expired lease,
// and whose deps are all complete.
func Ready(s Steps, now time.Time) []int {
	done := s.completeIDs()
	var out []int
	for i := range s {
		if !claimable(&s[i], now) {
			continue
		}
		ready := true
		for _, d := range s[i].Deps {
			if !done[d] {
				ready = false
				break
			}
		}
		if ready {
			out = append(out, i)
		}
	}
	return out
}

// Progress counts a plan's steps per status, and those ready now, so a UI
// can draw a progress bar without fetching the steps. Every step counts in
// exactly one status; ready is a subset of pending and in_progress (an
// expired lease).
type Progress = api.Progress

// ProgressOf summarizes s at time now.
func ProgressOf(s Steps, now time.Time) Progress {
	p := Progress{Total: len(s), Ready: len(Ready(s, now))}
	for i := range s {
		switch s[i].Status {
		case StepPending:
			p.Pending++
		case StepInProgress:
			p.InProgress++
		case StepComplete:
			p.Complete++
		case StepBlocked:
			p.Blocked++
		}
	}
	return p
}

// NextViewChange returns the first moment after now at which a read of p
// would show something else without any write: the end of the earliest
// lease still running (the step's claim_expired turns true, it may become
// ready). ok is false when nothing changes by time alone.
func NextViewChange(p *Plan, now time.Time) (at time.Time, ok bool) {
	for i := range p.Steps {
		s := &p.Steps[i].Step
		if s.Status != StepInProgress || s.ClaimExpiresAt == nil {
			continue
		}
		t, err := time.Parse(time.RFC3339Nano, *s.ClaimExpiresAt)
		if err != nil || !now.Before(t) {
			continue // already shown expired (leaseExpired)
		}
		if !ok || t.Before(at) {
			at, ok = t, true
		}
	}
	return at, ok
}

// View returns s as reads show it at time now.
func (s Steps) View(now time.Time) []StepView {
	out := make([]StepView, len(s))
	for i := range s {
		out[i] = StepView{Step: s[i], ClaimExpired: leaseExpired(&s[i], now)}
	}
	return out
}

// ParseStepStatus checks a step status named in field.
func ParseStepStatus(field, status string) error {
	for _, st := range StepStatuses {
		if status == st {
			return nil
		}
	}
	return apierr.Invalid(field, "must be one of: %s", strings.Join(StepStatuses, ", "))
}

//go:embed plan-schema.json
var planSchemaJSON []byte

// PlanSchemaJSON returns the JSON Schema every write of steps is checked
// against (draft-07), for clients that validate a plan before sending it.
func PlanSchemaJSON() []byte { return bytes.Clone(planSchemaJSON) }

var planSchema = compilePlanSchema()

func compilePlanSchema() *jsonschema.Schema {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(planSchemaJSON))
	if err != nil {
		panic(fmt.Sprintf("plan-schema.json: %v", err))
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("urn:planserver:plan-schema", doc); err != nil {
		panic(fmt.Sprintf("plan-schema.json: %v", err))
	}
	return c.MustCompile("urn:planserver:plan-schema")
}

// maxFieldErrors bounds the field errors one write reports: enough to fix
// a document in one go, not so many that a hostile one makes a huge answer.
const maxFieldErrors = 100

// ParseSteps decodes and validates the steps of a write, given as a JSON
// array: the JSON Schema of plan-schema.json first, then the claim rules
// and the graph rules (ValidateGraph). Left-out and null optional fields
// take their defaults (status pending, empty lists); claim_expired is
// read-only and ignored. Errors are invalid_argument with one entry per
// problem, named like steps[3].deps[0].
func ParseSteps(raw []byte) (Steps, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, apierr.Invalid("steps", "must be an array of step objects (malformed JSON)")
	}
	if err := validation.NoNULInJSON("steps", raw); err != nil {
		return nil, err
	}
	if err := planSchema.Validate(map[string]any{"steps": doc}); err != nil {
		// Report the graph's faults too where the steps still read as
		// steps (an unknown field, say), so one round trip shows them all.
		var loose Steps
		if json.Unmarshal(raw, &loose) == nil {
			loose.normalize()
			return nil, schemaError(err, ValidateGraph(loose)...)
		}
		return nil, schemaError(err)
	}
	var steps Steps
	if err := json.Unmarshal(raw, &steps); err != nil {
		// The schema judged the last of repeated members, encoding/json
		// fails on an earlier one: ambiguous either way.
		return nil, apierr.Invalid("steps", "does not fit the step format (is a member repeated?): %v", err)
	}
	steps.normalize()
	var fields []apierr.FieldError
	for i := range steps {
		fields = append(fields, checkClaim(&steps[i], i)...)
		// A step's files and commands are its part of the plan's scope:
		// the same rules as a session plan's scope block.
		sc := scope.Scope{Files: steps[i].Files, Commands: steps[i].Commands}
		fields = append(fields, sc.Validate("steps["+strconv.Itoa(i)+"]")...)
	}
	fields = append(fields, ValidateGraph(steps)...)
	if len(fields) > 0 {
		return nil, apierr.InvalidFields(fields[:min(len(fields), maxFieldErrors)])
	}
	return steps, nil
}

// ScopeOf is a shared plan's scope: the union of its steps' files and
// commands, each once, in plan order. It is informational: approvals are
// of session plans, and a shared plan declares no network.
func ScopeOf(s Steps) api.Scope {
	var u scope.Scope
	for i := range s {
		u = scope.Union(u, scope.Scope{Files: s[i].Files, Commands: s[i].Commands})
	}
	out := api.Scope{Files: u.Files, Commands: u.Commands, Connect: []string{}}
	if out.Files == nil {
		out.Files = []string{}
	}
	if out.Commands == nil {
		out.Commands = []string{}
	}
	return out
}

// decodeStoredSteps reads steps as stored by a write, which ParseSteps
// validated: a strict decode without the schema, so reading stays cheap.
func decodeStoredSteps(raw []byte) (Steps, error) {
	if !json.Valid(raw) {
		return nil, fmt.Errorf("its steps are not valid JSON")
	}
	if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '[' {
		return nil, fmt.Errorf("its steps are not a JSON array")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var steps Steps
	if err := dec.Decode(&steps); err != nil {
		return nil, fmt.Errorf("its steps do not fit the step format: %v", err)
	}
	steps.normalize()
	return steps, nil
}

// normalize fills defaults so every step reads the same however it was
// written: status pending, empty lists rather than null, claim times in the
// server's format.
func (s Steps) normalize() {
	for i := range s {
		st := &s[i]
		if st.Status == "" {
			st.Status = StepPending
		}
		for _, l := range []*[]string{&st.Deps, &st.Commands, &st.Files} {
			if *l == nil {
				*l = []string{}
			}
		}
		if st.ClaimExpiresAt != nil {
			if t, err := time.Parse(time.RFC3339Nano, *st.ClaimExpiresAt); err == nil {
				formatted := db.FormatTime(t)
				st.ClaimExpiresAt = &formatted
			}
		}
	}
}

// checkClaim enforces what the schema cannot say: a claim has a holder and
// an expiry, and only an in_progress step is claimed.
func checkClaim(s *Step, i int) []apierr.FieldError {
	at := func(f string) string { return "steps[" + strconv.Itoa(i) + "]." + f }
	var out []apierr.FieldError
	switch {
	case s.ClaimedBy != nil && s.ClaimExpiresAt == nil:
		out = append(out, apierr.FieldError{Field: at("claim_expires_at"), Message: "is required with claimed_by"})
	case s.ClaimedBy == nil && s.ClaimExpiresAt != nil:
		out = append(out, apierr.FieldError{Field: at("claimed_by"), Message: "is required with claim_expires_at"})
	case s.ClaimedBy != nil && s.Status != StepInProgress:
		out = append(out, apierr.FieldError{Field: at("claimed_by"),
			Message: fmt.Sprintf("only an in_progress step can be claimed; this one is %s", s.Status)})
	}
	if s.ClaimExpiresAt != nil {
		if _, err := time.Parse(time.RFC3339Nano, *s.ClaimExpiresAt); err != nil {
			out = append(out, apierr.FieldError{Field: at("claim_expires_at"), Message: "must be an RFC 3339 time"})
		}
	}
	return out
}

// ValidateGraph checks the dependency graph of s: ids are unique, every dep
// names a step, no step depends on itself, and there is no cycle. Each
// problem is reported at the field that causes it; a cycle is reported
// once, at the dep that closes the first one found, and named, e.g.
// steps[3].deps[0]: "cycle 2 → 4 → 2" (a long one shortened). Cycles are
// only looked for once ids and deps are otherwise sound. The work is
// linear in the steps and deps, however hostile the graph.
func ValidateGraph(s Steps) []apierr.FieldError {
	var out []apierr.FieldError
	add := func(field, format string, args ...any) {
		out = append(out, apierr.FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
	}
	pos := make(map[string]int, len(s))
	for i := range s {
		if first, dup := pos[s[i].ID]; dup {
			add(fmt.Sprintf("steps[%d].id", i), "duplicate id %q, already used by steps[%d]", s[i].ID, first)
			continue
		}
		pos[s[i].ID] = i
	}
	for i := range s {
		for j, d := range s[i].Deps {
			if len(out) >= maxFieldErrors {
				return out
			}
			field := fmt.Sprintf("steps[%d].deps[%d]", i, j)
			switch _, known := pos[d]; {
			case d == s[i].ID:
				add(field, "step %q depends on itself", d)
			case !known:
				add(field, "unknown step %q", d)
			}
		}
	}
	if len(out) > 0 {
		return out
	}
	findCycles(s, pos, func(u, j int, cycle []int) bool {
		add(fmt.Sprintf("steps[%d].deps[%d]", u, j), "cycle %s: each step waits for the next, so none of them can ever start",
			cycleText(s, cycle))
		return len(out) < maxFieldErrors
	})
	return out
}

// findCycles looks for cycles along deps with an iterative depth-first
// search (no recursion, so a long chain cannot exhaust the stack). Each
// dep that leads back to a step still on the search path closes a cycle:
// found gets the step u, the dep's index j, and the cycle as step positions
// from the dep's target to u, and returns whether to go on looking.
func findCycles(s Steps, pos map[string]int, found func(u, j int, cycle []int) bool) {
	const (
		unseen = iota
		onPath
		done
	)
	state := make([]int, len(s))
	next := make([]int, len(s)) // the next dep to follow from each step on the path
	var path []int
	for root := range s {
		if state[root] != unseen {
			continue
		}
		state[root] = onPath
		path = append(path[:0], root)
		for len(path) > 0 {
			u := path[len(path)-1]
			if next[u] == len(s[u].Deps) {
				state[u] = done
				path = path[:len(path)-1]
				continue
			}
			j := next[u]
			next[u]++
			v := pos[s[u].Deps[j]]
			switch state[v] {
			case unseen:
				state[v] = onPath
				path = append(path, v)
			case onPath:
				start := len(path) - 1
				for path[start] != v {
					start--
				}
				if !found(u, j, path[start:]) {
					return
				}
			}
		}
	}
}

// maxCycleNames bounds how many step ids a cycle's message names.
const maxCycleNames = 12

// cycleText names a cycle's steps, "a → b → a", keeping the first and last
// few of a long one.
func cycleText(s Steps, cycle []int) string {
	ids := make([]string, 0, min(len(cycle), maxCycleNames)+2)
	for k, i := range cycle {
		if len(cycle) > maxCycleNames && k == maxCycleNames/2 {
			ids = append(ids, fmt.Sprintf("… (%d more) …", len(cycle)-maxCycleNames))
		}
		if len(cycle) > maxCycleNames && k >= maxCycleNames/2 && k < len(cycle)-maxCycleNames/2 {
			continue
		}
		ids = append(ids, s[i].ID)
	}
	ids = append(ids, s[cycle[0]].ID)
	return strings.Join(ids, " → ")
}

var schemaPrinter = message.NewPrinter(language.English)

// schemaError turns a JSON Schema validation failure into field errors,
// one per failing leaf, named the way the client wrote the document.
func schemaError(err error, more ...apierr.FieldError) error {
	verr, ok := err.(*jsonschema.ValidationError)
	if !ok {
		return fmt.Errorf("validate steps: %w", err)
	}
	var fields []apierr.FieldError
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		at := fieldPath(e.InstanceLocation)
		switch k := e.ErrorKind.(type) {
		case *kind.Required:
			for _, p := range k.Missing {
				fields = append(fields, apierr.FieldError{Field: at + "." + p, Message: "is required"})
			}
		case *kind.AdditionalProperties:
			for _, p := range k.Properties {
				fields = append(fields, apierr.FieldError{Field: at + "." + p, Message: "unknown field"})
			}
		case *kind.Enum:
			var want []string
			for _, v := range k.Want {
				if v != nil { // null: the default, which leaving it out gives too
					want = append(want, fmt.Sprint(v))
				}
			}
			fields = append(fields, apierr.FieldError{Field: at, Message: fmt.Sprintf("must be one of %s, not %v", strings.Join(want, ", "), k.Got)})
		case *kind.Type:
			msg := fmt.Sprintf("must be %s, not %s", strings.Join(k.Want, " or "), k.Got)
			if k.Got == "number" && strings.Contains(strings.Join(k.Want, ","), "string") {
				msg += ` (in YAML, quote it: "1")`
			}
			fields = append(fields, apierr.FieldError{Field: at, Message: msg})
		default:
			fields = append(fields, apierr.FieldError{Field: at, Message: e.ErrorKind.LocalizedString(schemaPrinter)})
		}
	}
	walk(verr)
	if len(fields) == 0 {
		fields = append(fields, apierr.FieldError{Field: "steps", Message: verr.Error()})
	}
	fields = append(fields, more...)
	return apierr.InvalidFields(fields[:min(len(fields), maxFieldErrors)])
}

// fieldPath writes a JSON pointer's tokens as the contract spells a
// field in a problem document (api/openapi.yaml):
// ["steps","3","deps","0"] is steps[3].deps[0].
func fieldPath(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		if _, err := strconv.Atoi(t); err == nil && b.Len() > 0 {
			b.WriteString("[" + t + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(t)
	}
	return b.String()
}
