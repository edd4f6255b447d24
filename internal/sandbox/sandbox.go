// Package sandbox runs a command so that it can read the whole filesystem
// and write nothing: plan mode's kernel-enforced "writes fail". On Linux it
// combines Landlock (no file may be created, written, removed or renamed,
// except /dev/null, the terminal and a private TMPDIR; no TCP connection
// except to allowed ports) with a seccomp filter for what Landlock does not
// cover (chmod, chown, utimes, extended attributes, inode flags, io_uring,
// Unix-domain and MPTCP sockets). The command and all its children inherit
// both; neither can be lifted from inside.
//
// Run is the parent: it makes the private TMPDIR, re-executes the running
// program (Options.Exe) as the stage (StageCommand), forwards signals,
// waits, removes TMPDIR and returns the command's exit status. Stage is the
// child: it applies the rules to itself and executes the command. Where
// the kernel cannot enforce the rules, nothing runs (ExitUnavailable).
package sandbox

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
)

// Exit statuses of the sandbox itself, chosen like env(1) and timeout(1)
// so that they rarely collide with the command's own: every other status
// is the command's.
const (
	// ExitUnavailable: the sandbox could not be set up (Landlock missing
	// or too old, rules refused, bad usage from the hook); nothing ran.
	ExitUnavailable = 125
	// ExitCannotRun: the command was found but could not be executed.
	ExitCannotRun = 126
	// ExitNotFound: the command was not found.
	ExitNotFound = 127
)

// MinABI is the Landlock ABI the sandbox needs: 4 (Linux 6.7), the first
// that restricts TCP connect and bind; it also covers truncate (ABI 3)
// and renames across directories (ABI 2).
const MinABI = 4

// StageCommand is the hidden first argument with which Run re-executes
// the program: main must hand such a call to Stage.
const StageCommand = "__sandbox-stage"

// ErrUnavailable wraps every reason the kernel cannot run the sandbox.
var ErrUnavailable = errors.New("the kernel sandbox is not available")

// Available reports the kernel's Landlock ABI version and, when the
// sandbox cannot run here (no Landlock, an ABI below MinABI, an
// architecture the seccomp filter does not know), an error wrapping
// ErrUnavailable that says why. A hook uses it to deny, rather than
// sandbox, a command it cannot prove read-only.
func Available() (abi int, err error) { return available() }

// ParseAllowConnect turns --allow-connect's host:port entries (comma
// separated, blanks ignored) into the TCP ports to allow. Landlock
// matches ports, not addresses: an entry allows its port on every host,
// which the documentation says.
func ParseAllowConnect(entries []string) ([]uint16, error) {
	var ports []uint16
	seen := map[uint16]bool{}
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
			if !seen[uint16(n)] {
				seen[uint16(n)] = true
				ports = append(ports, uint16(n))
			}
		}
	}
	return ports, nil
}

// WrapCommand returns a bash command line that runs command (a bash
// command string, as a host's shell tool receives it) inside the sandbox:
//
//	'/path/planserver' sandbox --read-only [--allow-connect 'h:p,…'] -- bash -c '<command>'
//
// Every part is single-quoted, so any text survives unchanged — quotes,
// here-documents, newlines, bytes that are not UTF-8 — except NUL, which
// no shell argument can carry: that is an error.
func WrapCommand(planserverPath, command string, allowConnect []string) (string, error) {
	for _, s := range append([]string{planserverPath, command}, allowConnect...) {
		if strings.IndexByte(s, 0) >= 0 {
			return "", errors.New("sandbox: a command with a NUL byte cannot be passed to a shell")
		}
	}
	if planserverPath == "" {
		return "", errors.New("sandbox: the path of planserver is empty")
	}
	parts := []string{Quote(planserverPath), "sandbox", "--read-only"}
	var allow []string
	for _, a := range allowConnect {
		if a = strings.TrimSpace(a); a != "" {
			allow = append(allow, a)
		}
	}
	if len(allow) > 0 {
		if _, err := ParseAllowConnect(allow); err != nil {
			return "", err
		}
		parts = append(parts, "--allow-connect", Quote(strings.Join(allow, ",")))
	}
	parts = append(parts, "--", "bash", "-c", Quote(command))
	return strings.Join(parts, " "), nil
}

// Quote single-quotes s for bash and sh: inside single quotes nothing is
// special, and a single quote is written as '\”.
func Quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
