// Package hookcmd is the command form of host hooks: the process a host
// starts before every tool call (planserver hook HOST, and the lean
// planserver-hook HOST that does the same without the server's start-up
// cost). It reads the host's input, asks planserver (POST
// /v1/hooks/{host}) and prints the host's answer; it judges by itself only
// when planserver cannot be asked (hooks.Fallback).
//
// Like hooks, it imports nothing heavy: its process starts once per tool
// call (TestHookBinaryStaysLean in cmd/planserver-hook).
package hookcmd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/planserver/planserver/internal/cliflag"
	"github.com/planserver/planserver/internal/hooks"
	"github.com/planserver/planserver/internal/shellclass"
)

// Usage is the help of the command form (planserver hook, planserver-hook).
const Usage = `Usage:
  planserver hook HOST [--server URL] [--token-file FILE] [--session ID | --parent ID] [--timeout D]
  planserver hook install|uninstall HOST [--scope user|project] [--session ID | --parent ID] [--dry-run]

HOST is claude-code, gemini-cli, cursor or opencode. The first form is what
the host runs before every tool call: it reads the host's hook input (JSON)
on stdin, asks planserver (POST /v1/hooks/HOST) and prints the host's hook
output. In build mode it gives no decision; in plan mode it allows reads and
read-only commands, runs other commands in the read-only sandbox where the
host can rewrite them, and denies writes with a reason for the model.

It always prints valid JSON and exits 0, since a host runs the tool when its
hook fails: when planserver cannot be reached (or answers in time), reads
are allowed and everything else is denied, saying why. The call to
planserver is bounded by --timeout; give the hook a host timeout of at least
--timeout plus a second (docs/hosts.md).

Settings (flags win over the environment):
  --server    PLANSERVER_URL      planserver's URL (default http://127.0.0.1:8080)
  --session   PLANSERVER_SESSION  the session whose mode applies
  --parent    PLANSERVER_PARENT   bind each host conversation to a child of this session
  --shell-read-only FILE          the shell table's extension, as serve's (for reads while planserver is down)
  --token-file, PLANSERVER_TOKEN  the bearer token, from a file or the environment.
              Never on the command line: hosts print the hook command in their
              error messages, so --token is refused.

planserver-hook HOST ... is the same command as a lean binary of its own,
which starts in a fraction of planserver's time (a host starts the hook
before every tool call); make build puts it beside planserver.

install and uninstall add this hook to the host's settings, or take out only
what install added: planserver-hook when it is beside planserver, else
planserver hook (docs/hosts.md).
`

// hookTimeout bounds one question to planserver: well inside every host's
// default hook timeout (Claude Code and Gemini CLI: 60 s).
const hookTimeout = 5 * time.Second

// hookSettings are planserver hook's settings.
type hookSettings struct {
	server, tokenFile, session, parent string
	// shellReadOnly is the --shell-read-only file that extends the shell
	// table, for the commands the hook allows while planserver is down.
	shellReadOnly string
	timeout       time.Duration
	// tokenOnArgv records a --token given on the command line: refused.
	tokenOnArgv bool
}

// anyHostDeny is the answer when the host is unknown: a denial every
// host's format reads as one (Claude Code and Gemini CLI take "decision":
// "block", Cursor "permission", the opencode plugin anything but
// allow/none).
func anyHostDeny(reason string) []byte {
	raw, _ := json.Marshal(map[string]string{"decision": "block", "reason": reason,
		"permission": "deny", "agent_message": reason, "user_message": reason})
	return raw
}

// Run answers one hook call of host hostName on stdout, whatever happens:
// it always prints one JSON object the host reads, since a host runs the
// tool when its hook fails.
func Run(ctx context.Context, hostName string, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) {
	host, hostErr := hooks.ParseHost(hostName)
	var (
		call    = hooks.Call{Host: host}
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
			d := hooks.Refusal(fmt.Sprintf("planserver hook failed (internal error: %v).", r))
			if hostErr != nil {
				write(anyHostDeny(d.Reason))
				return
			}
			write(hooks.Render(host, call, d))
		}
	}()
	if hostErr != nil {
		fmt.Fprintf(stderr, "planserver hook: %v\n", hostErr)
		write(anyHostDeny(hooks.Refusal(hostErr.Error() + ".").Reason))
		return
	}
	raw, err := io.ReadAll(io.LimitReader(stdin, hooks.MaxInput+1))
	if err != nil {
		write(hooks.Render(host, call, hooks.Refusal(fmt.Sprintf("the hook input could not be read (%v).", err))))
		return
	}
	call, err = hooks.Parse(host, raw)
	if err != nil {
		write(hooks.Render(host, call, hooks.Refusal(err.Error())))
		return
	}
	set, err := hookFlags(args, getenv)
	policy := hookLocalPolicy(set.shellReadOnly)
	if err == nil && set.tokenOnArgv {
		err = errors.New("--token is refused on the command line (hosts print the hook command in their errors); " +
			"set PLANSERVER_TOKEN or --token-file")
	}
	var token string
	if err == nil {
		token, err = hookToken(set, getenv)
	}
	if err == nil && set.session == "" && set.parent == "" {
		err = errors.New("no session is configured: set PLANSERVER_SESSION or --session (or PLANSERVER_PARENT / --parent)")
	}
	if err != nil {
		fmt.Fprintf(stderr, "planserver hook: %v\n", err)
		write(hooks.Render(host, call, hooks.Fallback(call, policy, err)))
		return
	}
	answer, err := askPlanserver(ctx, set, token, host, raw)
	if err != nil {
		fmt.Fprintf(stderr, "planserver hook: %v\n", err)
		write(hooks.Render(host, call, hooks.Fallback(call, policy, err)))
		return
	}
	write(answer)
}

// hookLocalPolicy is what the hook judges by itself when planserver cannot
// be asked: which commands are read-only.
func hookLocalPolicy(shellReadOnly string) hooks.Policy {
	table, err := shellclass.LoadFile(shellReadOnly)
	if err != nil {
		table = shellclass.DefaultTable()
	}
	return hooks.Policy{Classify: func(cmd string) (bool, string) {
		v := shellclass.Classify(cmd, table)
		return v.ReadOnly, v.Reason
	}}
}

func hookFlags(args []string, getenv func(string) string) (hookSettings, error) {
	var set hookSettings
	fs := flag.NewFlagSet("planserver hook", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var argvToken string
	fs.StringVar(&set.server, "server", "", "")
	fs.StringVar(&argvToken, "token", "", "")
	fs.StringVar(&set.tokenFile, "token-file", "", "")
	fs.StringVar(&set.session, "session", "", "")
	fs.StringVar(&set.parent, "parent", "", "")
	fs.DurationVar(&set.timeout, "timeout", hookTimeout, "")
	fs.StringVar(&set.shellReadOnly, "shell-read-only", "", "")
	if err := fs.Parse(args); err != nil {
		return set, fmt.Errorf("bad arguments: %s", cliflag.ErrorText(err))
	}
	if fs.NArg() > 0 {
		return set, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	set.tokenOnArgv = argvToken != ""
	env := map[string]*string{"PLANSERVER_URL": &set.server, "PLANSERVER_SESSION": &set.session, "PLANSERVER_PARENT": &set.parent}
	for name, v := range env {
		if *v == "" {
			*v = getenv(name)
		}
	}
	if set.server == "" {
		set.server = cliflag.DefaultServer
	}
	if set.session != "" && set.parent != "" {
		return set, errors.New("both a session and a parent are set; the hook acts for one session")
	}
	if set.timeout <= 0 || set.timeout > time.Minute {
		return set, fmt.Errorf("--timeout %s is not between 0 and 1m", set.timeout)
	}
	return set, nil
}

// hookToken reads the token from --token-file, else PLANSERVER_TOKEN.
func hookToken(set hookSettings, getenv func(string) string) (string, error) {
	if set.tokenFile == "" {
		return strings.TrimSpace(getenv("PLANSERVER_TOKEN")), nil
	}
	raw, err := os.ReadFile(set.tokenFile)
	if err != nil {
		return "", fmt.Errorf("read --token-file: %w", err)
	}
	return strings.TrimSpace(string(raw)), nil
}

// askPlanserver sends the host's input to POST /v1/hooks/{host} and
// returns the answer, which must be a 200 JSON object.
func askPlanserver(ctx context.Context, set hookSettings, token string, host hooks.Host, raw []byte) ([]byte, error) {
	q := url.Values{}
	if set.session != "" {
		q.Set("session", set.session)
	} else {
		q.Set("parent", set.parent)
	}
	u := strings.TrimRight(set.server, "/") + "/v1/hooks/" + string(host) + "?" + q.Encode()
	ctx, cancel := context.WithTimeout(ctx, set.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(hooks.AdapterHeader, "command")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("planserver did not answer: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, fmt.Errorf("planserver at %s: reading the answer: %w", set.server, err)
	}
	if resp.StatusCode != http.StatusOK {
		var p struct{ Code, Detail string }
		if json.Unmarshal(body, &p) == nil && p.Code != "" {
			return nil, fmt.Errorf("planserver answered %d %s: %s", resp.StatusCode, p.Code, p.Detail)
		}
		return nil, fmt.Errorf("planserver answered %d", resp.StatusCode)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(body, &obj); err != nil {
		return nil, fmt.Errorf("planserver's answer is not a JSON object: %w", err)
	}
	return bytes.TrimSpace(body), nil
}
