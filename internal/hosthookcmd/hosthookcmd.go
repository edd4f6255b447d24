// Package hosthookcmd is the command form of host hooks: the process a host
// starts before every tool call (planserver hook HOST, and the lean
// planserver-hook HOST that does the same without the server's start-up
// cost). It reads the host's input, asks planserver (POST
// /v1/hooks/{host}) and prints the host's answer; it judges by itself only
// when planserver cannot be asked (hosthookservice.Offline).
//
// It also holds how this machine judges shell commands (ShellPolicy,
// SandboxHere), which serve's hook service uses too.
//
// It runs inside the planserver binary; the lean planserver-hook, which
// links only internal/hosthookwire (TestHookBinaryStaysLean in
// cmd/planserver-hook), hands over to it what it does not do itself.
package hosthookcmd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"

	"github.com/planserver/planserver/internal/hosthook"
	"github.com/planserver/planserver/internal/hosthookproto"
	"github.com/planserver/planserver/internal/hosthookservice"
	"github.com/planserver/planserver/internal/hosthookwire"
	"github.com/planserver/planserver/internal/sandbox"
	"github.com/planserver/planserver/internal/shellclass"
)

// Usage is the help of the command form (planserver hook, planserver-hook).
const Usage = `Usage:
  planserver hook HOST [--server URL] [--token-file FILE] [--session ID | --parent ID] [--mcp NAME] [--timeout D]
  planserver hook install HOST (--session ID | --parent ID) [--create] [--scope user|project] [--dry-run] ...
  planserver hook doctor|uninstall HOST [--scope user|project]

HOST is claude-code, codex, gemini-cli, cursor or opencode. The first form is what
the host runs before every tool call: it reads the host's hook input (JSON)
on stdin, asks planserver (POST /v1/hooks/HOST) and prints the host's hook
output. In build mode it gives no decision; in plan mode it allows reads and
read-only commands, runs other commands in the read-only sandbox where the
host can rewrite them, and denies writes with a reason for the model. After a
tool ran, the host's after-tool hook runs the same command with its report:
planserver matches it to its decision (a run it never judged is an event,
tool_call.unjudged), and the answer never blocks anything.

It always prints valid JSON and exits 0, since a host runs the tool when its
hook fails: when planserver cannot be reached (or answers in time), reads
are allowed and everything else is denied, saying why. The call to
planserver is bounded by --timeout; give the hook a host timeout of at least
--timeout plus a second (docs/hosts.md).

Settings (flags win over the environment):
  --server    PLANSERVER_URL      planserver's URL (default http://127.0.0.1:8080)
  --session   PLANSERVER_SESSION  the session whose mode applies
  --parent    PLANSERVER_PARENT   bind each host conversation to a child of this session
  --mcp NAME                      planserver's MCP server is set up in the host as NAME ("none": not
                                  at all), so that denials name the tools the model has
  --shell-read-only FILE          the shell table's extension, as serve's (for reads while planserver is down)
  --offline-reason TEXT           planserver was asked already and could not answer: judge the call
                                  locally, saying TEXT (what planserver-hook passes when it hands over)
  --token-file, PLANSERVER_TOKEN  the bearer token, from a file or the environment.
              Never on the command line: hosts print the hook command in their
              error messages, so --token is refused.

planserver-hook HOST ... is the same command as a lean binary of its own,
which starts in a fraction of planserver's time (a host starts the hook
before every tool call); make build puts it beside planserver, and it hands
over to planserver hook what it does not do itself (docs/hosts.md).

install writes all of this into the host's settings, with the MCP server and
a self-test; doctor checks an installation; uninstall takes out what install
added. Their own help: planserver hook install --help.
`

// Run answers one hook call of host hostName on stdout, whatever happens:
// it always prints one JSON object the host reads, since a host runs the
// tool when its hook fails.
func Run(ctx context.Context, hostName string, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) {
	host, hostErr := hosthook.ParseHost(hostName)
	var (
		call    = hosthook.Call{Host: host}
		written bool
	)
	write := func(raw []byte) {
		if written {
			return
		}
		written = true
		_, _ = stdout.Write(append(raw, '\n'))
	}
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(stderr, "planserver hook: internal error: %v\n", r)
			d := hosthook.Refusal(fmt.Sprintf("planserver hook failed (internal error: %v).", r))
			if hostErr != nil {
				write(hosthookwire.AnyHostDeny(d.Reason))
				return
			}
			write(hosthook.Render(host, call, d))
		}
	}()
	if hostErr != nil {
		fmt.Fprintf(stderr, "planserver hook: %v\n", hostErr)
		write(hosthookwire.AnyHostDeny(hosthook.Refusal(hostErr.Error() + ".").Reason))
		return
	}
	raw, err := io.ReadAll(io.LimitReader(stdin, hosthookproto.MaxInput+1))
	if err != nil {
		write(hosthook.Render(host, call, hosthook.Refusal(fmt.Sprintf("the hook input could not be read (%v).", err))))
		return
	}
	call, err = hosthook.Parse(host, raw)
	if err != nil {
		d := hosthook.Refusal(err.Error())
		if call.Phase == hosthook.After {
			// A report never blocks: the tool ran already.
			fmt.Fprintf(stderr, "planserver hook: the report of a run could not be read: %v\n", err)
			d = hosthook.Decision{Outcome: hosthook.None}
		}
		write(hosthook.Render(host, call, d))
		return
	}
	set, err := hosthookwire.ParseFlags(args, getenv)
	policy := hookLocalPolicy(set.ShellReadOnly)
	if err == nil {
		err = set.Check()
	}
	if err == nil && set.OfflineReason != "" {
		// planserver-hook asked already and handed the call over.
		err = errors.New(set.OfflineReason)
	}
	var token string
	if err == nil {
		token, err = hosthookwire.Token(set, getenv)
	}
	if err != nil {
		fmt.Fprintf(stderr, "planserver hook: %v\n", err)
		write(hosthook.Render(host, call, hosthookservice.Offline(call, policy, err)))
		return
	}
	answer, err := askPlanserver(ctx, set, token, host, raw)
	if err != nil {
		fmt.Fprintf(stderr, "planserver hook: %v\n", err)
		write(hosthook.Render(host, call, hosthookservice.Offline(call, policy, err)))
		return
	}
	write(answer)
}

// hookLocalPolicy is how the hook judges a shell command by itself when
// planserver cannot be asked: as plan mode would (hosthookservice.Offline),
// with the sandbox of this machine, which never connects anywhere.
func hookLocalPolicy(shellReadOnly string) hosthook.Policy {
	table, err := shellclass.LoadFile(shellReadOnly)
	if err != nil {
		table = shellclass.DefaultTable()
	}
	return ShellPolicy(table, SandboxHere(nil, ""))
}

// ShellPolicy is how shell commands are judged, by serve's hook service
// and by this command while planserver cannot be asked:
// shellclass.Writes, the strict allowlist of table (nil: the default
// table), and the sandbox sb. It is the one place the policy is put
// together.
func ShellPolicy(table *shellclass.Table, sb hosthook.Sandbox) hosthook.Policy {
	return hosthook.Policy{Writes: shellclass.Writes, Strict: shellclass.StrictJudge(table), Sandbox: sb}
}

// SandboxHere is the sandbox of this machine for the hooks' decision:
// planserver-sandbox beside the planserver binary that runs this code
// (else planserver sandbox), with the decision's explanation as the line
// it prints when a command fails; unavailable, saying why, where the
// kernel cannot run it. In plan mode its network rule is allowConnect; in
// scoped build it is the scope's, less every entry on port ownPort
// (planserver's own, which no scope grants: "" for none), and it may
// write what the scope's files open.
func SandboxHere(allowConnect []string, ownPort string) hosthook.Sandbox {
	if _, err := sandbox.Available(); err != nil {
		return hosthook.Sandbox{Why: err.Error()}
	}
	self, err := os.Executable()
	if err != nil {
		return hosthook.Sandbox{Why: fmt.Sprintf("planserver cannot find its own path (%v)", err)}
	}
	return hosthook.Sandbox{Available: true, Wrap: func(command string, w hosthook.Wrap) (string, error) {
		o := sandbox.WrapOptions{AllowConnect: allowConnect, Explain: w.Explain}
		if sc := w.Scope; sc != nil {
			o.AllowConnect = nil
			for _, e := range sc.Connect {
				if _, port, err := net.SplitHostPort(e); err == nil && port != ownPort {
					o.AllowConnect = append(o.AllowConnect, e)
				}
			}
			o.AllowWrite, o.Project, o.Scoped = sc.Files, sc.Project, true
		}
		// Words that need no shell run without one (a second bash's
		// start saved on every such command).
		o.Argv, _ = shellclass.Argv(command)
		return sandbox.Wrap(self, command, o)
	}, Unwrap: sandbox.Unwrap}
}

// askPlanserver sends the host's input to POST /v1/hooks/{host} and
// returns the answer, which must be a 200 JSON object. It goes through
// net/http, so that https and the proxy settings of the environment work;
// the lean planserver-hook sends the same request (hosthookwire.NewRequest)
// with a client of its own.
func askPlanserver(ctx context.Context, set hosthookwire.Settings, token string, host hosthook.Host, raw []byte) ([]byte, error) {
	q, err := hosthookwire.NewRequest(set, token, string(host), raw)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, set.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, q.URL.String(), bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	for _, h := range q.Header {
		req.Header.Set(h[0], h[1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("planserver did not answer: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, fmt.Errorf("planserver at %s: reading the answer: %w", set.Server, err)
	}
	return hosthookwire.Answer(resp.StatusCode, body)
}
