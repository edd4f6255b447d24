package hookinstall

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/planserver/planserver/client"
	"github.com/planserver/planserver/internal/hosthook"
)

// Fault is one thing doctor found wrong, and how to mend it.
type Fault struct {
	What, Mend string
}

func (f Fault) String() string { return f.What + "\n  mend: " + f.Mend }

// Doctor checks an installation of host o.Host as it stands in the host's
// settings (the record of the install fills in what the settings cannot
// say): the before- and after-tool hooks, the binary they run, the
// server's address, the session, the token, planserver's MCP server; then
// runs the self-test when nothing was found wrong. It prints each fault
// and its mend, and returns them.
func Doctor(ctx context.Context, o Options) ([]Fault, error) {
	o.defaults()
	prev, err := readManifest(o.manifestPath())
	if err != nil {
		return nil, err
	}
	var faults []Fault
	found := func(what, mend string) {
		f := Fault{What: what, Mend: mend}
		faults = append(faults, f)
		fmt.Fprintln(o.Out, "FAULT: "+f.String())
	}
	reinstall := fmt.Sprintf("planserver hook install %s --scope %s --session ID (or --parent ID)", o.Host, o.Scope)
	p := o.paths()
	m := Manifest{Host: string(o.Host), Scope: o.Scope, Settings: p.settings}
	if prev != nil {
		m = *prev
	}
	var cmd command
	switch o.Host {
	case hosthook.OpenCode:
		text, err := readIfExists(p.settings)
		if err != nil {
			return nil, err
		}
		if text == "" {
			found(fmt.Sprintf("planserver's opencode plugin is not installed (%s is missing)", p.settings), "run "+reinstall)
			return faults, nil
		}
		cmd = pluginSettings(text)
		cmd.host = o.Host
	default:
		text, err := readIfExists(p.settings)
		if err != nil {
			return nil, err
		}
		root := &object{}
		if strings.TrimSpace(text) != "" {
			if err := json.Unmarshal([]byte(text), root); err != nil {
				found(fmt.Sprintf("%s is not a JSON object (%v)", p.settings, err), "fix the file, then run "+reinstall)
				return faults, nil
			}
		}
		got := hookCommands(root, o.Host)
		if len(got) == 0 {
			found(fmt.Sprintf("no planserver hook is installed in %s", p.settings), "run "+reinstall)
			return faults, nil
		}
		for _, ev := range beforeEvents(o.Host) {
			if got[ev] == "" {
				found(fmt.Sprintf("the before-tool hook (%s) is missing from %s: the host runs those tools without asking planserver", ev, p.settings), "run "+reinstall)
			} else {
				m.Before = got[ev] // the settings say what the host runs
			}
		}
		for _, ev := range afterEvents(o.Host) {
			if got[ev] == "" {
				found(fmt.Sprintf("the after-tool hook (%s) is missing from %s: planserver cannot see the tool runs it did not judge", ev, p.settings), "run "+reinstall)
			} else {
				m.After = got[ev]
			}
		}
		some := m.Before
		if some == "" {
			some = m.After
		}
		cmd, _ = parseCommand(some, o.Host)
		if m.Before != "" && !strings.Contains(m.Before, "||") {
			found(fmt.Sprintf("the hook command in %s does not fail closed: when its binary is missing, the host runs the tool", p.settings), "run "+reinstall)
		}
	}
	if cmd.server == "" {
		cmd.server = m.Server
	}
	if cmd.server == "" {
		cmd.server = "http://127.0.0.1:8080"
	}
	m.Server, m.Session, m.Parent = cmd.server, cmd.session, cmd.parent
	// The binary the command runs, and planserver beside it.
	if o.Host != hosthook.OpenCode {
		for _, bin := range []string{cmd.bin, filepath.Join(filepath.Dir(cmd.bin), "planserver")} {
			if fi, err := os.Stat(bin); err != nil || fi.Mode().Perm()&0o111 == 0 || !fi.Mode().IsRegular() {
				found(fmt.Sprintf("the hook's binary %s is missing (or not executable): every tool call is refused until it is back", bin), "run "+reinstall+" (it copies the binaries to "+o.BinDir+")")
			}
		}
	}
	// The token the hook reads.
	token := o.Token
	if cmd.tokenFile != "" {
		raw, err := os.ReadFile(cmd.tokenFile)
		if err != nil {
			found(fmt.Sprintf("the token file %s cannot be read (%v)", cmd.tokenFile, err), "run "+reinstall+" with the token in PLANSERVER_TOKEN or --token-file")
		}
		token = strings.TrimSpace(string(raw))
	}
	if cmd.session == "" && cmd.parent == "" {
		found("the hook names no session", "run "+reinstall)
		return faults, nil
	}
	id := cmd.session
	if id == "" {
		id = cmd.parent
	}
	cl, err := newClient(cmd.server, token)
	if err != nil {
		found(fmt.Sprintf("the hook's server address %q is not a URL", cmd.server), "run "+reinstall+" --server URL")
		return faults, nil
	}
	if _, err := cl.Health(ctx); err != nil {
		found(fmt.Sprintf("planserver does not answer at %s, the address the hook asks (%v)", cmd.server, err), "start planserver there, or run "+reinstall+" --server URL to name where it runs")
		return faults, nil
	}
	switch _, err := cl.GetSession(ctx, id); {
	case errors.Is(err, client.ErrUnauthenticated):
		found(fmt.Sprintf("planserver at %s refuses the hook's token (%v)", cmd.server, err), "create a token (planserver token create --role agent --session "+id+"), then run "+reinstall+" with it in PLANSERVER_TOKEN")
		return faults, nil
	case errors.Is(err, client.ErrNotFound):
		found(fmt.Sprintf("session %q does not exist on %s", id, cmd.server), "create it (planserver session create --id "+id+"), or run "+reinstall+" --create")
		return faults, nil
	case err != nil:
		found(fmt.Sprintf("session %q cannot be read on %s (%v)", id, cmd.server, err), "check the token's role and session")
		return faults, nil
	}
	if err := checkMCP(o, p, m); err != "" {
		found(err, "run "+reinstall)
	}
	if len(faults) > 0 {
		return faults, nil
	}
	o.Token = token
	if err := SelfTest(ctx, o, m); err != nil {
		found(err.Error(), "run "+reinstall)
	}
	if len(faults) == 0 {
		fmt.Fprintf(o.Out, "planserver's hooks for %s are in order (session %q on %s)\n", o.Host, id, cmd.server)
	}
	return faults, nil
}

// checkMCP says what is wrong with planserver's MCP server in the host's
// configuration, "" when nothing.
func checkMCP(o Options, p paths, m Manifest) string {
	file, at := p.mcp, p.mcpAt
	if m.MCPFile != "" {
		file, at = m.MCPFile, m.MCPAt
	}
	text, err := readIfExists(file)
	if err != nil {
		return err.Error()
	}
	root := &object{}
	if strings.TrimSpace(text) == "" || json.Unmarshal([]byte(text), root) != nil {
		return fmt.Sprintf("planserver's MCP server is not configured (%s has none): the model has no tool to ask for review", file)
	}
	cur := root
	for _, k := range at {
		c, err := cur.child(k)
		if err != nil {
			return err.Error()
		}
		cur = c
	}
	if !cur.has(MCPName) {
		return fmt.Sprintf("planserver's MCP server %q is missing from %s: the model has no tool to ask for review", MCPName, file)
	}
	return ""
}

// pluginSettings reads the settings planserver hook install wrote into
// opencode's plugin.
func pluginSettings(text string) command {
	var c command
	for name, into := range map[string]*string{"SERVER": &c.server, "SESSION": &c.session, "PARENT": &c.parent,
		"TOKEN_FILE": &c.tokenFile, "MCP": &c.mcp} {
		_, rest, ok := strings.Cut(text, "\nconst "+name+" = ")
		if !ok {
			continue
		}
		line, _, _ := strings.Cut(rest, "\n")
		_ = json.Unmarshal([]byte(strings.TrimSpace(line)), into)
	}
	return c
}
