package proxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"
)

// StdioGate relays MCP over stdio between a host and an upstream tool
// server it started, as newline-delimited JSON-RPC, untouched except for
// two things: every tools/list answer loses the tools the session may not
// be offered now, and every tools/call of a tool that is not read-only is
// decided by planserver first; a refused call is answered by the gate and
// never reaches the upstream. Everything else (initialize, resources,
// prompts, the upstream's own requests to the host) passes as it is, so
// the gate speaks whatever protocol revision the two agree on.
//
// A tool's readOnlyHint is the upstream's own word. Where the gate starts
// the upstream itself (RunHeld), the kernel holds it to the session's
// mode instead: Held says how (read-only in plan mode, the scope's paths
// in scoped build, unconfined in full build) and Start runs it so; a
// different answer, asked before every tools/call and by the watch,
// restarts the upstream under the new hold, answers the calls still in
// flight with an error that says why, and replays the host's initialize
// to the new run.
type StdioGate struct {
	Policy Policy
	Log    *slog.Logger
	// Watch, when set, is asked every WatchEvery for something that
	// changes when the tool list does (the session's effective mode, or
	// that planserver is unreachable); a change after the host has listed
	// the tools sends it notifications/tools/list_changed, so it lists
	// again without waiting. Calls never depend on it: each is decided when
	// it is made.
	Watch      func(ctx context.Context) string
	WatchEvery time.Duration
	// Held says how the upstream must be held now (RunHeld); Start runs
	// the upstream under a hold.
	Held  func(ctx context.Context) Hold
	Start func(ctx context.Context, h Hold) (*UpstreamRun, error)

	mu       sync.Mutex
	known    map[string]ToolInfo // the upstream's tools, from its last list
	pending  map[string]bool     // ids of the host's tools/list requests
	listed   bool                // the host has seen a list
	own      map[string]chan json.RawMessage
	ownSeq   int
	inflight map[string]forwarded // the host's requests forwarded, by id
	initReq  []byte               // the host's initialize request, replayed to a restarted upstream
	initNote []byte               // and its notifications/initialized
	out      sync.Mutex           // serializes writes to the host

	// upMu serializes writes to the upstream and restarts; cur and hold
	// change only under it (and mu, for readers).
	upMu  sync.Mutex
	cur   *run
	hold  Hold
	ended chan error // the current run's output ended on its own
	hostW io.Writer  // the host's side, for what a restart tells it
	// closing says the host is done: no restart starts another run.
	closing bool
}

// Hold is how the kernel holds the upstream for the session's mode. The
// gate compares Keys only; what a hold means is the caller's (Start).
type Hold struct {
	// Key changes exactly when the upstream must run otherwise.
	Key string
	// Describe says it in words, for logs and for the error a call in
	// flight gets when a change restarts the upstream.
	Describe string
	// Mode is "plan", "scoped" or "full"; Files and Connect are a scoped
	// build's (the scope's globs and host:port pairs).
	Mode           string
	Files, Connect []string
}

// UpstreamRun is one run of the tool server: its input and output, and
// how to end it.
type UpstreamRun struct {
	In  io.WriteCloser
	Out io.Reader
	// Stop ends the run at once (nil: closing In is all there is).
	Stop func()
}

// forwarded is one of the host's requests on its way to the upstream.
type forwarded struct {
	to   *run            // the run it went to
	call bool            // a tools/call: never sent twice
	raw  json.RawMessage // the message, to send again to a restarted run
}

// run is one upstream run as the gate tracks it.
type run struct {
	up       *UpstreamRun
	done     chan struct{} // closed when its output has ended
	replaced bool          // a restart took its place: what it says now goes nowhere
}

// message is the part of a JSON-RPC message the gate reads.
type message struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
}

// maxMessage bounds one message: the upstream's tool list or a file's
// contents can be large, but not unbounded.
const maxMessage = 64 << 20

// Run relays until the host closes its input or the upstream its output.
// host and hostOut are the gate's own stdin and stdout; up is the
// upstream's stdin and upOut its stdout. It closes up when the host is done,
// so the upstream sees the end of its input. The upstream is never
// restarted.
func (g *StdioGate) Run(ctx context.Context, host io.Reader, hostOut io.Writer, up io.WriteCloser, upOut io.Reader) error {
	return g.relay(ctx, host, hostOut, &UpstreamRun{In: up, Out: upOut}, Hold{})
}

// RunHeld is Run with an upstream the gate starts itself, held by the
// kernel as Held says and restarted when that changes.
func (g *StdioGate) RunHeld(ctx context.Context, host io.Reader, hostOut io.Writer) error {
	if g.Held == nil || g.Start == nil {
		return errors.New("planserver gate: RunHeld needs Held and Start")
	}
	h := g.Held(ctx)
	up, err := g.Start(ctx, h)
	if err != nil {
		return err
	}
	g.Log.Info("upstream started", "hold", h.Describe)
	return g.relay(ctx, host, hostOut, up, h)
}

func (g *StdioGate) relay(ctx context.Context, host io.Reader, hostOut io.Writer, up *UpstreamRun, h Hold) error {
	g.known, g.pending, g.own = map[string]ToolInfo{}, map[string]bool{}, map[string]chan json.RawMessage{}
	g.inflight = map[string]forwarded{}
	g.ended, g.hostW = make(chan error, 1), hostOut
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	g.upMu.Lock()
	g.cur, g.hold = &run{up: up, done: make(chan struct{})}, h
	first := g.cur
	g.upMu.Unlock()
	go g.fromUpstream(ctx, first, hostOut)
	hostDone := make(chan error, 1)
	go func() {
		err := g.fromHost(ctx, host, hostOut)
		g.upMu.Lock()
		g.closing = true
		g.cur.up.In.Close()
		g.upMu.Unlock()
		hostDone <- err
	}()
	if g.WatchEvery > 0 && (g.Watch != nil || g.Held != nil) {
		go g.watch(ctx, hostOut)
	}
	// The upstream's output ending is the end: its last answers have been
	// relayed by then. The host closing its input closes the upstream's,
	// which ends it; a read of the host's input still blocked when the
	// upstream ends on its own is left to the process's exit.
	err := <-g.ended
	select {
	case herr := <-hostDone:
		return errors.Join(err, herr)
	default:
		return err
	}
}

// writeUp sends one line to the current upstream run.
func (g *StdioGate) writeUp(line []byte) error {
	g.upMu.Lock()
	defer g.upMu.Unlock()
	_, err := g.cur.up.In.Write(line)
	return err
}

func (g *StdioGate) fromHost(ctx context.Context, in io.Reader, hostOut io.Writer) error {
	r := bufio.NewReaderSize(in, 64<<10)
	for {
		line, err := readLine(r)
		if trimmed := bytes.TrimSpace(line); len(trimmed) > 0 {
			forward, replies := g.hostLine(ctx, trimmed, line)
			for _, reply := range replies {
				if len(reply) == 0 {
					continue // dropped without an answer
				}
				if werr := g.toHost(hostOut, reply); werr != nil {
					return werr
				}
			}
			if forward != nil {
				if werr := g.forward(forward); werr != nil {
					return werr
				}
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// forward sends the host's line to the upstream, remembering the requests
// in it (their ids, so a restart can answer them; the initialize a
// restart replays).
func (g *StdioGate) forward(line []byte) error {
	g.upMu.Lock()
	defer g.upMu.Unlock()
	var msgs []json.RawMessage
	if t := bytes.TrimSpace(line); len(t) > 0 && t[0] == '[' {
		_ = json.Unmarshal(t, &msgs)
	} else {
		msgs = []json.RawMessage{bytes.TrimSpace(line)}
	}
	g.mu.Lock()
	for _, raw := range msgs {
		var m message
		if json.Unmarshal(raw, &m) != nil || m.Method == "" {
			continue
		}
		switch {
		case m.Method == "initialize" && len(msgs) == 1:
			g.initReq = append([]byte(nil), raw...)
		case m.Method == "notifications/initialized" && len(msgs) == 1:
			g.initNote = append([]byte(nil), raw...)
		}
		if len(m.ID) > 0 && string(m.ID) != "null" {
			g.inflight[string(m.ID)] = forwarded{to: g.cur, call: m.Method == "tools/call", raw: append(json.RawMessage(nil), raw...)}
		}
	}
	g.mu.Unlock()
	_, err := g.cur.up.In.Write(line)
	return err
}

// hostLine judges one line from the host: what to forward to the
// upstream (nil for nothing) and the gate's own answers to the host. A
// JSON-RPC batch (protocol revisions before 2025-06-18) is judged message
// by message, so no call slips through inside one: refused calls are
// answered on their own, the rest goes on as a smaller batch.
func (g *StdioGate) hostLine(ctx context.Context, trimmed, line []byte) (forward []byte, replies [][]byte) {
	// Every message is read exactly or not at all (wire.go): what the
	// gate cannot read the way the upstream will is answered here and
	// never forwarded.
	if err := checkUnambiguous(trimmed); err != nil {
		g.Log.Info("refused a message", "why", err)
		return nil, [][]byte{refusal(err)}
	}
	if trimmed[0] != '[' {
		if reply := g.hostMessage(ctx, trimmed); reply != nil {
			return nil, [][]byte{reply}
		}
		return line, nil
	}
	var batch []json.RawMessage
	if json.Unmarshal(trimmed, &batch) != nil || len(batch) == 0 {
		err := errors.New("a batch must be a non-empty JSON array of messages")
		return nil, [][]byte{refusal(err)}
	}
	var kept []json.RawMessage
	for _, m := range batch {
		if reply := g.hostMessage(ctx, m); reply != nil {
			replies = append(replies, reply)
		} else {
			kept = append(kept, m)
		}
	}
	if len(kept) == 0 {
		return nil, replies
	}
	out, _ := json.Marshal(kept)
	return append(out, '\n'), replies
}

// hostMessage looks at one message from the host: a refused tools/call is
// answered here (the answer is returned); anything else goes on (nil).
func (g *StdioGate) hostMessage(ctx context.Context, line []byte) []byte {
	m, err := parseMessage(line)
	if err != nil {
		g.Log.Info("refused a message", "why", err)
		return refusal(err)
	}
	if m.Method == "tools/call" && m.ID == nil {
		// A call sent as a notification could not be answered if refused;
		// it is not a call MCP knows, and goes nowhere.
		g.Log.Info("dropped a tools/call without an id", "tool", m.Tool)
		return []byte{}
	}
	if m.ID == nil {
		return nil // a notification, or not ours to judge
	}
	switch m.Method {
	case "tools/list":
		g.mu.Lock()
		g.pending[string(m.ID)] = true
		g.mu.Unlock()
	case "tools/call":
		// The kernel's hold first: a call never runs under a hold the
		// session has left.
		g.recheck(ctx)
		p := struct{ Name string }{m.Tool}
		t, ok := g.tool(p.Name)
		if !ok {
			// The host calls a tool it has not listed through the gate:
			// ask the upstream for its tools first.
			if err := g.listUpstream(ctx); err != nil {
				g.Log.Warn("could not list the upstream's tools", "error", err)
			}
			if t, ok = g.tool(p.Name); !ok {
				// A tool the upstream does not list has no annotations
				// the gate knows of: state-changing.
				t = ToolInfo{Name: p.Name}
			}
		}
		if allowed, reason := g.Policy.Call(ctx, t); !allowed {
			g.Log.Info("refused a tool call", "tool", p.Name, "upstream", g.Policy.Upstream)
			reply, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": map[string]any{
				"isError": true, "content": []map[string]any{{"type": "text", "text": reason}}}})
			return append(reply, '\n')
		}
	}
	return nil
}

func (g *StdioGate) tool(name string) (ToolInfo, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	t, ok := g.known[name]
	return t, ok
}

// listTimeout bounds the gate's own tools/list to the upstream.
const listTimeout = 10 * time.Second

// listUpstream asks the upstream for all its tools with requests of the
// gate's own (their answers are not relayed to the host), to learn their
// annotations. It runs on the host's reader.
func (g *StdioGate) listUpstream(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, listTimeout)
	defer cancel()
	cursor := ""
	for page := 0; page < 100; page++ {
		g.mu.Lock()
		g.ownSeq++
		id, _ := json.Marshal(fmt.Sprintf("planserver-gate-%d", g.ownSeq))
		ch := make(chan json.RawMessage, 1)
		g.own[string(id)] = ch
		g.mu.Unlock()
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		req, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(id), "method": "tools/list", "params": params})
		if err := g.writeUp(append(req, '\n')); err != nil {
			return err
		}
		var result json.RawMessage
		select {
		case result = <-ch:
		case <-ctx.Done():
			g.mu.Lock()
			delete(g.own, string(id))
			g.mu.Unlock()
			return fmt.Errorf("the upstream did not answer tools/list: %w", ctx.Err())
		}
		var res struct {
			Tools      []json.RawMessage `json:"tools"`
			NextCursor string            `json:"nextCursor"`
		}
		if len(result) == 0 {
			return errors.New("the upstream answered tools/list with an error")
		}
		if err := json.Unmarshal(result, &res); err != nil {
			return err
		}
		g.mu.Lock()
		for _, raw := range res.Tools {
			t := toolInfo(raw)
			g.known[t.Name] = t
		}
		g.mu.Unlock()
		if cursor = res.NextCursor; cursor == "" {
			return nil
		}
	}
	return nil
}

// fromUpstream relays what run r says until its output ends. When r is
// still the current run then, the upstream ended on its own, and so does
// the gate; a run a restart replaced ends quietly, and nothing it says
// after the restart reaches the host.
func (g *StdioGate) fromUpstream(ctx context.Context, r *run, hostOut io.Writer) {
	err := g.relayRun(ctx, r, hostOut)
	close(r.done)
	g.mu.Lock()
	replaced := r.replaced
	g.mu.Unlock()
	if !replaced {
		g.end(err)
	}
}

func (g *StdioGate) relayRun(ctx context.Context, r *run, hostOut io.Writer) error {
	br := bufio.NewReaderSize(r.up.Out, 64<<10)
	for {
		line, err := readLine(br)
		g.mu.Lock()
		replaced := r.replaced
		g.mu.Unlock()
		if len(bytes.TrimSpace(line)) > 0 && !replaced {
			if msg := g.upstreamMessage(ctx, line); msg != nil {
				if werr := g.toHost(hostOut, msg); werr != nil {
					return werr
				}
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// upstreamMessage filters the answer to a host's tools/list, alone or in a
// batch; anything else passes as it is. nil is nothing for the host.
func (g *StdioGate) upstreamMessage(ctx context.Context, line []byte) []byte {
	trimmed := bytes.TrimSpace(line)
	if len(trimmed) == 0 || trimmed[0] != '[' {
		return g.upstreamOne(ctx, line)
	}
	var batch []json.RawMessage
	if json.Unmarshal(trimmed, &batch) != nil {
		return line
	}
	var kept []json.RawMessage
	for _, m := range batch {
		if out := g.upstreamOne(ctx, m); out != nil {
			kept = append(kept, bytes.TrimSpace(out))
		}
	}
	if len(kept) == 0 {
		return nil
	}
	out, _ := json.Marshal(kept)
	return append(out, '\n')
}

func (g *StdioGate) upstreamOne(ctx context.Context, line []byte) []byte {
	var m message
	if json.Unmarshal(line, &m) != nil || m.Method != "" || len(m.ID) == 0 {
		return line
	}
	g.mu.Lock()
	delete(g.inflight, string(m.ID))
	isList := g.pending[string(m.ID)]
	delete(g.pending, string(m.ID))
	own, isOwn := g.own[string(m.ID)]
	delete(g.own, string(m.ID))
	g.mu.Unlock()
	if isOwn {
		own <- m.Result // nil for an error answer
		return nil      // the gate's own question: not the host's business
	}
	if !isList || len(m.Result) == 0 {
		return line
	}
	filtered, err := g.filterList(ctx, m.Result)
	if err != nil {
		g.Log.Warn("an upstream tools/list answer could not be read; passing none of its tools", "error", err)
	}
	var whole map[string]json.RawMessage
	if json.Unmarshal(line, &whole) != nil {
		return line
	}
	whole["result"] = filtered
	out, _ := json.Marshal(whole)
	return append(out, '\n')
}

// filterList returns a tools/list result without the tools the policy
// does not offer now, keeping every other member (nextCursor, _meta, …).
func (g *StdioGate) filterList(ctx context.Context, result json.RawMessage) (json.RawMessage, error) {
	var res map[string]json.RawMessage
	var tools []json.RawMessage
	if err := json.Unmarshal(result, &res); err != nil {
		return json.RawMessage(`{"tools":[]}`), err
	}
	if err := json.Unmarshal(res["tools"], &tools); err != nil {
		res["tools"] = json.RawMessage(`[]`)
		out, _ := json.Marshal(res)
		return out, err
	}
	infos := make([]ToolInfo, 0, len(tools))
	for _, raw := range tools {
		infos = append(infos, toolInfo(raw))
	}
	g.mu.Lock()
	for _, t := range infos {
		g.known[t.Name] = t
	}
	g.listed = true
	g.mu.Unlock()
	keep, note := g.Policy.List(ctx, infos)
	if note != "" {
		g.Log.Warn("offering read-only tools only", "upstream", g.Policy.Upstream, "why", note)
	}
	kept := []json.RawMessage{}
	for i, raw := range tools {
		if keep[infos[i].Name] {
			kept = append(kept, raw)
		}
	}
	res["tools"], _ = json.Marshal(kept)
	out, err := json.Marshal(res)
	return out, err
}

// toolInfo reads the name and readOnlyHint of a tool as listed.
func toolInfo(raw json.RawMessage) ToolInfo {
	var t struct {
		Name        string `json:"name"`
		Annotations *struct {
			ReadOnlyHint *bool `json:"readOnlyHint"`
		} `json:"annotations"`
	}
	_ = json.Unmarshal(raw, &t)
	info := ToolInfo{Name: t.Name}
	if t.Annotations != nil {
		info.ReadOnlyHint = t.Annotations.ReadOnlyHint
	}
	return info
}

// watch tells the host to list again when what the list depends on
// changes, and restarts the upstream when its hold does.
func (g *StdioGate) watch(ctx context.Context, hostOut io.Writer) {
	t := time.NewTicker(g.WatchEvery)
	defer t.Stop()
	var last string
	if g.Watch != nil {
		last = g.Watch(ctx)
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		g.recheck(ctx)
		if g.Watch == nil {
			continue
		}
		now := g.Watch(ctx)
		g.mu.Lock()
		listed := g.listed
		g.mu.Unlock()
		if now != last && listed {
			g.Log.Info("the tool list changed; telling the host", "now", now, "was", last)
			_ = g.toHost(hostOut, []byte(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`+"\n"))
		}
		last = now
	}
}

func (g *StdioGate) toHost(w io.Writer, line []byte) error {
	g.out.Lock()
	defer g.out.Unlock()
	if len(line) == 0 || line[len(line)-1] != '\n' {
		line = append(line, '\n')
	}
	_, err := w.Write(line)
	return err
}

// readLine reads one newline-terminated message, at most maxMessage bytes.
func readLine(r *bufio.Reader) ([]byte, error) {
	var buf []byte
	for {
		chunk, err := r.ReadSlice('\n')
		buf = append(buf, chunk...)
		if len(buf) > maxMessage {
			return nil, errors.New("a message is larger than 64 MiB")
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return buf, err
		}
	}
}

// replayTimeout bounds a restarted upstream's answer to the replayed
// initialize.
const replayTimeout = 10 * time.Second

// recheck asks how the upstream must be held now and, when that changed,
// restarts it under the new hold.
func (g *StdioGate) recheck(ctx context.Context) {
	if g.Held == nil || g.Start == nil {
		return
	}
	h := g.Held(ctx)
	g.upMu.Lock()
	defer g.upMu.Unlock()
	if h.Key == g.hold.Key || g.closing {
		return
	}
	g.restart(ctx, h)
}

// end says the gate is done, with err; only the first end counts.
func (g *StdioGate) end(err error) {
	select {
	case g.ended <- err:
	default:
	}
}

// restart replaces the current run with one under hold h (upMu held): the
// old run is ended and what it still says dropped, each tool call still in
// flight to it is answered with an error saying why (a call is never run
// twice: it may have done part of its work under the old hold), the
// host's initialize and initialized are replayed to the new run before
// anything else reaches it, and the host's other requests still in flight
// (a tools/list, a ping) go to the new run again. The host is told to list
// its tools again.
func (g *StdioGate) restart(ctx context.Context, h Hold) {
	old, was := g.cur, g.hold
	g.mu.Lock()
	old.replaced = true
	var lost []string
	var again []json.RawMessage
	for id, f := range g.inflight {
		if f.to != old {
			continue
		}
		if f.call {
			lost = append(lost, id)
			delete(g.inflight, id)
		} else {
			again = append(again, f.raw)
		}
	}
	initReq, initNote, listed := g.initReq, g.initNote, g.listed
	g.mu.Unlock()
	_ = old.up.In.Close()
	if old.up.Stop != nil {
		old.up.Stop()
	}
	why := fmt.Sprintf("planserver gate restarted the tool server because the session's mode changed (%s → %s); "+
		"this call did not finish: call it again", was.Describe, h.Describe)
	g.Log.Info("restarting the upstream", "was", was.Describe, "now", h.Describe, "calls_in_flight", len(lost))
	for _, id := range lost {
		reply, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(id),
			"error": map[string]any{"code": -32000, "message": why}})
		_ = g.toHost(g.hostW, reply)
	}
	up, err := g.Start(ctx, h)
	if err != nil {
		g.Log.Error("the upstream could not be restarted; the gate ends", "hold", h.Describe, "error", err)
		g.end(fmt.Errorf("restart the tool server (%s): %w", h.Describe, err))
		return
	}
	next := &run{up: up, done: make(chan struct{})}
	g.mu.Lock()
	g.cur, g.hold = next, h
	g.mu.Unlock()
	go g.fromUpstream(ctx, next, g.hostW)
	if initReq != nil {
		if err := g.replayInit(ctx, next, initReq, initNote); err != nil {
			g.Log.Warn("the restarted upstream did not take the host's initialize", "error", err)
		}
	}
	for _, raw := range again {
		var m message
		_ = json.Unmarshal(raw, &m)
		g.mu.Lock()
		if f, ok := g.inflight[string(m.ID)]; ok {
			f.to = next
			g.inflight[string(m.ID)] = f
		}
		g.mu.Unlock()
		_, _ = next.up.In.Write(append(append([]byte(nil), raw...), '\n'))
	}
	if listed {
		_ = g.toHost(g.hostW, []byte(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`+"\n"))
	}
}

// replayInit sends the host's initialize to run r under an id of the
// gate's own, waits for the answer (which the host does not see), then
// sends the host's initialized notification.
func (g *StdioGate) replayInit(ctx context.Context, r *run, initReq, initNote []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(initReq, &m); err != nil {
		return err
	}
	g.mu.Lock()
	g.ownSeq++
	id, _ := json.Marshal(fmt.Sprintf("planserver-gate-init-%d", g.ownSeq))
	ch := make(chan json.RawMessage, 1)
	g.own[string(id)] = ch
	g.mu.Unlock()
	m["id"] = id
	req, _ := json.Marshal(m)
	if _, err := r.up.In.Write(append(req, '\n')); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, replayTimeout)
	defer cancel()
	select {
	case <-ch:
	case <-ctx.Done():
		g.mu.Lock()
		delete(g.own, string(id))
		g.mu.Unlock()
		return fmt.Errorf("no answer to initialize: %w", ctx.Err())
	}
	if initNote != nil {
		if _, err := r.up.In.Write(append(bytes.TrimSpace(initNote), '\n')); err != nil {
			return err
		}
	}
	return nil
}
