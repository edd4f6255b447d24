package plans

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/planserver/planserver/internal/apierr"
	"github.com/planserver/planserver/internal/validation"
)

// step builds a step for the pure-function tests: id, status and deps.
func step(id, status string, deps ...string) Step {
	if deps == nil {
		deps = []string{}
	}
	return Step{ID: id, Description: "d", Owner: "o", Status: status, Deps: deps, Commands: []string{}, Files: []string{}}
}

func fields(err error) []string {
	e, ok := apierr.As(err)
	if !ok {
		return nil
	}
	var out []string
	for _, f := range e.Fields {
		out = append(out, f.Field)
	}
	return out
}

func TestParseSteps(t *testing.T) {
	cases := []struct {
		name, in string
		// fields are the field errors wanted, in order; none for success.
		fields []string
		// want is the stored form, when it is worth checking.
		want string
	}{
		{name: "empty", in: `[]`, want: `[]`},
		{name: "defaults", in: `[{"id":"1","description":"d","owner":"o"}]`,
			want: `[{"id":"1","description":"d","owner":"o","deps":[],"status":"pending","parallel":false,"criteria":"","commands":[],"files":[],"risk_notes":"","claimed_by":null,"claim_expires_at":null}]`},
		{name: "nulls are defaults", in: `[{"id":"1","description":"d","owner":"o","deps":null,"status":null,"parallel":null,"criteria":null,"commands":null,"files":null,"risk_notes":null,"claimed_by":null,"claim_expires_at":null}]`,
			want: `[{"id":"1","description":"d","owner":"o","deps":[],"status":"pending","parallel":false,"criteria":"","commands":[],"files":[],"risk_notes":"","claimed_by":null,"claim_expires_at":null}]`},
		{name: "claim normalized, claim_expired ignored", in: `[{"id":"1","description":"d","owner":"o","status":"in_progress","claimed_by":"w","claim_expires_at":"2026-01-10T19:30:00.5+02:00","claim_expired":true}]`,
			want: `[{"id":"1","description":"d","owner":"o","deps":[],"status":"in_progress","parallel":false,"criteria":"","commands":[],"files":[],"risk_notes":"","claimed_by":"w","claim_expires_at":"2026-01-10T17:30:00.500Z"}]`},
		{name: "null", in: `null`, fields: []string{"steps"}},
		{name: "object", in: `{}`, fields: []string{"steps"}},
		{name: "malformed", in: `[{]`, fields: []string{"steps"}},
		{name: "not an object", in: `[{"id":"1","description":"d","owner":"o"},"two"]`, fields: []string{"steps[1]"}},
		{name: "required", in: `[{"description":"d"}]`, fields: []string{"steps[0].id", "steps[0].owner"}},
		{name: "unknown field", in: `[{"id":"1","description":"d","owner":"o","weight":1.5}]`, fields: []string{"steps[0].weight"}},
		{name: "case matters", in: `[{"ID":"1","id":"1","description":"d","owner":"o"}]`, fields: []string{"steps[0].ID"}},
		{name: "bad status", in: `[{"id":"1","description":"d","owner":"o","status":"done"}]`, fields: []string{"steps[0].status"}},
		{name: "number id", in: `[{"id":1,"description":"d","owner":"o"}]`, fields: []string{"steps[0].id"}},
		{name: "bad id", in: `[{"id":"a b","description":"d","owner":"o"}]`, fields: []string{"steps[0].id"}},
		{name: "empty owner", in: `[{"id":"1","description":"d","owner":""}]`, fields: []string{"steps[0].owner"}},
		{name: "dep not a string", in: `[{"id":"1","description":"d","owner":"o"},{"id":"2","description":"d","owner":"o","deps":["1",1]}]`, fields: []string{"steps[1].deps[1]"}},
		{name: "repeated dep", in: `[{"id":"1","description":"d","owner":"o"},{"id":"2","description":"d","owner":"o","deps":["1","1"]}]`, fields: []string{"steps[1].deps"}},
		{name: "repeated member", in: `[{"id":"1","description":"d","owner":"o","deps":0,"deps":null}]`, fields: []string{"steps"}},
		{name: "parallel not bool", in: `[{"id":"1","description":"d","owner":"o","parallel":"yes"}]`, fields: []string{"steps[0].parallel"}},
		{name: "bad expiry", in: `[{"id":"1","description":"d","owner":"o","status":"in_progress","claimed_by":"w","claim_expires_at":"tomorrow"}]`, fields: []string{"steps[0].claim_expires_at"}},
		{name: "claim without expiry", in: `[{"id":"1","description":"d","owner":"o","status":"in_progress","claimed_by":"w"}]`, fields: []string{"steps[0].claim_expires_at"}},
		{name: "expiry without claim", in: `[{"id":"1","description":"d","owner":"o","status":"in_progress","claim_expires_at":"2026-01-10T00:00:00Z"}]`, fields: []string{"steps[0].claimed_by"}},
		{name: "claim on a pending step", in: `[{"id":"1","description":"d","owner":"o","claimed_by":"w","claim_expires_at":"2026-01-10T00:00:00Z"}]`, fields: []string{"steps[0].claimed_by"}},
		{name: "graph errors after schema", in: `[{"id":"1","description":"d","owner":"o","deps":["1"]},{"id":"1","description":"d","owner":"o","deps":["9"]}]`,
			fields: []string{"steps[1].id", "steps[0].deps[0]", "steps[1].deps[0]"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseSteps([]byte(c.in))
			if c.fields != nil {
				if apierr.CodeOf(err) != apierr.InvalidArgument || !slices.Equal(fields(err), c.fields) {
					t.Fatalf("%v: fields %v, want %v", err, fields(err), c.fields)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.want != "" && got.encode() != c.want {
				t.Errorf("stored as %s\nwant       %s", got.encode(), c.want)
			}
		})
	}
	var many []string
	for i := 0; i < 300; i++ {
		many = append(many, fmt.Sprintf(`{"id":"%d","status":"bogus"}`, i))
	}
	_, err := ParseSteps([]byte("[" + strings.Join(many, ",") + "]"))
	if n := len(fields(err)); n != maxFieldErrors {
		t.Errorf("a document with 900 errors reported %d", n)
	}
}

// TestSchemaIDPatternIsTheValidationOne: the step id rule is written twice,
// in plan-schema.json (for clients) and in validation.StepID (for URLs).
func TestSchemaIDPatternIsTheValidationOne(t *testing.T) {
	var schema struct {
		Definitions struct {
			Step struct {
				Properties struct {
					ID struct {
						Pattern string `json:"pattern"`
					} `json:"id"`
				} `json:"properties"`
			} `json:"Step"`
		} `json:"definitions"`
	}
	if err := json.Unmarshal(PlanSchemaJSON(), &schema); err != nil {
		t.Fatal(err)
	}
	if p := schema.Definitions.Step.Properties.ID.Pattern; p != validation.StepID.String() {
		t.Errorf("schema id pattern %s, validation.StepID %s", p, validation.StepID)
	}
}

func TestValidateGraph(t *testing.T) {
	cases := []struct {
		name  string
		steps Steps
		// errs are "field: message fragment".
		errs []string
	}{
		{name: "none", steps: Steps{}},
		{name: "diamond", steps: Steps{step("1", "pending"), step("2", "pending", "1"), step("3", "pending", "1"), step("4", "pending", "2", "3")}},
		{name: "deps before their step", steps: Steps{step("b", "pending", "a"), step("a", "pending")}},
		{name: "duplicate id", steps: Steps{step("1", "pending"), step("2", "pending"), step("1", "pending")},
			errs: []string{`steps[2].id: duplicate id "1", already used by steps[0]`}},
		{name: "unknown dep", steps: Steps{step("1", "pending", "7")}, errs: []string{`steps[0].deps[0]: unknown step "7"`}},
		{name: "self dep", steps: Steps{step("1", "pending"), step("2", "pending", "1", "2")},
			errs: []string{`steps[1].deps[1]: step "2" depends on itself`}},
		{name: "two cycle", steps: Steps{step("1", "pending"), step("2", "pending", "4"), step("3", "pending"), step("4", "pending", "2")},
			errs: []string{"steps[3].deps[0]: cycle 2 → 4 → 2"}},
		{name: "three cycle", steps: Steps{step("a", "pending", "c"), step("b", "pending", "a"), step("c", "pending", "b")},
			errs: []string{"steps[1].deps[0]: cycle a → c → b → a"}},
		{name: "two cycles", steps: Steps{step("a", "pending", "b"), step("b", "pending", "a"), step("c", "pending", "d"), step("d", "pending", "c")},
			errs: []string{"steps[1].deps[0]: cycle a → b → a", "steps[3].deps[0]: cycle c → d → c"}},
		{name: "cycle behind a chain", steps: Steps{step("1", "pending", "2"), step("2", "pending", "3"), step("3", "pending", "4"), step("4", "pending", "2")},
			errs: []string{"steps[3].deps[0]: cycle 2 → 3 → 4 → 2"}},
		{name: "no cycle search on a broken graph", steps: Steps{step("a", "pending", "b"), step("b", "pending", "a", "zz")},
			errs: []string{`steps[1].deps[1]: unknown step "zz"`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := ValidateGraph(c.steps)
			if len(got) != len(c.errs) {
				t.Fatalf("got %v, want %v", got, c.errs)
			}
			for i, e := range c.errs {
				field, msg, _ := strings.Cut(e, ": ")
				if got[i].Field != field || !strings.Contains(got[i].Message, msg) {
					t.Errorf("error %d = %s: %s, want %s", i, got[i].Field, got[i].Message, e)
				}
			}
		})
	}
}

func TestReadyAndProgress(t *testing.T) {
	now := time.Date(2026, 1, 10, 12, 0, 0, 0, time.UTC)
	claimed := func(s Step, worker string, expires time.Time) Step {
		e := expires.UTC().Format(time.RFC3339Nano)
		s.ClaimedBy, s.ClaimExpiresAt = &worker, &e
		return s
	}
	garbage := "not a time"
	broken := step("x", "in_progress")
	broken.ClaimedBy, broken.ClaimExpiresAt = &garbage, &garbage
	cases := []struct {
		name     string
		steps    Steps
		ready    []int
		progress Progress
	}{
		{name: "none", steps: Steps{}, progress: Progress{}},
		{name: "roots only", steps: Steps{step("1", "pending"), step("2", "pending", "1"), step("3", "pending")},
			ready: []int{0, 2}, progress: Progress{Total: 3, Pending: 3, Ready: 2}},
		{name: "seed after step 1", steps: Steps{step("1", "complete"), step("2", "pending", "1"), step("3", "pending", "2"), step("4", "pending", "2", "3")},
			ready: []int{1}, progress: Progress{Total: 4, Pending: 3, Complete: 1, Ready: 1}},
		{name: "every dep must be complete", steps: Steps{step("1", "complete"), step("2", "in_progress"), step("3", "pending", "1", "2")},
			progress: Progress{Total: 3, Pending: 1, Complete: 1, InProgress: 1}},
		{name: "blocked dep blocks", steps: Steps{step("1", "blocked"), step("2", "pending", "1")},
			progress: Progress{Total: 2, Pending: 1, Blocked: 1}},
		{name: "live lease", steps: Steps{claimed(step("1", "in_progress"), "w", now.Add(time.Second))},
			progress: Progress{Total: 1, InProgress: 1}},
		{name: "lease expiring now", steps: Steps{claimed(step("1", "in_progress"), "w", now)},
			ready: []int{0}, progress: Progress{Total: 1, InProgress: 1, Ready: 1}},
		{name: "expired lease", steps: Steps{claimed(step("1", "in_progress"), "w", now.Add(-time.Hour)), step("2", "pending", "1")},
			ready: []int{0}, progress: Progress{Total: 2, InProgress: 1, Pending: 1, Ready: 1}},
		{name: "unclaimed in progress never expires", steps: Steps{step("1", "in_progress")},
			progress: Progress{Total: 1, InProgress: 1}},
		{name: "unreadable expiry counts as expired", steps: Steps{broken}, ready: []int{0}, progress: Progress{Total: 1, InProgress: 1, Ready: 1}},
		{name: "unknown dep is never complete", steps: Steps{step("1", "pending", "ghost")}, progress: Progress{Total: 1, Pending: 1}},
		{name: "complete steps are not ready", steps: Steps{step("1", "complete"), step("2", "complete", "1")}, progress: Progress{Total: 2, Complete: 2}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Ready(c.steps, now); !slices.Equal(got, c.ready) {
				t.Errorf("Ready = %v, want %v", got, c.ready)
			}
			if got := ProgressOf(c.steps, now); got != c.progress {
				t.Errorf("ProgressOf = %+v, want %+v", got, c.progress)
			}
			views := c.steps.View(now)
			for i := range c.steps {
				if want := leaseExpired(&c.steps[i], now); views[i].ClaimExpired != want {
					t.Errorf("steps[%d].claim_expired = %v, want %v", i, views[i].ClaimExpired, want)
				}
			}
		})
	}
}

// graphFromBytes builds up to 12 steps from fuzz input: ids from a small
// alphabet (so duplicates happen), deps and statuses from later bytes.
func graphFromBytes(data []byte) Steps {
	next := func() int {
		if len(data) == 0 {
			return 0
		}
		b := data[0]
		data = data[1:]
		return int(b)
	}
	n := next() % 13
	steps := make(Steps, n)
	for i := range steps {
		id := string(rune('a' + next()%14))
		status := StepStatuses[next()%len(StepStatuses)]
		var deps []string
		for d := next() % 4; d > 0; d-- {
			deps = append(deps, string(rune('a'+next()%15)))
		}
		steps[i] = step(id, status, deps...)
	}
	return steps
}

var cycleMsg = regexp.MustCompile(`^cycle ((?:[a-o] → )+[a-o]):`)

// FuzzValidateGraph checks ValidateGraph and Ready against their
// definitions: a graph it accepts has unique ids and known deps and can be
// ordered so every step comes after its deps (so working through the ready
// set always finishes the plan); every cycle it names is a real cycle of
// the graph; Ready returns exactly the claimable steps whose deps are all
// complete.
func FuzzValidateGraph(f *testing.F) {
	f.Add([]byte{4, 0, 0, 0, 1, 0, 1, 0, 2, 1, 1, 0, 3, 2, 1, 2})
	f.Add([]byte{2, 0, 0, 1, 1, 1, 0, 1, 0})
	f.Add([]byte{3, 0, 0, 1, 2, 1, 0, 1, 0, 2, 0, 1, 1})
	f.Add([]byte{12, 5, 1, 3, 9, 9, 9})
	f.Fuzz(func(t *testing.T, data []byte) {
		steps := graphFromBytes(data)
		errs := ValidateGraph(steps)
		pos := map[string]int{}
		for i, s := range steps {
			if _, dup := pos[s.ID]; !dup {
				pos[s.ID] = i
			}
		}
		for _, e := range errs {
			if !strings.HasPrefix(e.Field, "steps[") {
				t.Fatalf("error on field %q", e.Field)
			}
			m := cycleMsg.FindStringSubmatch(e.Message)
			if m == nil {
				continue
			}
			ids := strings.Split(m[1], " → ")
			if ids[0] != ids[len(ids)-1] {
				t.Fatalf("cycle %s does not come back to its start", m[1])
			}
			for k := 0; k+1 < len(ids); k++ {
				if !slices.Contains(steps[pos[ids[k]]].Deps, ids[k+1]) {
					t.Fatalf("cycle %s: %s does not depend on %s", m[1], ids[k], ids[k+1])
				}
			}
		}
		if len(errs) == 0 {
			if len(pos) != len(steps) {
				t.Fatalf("accepted duplicate ids: %+v", steps)
			}
			// Complete ready steps until none is left: on an acyclic
			// graph, every step is done in the end.
			work := slices.Clone(steps)
			for i := range work {
				work[i].Status = StepPending
			}
			for round := 0; ; round++ {
				ready := Ready(work, time.Time{})
				if len(ready) == 0 {
					break
				}
				if round > len(work) {
					t.Fatalf("ready set never empties")
				}
				for _, i := range ready {
					work[i].Status = StepComplete
				}
			}
			for _, s := range work {
				if s.Status != StepComplete {
					t.Fatalf("accepted graph %+v, but step %q can never start", steps, s.ID)
				}
			}
		}
		// Ready, against its definition.
		done := map[string]bool{}
		for _, s := range steps {
			if s.Status == StepComplete {
				done[s.ID] = true
			}
		}
		ready := Ready(steps, time.Time{})
		for i, s := range steps {
			want := s.Status == StepPending
			for _, d := range s.Deps {
				want = want && done[d]
			}
			if slices.Contains(ready, i) != want {
				t.Fatalf("step %d %+v: ready %v, want %v", i, s, !want, want)
			}
		}
		p := ProgressOf(steps, time.Time{})
		if p.Total != len(steps) || p.Pending+p.InProgress+p.Complete+p.Blocked != p.Total || p.Ready != len(ready) {
			t.Fatalf("progress %+v of %d steps, %d ready", p, len(steps), len(ready))
		}
	})
}

// FuzzParseSteps: any JSON either parses to steps that encode and parse
// back to the same steps, with a valid graph, or is invalid_argument.
func FuzzParseSteps(f *testing.F) {
	for _, s := range []string{`[]`, `[{"id":"1","description":"d","owner":"o"}]`, `[{"id":"1","description":"d","owner":"o","deps":["1"]}]`,
		`[{"id":"1","description":"d","owner":"o","status":"in_progress","claimed_by":"w","claim_expires_at":"2026-01-10T00:00:00Z"}]`,
		`[{"id":"a","description":"d","owner":"o","deps":["b"]},{"id":"b","description":"d","owner":"o","deps":["a"]}]`, `{`, `[1]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		steps, err := ParseSteps(raw)
		if err != nil {
			if apierr.CodeOf(err) != apierr.InvalidArgument {
				t.Fatalf("%q: %v", raw, err)
			}
			return
		}
		if errs := ValidateGraph(steps); len(errs) > 0 {
			t.Fatalf("accepted a broken graph: %v", errs)
		}
		again, err := ParseSteps([]byte(steps.encode()))
		if err != nil || again.encode() != steps.encode() {
			t.Fatalf("%s does not parse back: %v", steps.encode(), err)
		}
		stored, err := decodeStoredSteps([]byte(steps.encode()))
		if err != nil || stored.encode() != steps.encode() {
			t.Fatalf("%s does not read back: %v", steps.encode(), err)
		}
	})
}
