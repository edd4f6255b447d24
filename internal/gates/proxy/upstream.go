package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/apierr"
	"github.com/planserver/planserver/internal/auth"
	"github.com/planserver/planserver/internal/gates"
	"github.com/planserver/planserver/internal/mcp"
	"github.com/planserver/planserver/internal/sessions"
)

// Upstreams serves /mcp/gate/{name}: the tools of the streamable-HTTP MCP
// server registered as name, to a caller bound to a session as at /mcp,
// behind the plan-mode gate. planserver is the upstream's only client: it
// lists the tools, filters them by the session's mode, checks every call
// that is not read-only (recording a refusal as tool_call.denied with the
// upstream's name) and forwards the rest. Only tools are proxied; the
// caller's credential is never sent upstream.
type Upstreams struct {
	b     mcp.Backend
	store *gates.Store

	mu    sync.Mutex
	gates map[string]*upstream
}

// NewUpstreams returns the gate endpoint over the registry store.
func NewUpstreams(b mcp.Backend, store *gates.Store) *Upstreams {
	if b.Logger == nil {
		b.Logger = slog.Default()
	}
	return &Upstreams{b: b, store: store, gates: map[string]*upstream{}}
}

// upstream is one registered server: its registration, a stateless MCP
// server facing callers, and the client session to the upstream.
type upstream struct {
	u       *Upstreams
	gate    api.Gate
	handler http.Handler

	// mu guards cs, closed and known; it is never held while the
	// upstream is asked anything.
	mu     sync.Mutex
	cs     *sdk.ClientSession
	closed bool
	known  map[string]ToolInfo
}

// ServeGate serves one MCP request to the gate called name (the path's
// {name}). A name nobody registered is a 404 problem.
func (u *Upstreams) ServeGate(w http.ResponseWriter, r *http.Request, name string) {
	g, err := u.store.Get(r.Context(), name)
	if err != nil {
		u.b.Problem(w, r, err)
		return
	}
	// The body is read exactly before the SDK reads it (wire.go): a
	// message the gate and the upstream could read differently is refused.
	body, err := io.ReadAll(io.LimitReader(r.Body, maxMessage+1))
	if err != nil {
		u.b.Problem(w, r, apierr.New(apierr.InvalidArgument, "could not read the request body: %v", err))
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	if err := judgeable(body); err != nil {
		u.b.Problem(w, r, apierr.New(apierr.InvalidArgument, "planserver gate refused an ambiguous or malformed message: %v", err))
		return
	}
	up := u.upstream(g)
	mcp.Serve(up.handler, u.b.Problem, w, r)
}

// judgeable checks that every message of body (one, or a batch) reads
// exactly.
func judgeable(body []byte) error {
	if err := checkUnambiguous(body); err != nil {
		return err
	}
	t := bytes.TrimSpace(body)
	if len(t) > 0 && t[0] == '[' {
		var batch []json.RawMessage
		if err := json.Unmarshal(t, &batch); err != nil {
			return err
		}
		for _, m := range batch {
			if _, err := parseMessage(m); err != nil {
				return err
			}
		}
		return nil
	}
	_, err := parseMessage(t)
	return err
}

// upstream returns the proxy of registration g, made anew when the
// registration changed.
func (u *Upstreams) upstream(g *api.Gate) *upstream {
	u.mu.Lock()
	defer u.mu.Unlock()
	if up, ok := u.gates[g.Name]; ok && up.gate.URL == g.URL && slices.Equal(up.gate.ReadOnlyTools, g.ReadOnlyTools) {
		return up
	}
	if old, ok := u.gates[g.Name]; ok {
		// Closing may wait on a stuck upstream: never under u.mu, which
		// every gate's requests take.
		go old.close()
	}
	up := &upstream{u: u, gate: *g, known: map[string]ToolInfo{}}
	server := sdk.NewServer(&sdk.Implementation{Name: "planserver-gate-" + g.Name, Version: u.b.Version},
		&sdk.ServerOptions{Capabilities: &sdk.ServerCapabilities{Tools: &sdk.ToolCapabilities{}}})
	server.AddReceivingMiddleware(up.middleware)
	up.handler = sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return server },
		&sdk.StreamableHTTPOptions{Stateless: true, JSONResponse: true, DisableLocalhostProtection: true})
	u.gates[g.Name] = up
	u.b.Logger.Info("gate", "name", g.Name, "url", g.URL, "read_only_tools", ReadOnlyList(readOnlySet(g.ReadOnlyTools)))
	return up
}

func readOnlySet(names []string) map[string]bool {
	m := map[string]bool{}
	for _, n := range names {
		m[n] = true
	}
	return m
}

// middleware answers tools/list and tools/call itself; everything else
// (discover, initialize, ping) is the SDK's.
func (up *upstream) middleware(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		switch r := req.(type) {
		case *sdk.ListToolsRequest:
			sess, err := up.bind(ctx, mcp.HeaderOf(r.Extra), mcp.ListMeta(r.Params))
			if err != nil {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: mcp.Describe(err, "")}
			}
			tools, err := up.list(ctx)
			if err != nil {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: up.unreachable(err)}
			}
			infos := make([]ToolInfo, len(tools))
			for i, t := range tools {
				infos[i] = infoOf(t)
			}
			policy, mayWrite := up.policy(ctx, sess), up.mayWrite(ctx)
			keep, note := policy.List(ctx, infos)
			if note != "" {
				up.u.b.Logger.Warn("gate offering read-only tools only", "gate", up.gate.Name, "why", note)
			}
			res := &sdk.ListToolsResult{Tools: []*sdk.Tool{}}
			res.TTLMs, res.CacheScope = 0, "private"
			for i, t := range tools {
				if keep[t.Name] && (mayWrite || policy.readOnly(infos[i])) {
					res.Tools = append(res.Tools, t)
				}
			}
			return res, nil
		case *sdk.CallToolRequest:
			sess, err := up.bind(ctx, mcp.HeaderOf(r.Extra), r.Params.Meta)
			if err != nil {
				return mcp.ToolError(mcp.Describe(err, "")), nil
			}
			info, err := up.info(ctx, r.Params.Name)
			if err != nil {
				return mcp.ToolError(up.unreachable(err)), nil
			}
			policy := up.policy(ctx, sess)
			if !policy.readOnly(info) && !up.mayWrite(ctx) {
				p := auth.PrincipalFrom(ctx)
				return mcp.ToolError(auth.DenyReason(p, auth.CheckTool, auth.Facts{InScope: true}) +
					": through a gate it may call read-only tools only"), nil
			}
			if ok, reason := policy.Call(ctx, info); !ok {
				return mcp.ToolError(reason), nil
			}
			return up.call(ctx, r.Params)
		}
		return next(ctx, method, req)
	}
}

// bind is mcp.Bind, with a session required: a gate guards a session's tools,
// and without one there is no mode to judge them by.
func (up *upstream) bind(ctx context.Context, header http.Header, meta map[string]any) (*sessions.Session, error) {
	sess, err := mcp.Bind(ctx, up.u.b, header, meta)
	if err == nil && sess == nil {
		err = apierr.Invalid(mcp.SessionHeader, "a gate guards the tools of one session, and this connection is bound to none: "+
			"connect with an agent token, or name the session in the %s header", mcp.SessionHeader)
	}
	return sess, err
}

// mayWrite reports whether the caller's role may call tools that change
// state: the role that may ask the gate about a call (agents, admins).
func (up *upstream) mayWrite(ctx context.Context) bool {
	return auth.Decide(auth.PrincipalFrom(ctx), auth.CheckTool, auth.Facts{InScope: true}) == auth.Allow
}

func (up *upstream) policy(ctx context.Context, sess *sessions.Session) Policy {
	return Policy{Upstream: up.gate.Name, ReadOnly: readOnlySet(up.gate.ReadOnlyTools),
		Checker: localChecker{b: up.u.b, session: sess.ID}}
}

func (up *upstream) unreachable(err error) string {
	return fmt.Sprintf("the tool server of gate %q (%s) could not be reached: %v", up.gate.Name, up.gate.URL, err)
}

// DefaultUpstreamTimeout bounds a call to a gate's tool server when the
// operator names no limit (--upstream-timeout).
const DefaultUpstreamTimeout = 30 * time.Second

// timeout is the deadline of every call to the upstream.
func (up *upstream) timeout() time.Duration {
	if t := up.u.b.UpstreamTimeout; t > 0 {
		return t
	}
	return DefaultUpstreamTimeout
}

// session returns the client session to the upstream, connecting when
// there is none. It connects without holding up.mu, so an upstream that
// never answers holds no lock anyone else needs; a connect that does not
// finish by ctx's deadline is abandoned (and its session closed when it
// ends), and two callers connecting at once keep the first session made.
func (up *upstream) session(ctx context.Context) (*sdk.ClientSession, error) {
	up.mu.Lock()
	cs := up.cs
	up.mu.Unlock()
	if cs != nil {
		return cs, nil
	}
	// The caller's roots are not the upstream's business, so the client
	// declares no capabilities.
	c := sdk.NewClient(&sdk.Implementation{Name: "planserver-gate", Version: up.u.b.Version},
		&sdk.ClientOptions{Capabilities: &sdk.ClientCapabilities{}})
	type connected struct {
		cs  *sdk.ClientSession
		err error
	}
	done := make(chan connected, 1)
	go func() {
		// The session outlives this request, so it is not bound to its
		// context; the wait for it is.
		cs, err := c.Connect(context.WithoutCancel(ctx), &sdk.StreamableClientTransport{Endpoint: up.gate.URL, DisableStandaloneSSE: true}, nil)
		done <- connected{cs, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			return nil, r.err
		}
		up.mu.Lock()
		defer up.mu.Unlock()
		if up.closed {
			go r.cs.Close()
			return nil, fmt.Errorf("gate %q was re-pointed or removed", up.gate.Name)
		}
		if up.cs != nil {
			go r.cs.Close()
			return up.cs, nil
		}
		up.cs = r.cs
		return r.cs, nil
	case <-ctx.Done():
		go func() {
			if r := <-done; r.err == nil {
				r.cs.Close()
			}
		}()
		return nil, fmt.Errorf("connecting: %w", ctx.Err())
	}
}

// retry runs fn with the upstream session, connecting again once when the
// session failed (the upstream restarted, say).
func retry[T any](ctx context.Context, up *upstream, fn func(context.Context, *sdk.ClientSession) (T, error)) (T, error) {
	var zero T
	// Every call to the upstream has a deadline (--upstream-timeout): one
	// that never answers gets its caller an error, not a hang.
	ctx, cancel := context.WithTimeoutCause(ctx, up.timeout(),
		fmt.Errorf("the tool server did not answer within %s (--upstream-timeout)", up.timeout()))
	defer cancel()
	for attempt := 0; ; attempt++ {
		cs, err := up.session(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return zero, context.Cause(ctx)
			}
			return zero, err
		}
		out, err := fn(ctx, cs)
		if err != nil && ctx.Err() != nil {
			return out, context.Cause(ctx)
		}
		if err == nil || attempt > 0 {
			return out, err
		}
		up.mu.Lock()
		if up.cs == cs {
			up.cs = nil
			go cs.Close()
		}
		up.mu.Unlock()
	}
}

// list returns every tool of the upstream, remembering their annotations.
func (up *upstream) list(ctx context.Context) ([]*sdk.Tool, error) {
	tools, err := retry(ctx, up, func(ctx context.Context, cs *sdk.ClientSession) ([]*sdk.Tool, error) {
		var all []*sdk.Tool
		for t, err := range cs.Tools(ctx, nil) {
			if err != nil {
				return nil, err
			}
			all = append(all, t)
		}
		return all, nil
	})
	if err != nil {
		return nil, err
	}
	up.mu.Lock()
	for _, t := range tools {
		up.known[t.Name] = infoOf(t)
	}
	up.mu.Unlock()
	return tools, nil
}

// info returns what is known of the tool called name, listing the
// upstream's tools when it is not known yet. A tool the upstream does not
// list is state-changing.
func (up *upstream) info(ctx context.Context, name string) (ToolInfo, error) {
	up.mu.Lock()
	t, ok := up.known[name]
	up.mu.Unlock()
	if ok {
		return t, nil
	}
	if _, err := up.list(ctx); err != nil {
		return ToolInfo{}, err
	}
	up.mu.Lock()
	defer up.mu.Unlock()
	if t, ok := up.known[name]; ok {
		return t, nil
	}
	return ToolInfo{Name: name}, nil
}

// call forwards an allowed call and returns the upstream's answer as it
// is; an upstream that fails is the call's tool error.
func (up *upstream) call(ctx context.Context, p *sdk.CallToolParamsRaw) (sdk.Result, error) {
	res, err := retry(ctx, up, func(ctx context.Context, cs *sdk.ClientSession) (*sdk.CallToolResult, error) {
		return cs.CallTool(ctx, &sdk.CallToolParams{Name: p.Name, Arguments: p.Arguments})
	})
	if err != nil {
		return mcp.ToolError(up.unreachable(err)), nil
	}
	return res, nil
}

// close ends the session to the upstream (the gate was re-pointed). The
// session is taken under up.mu and closed after, so a close that waits on
// the upstream holds no lock.
func (up *upstream) close() {
	up.mu.Lock()
	cs := up.cs
	up.cs, up.closed = nil, true
	up.mu.Unlock()
	if cs != nil {
		cs.Close()
	}
}

func infoOf(t *sdk.Tool) ToolInfo {
	info := ToolInfo{Name: t.Name}
	if t.Annotations != nil {
		// The SDK's annotations cannot tell a missing readOnlyHint from
		// false; both mean state-changing.
		ro := t.Annotations.ReadOnlyHint
		info.ReadOnlyHint = &ro
	}
	return info
}

// localChecker is the Checker of the server's own gate: the session's
// effective mode from the store, a denial recorded by Store.CheckTool.
type localChecker struct {
	b       mcp.Backend
	session string
}

func (c localChecker) Filter(ctx context.Context, tools []sessions.Tool) (map[string]bool, error) {
	sess, err := c.b.Sessions.Get(ctx, c.session)
	if err != nil {
		return nil, err
	}
	allowed := map[string]bool{}
	for _, name := range c.b.Gate.Filter(sess, tools).Allowed {
		allowed[name] = true
	}
	return allowed, nil
}

func (c localChecker) Check(ctx context.Context, t sessions.Tool) (bool, string, error) {
	res, err := c.b.Sessions.CheckTool(ctx, c.session, c.b.Gate, t)
	if err != nil {
		return false, "", err
	}
	return res.Allowed, res.Reason, nil
}
