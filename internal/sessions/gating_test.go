package sessions

import (
	"reflect"
	"strings"
	"testing"

	"github.com/planserver/planserver/internal/apierr"
)

func ptr[T any](v T) *T { return &v }

func sess(id string, mode Mode, source string) *Session {
	s := &Session{ID: id, EffectiveMode: mode}
	if source != "" {
		s.ModeSource = &source
	}
	return s
}

func TestGateFilter(t *testing.T) {
	tools := []Tool{
		{Name: "read_file", ReadOnlyHint: ptr(true)},
		{Name: "write_file", ReadOnlyHint: ptr(false)},
		{Name: "shell"}, // no annotations: not read-only
		{Name: "write_session_plan"},
		{Name: "exit_plan_mode", ReadOnlyHint: ptr(false)}, // the allowlist wins over the hint
		{Name: "grep", ReadOnlyHint: ptr(true)},
	}
	cases := []struct {
		name             string
		gate             Gate
		s                *Session
		allowed, removed []string
		reminder         bool
	}{
		{"build keeps everything", NewGate(nil), sess("s", Build, ""),
			[]string{"read_file", "write_file", "shell", "write_session_plan", "exit_plan_mode", "grep"}, []string{}, false},
		{"plan keeps read-only and allowlisted", NewGate(nil), sess("s", Plan, "s"),
			[]string{"read_file", "write_session_plan", "exit_plan_mode", "grep"}, []string{"write_file", "shell"}, true},
		{"inherited plan gates too", NewGate(nil), sess("kid", Plan, "root"),
			[]string{"read_file", "write_session_plan", "exit_plan_mode", "grep"}, []string{"write_file", "shell"}, true},
		{"empty allowlist: read-only only", NewGate([]string{}), sess("s", Plan, "s"),
			[]string{"read_file", "grep"}, []string{"write_file", "shell", "write_session_plan", "exit_plan_mode"}, true},
		{"custom allowlist", NewGate([]string{" shell ", "", "shell"}), sess("s", Plan, "s"),
			[]string{"read_file", "shell", "grep"}, []string{"write_file", "write_session_plan", "exit_plan_mode"}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := c.gate.Filter(c.s, tools)
			if !reflect.DeepEqual(got.Allowed, c.allowed) || !reflect.DeepEqual(got.Removed, c.removed) {
				t.Errorf("allowed %v removed %v, want %v %v", got.Allowed, got.Removed, c.allowed, c.removed)
			}
			if got.EffectiveMode != c.s.EffectiveMode {
				t.Errorf("effective mode %s", got.EffectiveMode)
			}
			if (got.Reminder != nil) != c.reminder {
				t.Fatalf("reminder = %v, want present %v", got.Reminder, c.reminder)
			}
			if got.Reminder != nil {
				r := *got.Reminder
				for _, want := range []string{"<system-reminder>", "</system-reminder>", "plan mode", "State-changing tools are unavailable",
					"read-only", "ask for review", `"` + c.s.ID + `"`} {
					if !strings.Contains(r, want) {
						t.Errorf("reminder lacks %q:\n%s", want, r)
					}
				}
				if inherited := *c.s.ModeSource != c.s.ID; inherited != strings.Contains(r, "ancestor session") {
					t.Errorf("reminder about inheritance wrong (inherited=%v):\n%s", inherited, r)
				}
			}
		})
	}
}

func TestReminderNamesThePlanToolsTheModelHas(t *testing.T) {
	g := NewGate(nil)
	s := sess("s", Plan, "s")
	r := *g.Filter(s, []Tool{{Name: "plan_write"}, {Name: "plan_exit"}}).Reminder
	if !strings.Contains(r, "write your plan with plan_write") || !strings.Contains(r, "call plan_exit") {
		t.Errorf("reminder with the harness tools:\n%s", r)
	}
	r = *g.Filter(s, []Tool{{Name: "plan_write"}, {Name: "write_session_plan"}, {Name: "exit_plan_mode"}}).Reminder
	if !strings.Contains(r, "with write_session_plan") || !strings.Contains(r, "call exit_plan_mode") {
		t.Errorf("reminder with the session-plan tools:\n%s", r)
	}
	r = *g.Filter(s, nil).Reminder
	if !strings.Contains(r, "with write_session_plan") || !strings.Contains(r, "call exit_plan_mode") {
		t.Errorf("reminder without plan tools:\n%s", r)
	}
}

func TestGateCheck(t *testing.T) {
	g := NewGate([]string{"write_session_plan", "exit_plan_mode"})
	cases := []struct {
		name    string
		s       *Session
		tool    Tool
		allowed bool
		reason  []string
	}{
		{"build", sess("s", Build, ""), Tool{Name: "shell"}, true, []string{"build mode"}},
		{"read-only in plan", sess("s", Plan, "s"), Tool{Name: "grep", ReadOnlyHint: ptr(true)}, true, []string{"read-only"}},
		{"allowlisted in plan", sess("s", Plan, "s"), Tool{Name: "write_session_plan"}, true, []string{"allowlist"}},
		{"no annotations in plan", sess("s", Plan, "s"), Tool{Name: "shell"}, false,
			[]string{"[Tool denied — plan mode is active]", `"shell"`, "no annotations.readOnlyHint",
				"write_session_plan, exit_plan_mode", "readOnlyHint: true", "ask a human for review"}},
		{"read-only false in plan", sess("s", Plan, "s"), Tool{Name: "edit", ReadOnlyHint: ptr(false)}, false,
			[]string{"[Tool denied — plan mode is active]", "not marked read-only"}},
		{"inherited plan", sess("kid", Plan, "root"), Tool{Name: "edit"}, false,
			[]string{`ancestor session "root"`, `Session "kid"`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := g.Check(c.s, c.tool)
			if got.Allowed != c.allowed || got.EffectiveMode != c.s.EffectiveMode {
				t.Errorf("got %+v, want allowed=%v", got, c.allowed)
			}
			for _, want := range c.reason {
				if !strings.Contains(got.Reason, want) {
					t.Errorf("reason lacks %q: %s", want, got.Reason)
				}
			}
		})
	}
	if r := NewGate([]string{}).Check(sess("s", Plan, "s"), Tool{Name: "x"}); !strings.Contains(r.Reason, "allowed: none") {
		t.Errorf("empty allowlist reason: %s", r.Reason)
	}
}

func TestValidateTools(t *testing.T) {
	long := strings.Repeat("x", MaxToolName+1)
	cases := []struct {
		name   string
		tools  []Tool
		fields []string
	}{
		{"ok", []Tool{{Name: "a"}, {Name: "b"}}, nil},
		{"empty list", nil, nil},
		{"missing names", []Tool{{Name: "a"}, {Name: ""}, {Name: "  "}}, []string{"tools[1].name", "tools[2].name"}},
		{"too long", []Tool{{Name: long}}, []string{"tools[0].name"}},
		{"duplicates", []Tool{{Name: "a"}, {Name: "b"}, {Name: "a"}}, []string{"tools[2].name"}},
		{"too many", make([]Tool, MaxTools+1), []string{"tools"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := ValidateTools(c.tools)
			if c.fields == nil {
				if err != nil {
					t.Fatalf("unexpected %v", err)
				}
				return
			}
			e, ok := apierr.As(err)
			if !ok || e.Code != apierr.InvalidArgument {
				t.Fatalf("got %v", err)
			}
			var got []string
			for _, f := range e.Fields {
				got = append(got, f.Field)
			}
			if !reflect.DeepEqual(got, c.fields) {
				t.Errorf("fields %v, want %v", got, c.fields)
			}
		})
	}
	if err := ValidateTool(Tool{}); err == nil || err.(*apierr.Error).Fields[0].Field != "name" {
		t.Errorf("ValidateTool without a name: %v", err)
	}
}

// FuzzGateFilter checks the policy's invariants on arbitrary toolsets: the
// split is a partition in request order, build keeps everything, and plan
// keeps exactly the read-only and allowlisted tools, always with a reminder.
func FuzzGateFilter(f *testing.F) {
	f.Add("read_file,write_file,shell", "110", true)
	f.Add("write_session_plan,x,,y", "0000", true)
	f.Add("a", "2", false)
	f.Fuzz(func(t *testing.T, names, hints string, plan bool) {
		var tools []Tool
		for i, n := range strings.Split(names, ",") {
			tl := Tool{Name: n}
			if i < len(hints) {
				switch hints[i] {
				case '0':
					tl.ReadOnlyHint = ptr(false)
				case '1':
					tl.ReadOnlyHint = ptr(true)
				}
			}
			tools = append(tools, tl)
		}
		s := sess("s", Build, "")
		if plan {
			s = sess("s", Plan, "s")
		}
		g := NewGate(nil)
		res := g.Filter(s, tools)
		if len(res.Allowed)+len(res.Removed) != len(tools) {
			t.Fatalf("split %d+%d of %d", len(res.Allowed), len(res.Removed), len(tools))
		}
		ai, ri := 0, 0
		for _, tl := range tools {
			keep := !plan || tl.readOnly() || g.set[tl.Name]
			if keep != g.Check(s, tl).Allowed {
				t.Fatalf("Check and Filter disagree on %+v", tl)
			}
			if keep {
				if res.Allowed[ai] != tl.Name {
					t.Fatalf("allowed out of order")
				}
				ai++
			} else {
				if res.Removed[ri] != tl.Name {
					t.Fatalf("removed out of order")
				}
				ri++
			}
		}
		if (res.Reminder != nil) != plan {
			t.Fatalf("reminder %v in plan=%v", res.Reminder, plan)
		}
	})
}
