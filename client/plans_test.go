package client_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/client"
)

func TestSharedPlans(t *testing.T) {
	_, c := newTest(t)
	ctx := t.Context()

	var meta client.ResponseMeta
	p, err := c.PutPlan(ctx, "release", api.PlanWrite{Title: client.Ptr("Release 1.0"), Content: client.Ptr("# Release\n- [ ] freeze\n"),
		Author: client.Ptr("architect"), Status: client.Ptr("draft")}, client.LastKnownRevision(0), client.Meta(&meta))
	if err != nil || p.Revision != 1 || p.Title != "Release 1.0" || meta.Status != http.StatusCreated || meta.Revision != 1 {
		t.Fatalf("create: %+v %+v %v", p, meta, err)
	}
	if _, err := c.PutPlan(ctx, "release", api.PlanWrite{Content: client.Ptr("x")}, client.IfNoneMatchAny()); !errors.Is(err, client.ErrAlreadyExists) {
		t.Errorf("create-only over a plan: %v", err)
	}
	// The plan tools' precondition is a body member: a stale one is 409.
	_, err = c.PutPlan(ctx, "release", api.PlanWrite{Content: client.Ptr("x")}, client.LastKnownRevision(0))
	var e *client.Error
	if !errors.As(err, &e) || e.Status != http.StatusConflict || e.Code != api.CodeVersionConflict || *e.CurrentRevision != 1 {
		t.Fatalf("stale last_known_revision: %v", err)
	}
	// Calls whose body has no such member refuse it without a request.
	if _, err := c.PutPlanContent(ctx, "release", "x", client.LastKnownRevision(1)); err == nil || client.CodeOf(err) != "" ||
		!strings.Contains(err.Error(), "IfMatch") {
		t.Errorf("LastKnownRevision on PUT content: %v", err)
	}

	got, err := c.GetPlan(ctx, "release")
	if err != nil || got.Content != "# Release\n- [ ] freeze\n" || got.Status != "draft" {
		t.Fatalf("get: %+v %v", got, err)
	}
	if _, err := c.GetPlan(ctx, "release", client.IfNoneMatch(1)); !errors.Is(err, client.ErrNotModified) {
		t.Errorf("unchanged plan: %v", err)
	}

	// The cheap edit: the content alone, with the revision it was read at.
	content, err := c.GetPlanContent(ctx, "release")
	if err != nil || content.Body != got.Content || content.Revision != 1 {
		t.Fatalf("content: %+v %v", content, err)
	}
	st, err := c.SetPlanStatus(ctx, "release", "in-progress", client.LastKnownRevision(1))
	if err != nil || st.Status != "in-progress" || st.Revision != 2 {
		t.Fatalf("set status: %+v %v", st, err)
	}
	if _, err := c.SetPlanStatus(ctx, "release", "x", client.IfMatch(1)); !errors.Is(err, client.ErrVersionConflict) {
		t.Errorf("stale status write: %v", err)
	}
	if _, err := c.PutPlanContent(ctx, "release", content.Body+"- [ ] tag\n", client.IfMatch(content.Revision)); !errors.Is(err, client.ErrVersionConflict) {
		t.Errorf("edit of a stale read: %v", err)
	}
	sum, err := c.PutPlanContent(ctx, "release", content.Body+"- [ ] tag\n", client.IfMatch(2))
	if err != nil || sum.Revision != 3 || sum.Status != "in-progress" || sum.Title != "Release 1.0" {
		t.Fatalf("edit: %+v %v", sum, err)
	}
	if st, err := c.GetPlanStatus(ctx, "release"); err != nil || st.Revision != 3 || st.Status != "in-progress" {
		t.Errorf("get status: %+v %v", st, err)
	}

	// YAML round trip.
	doc, err := c.GetPlanYAML(ctx, "release")
	if err != nil || doc.Revision != 3 || !strings.Contains(doc.Body, "title: Release 1.0") {
		t.Fatalf("yaml: %+v %v", doc, err)
	}
	back, err := c.PutPlanYAML(ctx, "release", []byte(strings.Replace(doc.Body, "in-progress", "review", 1)), client.IfMatch(doc.Revision))
	if err != nil || back.Status != "review" || back.Revision != 4 || back.Content != got.Content+"- [ ] tag\n" {
		t.Fatalf("put yaml: %+v %v", back, err)
	}

	// History and diffs.
	revs, err := c.PlanRevisions(ctx, "release")
	if err != nil || len(revs.Revisions) != 4 || revs.Revisions[0].Revision != 4 {
		t.Fatalf("revisions: %+v %v", revs, err)
	}
	first, err := c.GetPlanRevision(ctx, "release", 1)
	if err != nil || first.Status != "draft" || first.Revision != 1 {
		t.Fatalf("revision 1: %+v %v", first, err)
	}
	if old, err := c.GetPlanRevisionContent(ctx, "release", 1); err != nil || old.Body != got.Content || old.Revision != 1 {
		t.Errorf("revision 1 content: %+v %v", old, err)
	}
	d, err := c.DiffPlan(ctx, "release", client.DiffRange{From: client.Ptr[int64](1)})
	if err != nil || d.From != 1 || d.To != 4 || len(d.Hunks) != 1 {
		t.Fatalf("diff: %+v %v", d, err)
	}
	text, err := c.DiffPlanText(ctx, "release", client.DiffRange{From: client.Ptr[int64](2), To: client.Ptr[int64](3)})
	if err != nil || !strings.Contains(text, "\n+- [ ] tag\n") {
		t.Fatalf("unified diff: %q %v", text, err)
	}
	if same, err := c.DiffPlanText(ctx, "release", client.DiffRange{From: client.Ptr[int64](1), To: client.Ptr[int64](2)}); err != nil || same != "" {
		t.Errorf("diff of a status change: %q %v", same, err)
	}

	// Lists.
	for _, n := range []string{"a", "b"} {
		if _, err := c.PutPlanContent(ctx, n, "# "+n); err != nil {
			t.Fatal(err)
		}
	}
	page, err := c.ListPlans(ctx, client.PlanQuery{Limit: 2})
	if err != nil || len(page.Plans) != 2 || page.NextPageToken == "" || page.Plans[0].Name != "a" {
		t.Fatalf("page: %+v %v", page, err)
	}
	var names []string
	for p, err := range c.Plans(ctx, client.PlanQuery{Limit: 1}) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, p.Name)
	}
	if strings.Join(names, ",") != "a,b,release" {
		t.Errorf("walked %v", names)
	}
	if byStatus, err := c.ListPlans(ctx, client.PlanQuery{Status: "review", Author: "anonymous"}); err != nil || len(byStatus.Plans) != 1 {
		t.Errorf("filtered: %+v %v", byStatus, err)
	}

	if err := c.DeletePlan(ctx, "release", client.IfMatch(3)); !errors.Is(err, client.ErrVersionConflict) {
		t.Errorf("stale delete: %v", err)
	}
	if err := c.DeletePlan(ctx, "release", client.IfMatch(4)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetPlanContent(ctx, "release"); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("after delete: %v", err)
	}
	if _, err := c.PutPlanContent(ctx, "release", "# back", client.IfMatchAny()); !errors.Is(err, client.ErrVersionConflict) {
		t.Errorf("If-Match * on a missing plan: %v", err)
	}
}

// stepsPlan is the seeds' shape: 1, then 2 and 3 in parallel, then 4.
var stepsPlan = json.RawMessage(`[
	{"id":"1","description":"schema","owner":"db"},
	{"id":"2","description":"endpoint","owner":"api","deps":["1"]},
	{"id":"3","description":"form","owner":"ui","deps":["1"]},
	{"id":"4","description":"e2e","owner":"qa","deps":["2","3"]}]`)

func TestSteps(t *testing.T) {
	_, c := newTest(t)
	ctx := t.Context()
	if _, err := c.PutPlan(ctx, "csv", api.PlanWrite{Content: client.Ptr("# CSV"), Steps: stepsPlan}); err != nil {
		t.Fatal(err)
	}
	_, err := c.PutPlan(ctx, "bad", api.PlanWrite{Content: client.Ptr("# x"), Steps: json.RawMessage(`[{"id":"1","description":"d","owner":"o","deps":["1"]}]`)})
	var e *client.Error
	if !errors.As(err, &e) || e.Code != api.CodeInvalidArgument || len(e.Fields) == 0 || e.Fields[0].Field != "steps[0].deps[0]" {
		t.Fatalf("self dep: %v %+v", err, e)
	}

	ready, err := c.ListSteps(ctx, "csv", client.StepQuery{Ready: client.Ptr(true)})
	if err != nil || len(ready.Steps) != 1 || ready.Steps[0].ID != "1" || ready.Revision != 1 {
		t.Fatalf("ready: %+v %v", ready, err)
	}
	if notReady, err := c.ListSteps(ctx, "csv", client.StepQuery{Ready: client.Ptr(false), Owner: "qa"}); err != nil || len(notReady.Steps) != 1 {
		t.Errorf("not ready of qa: %+v %v", notReady, err)
	}
	if _, err := c.ClaimNextStep(ctx, "csv", api.ClaimRequest{Worker: "w", Owner: "api"}); !errors.Is(err, client.ErrNoStepReady) {
		t.Errorf("claim with nothing ready of api: %v", err)
	}
	claimed, err := c.ClaimNextStep(ctx, "csv", api.ClaimRequest{Worker: "db-1", LeaseSeconds: client.Ptr(600)})
	if err != nil || claimed.Step.ID != "1" || *claimed.Step.ClaimedBy != "db-1" || claimed.Revision != 2 {
		t.Fatalf("claim: %+v %v", claimed, err)
	}
	if _, err := c.ClaimStep(ctx, "csv", "1", api.StepClaimRequest{Worker: "intruder"}); !errors.Is(err, client.ErrVersionConflict) {
		t.Errorf("claim of a held step: %v", err)
	}
	if _, err := c.ClaimStep(ctx, "csv", "4", api.StepClaimRequest{Worker: "w"}); !errors.Is(err, client.ErrDepsIncomplete) {
		t.Errorf("claim of a waiting step: %v", err)
	}
	renewed, err := c.ClaimStep(ctx, "csv", "1", api.StepClaimRequest{Worker: "db-1"}, client.IfMatch(2))
	if err != nil || renewed.Revision != 3 {
		t.Fatalf("renew: %+v %v", renewed, err)
	}
	_, err = c.PatchStep(ctx, "csv", "4", api.StepPatch{Status: client.Ptr(api.StepComplete)})
	if !errors.As(err, &e) || e.Code != api.CodeDepsIncomplete || strings.Join(e.Problem.IncompleteDeps, ",") != "2,3" {
		t.Fatalf("complete a waiting step: %v", err)
	}
	rep, err := c.AddReport(ctx, "csv", "1", api.ReportWrite{Outcome: api.OutcomeSuccess, Details: "table added", Worker: client.Ptr("db-1"),
		Artifacts: []api.Artifact{{File: "migrations/0042.sql", Status: "created"}}})
	if err != nil || rep.PlanRevision != 4 || rep.StepID != "1" || len(rep.Artifacts) != 1 {
		t.Fatalf("report: %+v %v", rep, err)
	}
	step, err := c.GetStep(ctx, "csv", "1")
	if err != nil || step.Step.Status != api.StepComplete || step.Revision != 4 {
		t.Fatalf("get step: %+v %v", step, err)
	}
	patched, err := c.PatchStep(ctx, "csv", "3", api.StepPatch{Owner: client.Ptr("frontend")}, client.IfMatch(4))
	if err != nil || patched.Step.Owner != "frontend" || patched.Revision != 5 {
		t.Fatalf("patch owner: %+v %v", patched, err)
	}
	if _, err := c.PatchStep(ctx, "csv", "3", api.StepPatch{Status: client.Ptr(api.StepBlocked)}, client.IfMatch(4)); !errors.Is(err, client.ErrVersionConflict) {
		t.Errorf("stale patch: %v", err)
	}
	if _, err := c.AddReport(ctx, "csv", "2", api.ReportWrite{Outcome: api.OutcomeFailure}); err != nil {
		t.Fatal(err)
	}
	all, err := c.ListReports(ctx, "csv", "")
	if err != nil || len(all.Reports) != 2 {
		t.Fatalf("reports: %+v %v", all, err)
	}
	if one, err := c.ListReports(ctx, "csv", "2"); err != nil || len(one.Reports) != 1 || one.Reports[0].Outcome != api.OutcomeFailure {
		t.Errorf("reports of step 2: %+v %v", one, err)
	}
	if _, err := c.GetStep(ctx, "csv", "9"); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("missing step: %v", err)
	}
}
