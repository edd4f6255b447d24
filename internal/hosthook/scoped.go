package hosthook

import (
	"encoding/json"
	"fmt"
	"path"
	"strings"
)

// decideScoped is Decide for a session in scoped build: build mode limited
// to the scope a human approved. Reads, sub-agents and notes get no
// decision (the host's own permissions apply, as in full build); a write
// goes through only to a path inside the scope; a shell command runs in
// the sandbox with write access to the scope's paths and connections to
// its network only; another server's MCP tool only where plan mode would
// allow it (declared read-only, or behind planserver's gate); anything
// else is denied, naming the scope and how to widen it.
func decideScoped(c Call, s Mode, p Policy, f Facts) Decision {
	switch c.Kind {
	case Read, Agent, Planning, ExitPlan:
		return Decision{Outcome: None}
	case Write:
		rel, inside := ProjectPath(c.Project, c.Path)
		if inside && rel != "" && s.Scope.Allows(rel) {
			return Decision{Outcome: None}
		}
		what := c.Path
		if inside && rel != "" {
			what = rel
		}
		why := fmt.Sprintf("%s writes %s, which is outside the scope", c.Tool, quoteOr(what, "a path it does not name"))
		if !inside {
			why = fmt.Sprintf("%s writes %s, which is outside the project, so outside the scope", c.Tool, quoteOr(what, "a path it does not name"))
		}
		return outOfScope(c, s, why, what)
	case Shell:
		return decideScopedShell(c, s, p)
	case MCP:
		d := decideMCP(c, s, f)
		if d.Outcome == Allow {
			return d
		}
		server := c.MCPServer
		if server == "" {
			server = c.MCPURL
		}
		return outOfScope(c, s, fmt.Sprintf("MCP tool %q of %s may write anywhere, and only planserver's sandbox can hold a tool to the scope: "+
			"a tool server behind planserver gate runs in it; otherwise only tools an operator declared read-only run", c.MCPTool,
			quoteOr(server, "an MCP server the hook cannot name")), "")
	}
	return outOfScope(c, s, fmt.Sprintf("%q is a tool planserver does not know, so it cannot tell whether the tool stays inside the scope", c.Tool), "")
}

// decideScopedShell runs a shell command in the sandbox limited to the
// scope, where the host takes a rewritten command and the kernel has the
// sandbox; elsewhere only a plain read on the allowlist runs, as in plan
// mode, since nothing would hold the command to the scope.
func decideScopedShell(c Call, s Mode, p Policy) Decision {
	if strings.TrimSpace(c.Command) == "" {
		return Decision{Outcome: Deny, Reason: fmt.Sprintf("[planserver: scoped build] %s carried no command.", c.Tool)}
	}
	w := Wrap{Scope: &ScopeWrap{Project: c.Project, Files: s.Scope.Files, Connect: s.Scope.Connect}}
	if !c.CanRewrite {
		if r, ok := terminalControl(c.Command); ok {
			return outOfScope(c, s, fmt.Sprintf("The command carries the control character %U, which a terminal acts on as the "+
				"command is typed into it, and this host's hook cannot run the command in the sandbox", r), "")
		}
	}
	if !c.CanRewrite && p.Sandbox.Rewritten(c.Command, w) {
		// The host's earlier hook put it in the scoped sandbox already.
		return Decision{Outcome: None}
	}
	if c.CanRewrite && p.Sandbox.Available && p.Sandbox.Wrap != nil && c.CommandField != "" {
		w.Explain = fmt.Sprintf("[planserver] %s %s", scopeSentence(s), widen(c.Host, s))
		wrapped, err := p.Sandbox.Wrap(c.Command, w)
		if err != nil {
			return outOfScope(c, s, fmt.Sprintf("the command cannot run in planserver's sandbox (%v)", err), "")
		}
		d := rewrite(c, wrapped)
		d.Reason = "scoped build: the command runs in planserver's sandbox, which lets it write only the approved scope's files " +
			"and connect only to its network"
		return d
	}
	noSandbox := "this host's hook cannot change the command to run it in planserver's sandbox"
	if c.CanRewrite {
		noSandbox = "planserver's sandbox is not available here"
		if p.Sandbox.Why != "" {
			noSandbox += " (" + p.Sandbox.Why + ")"
		}
	}
	if p.Strict != nil {
		if ok, _ := p.Strict(c.Command); ok {
			return Decision{Outcome: None}
		}
	}
	return outOfScope(c, s, capitalize(noSandbox)+", so nothing would hold this command to the scope: only plain reads on the allowlist run", "")
}

// outOfScope is a denial against the scope: why, the scope, and how to
// widen it.
func outOfScope(c Call, s Mode, why, rel string) Decision {
	return Decision{Outcome: Deny, OutOfScope: true, Path: rel,
		Reason: fmt.Sprintf("[planserver: scoped build] %s. %s %s", why, scopeSentence(s), widen(c.Host, s))}
}

// scopeSentence says which scope holds the session.
func scopeSentence(s Mode) string {
	who := fmt.Sprintf("session %q", s.Session)
	if s.Scope.Session != "" && s.Scope.Session != s.Session {
		who = fmt.Sprintf("session %q (through session %q)", s.Session, s.Scope.Session)
	}
	return fmt.Sprintf("A human approved revision %d of the plan with a scope, and %s may change only what it names: %s.",
		s.Scope.Revision, who, s.Scope.Summary)
}

// widen says how to get a wider scope on host h.
func widen(h Host, s Mode) string {
	target := s.Scope.Session
	if target == "" {
		target = s.Session
	}
	tools := "the write_session_plan and exit_plan_mode tools"
	if h == ClaudeCode {
		tools = "planserver's write_session_plan and exit_plan_mode tools"
	}
	return fmt.Sprintf("To change more, revise the plan of session %q: add the files (and commands, and host:port the network needs) "+
		"to its ```scope block, and ask for review again (%s). Once a human approves that revision, this goes through. "+
		"Do not look for a way around the scope.", target, tools)
}

// ProjectPath is file relative to project, slash separated, with ".."
// resolved (lexically: a hook never touches the filesystem), and whether
// it lies inside the project. A relative file is relative to the project;
// an absolute one must lie beneath it. Without a project only relative
// files can be judged.
func ProjectPath(project, file string) (rel string, inside bool) {
	if file == "" || strings.ContainsRune(file, 0) {
		return "", false
	}
	if !path.IsAbs(file) {
		rel = path.Clean(file)
	} else {
		if project == "" || !path.IsAbs(project) {
			return "", false
		}
		root := path.Clean(project)
		clean := path.Clean(file)
		switch {
		case clean == root:
			return "", true
		case strings.HasPrefix(clean, strings.TrimSuffix(root, "/")+"/"):
			rel = strings.TrimPrefix(clean, strings.TrimSuffix(root, "/")+"/")
		default:
			return "", false
		}
	}
	if rel == ".." || strings.HasPrefix(rel, "../") {
		return "", false
	}
	if rel == "." {
		rel = ""
	}
	return rel, true
}

// rewrite is c with its command replaced by wrapped, every other member of
// its input as it was.
func rewrite(c Call, wrapped string) Decision {
	raw, _ := json.Marshal(wrapped)
	in := make(map[string]json.RawMessage, len(c.Input))
	for k, v := range c.Input {
		in[k] = v
	}
	in[c.CommandField] = raw
	return Decision{Outcome: Rewrite, Input: in, Command: wrapped}
}

func quoteOr(s, none string) string {
	if s == "" {
		return none
	}
	return fmt.Sprintf("%q", s)
}
