package mcp

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/planserver/planserver/internal/apierr"
	"github.com/planserver/planserver/internal/auth"
	"github.com/planserver/planserver/internal/sessions"
	"github.com/planserver/planserver/internal/validation"
)

// Bind returns the session a request acts for: the one named by the
// Planserver-Session header or the planserver/session _meta key, or else
// an agent token's own session; nil when there is none. A named session
// must be readable by the caller: outside an agent's tree it is not found,
// exactly as over HTTP. Errors: invalid_argument, not_found.
func Bind(ctx context.Context, b Backend, header http.Header, meta map[string]any) (*sessions.Session, error) {
	named := header.Get(SessionHeader)
	if v, ok := meta[MetaSession]; ok {
		s, isString := v.(string)
		if !isString {
			return nil, apierr.Invalid("_meta."+MetaSession, "must be a session id (a string)")
		}
		if named != "" && s != named {
			return nil, apierr.Invalid("_meta."+MetaSession, "names session %q but the %s header names %q; name one session", s, SessionHeader, named)
		}
		named = s
	}
	if p := auth.PrincipalFrom(ctx); named == "" && p.Role == auth.Agent {
		named = p.SessionID
	}
	if named == "" {
		return nil, nil
	}
	if !validation.SessionID.MatchString(named) {
		return nil, apierr.Invalid(SessionHeader, "session id %q must match %s", named, validation.SessionID.String())
	}
	if err := b.Access.Authorize(ctx, auth.ReadSession, named, sessions.NotFound(named)); err != nil {
		return nil, err
	}
	return b.Sessions.Get(ctx, named)
}

type sessionKey struct{}

// sessionFrom returns the session the gate bound the call to.
func sessionFrom(ctx context.Context) *sessions.Session {
	s, _ := ctx.Value(sessionKey{}).(*sessions.Session)
	return s
}

// gateMiddleware decides, for every tools/list and tools/call, what the
// caller sees and may call, from the request alone (the server is
// stateless, so nothing is remembered between requests and a mode change
// shows at the very next one):
//
//   - a tool that acts on a session is offered only when one is bound;
//   - a tool whose action the caller's role never has is not offered
//     (a viewer sees the read-only tools), and calling it anyway is refused
//     by the tool's own access check;
//   - with a session bound, the session's effective mode filters the list
//     through the plan-mode gate (sessions.Gate), and every call is checked
//     again at call time (Store.CheckTool, which records a refusal as a
//     tool_call.denied event with the same reason POST …/tools/check gives).
func (e *Endpoint) gateMiddleware(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		switch r := req.(type) {
		case *sdk.ListToolsRequest:
			sess, err := Bind(ctx, e.b, HeaderOf(r.Extra), ListMeta(r.Params))
			if err != nil {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: Describe(err, "")}
			}
			res, err := next(ctx, method, req)
			if err != nil {
				return res, err
			}
			if list, ok := res.(*sdk.ListToolsResult); ok {
				list.Tools = e.visible(ctx, sess, list.Tools)
			}
			return res, nil
		case *sdk.CallToolRequest:
			op, ok := e.ops[r.Params.Name]
			if !ok {
				return next(ctx, method, req) // the SDK's unknown-tool error
			}
			// The arguments are the tool's body: NUL is refused in them as
			// in every HTTP body (validation.NoNULInJSON).
			if err := validation.NoNULInJSON("", r.Params.Arguments); err != nil {
				return ToolError(Describe(err, op.Name)), nil
			}
			sess, err := Bind(ctx, e.b, HeaderOf(r.Extra), r.Params.Meta)
			if err != nil {
				return ToolError(Describe(err, op.Name)), nil
			}
			if op.Session && sess == nil {
				return ToolError(noSession(op.Name)), nil
			}
			if sess != nil {
				readOnly := op.ReadOnly
				check, err := e.b.Sessions.CheckTool(ctx, sess.ID, e.b.Gate,
					sessions.Tool{Name: op.Name, ReadOnlyHint: &readOnly, Upstream: Upstream, Own: true})
				if err != nil {
					return ToolError(Describe(err, op.Name)), nil
				}
				if !check.Allowed {
					return ToolError(check.Reason), nil
				}
			}
			res, err := next(context.WithValue(ctx, sessionKey{}, sess), method, req)
			if r, ok := res.(*sdk.CallToolResult); ok && err == nil && r.IsError {
				schemaError(r)
			}
			return res, err
		}
		return next(ctx, method, req)
	}
}

// visible is the tool list for the caller and session sess (nil for none),
// in the server's order.
func (e *Endpoint) visible(ctx context.Context, sess *sessions.Session, tools []*sdk.Tool) []*sdk.Tool {
	p := auth.PrincipalFrom(ctx)
	var candidates []sessions.Tool
	byName := map[string]*sdk.Tool{}
	for _, t := range tools {
		op, ok := e.ops[t.Name]
		if !ok || (op.Session && sess == nil) {
			continue
		}
		// The role alone: an agent's plan mode is the gate's to judge.
		if auth.Decide(p, op.Action, auth.Facts{InScope: true}) == auth.Deny {
			continue
		}
		readOnly := op.ReadOnly
		candidates = append(candidates, sessions.Tool{Name: t.Name, ReadOnlyHint: &readOnly})
		byName[t.Name] = t
	}
	out := []*sdk.Tool{}
	if sess == nil {
		for _, c := range candidates {
			out = append(out, byName[c.Name])
		}
		return out
	}
	for _, name := range e.b.Gate.Filter(sess, candidates).Allowed {
		out = append(out, byName[name])
	}
	return out
}

// HeaderOf is the HTTP header an SDK request came with (none: empty),
// where Bind finds the session header; the gate proxy binds the same way.
func HeaderOf(extra *sdk.RequestExtra) http.Header {
	if extra == nil || extra.Header == nil {
		return http.Header{}
	}
	return extra.Header
}

// ListMeta is the _meta of a tools/list request, where Bind finds the
// session key of a client that cannot set headers.
func ListMeta(p *sdk.ListToolsParams) map[string]any {
	if p == nil {
		return nil
	}
	return p.Meta
}

func noSession(tool string) string {
	return fmt.Sprintf("%s acts on a session, and this connection is bound to none. Connect with an agent token "+
		"(bound to its session), or name the session in the %s header (or the %s _meta key) with an admin token or --auth none.",
		tool, SessionHeader, MetaSession)
}

// schemaError rewrites the SDK's answer to arguments that do not fit the
// input schema in the words of every other refusal: the code the HTTP API
// would answer, and that nothing was written.
func schemaError(r *sdk.CallToolResult) {
	if len(r.Content) != 1 {
		return
	}
	t, ok := r.Content[0].(*sdk.TextContent)
	if !ok {
		return
	}
	if rest, found := strings.CutPrefix(t.Text, `validating "arguments": `); found {
		t.Text = "invalid_argument: the arguments do not fit the tool's input schema: " +
			strings.TrimPrefix(rest, "validating root: ") + "\nNothing was written."
	}
}

// ToolError is a failed tool call whose text is for the model.
func ToolError(text string) *sdk.CallToolResult {
	return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: text}}}
}
