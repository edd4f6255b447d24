package sessions

import (
	"strings"
	"testing"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/apierr"
	"github.com/planserver/planserver/internal/revision"
)

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
		if got := pendingFor(c.r, c.rev); got != c.want {
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

func TestReviewTransitions(t *testing.T) {
	plan := &SessionPlan{SessionID: "s", Content: "# plan\n1. do it\n", Revision: 3}
	why := "because"
	match := func(h string) revision.Precondition {
		m, err := revision.ParseMatch("If-Match", h)
		if err != nil {
			t.Fatal(err)
		}
		return revision.Precondition{IfMatch: m}
	}
	s := &Session{ID: "s", Review: Review{State: ReviewNone}}

	// exit_plan_mode without a plan, then with one.
	if _, _, err := requestReview(s, nil, nil, revision.Precondition{}, "t1"); apierr.CodeOf(err) != apierr.PlanMissing {
		t.Errorf("review without a plan: %v", err)
	}
	r, changed, err := requestReview(s, plan, &why, revision.Precondition{}, "t1")
	if err != nil || !changed || r.State != ReviewPending || *r.PlanRevision != 3 || *r.RequestedAt != "t1" {
		t.Fatalf("request: %+v %v %v", r, changed, err)
	}
	s.Review = r
	if _, changed, _ := requestReview(s, plan, &why, revision.Precondition{}, "t2"); changed {
		t.Error("asking again for the same revision and rationale changed the review")
	}
	// The agent's If-Match names the plan revision it means.
	if _, _, err := requestReview(s, plan, nil, match(`"2"`), "t2"); apierr.CodeOf(err) != apierr.VersionConflict {
		t.Errorf("request naming a stale revision: %v", err)
	}

	// Approval is bound to the revision the human read.
	if _, err := approve(s, plan, decision{}, revision.Precondition{}, "t3", "h", nil); apierr.CodeOf(err) != apierr.PreconditionRequired {
		t.Errorf("approve without If-Match: %v", err)
	}
	if _, err := approve(s, plan, decision{}, match(`"2"`), "t3", "h", nil); apierr.CodeOf(err) != apierr.VersionConflict {
		t.Errorf("approve of a stale revision: %v", err)
	}
	jane := &api.Person{Subject: "u1", Email: "jane@example.com", Name: "Jane"}
	a, err := approve(s, plan, decision{}, match(`"3"`), "t3", "jane@example.com", jane)
	if err != nil || a.State != ReviewApproved || *a.DecidedBy != "jane@example.com" || a.DecidedByPerson != jane ||
		*a.DecidedAt != "t3" || *a.PlanRevision != 3 {
		t.Fatalf("approve: %+v %v", a, err)
	}
	done := &Session{ID: "s", Review: a}
	if _, err := approve(done, plan, decision{}, match(`"3"`), "t4", "h", nil); apierr.CodeOf(err) != apierr.ReviewNotPending {
		t.Errorf("approve twice: %v", err)
	}
	fb := "add tests"
	rj, err := decide(s, plan, decision{state: ReviewRejected, feedback: &fb,
		comments: []ReviewComment{{Line: 2, Body: "which tests?", Author: "forged"}}}, revision.Precondition{}, "t3", "human", nil)
	// A comment's author is the decision's actor, whatever the request said.
	if err != nil || rj.State != ReviewRejected || *rj.Feedback != fb || len(rj.Comments) != 1 ||
		rj.Comments[0].Author != "human" || rj.DecidedByPerson != nil {
		t.Errorf("reject: %+v %v", rj, err)
	}
	// Comments are anchored to lines the reviewed revision has.
	for _, c := range []ReviewComment{{Line: 3, Body: "past the end"}, {Line: 1, Body: " "}} {
		if _, err := decide(s, plan, decision{state: ReviewRejected, comments: []ReviewComment{c}},
			revision.Precondition{}, "t3", "human", nil); apierr.CodeOf(err) != apierr.InvalidArgument {
			t.Errorf("comment %+v: %v", c, err)
		}
	}

	// A rewrite withdraws a pending review; nothing else is withdrawn.
	after, closed := closeReview(s.Review, 9, "rewritten")
	if after.State != ReviewNone || closed == nil || *closed.PlanRevision != 3 || closed.SessionRevision != 9 {
		t.Errorf("withdraw: %+v %+v", after, closed)
	}
	if _, closed := closeReview(a, 9, "rewritten"); closed != nil {
		t.Errorf("a decided review was withdrawn: %+v", closed)
	}
}
