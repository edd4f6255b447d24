// Package hosthookservice is the host-hook use case: one hook call of an agent
// host (POST /v1/hooks/{host}, which planserver hook and planserver-hook
// ask) parsed from the host's input, the session it acts for found, the
// facts gathered, decided by hosthook.Decide, recorded, and rendered in the
// host's own format. The HTTP handler only reads the request and writes
// the answer; this package is the one place a hook call is decided with
// planserver's state.
//
// It imports no transport and no shell parser: internal/http calls it, and
// the composition root (internal/app) builds it with the stores and the
// shell policy (hosthookcmd.ShellPolicy). Offline is the same decision
// without planserver's state, for the command form (internal/hosthookcmd).
package hosthookservice

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/apierr"
	"github.com/planserver/planserver/internal/auth"
	"github.com/planserver/planserver/internal/hosthook"
	"github.com/planserver/planserver/internal/revision"
	"github.com/planserver/planserver/internal/scope"
	"github.com/planserver/planserver/internal/sessions"
)

// Access is the access check the service asks (auth.Authorizer).
type Access interface {
	Authorize(ctx context.Context, a auth.Action, target string, hidden error) error
}

// Gates looks up the gate registry (gates.Store): a gate named like an
// MCP server says which of its tools the operator declared read-only.
// Errors: invalid_argument (not a gate's name), not_found.
type Gates interface {
	Get(ctx context.Context, name string) (*api.Gate, error)
}

// Config is what the service is built from.
type Config struct {
	Sessions *sessions.Store
	// Gate is the plan-mode tool policy (the --plan-mode-allow list),
	// which judges calls to planserver's own MCP tools as /mcp does.
	Gate   sessions.Gate
	Access Access
	Gates  Gates
	// Shell judges shell commands: hosthookcmd.ShellPolicy, whole.
	Shell hosthook.Policy
	// OwnServers are the names hosts give planserver's own MCP server
	// (mcp__<name>__tool); "planserver" when empty.
	OwnServers []string
	// OwnTools are planserver's MCP tools, each true when read-only
	// (mcp.Operations).
	OwnTools map[string]bool
	// MaxPlanBytes bounds the plan an exit-plan-mode call stores.
	MaxPlanBytes int64
	// Registry gets the service's metric
	// (planserver_hook_unjudged_runs_total).
	Registry prometheus.Registerer
	Logger   *slog.Logger
}

// Service answers host hooks' calls.
type Service struct {
	cfg Config
	log *slog.Logger
	// unjudged counts the tool runs nobody judged, by host and reason
	// (planserver_hook_unjudged_runs_total).
	unjudged *prometheus.CounterVec
	// ownServers are the names hosts give planserver's own MCP server.
	ownServers map[string]bool
}

// New builds the service of cfg and registers its metric.
func New(cfg Config) *Service {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	s := &Service{cfg: cfg, log: cfg.Logger, ownServers: map[string]bool{}}
	s.unjudged = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "planserver_hook_unjudged_runs_total",
		Help: "Tool runs a host's after-tool hook reported that planserver never decided (reason no_decision) or had denied (reason denied); each is a tool_call.unjudged event.",
	}, []string{"host", "reason"})
	for _, h := range hosthook.Hosts {
		for _, why := range []string{api.UnjudgedNoDecision, api.UnjudgedDenied} {
			s.unjudged.WithLabelValues(string(h), why)
		}
	}
	cfg.Registry.MustRegister(s.unjudged)
	for _, n := range cfg.OwnServers {
		if n = strings.TrimSpace(n); n != "" {
			s.ownServers[n] = true
		}
	}
	if len(s.ownServers) == 0 {
		s.ownServers["planserver"] = true
	}
	return s
}

// Request is one hook call as the transport received it.
type Request struct {
	Host hosthook.Host
	// Adapter is who asks: "http" (the host itself), "command" or
	// "plugin" (hosthookproto.AdapterHeader).
	Adapter string
	// Input is the host's hook input; Unreadable, when set, says why the
	// transport could not read it (its media type, its size), and the call
	// is refused.
	Input      []byte
	Unreadable error
	// Session, Parent and MCP are the ?session=, ?parent= and ?mcp= of the
	// hook's command (session, mcpName).
	Session, Parent, MCP string
	// BaseURL is the server's address as the caller reached it, for the
	// review's link.
	BaseURL string
}

// Answer is what the host gets: its hook output, and the decision's
// outcome (the Planserver-Hook-Decision header).
type Answer struct {
	Outcome hosthook.Outcome
	Body    []byte
}

// Answer decides one hook call and renders it in the host's format. Every
// failure is a refusal that says why: a host treats an error as "no
// decision" and runs the tool.
func (s *Service) Answer(ctx context.Context, q Request) Answer {
	call, d := s.decide(ctx, q)
	return Answer{Outcome: d.Outcome, Body: hosthook.Render(q.Host, call, d)}
}

// decide decides one hook call; it never fails, turning every error into
// a refusal. A report of a run (an after-tool hook) is matched to its
// decision and answered with none, whatever happens: it never blocks.
func (s *Service) decide(ctx context.Context, q Request) (hosthook.Call, hosthook.Decision) {
	host, adapter := q.Host, q.Adapter
	refuse := func(call hosthook.Call, err error) (hosthook.Call, hosthook.Decision) {
		if call.Phase == hosthook.After {
			// A report never blocks: the tool ran already.
			s.log.WarnContext(ctx, "hook: a report of a run could not be matched", "host", host, "err", err)
			return call, hosthook.Decision{Outcome: hosthook.None}
		}
		if e, ok := apierr.As(err); ok && e.Code != apierr.Internal {
			return call, hosthook.Refusal(e.Detail + ".")
		}
		if !hosthook.IsInputError(err) {
			s.log.ErrorContext(ctx, "hook", "host", host, "err", err)
			return call, hosthook.Refusal("planserver failed to decide (internal error; see its log).")
		}
		return call, hosthook.Refusal(err.Error())
	}
	if q.Unreadable != nil {
		return refuse(hosthook.Call{Host: host}, q.Unreadable)
	}
	call, err := hosthook.Parse(host, q.Input)
	if err == nil {
		call.MCPName, err = mcpName(q.MCP)
	}
	if err != nil {
		return refuse(call, err)
	}
	sess, err := s.session(ctx, q.Session, q.Parent, call)
	if err != nil {
		return refuse(call, err)
	}
	hc := sessions.HookCall{Host: string(host), Adapter: adapter, Tool: call.Tool, ToolUseID: call.RunID,
		AgentID: call.AgentID, AgentType: call.AgentType}
	if call.Phase == hosthook.After {
		hc.Keys = hosthook.RunKeys(call, nil)
		run, err := s.cfg.Sessions.ReportToolRun(ctx, sess.ID, hc)
		if err != nil {
			return refuse(call, err)
		}
		if run != nil {
			s.unjudged.WithLabelValues(string(host), run.Reason).Inc()
		}
		return call, hosthook.Decision{Outcome: hosthook.None}
	}
	policy := s.cfg.Shell
	facts, err := s.facts(ctx, call, sess)
	if err != nil {
		return refuse(call, err)
	}
	d := hosthook.Decide(call, modeOf(sess), policy, facts)
	review := d.Outcome == hosthook.Review
	if review {
		if d, err = s.review(ctx, q.BaseURL, call, sess); err != nil {
			return refuse(call, err)
		}
	}
	if !call.Reported() && d.Outcome != hosthook.Deny {
		// No report follows: nothing to record but the enforcement.
		if err := s.cfg.Sessions.NoteEnforcement(ctx, sess, string(host), adapter); err != nil {
			s.log.WarnContext(ctx, "hook: enforcement not recorded", "session", sess.ID, "err", err)
		}
		return call, d
	}
	if call.Reported() {
		hc.Keys = hosthook.RunKeys(call, d.Input)
	}
	// Decide again where the decision is recorded: a mode changed since
	// the read is honoured, and the record and the event match the answer.
	// The first decision stands while the mode is the same, so the shell
	// parser does not run inside the write.
	first := modeOf(sess)
	_, _, err = s.cfg.Sessions.DecideToolCall(ctx, sess.ID, hc, func(cur *sessions.Session) sessions.HookVerdict {
		if mode := modeOf(cur); !mode.Same(first) && !review {
			d = hosthook.Decide(call, mode, policy, facts)
		}
		outcome := d.Outcome
		if review && cur.EffectiveMode != sessions.Plan {
			outcome = hosthook.None
		}
		v := sessions.HookVerdict{Outcome: outcome.String()}
		if outcome == hosthook.Deny {
			v.Denial = denial(host, adapter, call, d, cur)
		}
		return v
	})
	if err != nil {
		return refuse(call, err)
	}
	return call, d
}

// modeOf is what hosthook.Decide needs of a session: its effective mode and,
// in scoped build, its scope (the chain of grants, judged by scope.Chain).
func modeOf(sess *sessions.Session) hosthook.Mode {
	m := hosthook.Mode{Session: sess.ID, Plan: sess.EffectiveMode == sessions.Plan}
	if sess.ModeSource != nil {
		m.Source = *sess.ModeSource
	}
	if b := sess.BuildScope; b != nil && !m.Plan {
		chain := sessions.ScopeChain(b)
		summary := scope.Scope(b.Scope).Summary()
		if len(b.AlsoLimitedBy) > 0 {
			summary += fmt.Sprintf(", within the scopes of %d ancestor sessions", len(b.AlsoLimitedBy))
		}
		m.Scope = &hosthook.Scope{Session: b.SessionID, Revision: b.PlanRevision, Allows: chain.Allows,
			Files: chain.Files(), Connect: chain.Connect(), Summary: summary}
	}
	return m
}

// denial is what the event of a denial d of call c records.
func denial(host hosthook.Host, adapter string, call hosthook.Call, d hosthook.Decision, cur *sessions.Session) *sessions.HookDenial {
	h := &sessions.HookDenial{Tool: call.Tool, Reason: d.Reason, Host: string(host), Adapter: adapter, AgentID: call.AgentID}
	if d.OutOfScope && cur.BuildScope != nil {
		h.OutOfScope = &sessions.OutOfScope{AgentType: call.AgentType, Path: d.Path, ScopeRevision: cur.BuildScope.PlanRevision,
			ScopeSession: cur.BuildScope.SessionID}
		if call.Kind == hosthook.Shell {
			h.OutOfScope.Command = call.Command
		}
	}
	return h
}

// mcpName reads ?mcp=: the name under which planserver's MCP server is
// set up in the host (what planserver hook install wrote into the hook's
// command), hosthook.NoMCP, or nothing.
func mcpName(v string) (string, error) {
	if v == "" || v == hosthook.NoMCP {
		return v, nil
	}
	if len(v) > 64 || strings.IndexFunc(v, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_')
	}) >= 0 {
		return "", apierr.Invalid("mcp", "%q is not an MCP server name (letters, digits, - and _, at most 64)", v)
	}
	return v, nil
}

// session is the session a hook call acts for: ?session=ID, or the child
// of ?parent=P that stands for the host's conversation (found or created).
// The caller must be allowed to check tools of it.
func (s *Service) session(ctx context.Context, id, parent string, call hosthook.Call) (*sessions.Session, error) {
	switch {
	case id != "" && parent != "":
		return nil, apierr.Invalid("session", "name the session (?session=) or its parent (?parent=), not both")
	case id != "":
		if err := s.cfg.Access.Authorize(ctx, auth.CheckTool, id, sessions.NotFound(id)); err != nil {
			return nil, err
		}
		return s.cfg.Sessions.Get(ctx, id)
	case parent != "":
		if call.Conversation == "" {
			return nil, apierr.Invalid("parent", "the host sent no conversation id, so no child of %q can stand for it; use ?session=", parent)
		}
		if err := s.cfg.Access.Authorize(ctx, auth.CheckTool, parent, sessions.UnknownParent(parent)); err != nil {
			return nil, err
		}
		if err := s.cfg.Access.Authorize(ctx, auth.CreateSession, parent, sessions.UnknownParent(parent)); err != nil {
			return nil, err
		}
		sess, _, err := s.cfg.Sessions.ChildFor(ctx, parent, call.Conversation, string(call.Host))
		return sess, err
	}
	return nil, apierr.Invalid("session", "name the session with ?session=ID (or ?parent=ID to bind the host's conversation to a child of ID)")
}

// facts looks up what Decide needs beyond the session's mode: for a call
// to one of planserver's own MCP tools, /mcp's verdict on it (the same
// policy, so a tool is judged alike on both paths); for an MCP call to
// another server, whether the operator declared the tool read-only in the
// gate registry (a gate named like the server).
func (s *Service) facts(ctx context.Context, call hosthook.Call, sess *sessions.Session) (hosthook.Facts, error) {
	var f hosthook.Facts
	if call.Kind != hosthook.MCP || call.MCPServer == "" {
		return f, nil
	}
	if ro, known := s.cfg.OwnTools[call.MCPTool]; known && s.ownServers[call.MCPServer] {
		res := s.cfg.Gate.Check(sess, sessions.Tool{Name: call.MCPTool, ReadOnlyHint: &ro})
		f.Own = &hosthook.Verdict{Allowed: res.Allowed, Reason: res.Reason}
		return f, nil
	}
	name, behind := strings.CutPrefix(call.MCPServer, "gate:")
	g, err := s.cfg.Gates.Get(ctx, name)
	switch apierr.CodeOf(err) {
	case apierr.NotFound, apierr.InvalidArgument:
		// Not a gate's name, or no such gate: nothing declared.
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

// review turns the host's exit-plan-mode call into planserver's review:
// the plan becomes the next revision of the plan of the session that holds
// plan mode (the call's session, or the ancestor it inherits plan mode
// from, whose approval is what lifts it), and a review is requested. The
// answer is the denial with the review's link under base.
func (s *Service) review(ctx context.Context, base string, call hosthook.Call, sess *sessions.Session) (hosthook.Decision, error) {
	target := sess.ID
	if sess.ModeSource != nil {
		target = *sess.ModeSource
	}
	for _, a := range []auth.Action{auth.WriteSessionPlan, auth.RequestReview} {
		if err := s.cfg.Access.Authorize(ctx, a, target, sessions.NotFound(target)); err != nil {
			return hosthook.Decision{}, err
		}
	}
	author := string(call.Host)
	if call.AgentType != "" {
		author += " (" + call.AgentType + ")"
	}
	plan, _, err := s.cfg.Sessions.PutSessionPlan(ctx, target, api.SessionPlanWrite{Content: call.Plan, Author: &author},
		s.cfg.MaxPlanBytes, revision.Precondition{})
	if err != nil {
		return hosthook.Decision{}, err
	}
	rationale := fmt.Sprintf("%s asked to leave plan mode (%s)", call.Host, call.Tool)
	if _, err := s.cfg.Sessions.RequestReview(ctx, target, api.ReviewRequest{Rationale: &rationale}, revision.Precondition{}); err != nil {
		return hosthook.Decision{}, err
	}
	link := fmt.Sprintf("%s/ui/sessions/%s/review?revision=%d", base, url.PathEscape(target), plan.Revision)
	return hosthook.ReviewDenial(target, plan.Revision, link), nil
}
