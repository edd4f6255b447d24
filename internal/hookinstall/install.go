// Package hookinstall puts an agent host under planserver's plan mode in
// one step, checks it, and takes it out again: planserver hook install,
// doctor and uninstall.
//
// Install copies planserver's binaries to a stable place of the user's
// ($XDG_DATA_HOME/planserver/bin, never a build folder), writes the
// host's before- and after-tool hooks (a command that fails closed: when
// its binary is missing or crashes, the shell answers with the host's
// denial) and planserver's MCP server bound to the session, keeps the
// token in a file only the user can read, records what it added in a
// manifest, and ends with a self-test: a canary call through the installed
// command exactly as the host runs it. Doctor runs the same checks later
// and names each fault and its mend. Uninstall takes out exactly what
// install added. Nothing of the user's own hooks or MCP servers is touched.
package hookinstall

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/client"
	"github.com/planserver/planserver/integrations/opencode"
	"github.com/planserver/planserver/internal/diff"
	"github.com/planserver/planserver/internal/hosthook"
)

// Hosts are the hosts install knows how to set up. Codex is not among
// them: Codex runs a hook only once the user has trusted it in Codex
// itself (its /hooks review), keyed to the hook's content, so a hook an
// installer writes would sit there untrusted, and plan mode would look
// installed while nothing held it. docs/hosts.md says how to set Codex up
// by hand.
var Hosts = []hosthook.Host{hosthook.ClaudeCode, hosthook.GeminiCLI, hosthook.Cursor, hosthook.OpenCode}

// Supported says why install cannot set up host h, or nil.
func Supported(h hosthook.Host) error {
	if slices.Contains(Hosts, h) {
		return nil
	}
	if h == hosthook.Codex {
		return errors.New("planserver cannot install Codex's hooks for you: Codex runs a hook only after you trust it in Codex itself; " +
			"add the hooks and the MCP server by hand, then trust them with Codex's /hooks (docs/hosts.md, Codex)")
	}
	return fmt.Errorf("planserver hook install does not know host %q", h)
}

// Binaries are the files install copies from beside the running planserver
// when they are there: the lean hook the hosts run, the lean sandbox it
// wraps shell commands in, and planserver itself (planserver-hook hands
// over to planserver hook beside it when planserver cannot be asked).
var Binaries = []string{LeanHook, "planserver-sandbox", "planserver"}

// Options are one install, uninstall or doctor run.
type Options struct {
	Host hosthook.Host
	// Scope is "project" (the settings in Base) or "user" (Home's).
	Scope string
	// Base is the project directory (the current one); Home the user's.
	Base, Home string
	// ConfigHome is $XDG_CONFIG_HOME (default Home/.config); DataHome is
	// $XDG_DATA_HOME (default Home/.local/share); ClaudeDir is
	// $CLAUDE_CONFIG_DIR, "" for Claude Code's default.
	ConfigHome, DataHome, ClaudeDir string
	// BinDir is where the binaries go (default DataHome/planserver/bin);
	// SourceDir is where they are now (the running planserver's own).
	BinDir, SourceDir string
	// Server is planserver's URL; Session or Parent the session the hook
	// acts for (with Parent, each host conversation gets a child of it).
	Server, Session, Parent string
	// Token is the bearer token, "" for none (--auth none).
	Token string
	// Create makes the session (or parent) when it does not exist.
	Create bool
	// DryRun prints the changes as diffs and writes nothing.
	DryRun bool
	// Env is the environment the self-test runs the hook command in, as
	// the host would; nil is this process's.
	Env []string
	Out io.Writer
}

func (o *Options) defaults() {
	if o.ConfigHome == "" {
		o.ConfigHome = filepath.Join(o.Home, ".config")
	}
	if o.DataHome == "" {
		o.DataHome = filepath.Join(o.Home, ".local", "share")
	}
	if o.BinDir == "" {
		o.BinDir = filepath.Join(o.dataDir(), "bin")
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	if o.Env == nil {
		o.Env = os.Environ()
	}
}

func (o *Options) dataDir() string { return filepath.Join(o.DataHome, "planserver") }

func (o *Options) paths() paths {
	return pathsFor(o.Host, o.Scope, o.Base, o.Home, o.ConfigHome, o.ClaudeDir)
}

// installID names an installation: its host, scope and settings file.
func (o *Options) installID() string {
	sum := sha256.Sum256([]byte(o.paths().settings))
	return fmt.Sprintf("%s-%s-%s", o.Host, o.Scope, hex.EncodeToString(sum[:6]))
}

func (o *Options) manifestPath() string {
	return filepath.Join(o.dataDir(), "installs", o.installID()+".json")
}

// Manifest records what an install added, so that uninstall takes out
// exactly that, and a later install replaces it.
type Manifest struct {
	Host    string `json:"host"`
	Scope   string `json:"scope"`
	Base    string `json:"base,omitempty"`
	Server  string `json:"server"`
	Session string `json:"session,omitempty"`
	Parent  string `json:"parent,omitempty"`
	// Settings is the file holding the hooks (opencode: the plugin).
	Settings string `json:"settings"`
	// BinDir holds the Binaries copied there.
	BinDir   string   `json:"bin_dir"`
	Binaries []string `json:"binaries"`
	// Before and After are the hook commands written.
	Before string `json:"before,omitempty"`
	After  string `json:"after,omitempty"`
	// MCPFile holds the MCP server MCPName, at MCPAt; MCPEntry is what
	// install wrote there, nil when it kept a server of the user's.
	MCPFile  string          `json:"mcp_file"`
	MCPAt    []string        `json:"mcp_at"`
	MCPEntry json.RawMessage `json:"mcp_entry,omitempty"`
	// TokenFile and HeadersFile are the secret files written (mode 0600).
	TokenFile   string `json:"token_file,omitempty"`
	HeadersFile string `json:"headers_file,omitempty"`
}

func readManifest(path string) (*Manifest, error) {
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var m Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &m, nil
}

// sessionFor is the session the installation binds: the session, or the
// parent whose children stand for the host's conversations (MCP requests
// carry no conversation, so the MCP server acts for the parent: its plan
// and its review are what lift plan mode for all of them).
func (o *Options) bound() string {
	if o.Session != "" {
		return o.Session
	}
	return o.Parent
}

// Install installs host o.Host, then runs the self-test. It returns an
// error when anything failed, the self-test included.
func Install(ctx context.Context, o Options) error {
	o.defaults()
	if o.Session == "" && o.Parent == "" {
		return errors.New("name the session the hook acts for: --session ID (or --parent ID)")
	}
	cl, err := newClient(o.Server, o.Token)
	if err != nil {
		return err
	}
	if err := checkSession(ctx, cl, &o); err != nil {
		return err
	}
	prev, err := readManifest(o.manifestPath())
	if err != nil {
		return err
	}
	copies, hookBin, err := o.binaries()
	if err != nil {
		return err
	}
	if err := o.refuseOthersBinaries(copies); err != nil {
		return err
	}
	m := Manifest{Host: string(o.Host), Scope: o.Scope, Server: o.Server, Session: o.Session, Parent: o.Parent,
		BinDir: o.BinDir, Settings: o.paths().settings}
	if o.Scope == "project" {
		m.Base = o.Base
	}
	for _, c := range copies {
		m.Binaries = append(m.Binaries, filepath.Base(c[1]))
	}
	if hookBin == "" {
		hookBin = filepath.Join(o.BinDir, "planserver")
	}
	var secrets []fileChange
	base := strings.TrimSuffix(o.manifestPath(), ".json")
	if o.Token != "" {
		m.TokenFile = base + ".token"
		secrets = append(secrets, fileChange{path: m.TokenFile, after: o.Token, secret: true})
	}
	cmd := command{bin: hookBin, host: o.Host, server: o.Server, session: o.Session, parent: o.Parent,
		tokenFile: m.TokenFile, mcp: MCPName}
	headers := map[string]string{"Planserver-Session": o.bound()}
	helper := ""
	if o.Token != "" {
		switch o.Host {
		case hosthook.ClaudeCode:
			// Claude Code runs headersHelper for the headers: the token
			// stays in a file only the user reads.
			m.HeadersFile = base + ".headers.json"
			secrets = append(secrets, fileChange{path: m.HeadersFile, secret: true,
				after: jsonLine(map[string]string{"Authorization": "Bearer " + o.Token, "Planserver-Session": o.bound()})})
			helper, headers = "cat "+shellQuote(m.HeadersFile), nil
		case hosthook.OpenCode:
			headers["Authorization"] = "Bearer {file:" + m.TokenFile + "}"
		case hosthook.GeminiCLI:
			headers["Authorization"] = "Bearer $PLANSERVER_TOKEN"
			fmt.Fprintln(o.Out, "note: Gemini CLI reads the MCP server's token from PLANSERVER_TOKEN in its environment (its settings cannot name a file): export PLANSERVER_TOKEN before you start gemini; the hooks read "+m.TokenFile)
		case hosthook.Cursor:
			headers["Authorization"] = "Bearer ${env:PLANSERVER_TOKEN}"
			fmt.Fprintln(o.Out, "note: Cursor reads the MCP server's token from PLANSERVER_TOKEN in its environment (its settings cannot name a file): export PLANSERVER_TOKEN before you start Cursor; the hooks read "+m.TokenFile)
		}
	}
	mcpURL := strings.TrimRight(o.Server, "/") + "/mcp"
	changes, notes, err := o.settingsChanges(true, cmd, mcpEntry(o.Host, mcpURL, headers, helper), prev, &m)
	if err != nil {
		return err
	}
	if o.DryRun {
		for _, c := range copies {
			fmt.Fprintf(o.Out, "would copy %s to %s\n", c[0], c[1])
		}
		for _, s := range secrets {
			fmt.Fprintf(o.Out, "would write %s (mode 0600)\n", s.path)
		}
		printChanges(o.Out, changes, "install")
		for _, n := range notes {
			fmt.Fprintln(o.Out, n)
		}
		fmt.Fprintln(o.Out, "dry run: nothing was written")
		return nil
	}
	for _, c := range copies {
		if err := copyFile(c[0], c[1]); err != nil {
			return err
		}
		fmt.Fprintf(o.Out, "copied %s to %s\n", filepath.Base(c[0]), c[1])
	}
	for _, s := range secrets {
		if err := writeSecret(s.path, s.after); err != nil {
			return err
		}
		fmt.Fprintf(o.Out, "wrote %s (mode 0600)\n", s.path)
	}
	if err := applyChanges(o.Out, changes); err != nil {
		return err
	}
	for _, n := range notes {
		fmt.Fprintln(o.Out, n)
	}
	if prev != nil {
		for _, stale := range []string{prev.TokenFile, prev.HeadersFile} {
			if stale != "" && stale != m.TokenFile && stale != m.HeadersFile {
				_ = os.Remove(stale)
			}
		}
	}
	if err := writeManifest(o.manifestPath(), m); err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "installed planserver's hooks for %s (session %q on %s); the record of what was added is %s\n",
		o.Host, o.bound(), o.Server, o.manifestPath())
	return SelfTest(ctx, o, m)
}

// binaries returns the copies to make (from, to) and the hook binary the
// command runs: planserver-hook where it is there, else planserver.
func (o *Options) binaries() ([][2]string, string, error) {
	src, dst := filepath.Clean(o.SourceDir), filepath.Clean(o.BinDir)
	var copies [][2]string
	hookBin := ""
	for _, name := range Binaries {
		from := filepath.Join(src, name)
		fi, err := os.Stat(from)
		if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
			continue
		}
		if name == LeanHook {
			hookBin = filepath.Join(dst, name)
		}
		if src != dst {
			copies = append(copies, [2]string{from, filepath.Join(dst, name)})
		}
	}
	if !slices.ContainsFunc(copies, func(c [2]string) bool { return filepath.Base(c[1]) == "planserver" }) && src != dst {
		return nil, "", fmt.Errorf("planserver is not in %s: install from the planserver binary itself", src)
	}
	if hookBin == "" {
		hookBin = filepath.Join(dst, "planserver")
	}
	return copies, hookBin, nil
}

// refuseOthersBinaries refuses to copy over a file that no installation
// put in the bin folder: uninstall takes out exactly what install put in,
// so a planserver the user already keeps in --bin-dir must neither be
// replaced nor, later, removed with the hooks.
func (o *Options) refuseOthersBinaries(copies [][2]string) error {
	ours := map[string]bool{}
	records, _ := filepath.Glob(filepath.Join(o.dataDir(), "installs", "*.json"))
	for _, r := range records {
		if m, err := readManifest(r); err == nil && m != nil && filepath.Clean(m.BinDir) == filepath.Clean(o.BinDir) {
			for _, b := range m.Binaries {
				ours[b] = true
			}
		}
	}
	for _, c := range copies {
		if _, err := os.Lstat(c[1]); err == nil && !ours[filepath.Base(c[1])] {
			return fmt.Errorf("%s is already there, and no planserver hook install put it there: install would replace it "+
				"and uninstall would remove it. Move it away, or put planserver's binaries in another folder with --bin-dir", c[1])
		}
	}
	return nil
}

// settingsChanges computes the changes to the host's files: the hooks (or
// opencode's plugin) and the MCP server. m records what install added.
func (o *Options) settingsChanges(install bool, cmd command, entry any, prev *Manifest, m *Manifest) ([]fileChange, []string, error) {
	p := o.paths()
	var (
		out   []fileChange
		notes []string
	)
	add := func(c *fileChange, err error) error {
		if err != nil {
			return err
		}
		if c != nil {
			// Two edits of one file (Gemini CLI keeps hooks and MCP
			// servers in one settings file) become one change.
			for i := range out {
				if out[i].path == c.path {
					out[i].after = c.after
					return nil
				}
			}
			out = append(out, *c)
		}
		return nil
	}
	var err error
	if o.Host == hosthook.OpenCode {
		err = add(pluginChange(p.settings, install, opencode.Config{Server: cmd.server, Session: cmd.session, Parent: cmd.parent,
			TokenFile: cmd.tokenFile, MCP: cmd.mcp}))
	} else {
		err = add(editJSONFile(p.settings, true, func(root *object) error {
			return editHooks(root, o.Host, install, cmd.before(), cmd.after())
		}))
		if install {
			m.Before, m.After = cmd.before(), cmd.after()
		}
	}
	if err != nil {
		return nil, nil, err
	}
	var prevEntry json.RawMessage
	if prev != nil {
		prevEntry = prev.MCPEntry
	}
	mcpPath := p.mcp
	if prev != nil && !install && prev.MCPFile != "" {
		mcpPath, p.mcpAt = prev.MCPFile, prev.MCPAt
	}
	var base string
	for _, c := range out {
		if c.path == mcpPath {
			base = c.after // the same file, edited already
		}
	}
	change, err := editJSONFileFrom(mcpPath, base, install, func(root *object) error {
		wrote, note, err := editMCP(root, p.mcpAt, MCPName, install, entry, prevEntry)
		if note != "" {
			notes = append(notes, note)
		}
		if install {
			m.MCPFile, m.MCPAt, m.MCPEntry = mcpPath, p.mcpAt, wrote
		}
		return err
	})
	if err := add(change, err); err != nil {
		return nil, nil, err
	}
	return out, notes, nil
}

// editJSONFileFrom is editJSONFile starting from text (when not "", the
// file as another edit of this run left it).
func editJSONFileFrom(path, text string, install bool, edit func(*object) error) (*fileChange, error) {
	if text == "" {
		return editJSONFile(path, !install, edit)
	}
	orig, err := readIfExists(path)
	if err != nil {
		return nil, err
	}
	root := &object{}
	if err := json.Unmarshal([]byte(text), root); err != nil {
		return nil, err
	}
	if err := edit(root); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	after := ""
	if install || len(root.keys) > 0 {
		if after, err = indent(root, orig); err != nil {
			return nil, err
		}
	}
	return &fileChange{path: path, before: orig, after: after}, nil
}

func printChanges(w io.Writer, changes []fileChange, verb string) {
	if len(changes) == 0 {
		fmt.Fprintln(w, "no settings to change")
	}
	for _, c := range changes {
		fmt.Fprint(w, diff.Unified(c.path+" (now)", c.path+" (after "+verb+")", diff.Hunks(diff.Lines(c.before), diff.Lines(c.after))))
	}
}

func applyChanges(w io.Writer, changes []fileChange) error {
	for _, c := range changes {
		if c.after == "" {
			if err := os.Remove(c.path); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
			fmt.Fprintf(w, "removed %s\n", c.path)
			continue
		}
		if err := os.MkdirAll(filepath.Dir(c.path), 0o755); err != nil {
			return err
		}
		if err := writeFileAtomic(c.path, []byte(c.after), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(w, "wrote %s\n", c.path)
	}
	return nil
}

func writeManifest(path string, m Manifest) error {
	raw, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return writeSecret(path, string(raw)+"\n")
}

// writeSecret writes a file only the user can read, in a directory only
// the user can enter.
func writeSecret(path, text string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return writeFileAtomic(path, []byte(text), 0o600)
}

// writeFileAtomic replaces path with data (keeping an existing file's
// mode, else mode), so that a crash never leaves a half-written file.
func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	if st, err := os.Stat(path); err == nil && mode != 0o600 {
		mode = st.Mode().Perm()
	}
	return replaceFile(path, mode, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// copyFile copies an executable atomically: a host starting the hook
// while it is replaced runs the old binary or the new, never half of one.
func copyFile(from, to string) error {
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	return replaceFile(to, 0o755, func(w io.Writer) error {
		if _, err := io.Copy(w, src); err != nil {
			return fmt.Errorf("copy %s: %w", from, err)
		}
		return nil
	})
}

// replaceFile replaces path with what write writes, with mode: it writes
// a temporary file beside path, syncs it and renames it over path, so a
// crash, or a reader at the wrong moment, finds the old file or the new,
// never half of one.
func replaceFile(path string, mode os.FileMode, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".planserver-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := write(tmp); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

func newClient(server, token string) (*client.Client, error) {
	u, err := url.Parse(server)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("--server %q is not a URL like http://127.0.0.1:8080", server)
	}
	var opts []client.Option
	if token != "" {
		opts = append(opts, client.WithToken(token))
	}
	return client.New(server, opts...)
}

// checkSession makes sure the session (or parent) exists on the server,
// creating it with --create; it names what is wrong otherwise.
func checkSession(ctx context.Context, cl *client.Client, o *Options) error {
	id := o.bound()
	if _, err := cl.Health(ctx); err != nil {
		return fmt.Errorf("planserver does not answer at %s (%v): start it (planserver serve), or name its address with --server or PLANSERVER_URL", o.Server, err)
	}
	_, err := cl.GetSession(ctx, id)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, client.ErrUnauthenticated):
		return fmt.Errorf("planserver at %s refuses the token (%v): give a valid one in PLANSERVER_TOKEN or --token-file", o.Server, err)
	case !errors.Is(err, client.ErrNotFound):
		return fmt.Errorf("look up session %q on %s: %w", id, o.Server, err)
	case !o.Create:
		return fmt.Errorf("session %q does not exist on %s: create it (planserver session create --id %s), or pass --create", id, o.Server, id)
	case o.DryRun:
		fmt.Fprintf(o.Out, "would create session %q on %s\n", id, o.Server)
		return nil
	}
	in := api.SessionCreate{ID: &id, Title: fmt.Sprintf("%s (planserver hook install)", o.Host), Agent: string(o.Host)}
	if _, err := cl.CreateSession(ctx, in); err != nil {
		return fmt.Errorf("create session %q on %s: %w", id, o.Server, err)
	}
	fmt.Fprintf(o.Out, "created session %q on %s\n", id, o.Server)
	return nil
}
