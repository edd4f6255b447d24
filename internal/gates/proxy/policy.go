package proxy

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/client"
	"github.com/planserver/planserver/internal/sessions"
)

// The plan-mode gate for the agent's other tool servers: planserver gate
// (a stdio proxy, stdio.go) and /mcp/gate/{name} (a streamable-HTTP
// proxy, upstream.go) put a tool server behind the session's mode. Both
// use Policy, which asks a Checker: planserver over HTTP for the stdio
// gate, the server's own store for the HTTP one.

// Checker answers the gate's questions about one session.
type Checker interface {
	// Filter returns the names of the tools the session may be offered
	// now.
	Filter(ctx context.Context, tools []sessions.Tool) (map[string]bool, error)
	// Check decides one call of a tool that is not read-only, recording a
	// denial as tool_call.denied (with the tool's upstream); reason is for
	// the model.
	Check(ctx context.Context, tool sessions.Tool) (allowed bool, reason string, err error)
}

// Policy is the gate of one upstream tool server for one session. There
// is no switch that turns it off: a tool is read-only only when it says
// so (annotations.readOnlyHint: true; a tool without annotations is
// state-changing, as MCP's defaults have it) or when the operator declared
// it read-only for this upstream.
type Policy struct {
	// Upstream names the tool server, for tool_call.denied events.
	Upstream string
	// ReadOnly are the tools the operator declared read-only.
	ReadOnly map[string]bool
	Checker  Checker
}

// ToolInfo is what the gate knows of an upstream tool.
type ToolInfo struct {
	Name string
	// ReadOnlyHint is the tool's annotations.readOnlyHint, nil when it has
	// none.
	ReadOnlyHint *bool
}

// readOnly reports whether t may be called in any mode.
func (p Policy) readOnly(t ToolInfo) bool {
	return (t.ReadOnlyHint != nil && *t.ReadOnlyHint) || p.ReadOnly[t.Name]
}

// gateTool is t as the gate presents it to planserver: read-only when the
// operator said so.
func (p Policy) gateTool(t ToolInfo) sessions.Tool {
	// Every tool behind a gate is an upstream's, never planserver's own,
	// so the plan-mode allowlist never covers it; a gate with no name
	// still says so.
	upstream := p.Upstream
	if upstream == "" {
		upstream = "upstream"
	}
	st := sessions.Tool{Name: t.Name, ReadOnlyHint: t.ReadOnlyHint, Upstream: upstream}
	if p.ReadOnly[t.Name] {
		yes := true
		st.ReadOnlyHint = &yes
	}
	return st
}

// List returns the names of tools to offer. When planserver cannot answer,
// it offers the read-only tools only and says why in note: state-changing
// tools stay hidden until it answers (fail closed), reads keep working.
func (p Policy) List(ctx context.Context, tools []ToolInfo) (keep map[string]bool, note string) {
	gt := make([]sessions.Tool, len(tools))
	for i, t := range tools {
		gt[i] = p.gateTool(t)
	}
	allowed, err := p.Checker.Filter(ctx, gt)
	if err == nil {
		return allowed, ""
	}
	keep = map[string]bool{}
	for _, t := range tools {
		if p.readOnly(t) {
			keep[t.Name] = true
		}
	}
	return keep, unreachable(err)
}

// Call decides one call. Read-only tools are always allowed, without
// asking: plan mode never hides a read, and reads keep working while
// planserver is unreachable. Any other call is allowed only when
// planserver says so; if it cannot be asked, the call is refused and the
// reason says why.
func (p Policy) Call(ctx context.Context, t ToolInfo) (allowed bool, reason string) {
	if p.readOnly(t) {
		return true, ""
	}
	ok, reason, err := p.Checker.Check(ctx, p.gateTool(t))
	if err != nil {
		return false, fmt.Sprintf("[Tool refused — planserver gate] %q changes state, and %s, so the gate refuses it: "+
			"state-changing tools wait until planserver answers; read-only tools keep working.", t.Name, unreachable(err))
	}
	return ok, reason
}

// unreachable says why planserver could not decide.
func unreachable(err error) string {
	return fmt.Sprintf("planserver could not be asked whether this session is in plan mode (%v)", err)
}

// ReadOnlyList is the sorted list of an operator's read-only tools, for
// the log line a gate writes when it starts.
func ReadOnlyList(m map[string]bool) string {
	if len(m) == 0 {
		return "none"
	}
	var out []string
	for name := range m {
		out = append(out, name)
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// RemoteChecker asks a planserver over its HTTP API, through the Go
// client (client.FilterTools, client.CheckTool, client.GetSession), with
// the session's token. Every error (unreachable, a timeout, an answer that
// is not 200) is an error, so the gate fails closed.
type RemoteChecker struct {
	// Server is planserver's base URL, e.g. http://127.0.0.1:8080.
	Server  string
	Session string
	Token   string
	Client  *http.Client
}

// checkTimeout bounds one question to planserver: a gate that waits longer
// holds up the agent.
const checkTimeout = 5 * time.Second

// Filter implements Checker.
func (c RemoteChecker) Filter(ctx context.Context, tools []sessions.Tool) (map[string]bool, error) {
	// Each tool names its upstream in _meta, as a check does: the
	// plan-mode allowlist is for planserver's own tools only.
	in := make([]api.Tool, len(tools))
	for i, t := range tools {
		in[i] = remoteTool(t)
	}
	res, err := remote(ctx, c, "/tools/filter", func(ctx context.Context, pc *client.Client) (*api.FilterResult, error) {
		return pc.FilterTools(ctx, c.Session, in)
	})
	if err != nil {
		return nil, err
	}
	allowed := map[string]bool{}
	for _, name := range res.Allowed {
		allowed[name] = true
	}
	return allowed, nil
}

// Check implements Checker.
func (c RemoteChecker) Check(ctx context.Context, t sessions.Tool) (bool, string, error) {
	res, err := remote(ctx, c, "/tools/check", func(ctx context.Context, pc *client.Client) (*api.CheckResult, error) {
		return pc.CheckTool(ctx, c.Session, remoteTool(t))
	})
	if err != nil {
		return false, "", err
	}
	return res.Allowed, res.Reason, nil
}

// EffectiveMode returns the session's effective mode.
func (c RemoteChecker) EffectiveMode(ctx context.Context) (api.Mode, error) {
	s, err := c.Get(ctx)
	if err != nil {
		return "", err
	}
	return s.EffectiveMode, nil
}

// remoteTool is t as the API takes it: its read-only hint, and its
// upstream in _meta.
func remoteTool(t sessions.Tool) api.Tool {
	out := api.Tool{Name: t.Name, Annotations: &api.ToolAnnotations{ReadOnlyHint: t.ReadOnlyHint}}
	if t.Upstream != "" {
		out.Meta = map[string]string{api.UpstreamMeta: t.Upstream}
	}
	return out
}

// remote asks planserver one question (route under the session's path),
// within checkTimeout. A refusal reads as it always has in the gate's
// reasons and logs: the method, the URL, the status, and the problem's
// code and detail when the answer was a problem document.
func remote[T any](ctx context.Context, c RemoteChecker, route string, ask func(context.Context, *client.Client) (*T, error)) (*T, error) {
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	hc := c.Client
	if hc == nil {
		hc = http.DefaultClient
	}
	pc, err := client.New(c.Server, client.WithToken(c.Token), client.WithHTTPClient(hc))
	if err != nil {
		return nil, err
	}
	out, err := ask(ctx, pc)
	var e *client.Error
	if errors.As(err, &e) {
		u := strings.TrimRight(c.Server, "/") + "/v1/sessions/" + url.PathEscape(c.Session) + route
		if e.Problem.Code != "" {
			return nil, fmt.Errorf("%s %s answered %d %s: %s", e.Method, u, e.Status, e.Problem.Code, e.Problem.Detail)
		}
		return nil, fmt.Errorf("%s %s answered %d", e.Method, u, e.Status)
	}
	return out, err
}
