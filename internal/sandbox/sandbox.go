// Package sandbox runs a command so that it can read the whole filesystem
// and change nothing outside itself: plan mode's kernel-enforced "writes
// fail". It owns the sandbox's rules (docs/sandbox.md): what the command
// may write, which connections it may open, what it may do to other
// processes, how long anything it starts may live, and the environment
// it gets.
//
// Two processes do the work. Run is the supervisor: it is not sandboxed;
// it makes the private TMPDIR, starts the stage, forwards signals, answers
// the connect() calls that --allow-connect lets through (by making them
// itself), and when the command has ended makes sure nothing it started
// lives on, then removes TMPDIR. The stage is the running program
// re-executed with StageCommand, in new PID, IPC and mount namespaces
// where the kernel allows them: it applies Landlock and the seccomp
// filters to itself and executes the command in its place, so the
// command is PID 1 of its namespace and no unrestricted Go code ever runs
// beside it. As root (without --allow-connect) there is no stage: the
// supervisor applies the same rules, in the same order, to one thread of
// its own and starts the command from it (direct_linux.go), which saves
// a second program's start. Where the kernel cannot enforce a rule,
// nothing runs (ExitUnavailable).
package sandbox

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Exit statuses of the sandbox itself, chosen like env(1) and timeout(1)
// so that they rarely collide with the command's own: every other status
// is the command's.
const (
	// ExitUnavailable: the sandbox could not be set up (a kernel feature
	// missing, rules refused, bad usage); the command did not run.
	ExitUnavailable = 125
	// ExitCannotRun: the command was found but could not be executed.
	ExitCannotRun = 126
	// ExitNotFound: the command was not found.
	ExitNotFound = 127
)

// MinABI is the Landlock ABI the sandbox needs: 6 (Linux 6.12), the first
// that scopes signals and abstract Unix sockets to the sandbox. It has
// everything older ABIs added that the rules use: TCP connect and bind
// (4), ioctl on devices (5), truncate (3), renames across directories (2).
const MinABI = 6

// StageCommand is the hidden first argument with which Run re-executes
// the program: main must hand such a call to Stage.
const StageCommand = "__sandbox-stage"

// LeanName is the name of the lean sandbox binary (cmd/planserver-sandbox)
// that make build puts beside planserver.
const LeanName = "planserver-sandbox"

// ErrUnavailable wraps every reason the kernel cannot run the sandbox.
var ErrUnavailable = errors.New("the kernel sandbox is not available")

// Available reports the kernel's Landlock ABI version and, when the
// sandbox cannot run here (no Landlock, an ABI below MinABI, no seccomp
// filters, an architecture the filter does not know), an error wrapping
// ErrUnavailable that says why. A hook uses it to deny, rather than
// sandbox, a command it cannot prove read-only.
func Available() (abi int, err error) { return available() }

// Endpoint is one --allow-connect entry: a host (an IP address or a name)
// and a TCP port.
type Endpoint struct {
	Host string
	Port uint16
}

func (e Endpoint) String() string { return net.JoinHostPort(e.Host, strconv.Itoa(int(e.Port))) }

// ParseEndpoints turns --allow-connect's host:port entries (comma
// separated, blanks ignored) into endpoints, each once. A host is an IP
// address (IPv6 in brackets) or a DNS name; a port is 1 to 65535.
func ParseEndpoints(entries []string) ([]Endpoint, error) {
	var out []Endpoint
	seen := map[Endpoint]bool{}
	for _, list := range entries {
		for _, e := range strings.Split(list, ",") {
			if e = strings.TrimSpace(e); e == "" {
				continue
			}
			host, p, err := net.SplitHostPort(e)
			if err != nil || host == "" {
				return nil, fmt.Errorf("--allow-connect %q: want host:port", e)
			}
			n, err := strconv.ParseUint(p, 10, 16)
			if err != nil || n == 0 {
				return nil, fmt.Errorf("--allow-connect %q: port %q is not a number from 1 to 65535", e, p)
			}
			if addr, err := netip.ParseAddr(host); err == nil {
				if addr.Zone() != "" {
					return nil, fmt.Errorf("--allow-connect %q: an address with a zone is not supported", e)
				}
				host = addr.Unmap().String()
			} else if !hostName(host) {
				return nil, fmt.Errorf("--allow-connect %q: %q is neither an IP address nor a host name", e, host)
			}
			ep := Endpoint{Host: strings.ToLower(host), Port: uint16(n)}
			if !seen[ep] {
				seen[ep] = true
				out = append(out, ep)
			}
		}
	}
	return out, nil
}

// hostName reports whether s is a DNS name: dot-separated labels of
// letters, digits and hyphens. scope's hostname is the same rule, written
// again on purpose: planserver-sandbox links nothing of planserver but
// this package and cliflag (TestSandboxBinaryStaysLean), so this one
// cannot import scope's, and scope, a pure rule, should not import the
// kernel sandbox for fifteen lines.
func hostName(s string) bool {
	if len(s) > 253 {
		return false
	}
	for _, label := range strings.Split(strings.TrimSuffix(s, "."), ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
				return false
			}
		}
	}
	return true
}

// ParseAllowConnect is ParseEndpoints reduced to the TCP ports the entries
// name, each once: what a caller needs to keep a port (planserver's own)
// off the list.
func ParseAllowConnect(entries []string) ([]uint16, error) {
	eps, err := ParseEndpoints(entries)
	if err != nil {
		return nil, err
	}
	var ports []uint16
	seen := map[uint16]bool{}
	for _, e := range eps {
		if !seen[e.Port] {
			seen[e.Port] = true
			ports = append(ports, e.Port)
		}
	}
	return ports, nil
}

// WrapOptions are what Wrap passes to the sandbox besides the command.
type WrapOptions struct {
	// AllowConnect lists the host:port entries for --allow-connect.
	AllowConnect []string
	// Explain is --explain: the next step the one line on a failure tells
	// the model (see Options.Explain); empty leaves the default.
	Explain string
	// AllowWrite are --allow-write entries (the scope's files), relative
	// to Project (--project); Scoped is --build-scope.
	AllowWrite []string
	Project    string
	Scoped     bool
	// Argv, when set, are the words of command when they need no shell
	// to run (shellclass.Argv finds them): the sandbox then executes
	// them itself, without bash -c, which saves a second shell's start.
	// The words must be command's; Wrap does not parse command.
	Argv []string
}

// WrapCommand is Wrap with only --allow-connect.
func WrapCommand(planserverPath, command string, allowConnect []string) (string, error) {
	return Wrap(planserverPath, command, WrapOptions{AllowConnect: allowConnect})
}

// Wrap returns a bash command line that runs command (a bash command
// string, as a host's shell tool receives it) inside the sandbox:
//
//	'/path/planserver-sandbox' --read-only [--project '/p' --allow-write 'src/app.go' …] [--build-scope]
//	    [--allow-connect 'h:p,…'] [--explain '…'] -- bash -c '<command>'
//
// or, with o.Argv, the words themselves after the -- ('ls' '-la').
//
// naming the lean planserver-sandbox where it sits beside planserver
// (make build puts it there; it starts in a fraction of planserver's
// time), else '/path/planserver' sandbox. Every part is single-quoted, so
// any text survives unchanged — quotes, here-documents, newlines, bytes
// that are not UTF-8 — except NUL, which no shell argument can carry:
// that is an error.
func Wrap(planserverPath, command string, o WrapOptions) (string, error) {
	for _, s := range append(append(append([]string{planserverPath, command, o.Explain, o.Project}, o.AllowConnect...), o.AllowWrite...), o.Argv...) {
		if strings.IndexByte(s, 0) >= 0 {
			return "", errors.New("sandbox: a command with a NUL byte cannot be passed to a shell")
		}
	}
	if planserverPath == "" {
		return "", errors.New("sandbox: the path of planserver is empty")
	}
	parts := []string{Quote(planserverPath), "sandbox", "--read-only"}
	if lean := LeanBeside(planserverPath); lean != "" {
		parts = []string{Quote(lean), "--read-only"}
	}
	var allow []string
	for _, a := range o.AllowConnect {
		if a = strings.TrimSpace(a); a != "" {
			allow = append(allow, a)
		}
	}
	if len(allow) > 0 {
		if _, err := ParseEndpoints(allow); err != nil {
			return "", err
		}
		parts = append(parts, "--allow-connect", Quote(strings.Join(allow, ",")))
	}
	if len(o.AllowWrite) > 0 {
		if o.Project != "" {
			parts = append(parts, "--project", Quote(o.Project))
		}
		for _, w := range o.AllowWrite {
			parts = append(parts, "--allow-write", Quote(w))
		}
	}
	if o.Scoped {
		parts = append(parts, "--build-scope")
	}
	if o.Explain != "" {
		parts = append(parts, "--explain", Quote(o.Explain))
	}
	parts = append(parts, "--")
	if len(o.Argv) > 0 {
		for _, w := range o.Argv {
			parts = append(parts, Quote(w))
		}
		return strings.Join(parts, " "), nil
	}
	parts = append(parts, "bash", "-c", Quote(command))
	return strings.Join(parts, " "), nil
}

// Unwrap reads a line of Wrap's shape back into the command and the
// explanation inside it, for a host whose second hook sees the command its
// first hook rewrote (Cursor runs beforeShellExecution on what preToolUse
// returned). It only takes the line apart: the words must be bare or
// single-quoted as Quote writes them, separated by single spaces: the
// program, its flags, --, and then bash -c 'command', or the words of the
// command themselves (WrapOptions.Argv), which come back quoted, as a
// command whose words they are. Whether the line runs in the sandbox a
// mode asks for is not its answer: a caller wraps the command again and
// compares byte for byte (hosthook.Sandbox.Rewritten), so no other line,
// and no other binary or flag, can pass for a wrapped one.
func Unwrap(line string) (command, explain string, ok bool) {
	words, ok := unquoteWords(line)
	if !ok || len(words) < 3 {
		return "", "", false
	}
	i := 1
	if words[i] == "sandbox" {
		i++
	}
	for ; i < len(words) && words[i] != "--"; i++ {
		switch words[i] {
		case "--read-only", "--build-scope":
		case "--explain", "--allow-connect", "--project", "--allow-write":
			if i+1 >= len(words) {
				return "", "", false
			}
			i++
			if words[i-1] == "--explain" {
				explain = words[i]
			}
		default:
			return "", "", false
		}
	}
	rest := words[min(i+1, len(words)):]
	switch {
	case len(rest) == 0:
		return "", "", false
	case len(rest) == 3 && rest[0] == "bash" && rest[1] == "-c":
		return rest[2], explain, true
	case rest[0] == "bash":
		return "", "", false // never the words of an Argv (shellclass.Argv leaves bash out)
	}
	quoted := make([]string, len(rest))
	for k, w := range rest {
		quoted[k] = Quote(w)
	}
	return strings.Join(quoted, " "), explain, true
}

// unquoteWords splits a line into the words bash would see, for lines made
// of bare words and Quote's single quoting alone (a quote or backslash of
// a quoted word stands outside the quotes, escaped with a backslash); any
// other shell syntax makes it fail.
func unquoteWords(line string) ([]string, bool) {
	var words []string
	var w strings.Builder
	inWord := false
	for i := 0; i < len(line); {
		switch c := line[i]; {
		case c == ' ':
			if !inWord || i+1 < len(line) && line[i+1] == ' ' {
				return nil, false
			}
			words = append(words, w.String())
			w.Reset()
			inWord = false
			i++
		case c == '\\':
			if i+1 >= len(line) || line[i+1] != '\'' && line[i+1] != '\\' {
				return nil, false
			}
			w.WriteByte(line[i+1])
			inWord = true
			i += 2
		case c == '\'':
			end := strings.IndexByte(line[i+1:], '\'')
			if end < 0 {
				return nil, false
			}
			w.WriteString(line[i+1 : i+1+end])
			inWord = true
			i += end + 2
		case strings.IndexByte("\"$`;&|<>(){}[]*?!~#=%\t\n", c) >= 0:
			return nil, false
		default:
			w.WriteByte(c)
			inWord = true
			i++
		}
	}
	if !inWord {
		return nil, false
	}
	return append(words, w.String()), true
}

// LeanBeside returns the lean planserver-sandbox in planserver's own
// directory, as make build and the release put it, or "" when there is no
// executable file there.
func LeanBeside(planserverPath string) string {
	path := filepath.Join(filepath.Dir(planserverPath), LeanName)
	if fi, err := os.Stat(path); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return ""
	}
	return path
}

// Quote single-quotes s so that bash, sh, zsh and fish all read it back
// as s: inside single quotes nothing is special to a POSIX shell, but fish
// reads a backslash before a quote or a backslash there as an escape. So
// neither a quote nor a backslash is ever written inside the quotes: each
// stands outside them, escaped with a backslash, which every one of these
// shells reads alike.
func Quote(s string) string {
	var b strings.Builder
	b.WriteByte('\'')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\'', '\\':
			b.WriteString("'\\")
			b.WriteByte(c)
			b.WriteByte('\'')
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('\'')
	return b.String()
}
