package http

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/apierr"
	"github.com/planserver/planserver/internal/auth"
	"github.com/planserver/planserver/internal/hooks"
	"github.com/planserver/planserver/internal/hookwire"
	"github.com/planserver/planserver/internal/http/request"
	"github.com/planserver/planserver/internal/http/response"
	"github.com/planserver/planserver/internal/mcp"
	"github.com/planserver/planserver/internal/revision"
	"github.com/planserver/planserver/internal/scope"
	"github.com/planserver/planserver/internal/sessions"
	"github.com/planserver/planserver/internal/shellclass"
)

// HookConfig is how POST /v1/hooks/{host} judges shell commands.
type HookConfig struct {
	// Shell judges shell commands in plan mode: the sandbox every
	// rewritable command runs in, the early denial of certain writers, the
	// allowlist where no sandbox runs. A nil Writes is shellclass.Writes;
	// a nil Strict is shellclass.Strict with its default table.
	Shell hooks.Policy
	// OwnServers are the names hosts give planserver's own MCP server
	// (mcp__<name>__tool); "planserver" when empty.
	OwnServers []string
}

// hookRules are the plan-mode rules of host hooks, built once.
type hookRules struct {
	// unjudged counts the tool runs nobody judged, by host and reason
	// (planserver_hook_unjudged_runs_total).
	unjudged *prometheus.CounterVec
	policy   hooks.Policy
	// ownServers are the names hosts give planserver's own MCP server.
	ownServers map[string]bool
	// ownTools says which of planserver's MCP tools are read-only.
	ownTools map[string]bool
}

func newHookRules(cfg HookConfig, reg prometheus.Registerer) hookRules {
	r := hookRules{ownServers: map[string]bool{}, ownTools: map[string]bool{}}
	r.unjudged = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "planserver_hook_unjudged_runs_total",
		Help: "Tool runs a host's after-tool hook reported that planserver never decided (reason no_decision) or had denied (reason denied); each is a tool_call.unjudged event.",
	}, []string{"host", "reason"})
	for _, h := range hooks.Hosts {
		for _, why := range []string{api.UnjudgedNoDecision, api.UnjudgedDenied} {
			r.unjudged.WithLabelValues(string(h), why)
		}
	}
	reg.MustRegister(r.unjudged)
	for _, n := range cfg.OwnServers {
		if n = strings.TrimSpace(n); n != "" {
			r.ownServers[n] = true
		}
	}
	if len(r.ownServers) == 0 {
		r.ownServers["planserver"] = true
	}
	for _, op := range mcp.Operations {
		r.ownTools[op.Name] = op.ReadOnly
	}
	r.policy = cfg.Shell
	if r.policy.Writes == nil {
		r.policy.Writes = shellclass.Writes
	}
	if r.policy.Strict == nil {
		r.policy.Strict = shellclass.StrictJudge(nil)
	}
	return r
}

// hookMode is what hooks.Decide needs of a session: its effective mode
// and, in scoped build, its scope (the chain of grants, judged by
// scope.Chain).
func hookMode(sess *sessions.Session) hooks.Mode {
	m := hooks.Mode{Session: sess.ID, Plan: sess.EffectiveMode == sessions.Plan}
	if sess.ModeSource != nil {
		m.Source = *sess.ModeSource
	}
	if b := sess.BuildScope; b != nil && !m.Plan {
		chain := sessions.ScopeChain(b)
		summary := scope.Scope(b.Scope).Summary()
		if len(b.AlsoLimitedBy) > 0 {
			summary += fmt.Sprintf(", within the scopes of %d ancestor sessions", len(b.AlsoLimitedBy))
		}
		m.Scope = &hooks.Scope{Session: b.SessionID, Revision: b.PlanRevision, Allows: chain.Allows,
			Files: chain.Files(), Connect: chain.Connect(), Summary: summary}
	}
	return m
}

// hookDenial is what the event of a denial d of call c records.
func hookDenial(host hooks.Host, adapter string, call hooks.Call, d hooks.Decision, cur *sessions.Session) *sessions.HookDenial {
	h := &sessions.HookDenial{Tool: call.Tool, Reason: d.Reason, Host: string(host), Adapter: adapter, AgentID: call.AgentID}
	if d.OutOfScope && cur.BuildScope != nil {
		h.OutOfScope = &sessions.OutOfScope{AgentType: call.AgentType, Path: d.Path, ScopeRevision: cur.BuildScope.PlanRevision,
			ScopeSession: cur.BuildScope.SessionID}
		if call.Kind == hooks.Shell {
			h.OutOfScope.Command = call.Command
		}
	}
	return h
}

// hook is POST /v1/hooks/{host}: a host's hook input in, the host's hook
// output out. Once the host is known every answer is 200 in the host's
// format: a host treats an error status as "no decision" and runs the tool
// (Claude Code does), so a request the hook cannot serve (a malformed
// input, no such session, an unknown parent) is a denial that says why.
func (s *Server) hook(w http.ResponseWriter, r *http.Request) error {
	host, err := hooks.ParseHost(chi.URLParam(r, "host"))
	if err != nil {
		return apierr.New(apierr.NotFound, "%v", err)
	}
	adapter := "http"
	switch v := r.Header.Get(hookwire.AdapterHeader); v {
	case "command", "plugin":
		adapter = v
	}
	call, d := s.hookDecision(w, r, host, adapter)
	w.Header().Set("Planserver-Hook-Decision", d.Outcome.String())
	response.JSONBody(w, http.StatusOK, hooks.Render(host, call, d))
	return nil
}

// hookDecision decides one hook call; it never fails, turning every error
// into a refusal. A report of a run (an after-tool hook) is matched to its
// decision and answered with none, whatever happens: it never blocks.
func (s *Server) hookDecision(w http.ResponseWriter, r *http.Request, host hooks.Host, adapter string) (hooks.Call, hooks.Decision) {
	ctx := r.Context()
	refuse := func(call hooks.Call, err error) (hooks.Call, hooks.Decision) {
		if call.Phase == hooks.After {
			// A report never blocks: the tool ran already.
			s.log.WarnContext(ctx, "hook: a report of a run could not be matched", "host", host, "err", err)
			return call, hooks.Decision{Outcome: hooks.None}
		}
		if e, ok := apierr.As(err); ok && e.Code != apierr.Internal {
			return call, hooks.Refusal(e.Detail + ".")
		}
		if !hooks.IsInputError(err) {
			s.log.ErrorContext(ctx, "hook", "host", host, "err", err)
			return call, hooks.Refusal("planserver failed to decide (internal error; see its log).")
		}
		return call, hooks.Refusal(err.Error())
	}
	if _, err := request.RequireMediaType(r, request.MediaJSON); err != nil {
		return refuse(hooks.Call{Host: host}, err)
	}
	body, err := request.ReadBody(w, r, hookwire.MaxInput+1)
	if err != nil {
		return refuse(hooks.Call{Host: host}, err)
	}
	call, err := hooks.Parse(host, body)
	if err == nil {
		call.MCPName, err = hookMCPName(r.URL.Query().Get("mcp"))
	}
	if err != nil {
		return refuse(call, err)
	}
	sess, err := s.hookSession(ctx, r.URL.Query(), call)
	if err != nil {
		return refuse(call, err)
	}
	hc := sessions.HookCall{Host: string(host), Adapter: adapter, Tool: call.Tool, ToolUseID: call.RunID,
		AgentID: call.AgentID, AgentType: call.AgentType}
	if call.Phase == hooks.After {
		hc.Keys = hooks.RunKeys(call, nil)
		run, err := s.sessions.ReportToolRun(ctx, sess.ID, hc)
		if err != nil {
			return refuse(call, err)
		}
		if run != nil {
			s.hookRules.unjudged.WithLabelValues(string(host), run.Reason).Inc()
		}
		return call, hooks.Decision{Outcome: hooks.None}
	}
	policy := s.hookRules.policy
	facts, err := s.hookFacts(ctx, call, sess)
	if err != nil {
		return refuse(call, err)
	}
	d := hooks.Decide(call, hookMode(sess), policy, facts)
	review := d.Outcome == hooks.Review
	if review {
		if d, err = s.hookReview(ctx, r, call, sess); err != nil {
			return refuse(call, err)
		}
	}
	if !call.Reported() && d.Outcome != hooks.Deny {
		// No report follows: nothing to record but the enforcement.
		if err := s.sessions.NoteEnforcement(ctx, sess, string(host), adapter); err != nil {
			s.log.WarnContext(ctx, "hook: enforcement not recorded", "session", sess.ID, "err", err)
		}
		return call, d
	}
	if call.Reported() {
		hc.Keys = hooks.RunKeys(call, d.Input)
	}
	// Decide again where the decision is recorded: a mode changed since
	// the read is honoured, and the record and the event match the answer.
	// The first decision stands while the mode is the same, so the shell
	// parser does not run inside the write.
	first := hookMode(sess)
	_, _, err = s.sessions.DecideToolCall(ctx, sess.ID, hc, func(cur *sessions.Session) sessions.HookVerdict {
		if mode := hookMode(cur); !mode.Same(first) && !review {
			d = hooks.Decide(call, mode, policy, facts)
		}
		outcome := d.Outcome
		if review && cur.EffectiveMode != sessions.Plan {
			outcome = hooks.None
		}
		v := sessions.HookVerdict{Outcome: outcome.String()}
		if outcome == hooks.Deny {
			v.Denial = hookDenial(host, adapter, call, d, cur)
		}
		return v
	})
	if err != nil {
		return refuse(call, err)
	}
	return call, d
}

// hookMCPName reads ?mcp=: the name under which planserver's MCP server
// is set up in the host (what planserver hook install wrote into the
// hook's command), hooks.NoMCP, or nothing.
func hookMCPName(v string) (string, error) {
	if v == "" || v == hooks.NoMCP {
		return v, nil
	}
	if len(v) > 64 || strings.IndexFunc(v, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_')
	}) >= 0 {
		return "", apierr.Invalid("mcp", "%q is not an MCP server name (letters, digits, - and _, at most 64)", v)
	}
	return v, nil
}

// hookSession is the session a hook call acts for: ?session=ID, or the
// child of ?parent=P that stands for the host's conversation (found or
// created). The caller must be allowed to check tools of it.
func (s *Server) hookSession(ctx context.Context, q url.Values, call hooks.Call) (*sessions.Session, error) {
	id, parent := q.Get("session"), q.Get("parent")
	switch {
	case id != "" && parent != "":
		return nil, apierr.Invalid("session", "name the session (?session=) or its parent (?parent=), not both")
	case id != "":
		if err := s.authz.Authorize(ctx, auth.CheckTool, id, sessions.NotFound(id)); err != nil {
			return nil, err
		}
		return s.sessions.Get(ctx, id)
	case parent != "":
		if call.Conversation == "" {
			return nil, apierr.Invalid("parent", "the host sent no conversation id, so no child of %q can stand for it; use ?session=", parent)
		}
		if err := s.authz.Authorize(ctx, auth.CheckTool, parent, sessions.UnknownParent(parent)); err != nil {
			return nil, err
		}
		if err := s.authz.Authorize(ctx, auth.CreateSession, parent, sessions.UnknownParent(parent)); err != nil {
			return nil, err
		}
		sess, _, err := s.sessions.ChildFor(ctx, parent, call.Conversation, string(call.Host))
		return sess, err
	}
	return nil, apierr.Invalid("session", "name the session with ?session=ID (or ?parent=ID to bind the host's conversation to a child of ID)")
}

// hookFacts looks up what Decide needs beyond the session's mode: for a
// call to one of planserver's own MCP tools, /mcp's verdict on it (the
// same policy, so a tool is judged alike on both paths); for an MCP call
// to another server, whether the operator declared the tool read-only in
// the gate registry (a gate named like the server).
func (s *Server) hookFacts(ctx context.Context, call hooks.Call, sess *sessions.Session) (hooks.Facts, error) {
	var f hooks.Facts
	if call.Kind != hooks.MCP || call.MCPServer == "" {
		return f, nil
	}
	if ro, known := s.hookRules.ownTools[call.MCPTool]; known && s.hookRules.ownServers[call.MCPServer] {
		res := s.gate.Check(sess, sessions.Tool{Name: call.MCPTool, ReadOnlyHint: &ro})
		f.Own = &hooks.Verdict{Allowed: res.Allowed, Reason: res.Reason}
		return f, nil
	}
	name, behind := strings.CutPrefix(call.MCPServer, "gate:")
	if mcp.ValidateGateName(name) != nil {
		return f, nil
	}
	g, err := s.gates.Get(ctx, name)
	if apierr.CodeOf(err) == apierr.NotFound {
		return f, nil
	}
	if err != nil {
		return f, err
	}
	if behind {
		// The call goes through /mcp/gate/NAME, which judges it there.
		f.Gated = true
		return f, nil
	}
	for _, t := range g.ReadOnlyTools {
		if t == call.MCPTool {
			f.MCPReadOnly = true
		}
	}
	return f, nil
}

// hookReview turns the host's exit-plan-mode call into planserver's
// review: the plan becomes the next revision of the plan of the session
// that holds plan mode (the call's session, or the ancestor it inherits
// plan mode from, whose approval is what lifts it), and a review is
// requested. The answer is the denial with the review's link.
func (s *Server) hookReview(ctx context.Context, r *http.Request, call hooks.Call, sess *sessions.Session) (hooks.Decision, error) {
	target := sess.ID
	if sess.ModeSource != nil {
		target = *sess.ModeSource
	}
	for _, a := range []auth.Action{auth.WriteSessionPlan, auth.RequestReview} {
		if err := s.authz.Authorize(ctx, a, target, sessions.NotFound(target)); err != nil {
			return hooks.Decision{}, err
		}
	}
	author := string(call.Host)
	if call.AgentType != "" {
		author += " (" + call.AgentType + ")"
	}
	plan, _, err := s.sessions.PutSessionPlan(ctx, target, api.SessionPlanWrite{Content: call.Plan, Author: &author},
		s.cfg.MaxPlanBytes, revision.Precondition{})
	if err != nil {
		return hooks.Decision{}, err
	}
	rationale := fmt.Sprintf("%s asked to leave plan mode (%s)", call.Host, call.Tool)
	if _, err := s.sessions.RequestReview(ctx, target, api.ReviewRequest{Rationale: &rationale}, revision.Precondition{}); err != nil {
		return hooks.Decision{}, err
	}
	link := fmt.Sprintf("%s/ui/sessions/%s/review?revision=%d", baseURL(r), url.PathEscape(target), plan.Revision)
	return hooks.ReviewDenial(target, plan.Revision, link), nil
}

// baseURL is the server's address as the caller reached it.
func baseURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}
