package hookinstall

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"

	"github.com/planserver/planserver/internal/hosthook"
	"github.com/planserver/planserver/internal/sandbox"
)

// LeanHook is the lean hook binary's name (cmd/planserver-hook).
const LeanHook = "planserver-hook"

// command is the hook command the installer writes into a host's settings:
// the binary it copied and the settings the hook needs, all but the token,
// which stays in a file (hosts print the whole command in their errors).
type command struct {
	// bin is the hook's binary: planserver-hook (lean: "BIN HOST ...") or
	// planserver ("BIN hook HOST ...").
	bin                     string
	host                    hosthook.Host
	server, session, parent string
	tokenFile, mcp          string
}

func (c command) lean() bool { return filepath.Base(c.bin) == LeanHook }

// argv is the hook's command line.
func (c command) argv() []string {
	argv := []string{c.bin, string(c.host)}
	if !c.lean() {
		argv = []string{c.bin, "hook", string(c.host)}
	}
	for _, f := range [][2]string{{"--server", c.server}, {"--session", c.session}, {"--parent", c.parent},
		{"--token-file", c.tokenFile}, {"--mcp", c.mcp}} {
		if f[1] != "" {
			argv = append(argv, f[0], f[1])
		}
	}
	return argv
}

func (c command) plain() string {
	words := c.argv()
	for i, w := range words {
		words[i] = shellQuote(w)
	}
	return strings.Join(words, " ")
}

// before is the command of the before-tool hooks, as the host runs it
// through a shell. It fails closed: planserver-hook always answers and
// exits 0, so a non-zero status means its binary is missing, could not
// start, or crashed; then the shell prints the host's denial and exits 2,
// which Claude Code, Gemini CLI and Cursor each take as a block (Claude
// Code reads the reason from stderr, Gemini CLI its JSON from stdout,
// Cursor the exit status). Without it Claude Code runs the tool when a
// hook cannot start.
func (c command) before() string {
	msg := FailedReason(c.host)
	var out string
	switch c.host {
	case hosthook.GeminiCLI:
		out = jsonLine(map[string]string{"decision": "deny", "reason": msg})
	case hosthook.Cursor:
		out = jsonLine(map[string]string{"permission": "deny", "user_message": msg, "agent_message": msg})
	}
	fallback := "printf '%s\\n' " + shellQuote(msg) + " >&2; exit 2;"
	if out != "" {
		fallback = "printf '%s\\n' " + shellQuote(out) + "; " + fallback
	}
	return c.plain() + " || { " + fallback + " }"
}

// after is the command of the after-tool hooks: a report never blocks, so
// a failure is only said on stderr.
func (c command) after() string { return c.plain() + " || true" }

// FailedReason is what the model (and the user) reads when host's hook
// command could not run at all.
func FailedReason(h hosthook.Host) string {
	return "[planserver hook] The planserver hook command failed (its binary is missing, could not start, or crashed), " +
		"so this call is refused to keep plan mode from being bypassed. Stop and ask the user to run: planserver hook doctor " + string(h)
}

func jsonLine(v any) string {
	raw, _ := json.Marshal(v)
	return string(raw)
}

// shellQuote quotes s for the shell a host runs hooks with (sandbox.Quote,
// which fish reads alike too) when it needs quoting.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+=:,@", r))
	}) < 0 {
		return s
	}
	return sandbox.Quote(s)
}

// shellWords splits the simple command at the start of s into its words,
// as a POSIX shell would for what shellQuote writes (plain words, 'single
// quotes', "double quotes" without expansions, backslashes), stopping at
// the first unquoted |, ; or &.
func shellWords(s string) ([]string, error) {
	var (
		words []string
		cur   strings.Builder
		in    bool
	)
	flush := func() {
		if in {
			words = append(words, cur.String())
		}
		cur.Reset()
		in = false
	}
	for i := 0; i < len(s); i++ {
		switch ch := s[i]; ch {
		case ' ', '\t', '\n':
			flush()
		case '|', ';', '&':
			flush()
			return words, nil
		case '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, errors.New("unbalanced single quote")
			}
			cur.WriteString(s[i+1 : i+1+j])
			in, i = true, i+1+j
		case '"':
			j := strings.IndexByte(s[i+1:], '"')
			if j < 0 {
				return nil, errors.New("unbalanced double quote")
			}
			cur.WriteString(s[i+1 : i+1+j])
			in, i = true, i+1+j
		case '\\':
			if i+1 < len(s) {
				i++
				cur.WriteByte(s[i])
				in = true
			}
		default:
			cur.WriteByte(ch)
			in = true
		}
	}
	flush()
	return words, nil
}

// parseCommand reads a hook command back: whether it is one planserver
// hook install wrote for host (planserver-hook HOST, or planserver's
// binary running hook HOST, by the binary's name), and its settings.
func parseCommand(s string, host hosthook.Host) (command, bool) {
	words, err := shellWords(s)
	if err != nil || len(words) < 2 {
		return command{}, false
	}
	c := command{bin: words[0], host: host}
	name := filepath.Base(words[0])
	var rest []string
	switch {
	case name == LeanHook && words[1] == string(host):
		rest = words[2:]
	case strings.Contains(name, "planserver") && len(words) >= 3 && words[1] == "hook" && words[2] == string(host):
		rest = words[3:]
	default:
		return command{}, false
	}
	for i := 0; i+1 < len(rest); i++ {
		v := rest[i+1]
		switch strings.TrimPrefix(rest[i], "-") {
		case "-server", "server":
			c.server = v
		case "-session", "session":
			c.session = v
		case "-parent", "parent":
			c.parent = v
		case "-token-file", "token-file":
			c.tokenFile = v
		case "-mcp", "mcp":
			c.mcp = v
		default:
			continue
		}
		i++
	}
	return c, true
}
