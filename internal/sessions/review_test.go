package sessions

import (
	"strings"
	"testing"

	"github.com/planserver/planserver/internal/apierr"
	"github.com/planserver/planserver/internal/revision"
)

func TestCheckPlanContent(t *testing.T) {
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
		err := CheckPlanContent(c.content, 10)
		if got := codeOrEmpty(err); got != c.code {
			t.Errorf("%q: %v, want %s", c.content, err, c.code)
		}
	}
}

func codeOrEmpty(err error) apierr.Code {
	if err == nil {
		return ""
	}
	return apierr.CodeOf(err)
}

func TestApprovalPrecondition(t *testing.T) {
	cases := []struct {
		ifMatch string
		code    apierr.Code
	}{
		{"", apierr.PreconditionRequired},
		{"*", apierr.InvalidArgument},
		{`"1", "2"`, apierr.InvalidArgument},
		{`"3"`, ""},
		{`3`, ""},
		{`W/"3"`, ""}, // names no revision: left to fail the precondition itself
	}
	for _, c := range cases {
		m, err := revision.ParseMatch("If-Match", c.ifMatch)
		if err != nil {
			t.Fatal(err)
		}
		err = checkApprovalPrecondition("s", revision.Precondition{IfMatch: m})
		if got := codeOrEmpty(err); got != c.code {
			t.Errorf("If-Match %q: %v, want %s", c.ifMatch, err, c.code)
		}
	}
}

func TestReviewPendingFor(t *testing.T) {
	two := int64(2)
	cases := []struct {
		r    Review
		rev  int64
		want bool
	}{
		{Review{State: ReviewPending, PlanRevision: &two}, 2, true},
		{Review{State: ReviewPending, PlanRevision: &two}, 3, false},
		{Review{State: ReviewApproved, PlanRevision: &two}, 2, false},
		{Review{State: ReviewRejected, PlanRevision: &two}, 2, false},
		{Review{State: ReviewPending}, 2, false},
		{Review{State: ReviewNone}, 2, false},
	}
	for _, c := range cases {
		if got := c.r.pendingFor(c.rev); got != c.want {
			t.Errorf("%+v pendingFor(%d) = %v", c.r, c.rev, got)
		}
	}
}

func TestApprovalNote(t *testing.T) {
	if n := ApprovalNote(sess("s", Build, "")); n != nil {
		t.Errorf("note in build: %s", *n)
	}
	n := ApprovalNote(sess("kid", Plan, "root"))
	if n == nil || !strings.Contains(*n, `"root"`) || !strings.Contains(*n, "effective mode stays plan") {
		t.Errorf("note under a plan ancestor: %v", n)
	}
}
