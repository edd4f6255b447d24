package revision

import (
	"slices"
	"testing"

	"github.com/planserver/planserver/internal/apierr"
)

func TestParseMatch(t *testing.T) {
	cases := []struct {
		in      string
		present bool
		any     bool
		revs    []int64
		bad     bool
	}{
		{in: ""},
		{in: "   "},
		{in: "*", present: true, any: true},
		{in: `"7"`, present: true, revs: []int64{7}},
		{in: `7`, present: true, revs: []int64{7}},
		{in: ` "7" `, present: true, revs: []int64{7}},
		{in: `W/"7"`, present: true},
		{in: `"5", "7"`, present: true, revs: []int64{5, 7}},
		{in: `"5", W/"7", 9`, present: true, revs: []int64{5, 9}},
		{in: `"abc"`, present: true},
		{in: `"-1"`, present: true},
		{in: `abc`, bad: true},
		{in: `-1`, bad: true},
		{in: `W/7`, bad: true},
		{in: `"7`, bad: true},
		{in: `99999999999999999999`, bad: true},
	}
	for _, c := range cases {
		m, err := ParseMatch("If-Match", c.in)
		if c.bad {
			if apierr.CodeOf(err) != apierr.InvalidArgument {
				t.Errorf("%q: err %v, want invalid_argument", c.in, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", c.in, err)
			continue
		}
		if m.Present != c.present || m.Any != c.any || !slices.Equal(m.Revisions, c.revs) {
			t.Errorf("%q = %+v", c.in, m)
		}
	}
}

func i64(n int64) *int64 { return &n }

func mustMatch(t *testing.T, v string) Match {
	t.Helper()
	m, err := ParseMatch("h", v)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestCheck walks every case of the precondition rules of the contract's
// conventions (api/openapi.yaml: If-Match, If-None-Match,
// last_known_revision, and 428 under --require-preconditions).
func TestCheck(t *testing.T) {
	type want struct {
		code         apierr.Code // "" for success
		precondition bool        // 412
		current      *int64
	}
	cases := []struct {
		name      string
		ifMatch   string
		ifNone    string
		lastKnown *int64
		required  bool
		exists    bool
		current   int64
		want      want
	}{
		{name: "unconditional update", exists: true, current: 3},
		{name: "unconditional create", exists: false},
		{name: "If-Match current", ifMatch: `"3"`, exists: true, current: 3},
		{name: "If-Match bare current", ifMatch: `3`, exists: true, current: 3},
		{name: "If-Match stale", ifMatch: `"2"`, exists: true, current: 3, want: want{apierr.VersionConflict, true, i64(3)}},
		{name: "If-Match weak never matches", ifMatch: `W/"3"`, exists: true, current: 3, want: want{apierr.VersionConflict, true, i64(3)}},
		{name: "If-Match list", ifMatch: `"1", "3"`, exists: true, current: 3},
		{name: "If-Match * exists", ifMatch: `*`, exists: true, current: 3},
		{name: "If-Match * missing", ifMatch: `*`, exists: false, want: want{apierr.VersionConflict, true, i64(0)}},
		{name: "If-Match on missing", ifMatch: `"1"`, exists: false, want: want{apierr.VersionConflict, true, i64(0)}},
		{name: "If-None-Match * create", ifNone: `*`, exists: false},
		{name: "If-None-Match * exists", ifNone: `*`, exists: true, current: 2, want: want{apierr.AlreadyExists, true, i64(2)}},
		{name: "If-None-Match other revision", ifNone: `"1"`, exists: true, current: 2},
		{name: "If-None-Match same revision", ifNone: `"2"`, exists: true, current: 2, want: want{apierr.AlreadyExists, true, i64(2)}},
		{name: "body current", lastKnown: i64(4), exists: true, current: 4},
		{name: "body stale is 409", lastKnown: i64(3), exists: true, current: 4, want: want{apierr.VersionConflict, false, i64(4)}},
		{name: "body 0 creates", lastKnown: i64(0), exists: false},
		{name: "body 0 on existing", lastKnown: i64(0), exists: true, current: 1, want: want{apierr.VersionConflict, false, i64(1)}},
		{name: "body on missing", lastKnown: i64(2), exists: false, want: want{apierr.VersionConflict, false, i64(0)}},
		{name: "header and body agree", ifMatch: `"4"`, lastKnown: i64(4), exists: true, current: 4},
		{name: "required without precondition", required: true, exists: true, current: 1, want: want{code: apierr.PreconditionRequired}},
		{name: "required create is fine", required: true, exists: false},
		{name: "required with If-Match", required: true, ifMatch: `"1"`, exists: true, current: 1},
		{name: "required with body", required: true, lastKnown: i64(1), exists: true, current: 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := New(mustMatch(t, c.ifMatch), mustMatch(t, c.ifNone), c.lastKnown, c.required)
			if err != nil {
				t.Fatal(err)
			}
			err = p.Check("thing", c.exists, c.current)
			if c.want.code == "" {
				if err != nil {
					t.Fatalf("want success, got %v", err)
				}
				return
			}
			e, ok := apierr.As(err)
			if !ok {
				t.Fatalf("want %s, got %v", c.want.code, err)
			}
			if e.Code != c.want.code || e.Precondition != c.want.precondition {
				t.Errorf("got %s (412=%v), want %s (412=%v)", e.Code, e.Precondition, c.want.code, c.want.precondition)
			}
			if c.want.current != nil && (e.CurrentRevision == nil || *e.CurrentRevision != *c.want.current) {
				t.Errorf("current_revision = %v, want %d", e.CurrentRevision, *c.want.current)
			}
		})
	}
}

func TestHeaderAndBodyDisagree(t *testing.T) {
	for _, im := range []string{`"3"`, `*`, `"4", "5"`, `W/"4"`} {
		if _, err := New(mustMatch(t, im), Match{}, i64(4), false); apierr.CodeOf(err) != apierr.InvalidArgument {
			t.Errorf("If-Match %s with body 4: %v, want invalid_argument", im, err)
		}
	}
	if _, err := New(Match{}, Match{}, i64(-1), false); apierr.CodeOf(err) != apierr.InvalidArgument {
		t.Errorf("negative last_known_revision: %v", err)
	}
}

func TestNotModified(t *testing.T) {
	for v, want := range map[string]bool{``: false, `"3"`: true, `3`: true, `*`: true, `"2"`: false, `"2", "3"`: true} {
		if got := mustMatch(t, v).NotModified(3); got != want {
			t.Errorf("If-None-Match %q at 3: %v, want %v", v, got, want)
		}
	}
}

func FuzzParseMatch(f *testing.F) {
	for _, s := range []string{"", "*", `"7"`, "7", `W/"7"`, `"1", "2"`, `abc`, `"`, `W/`, `,,`, `"9223372036854775807"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		m, err := ParseMatch("If-Match", v)
		if err != nil {
			if apierr.CodeOf(err) != apierr.InvalidArgument {
				t.Fatalf("%q: error %v is not invalid_argument", v, err)
			}
			return
		}
		for _, r := range m.Revisions {
			if r < 0 {
				t.Fatalf("%q: negative revision %d", v, r)
			}
			if !m.Matches(true, r) {
				t.Fatalf("%q: listed revision %d does not match", v, r)
			}
		}
		if m.Present && !m.Any && m.Matches(false, 0) {
			t.Fatalf("%q matched a missing resource", v)
		}
		// The same value as If-None-Match on a GET: 304 exactly for the
		// listed revisions (or any, for *), never without the header.
		for _, r := range m.Revisions {
			if !m.NotModified(r) {
				t.Fatalf("If-None-Match %q: listed revision %d is not 304", v, r)
			}
		}
		if !m.Present && m.NotModified(1) {
			t.Fatalf("If-None-Match %q absent but 304", v)
		}
		if m.Present && !m.Any && m.NotModified(-1) {
			t.Fatalf("If-None-Match %q matched revision -1, which no server issues", v)
		}
		// A precondition built from it either holds or fails with one of
		// the codes the contract allows, whatever the resource's state.
		for _, exists := range []bool{false, true} {
			p, err := New(m, Match{}, nil, false)
			if err != nil {
				t.Fatalf("%q: %v", v, err)
			}
			if err := p.Check("x", exists, 3); err != nil {
				if e, ok := apierr.As(err); !ok || !e.Precondition || e.Code != apierr.VersionConflict || e.CurrentRevision == nil {
					t.Fatalf("If-Match %q (exists %v): %v is not a 412 version_conflict", v, exists, err)
				}
			}
		}
	})
}
