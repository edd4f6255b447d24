package mcp

import (
	"context"
	"fmt"
	"net/url"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/revision"
	"github.com/planserver/planserver/internal/sessions"
)

// The session tools act on the bound session (gate.go); each is the HTTP
// route of its Operation with {id} the bound session.

func (e *Endpoint) writeSessionPlan(tool string) func(context.Context, *sdk.CallToolRequest, api.SessionPlanWrite) (*sdk.CallToolResult, *api.SessionPlan, error) {
	return func(ctx context.Context, _ *sdk.CallToolRequest, in api.SessionPlanWrite) (*sdk.CallToolResult, *api.SessionPlan, error) {
		s, err := e.bound(ctx, tool)
		if err != nil {
			return nil, nil, e.fail(tool, err)
		}
		p, _, err := e.b.Sessions.PutSessionPlan(ctx, s.ID, in, e.b.MaxPlanBytes, revision.Precondition{})
		if err != nil {
			return nil, nil, e.fail(tool, err)
		}
		return nil, p, nil
	}
}

func (e *Endpoint) readSessionPlan(ctx context.Context, _ *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, *api.SessionPlan, error) {
	const tool = "read_session_plan"
	s, err := e.bound(ctx, tool)
	if err != nil {
		return nil, nil, e.fail(tool, err)
	}
	p, err := e.b.Sessions.GetSessionPlan(ctx, s.ID)
	if err != nil {
		return nil, nil, e.fail(tool, err)
	}
	return nil, p, nil
}

// reviewOut is the answer of exit_plan_mode and plan_exit.
type reviewOut struct {
	SessionID     string     `json:"session_id"`
	Mode          api.Mode   `json:"mode"`
	EffectiveMode api.Mode   `json:"effective_mode"`
	Review        api.Review `json:"review"`
	// ReviewURL is the page where a human reads this plan revision and
	// approves or rejects it.
	ReviewURL string `json:"review_url"`
	// PlanURL is the same plan in the HTTP API.
	PlanURL string `json:"plan_url"`
	Message string `json:"message"`
}

// elicitationKey names the URL elicitation in a multi-round-trip call.
const elicitationKey = "review"

// requestReview is exit_plan_mode and plan_exit: it asks for a human's
// review and never approves; the mode stays as it is. Where the client
// declares URL-mode elicitation (and speaks the 2026-07-28 revision, whose
// calls carry the answer back as a retry), the review page is also offered
// to the user that way. Form-mode elicitation is never used: its answer
// would come back through the agent's host, and the human's decision must
// not.
func (e *Endpoint) requestReview(tool string) func(context.Context, *sdk.CallToolRequest, api.ReviewRequest) (*sdk.CallToolResult, *reviewOut, error) {
	return func(ctx context.Context, req *sdk.CallToolRequest, in api.ReviewRequest) (*sdk.CallToolResult, *reviewOut, error) {
		s, err := e.bound(ctx, tool)
		if err != nil {
			return nil, nil, e.fail(tool, err)
		}
		retry := len(req.Params.InputResponses) > 0
		if retry {
			// The review was requested on the first round; this round
			// only answers, from what is stored now.
			s, err = e.b.Sessions.Get(ctx, s.ID)
		} else {
			s, err = e.b.Sessions.RequestReview(ctx, s.ID, in, revision.Precondition{})
		}
		if err != nil {
			return nil, nil, e.fail(tool, err)
		}
		out := e.reviewAnswer(ctx, s)
		if !retry && urlElicitation(req) {
			return &sdk.CallToolResult{InputRequests: sdk.InputRequestMap{elicitationKey: &sdk.ElicitParams{
				Mode:          "url",
				Message:       fmt.Sprintf("The plan of session %q waits for your review. Open the page to read it and approve or reject it.", s.ID),
				URL:           out.ReviewURL,
				ElicitationID: fmt.Sprintf("review:%s:%d", s.ID, revisionOf(s.Review)),
			}}}, nil, nil
		}
		return nil, out, nil
	}
}

func revisionOf(r api.Review) int64 {
	if r.PlanRevision == nil {
		return 0
	}
	return *r.PlanRevision
}

// reviewAnswer says where the review stands and where the human reviews.
func (e *Endpoint) reviewAnswer(ctx context.Context, s *sessions.Session) *reviewOut {
	rev := revisionOf(s.Review)
	base := baseFrom(ctx)
	out := &reviewOut{
		SessionID: s.ID, Mode: s.Mode, EffectiveMode: s.EffectiveMode, Review: s.Review,
		ReviewURL: e.b.ReviewURL(base, s.ID, rev),
		PlanURL:   base + "/v1/sessions/" + url.PathEscape(s.ID) + "/plan",
	}
	switch s.Review.State {
	case api.ReviewPending:
		out.Message = fmt.Sprintf("Review requested for revision %d of the plan of session %q. A human approves or rejects it at %s; "+
			"you cannot approve it yourself, and the mode does not change until they do. Stop here and wait: "+
			"read_session_plan shows the decision and any feedback.", rev, s.ID, out.ReviewURL)
	default:
		out.Message = fmt.Sprintf("The review of the plan of session %q is %s.", s.ID, s.Review.State)
	}
	return out
}

// urlElicitation reports whether the client can be asked to open a URL for
// its user within this call: it declares URL-mode elicitation and speaks
// the 2026-07-28 revision. An older client would have to answer a request
// from the server, which a stateless server cannot send.
func urlElicitation(req *sdk.CallToolRequest) bool {
	caps := req.ClientCapabilities()
	if caps == nil || caps.Elicitation == nil || caps.Elicitation.URL == nil {
		return false
	}
	v, _ := req.Params.Meta[sdk.MetaKeyProtocolVersion].(string)
	return v >= "2026-07-28"
}

func (e *Endpoint) planEnter(ctx context.Context, _ *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, *api.Session, error) {
	const tool = "plan_enter"
	s, err := e.bound(ctx, tool)
	if err != nil {
		return nil, nil, e.fail(tool, err)
	}
	s, err = e.b.Sessions.SetMode(ctx, s.ID, sessions.Plan, revision.Precondition{}, false)
	if err != nil {
		return nil, nil, e.fail(tool, err)
	}
	return nil, s, nil
}

func (e *Endpoint) todoWrite(ctx context.Context, _ *sdk.CallToolRequest, in api.TodosWrite) (*sdk.CallToolResult, *api.TodoList, error) {
	const tool = "todo_write"
	s, err := e.bound(ctx, tool)
	if err != nil {
		return nil, nil, e.fail(tool, err)
	}
	list, err := e.b.Sessions.PutTodos(ctx, s.ID, in, revision.Precondition{})
	if err != nil {
		return nil, nil, e.fail(tool, err)
	}
	return nil, list, nil
}
