package shellclass

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// Table is the read-only table: the commands a read-only command line may
// run, with their subcommands and the flags that make them write. Build
// one with DefaultTable, extend it with Extend or Apply, then share it: a
// table is only read by Classify, so concurrent use is safe.
type Table struct {
	cmds     map[string]*rule
	safeVars map[string]bool // upper-case variables assignments may set
}

// rule is one command (or subcommand) on the table.
type rule struct {
	// sub, when set, lists the subcommands allowed: the first operand
	// (after pre) must be one of them. never gives the reason of known
	// subcommands that are never read-only (git push: the network).
	sub         map[string]*rule
	never       map[string]string
	subRequired bool
	// pre consumes the options that come before the subcommand (git -C).
	pre func(c *classifier, name string, args []arg) ([]arg, string)
	// deny lists the flags that make the command write or run code.
	deny []flag
	// harmless: no argument value can make the command write, so
	// arguments the classifier cannot see are fine.
	harmless bool
	// noDashDash: "--" does not end the options (find's expression).
	noDashDash bool
	// check judges the arguments further (sed's script, dd's of=).
	check func(c *classifier, name string, args []arg) string
}

// flag is a writing flag: "-o" is a short option, matched inside clusters
// (-no); "--output" a long one, matched with =value and as an
// abbreviation (--out); "-delete" a single-dash word, matched exactly.
type flag struct {
	name string
	why  string
}

func (r *rule) deniedFlag(v string) (flag, bool) {
	for _, f := range r.deny {
		switch {
		case strings.HasPrefix(f.name, "--"):
			if !strings.HasPrefix(v, "--") {
				continue
			}
			given, _, _ := strings.Cut(v, "=")
			// getopt_long and git accept any unambiguous prefix.
			if given == f.name || (len(given) > 2 && strings.HasPrefix(f.name, given)) {
				return f, true
			}
		case len(f.name) == 2:
			if strings.HasPrefix(v, "--") {
				continue
			}
			if strings.IndexByte(v[1:], f.name[1]) >= 0 {
				return f, true
			}
		default:
			if v == f.name {
				return f, true
			}
		}
	}
	return flag{}, false
}

// notOnTable is the reason a command that is not on the table is not
// read-only; known writers, interpreters and network clients say more.
func (t *Table) notOnTable(name string, args []arg) string {
	if why, ok := neverReadOnly[name]; ok {
		if interpreters[name] {
			for _, a := range args {
				if a.known && a.val == "-c" {
					return fmt.Sprintf("`%s -c` runs a command string, which cannot be proven read-only", name)
				}
			}
		}
		return fmt.Sprintf("`%s` %s", name, why)
	}
	return fmt.Sprintf("`%s` is not on the read-only table", name)
}

const (
	whyNetwork = "talks to the network, which is never read-only"
	whyWrites  = "can write files"
	whyRuns    = "runs another program"
)

// interpreters run code from a string or a file the classifier cannot judge.
var interpreters = map[string]bool{
	"bash": true, "sh": true, "dash": true, "zsh": true, "ksh": true, "mksh": true, "fish": true, "csh": true, "tcsh": true,
	"python": true, "python2": true, "python3": true, "node": true, "nodejs": true, "deno": true, "bun": true,
	"perl": true, "ruby": true, "php": true, "lua": true, "tclsh": true, "Rscript": true, "osascript": true, "pwsh": true,
}

// neverReadOnly names commands that Extend refuses to add, with the
// reason they are not read-only.
var neverReadOnly = func() map[string]string {
	m := map[string]string{
		"eval":    "runs a string as a command, which cannot be proven read-only",
		"source":  "runs a file as commands, which cannot be proven read-only",
		".":       "runs a file as commands, which cannot be proven read-only",
		"exec":    "replaces the shell with another program, which cannot be proven read-only",
		"builtin": "cannot be proven read-only",
		"trap":    "sets a command to run later, which cannot be proven read-only",
		"alias":   "changes what a name runs, so it cannot be proven read-only",
		"sudo":    "runs a command as another user, which cannot be proven read-only",
		"doas":    "runs a command as another user, which cannot be proven read-only",
		"su":      "runs a command as another user, which cannot be proven read-only",
		"tee":     "writes files",
		"watch":   "runs a command string, which cannot be proven read-only",
		"nohup":   "writes nohup.out",
		"script":  "writes a typescript file",
	}
	for name := range interpreters {
		m[name] = "runs a program, which cannot be proven read-only"
	}
	for _, name := range []string{"curl", "wget", "nc", "ncat", "netcat", "socat", "ssh", "scp", "sftp", "rsync",
		"telnet", "ftp", "tftp", "http", "https", "xh", "aria2c", "ping", "dig", "nslookup", "host", "gh", "mosh"} {
		m[name] = whyNetwork
	}
	return m
}()

// gitNetwork lists git's subcommands that talk to other machines.
var gitNetwork = []string{"push", "fetch", "pull", "clone", "ls-remote", "send-email", "request-pull",
	"fetch-pack", "send-pack", "archive", "svn", "p4", "cvsimport", "remote-ext", "remote-fd", "daemon", "http-fetch", "http-push"}

// DefaultTable returns a new copy of the built-in read-only table.
func DefaultTable() *Table {
	t := &Table{cmds: map[string]*rule{}, safeVars: map[string]bool{}}
	harmless := func(names ...string) {
		for _, n := range names {
			t.cmds[n] = &rule{harmless: true}
		}
	}
	harmless(
		// Files and directories.
		"ls", "cat", "head", "tail", "wc", "stat", "du", "df", "realpath", "readlink", "basename", "dirname",
		"pwd", "diff", "cmp", "comm", "strings", "od", "hexdump", "zcat", "bzcat", "xzcat", "lsblk",
		// Search.
		"grep", "egrep", "fgrep", "zgrep",
		// Text.
		"cut", "tr", "paste", "join", "nl", "rev", "tac", "fold", "fmt", "column", "expand", "unexpand",
		"base64", "base32", "basenc", "md5sum", "sha1sum", "sha224sum", "sha256sum", "sha384sum", "sha512sum",
		"b2sum", "cksum", "sum", "numfmt", "expr", "factor", "tsort", "pr", "seq", "jq", "echo",
		// The system and the shell.
		"true", "false", ":", "whoami", "id", "groups", "uname", "arch", "nproc", "printenv", "tty", "locale",
		"getconf", "logname", "uptime", "free", "ps", "pgrep", "pidof", "which", "type", "whereis", "sleep", "yes",
		"cd", "pushd", "popd", "dirs", "exit", "return", "break", "continue", "shift", "wait", "jobs", "help",
		"getent", "lscpu",
	)
	deny := func(name string, flags ...flag) *rule {
		r := &rule{deny: flags}
		t.cmds[name] = r
		return r
	}
	w := func(name string) flag { return flag{name, whyWrites} }
	deny("sort", w("-o"), w("--output"), flag{"--compress-program", whyRuns})
	deny("shuf", w("-o"), w("--output"))
	deny("tree", w("-o"), w("-R"))
	deny("file", w("-C"), w("--compile"))
	deny("rg", flag{"--pre", whyRuns})
	deny("ag", flag{"--pager", whyRuns})
	deny("fd", flag{"-x", whyRuns}, flag{"--exec", whyRuns}, flag{"-X", whyRuns}, flag{"--exec-batch", whyRuns})
	t.cmds["fdfind"] = t.cmds["fd"]
	deny("yq", flag{"-i", "edits files in place"}, flag{"--inplace", "edits files in place"})
	find := deny("find",
		flag{"-exec", whyRuns}, flag{"-execdir", whyRuns}, flag{"-ok", whyRuns}, flag{"-okdir", whyRuns},
		flag{"-delete", "deletes files"}, w("-fprint"), w("-fprint0"), w("-fprintf"), w("-fls"))
	find.noDashDash = true
	deny("hostname", flag{"-F", "sets the host name"}, flag{"--file", "sets the host name"}).check = checkHostname
	deny("date", flag{"-s", "sets the clock"}, flag{"--set", "sets the clock"}).check = checkDate
	t.cmds["sed"] = &rule{check: checkSed}
	for _, n := range []string{"awk", "gawk", "mawk", "nawk"} {
		t.cmds[n] = &rule{check: checkAwk}
	}
	t.cmds["dd"] = &rule{harmless: true, check: checkDD}
	t.cmds["uniq"] = &rule{check: operandLimit("uniq", []string{"-f", "-s", "-w"})}
	t.cmds["xxd"] = &rule{check: operandLimit("xxd", []string{"-c", "-g", "-l", "-s", "-o", "-n", "-cols", "-len", "-seek", "-groupsize", "-name"})}
	t.cmds["printf"] = &rule{harmless: true, check: checkPrintf}
	t.cmds["test"] = &rule{harmless: true, check: checkTest}
	t.cmds["["] = &rule{harmless: true, check: checkTest}
	t.cmds["read"] = &rule{harmless: true, check: checkRead}
	t.cmds["set"] = &rule{harmless: true, check: checkSet}
	// Commands that run another command: that command is judged.
	t.cmds["xargs"] = &rule{harmless: true, check: checkXargs}
	t.cmds["env"] = &rule{harmless: true, check: checkEnv}
	t.cmds["command"] = &rule{harmless: true, check: checkCommand}
	t.cmds["nice"] = &rule{harmless: true, check: wrapper(map[string]bool{"-n": true, "--adjustment": true}, nil, 0)}
	t.cmds["timeout"] = &rule{harmless: true, check: wrapper(map[string]bool{"-s": true, "--signal": true, "-k": true, "--kill-after": true}, nil, 1)}
	t.cmds["stdbuf"] = &rule{harmless: true, check: wrapper(map[string]bool{"-i": true, "-o": true, "-e": true, "--input": true, "--output": true, "--error": true}, nil, 0)}
	t.cmds["time"] = &rule{harmless: true, check: wrapper(map[string]bool{"-f": true, "--format": true},
		map[string]string{"-o": whyWrites, "--output": whyWrites, "-a": whyWrites, "--append": whyWrites}, 0)}
	t.cmds["git"] = gitRule()
	t.cmds["go"] = &rule{sub: map[string]*rule{
		"version": {harmless: true},
		"env":     {deny: []flag{{"-w", "changes go's settings"}, {"-u", "changes go's settings"}}},
		"doc":     {harmless: true},
		"help":    {harmless: true},
	}, never: map[string]string{"get": whyNetwork}, subRequired: true}
	for _, v := range []string{"LANG", "LANGUAGE", "TZ", "COLUMNS", "LINES", "TERM", "NO_COLOR", "CLICOLOR",
		"CLICOLOR_FORCE", "FORCE_COLOR", "GREP_COLOR", "GREP_COLORS", "LS_COLORS", "POSIXLY_CORRECT", "TIME_STYLE",
		"QUOTING_STYLE", "BLOCK_SIZE", "DU_BLOCK_SIZE", "DF_BLOCK_SIZE", "LS_BLOCK_SIZE", "TABSIZE"} {
		t.safeVars[v] = true
	}
	return t
}

// safeVar reports whether assigning name cannot change what the commands
// on the table do: lower-case names (shell variables by convention), LC_*
// and the table's harmless upper-case names.
func (t *Table) safeVar(name string) bool {
	if t.safeVars[name] || strings.HasPrefix(name, "LC_") {
		return true
	}
	if name == "" || !validName(name) {
		return false
	}
	for _, ch := range name {
		if ch >= 'A' && ch <= 'Z' {
			return false
		}
	}
	return true
}

func validName(s string) bool {
	for i, ch := range s {
		if !(ch == '_' || ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || i > 0 && ch >= '0' && ch <= '9') {
			return false
		}
	}
	return s != ""
}

// Entry adds one command to a table. Command is a command name ("jq") or
// a command and its subcommand ("kubectl get", "git cherry"); DenyFlags
// lists the flags that make it write (-o, --output, or -delete for a
// single-dash word), and with none every argument is harmless.
type Entry struct {
	Command   string   `yaml:"command" json:"command"`
	DenyFlags []string `yaml:"deny_flags,omitempty" json:"deny_flags,omitempty"`
}

// Config is the shell_read_only section of a config file: commands added
// to the default table, upper-case variables assignments may set, and
// commands (or "git log") taken off it.
type Config struct {
	Commands  []Entry  `yaml:"commands,omitempty" json:"commands,omitempty"`
	Variables []string `yaml:"variables,omitempty" json:"variables,omitempty"`
	Remove    []string `yaml:"remove,omitempty" json:"remove,omitempty"`
}

// Extend adds entries to t. It refuses what can never be read-only (a
// network client, an interpreter, eval) and what would loosen a built-in
// rule (an entry for a command the table already allows with every
// argument, or flags for a built-in command that has its own checks).
func (t *Table) Extend(entries ...Entry) error {
	for _, e := range entries {
		if err := t.extend(e); err != nil {
			return err
		}
	}
	return nil
}

func (t *Table) extend(e Entry) error {
	words := strings.Fields(e.Command)
	if len(words) == 0 || len(words) > 2 {
		return fmt.Errorf("shell_read_only: command %q: want a command name, or a command and its subcommand", e.Command)
	}
	for _, word := range words {
		if strings.ContainsAny(word, "/=$`'\"\\*?[]{}()<>|&;") || strings.HasPrefix(word, "-") {
			return fmt.Errorf("shell_read_only: command %q: %q is not a plain command name", e.Command, word)
		}
	}
	name := words[0]
	if why, ok := neverReadOnly[name]; ok {
		return fmt.Errorf("shell_read_only: %q %s; it cannot be added to the read-only table", name, why)
	}
	var deny []flag
	for _, f := range e.DenyFlags {
		if len(f) < 2 || f[0] != '-' || strings.ContainsAny(f, " =") {
			return fmt.Errorf("shell_read_only: command %q: deny flag %q: want -x, --long or -word", e.Command, f)
		}
		deny = append(deny, flag{f, whyWrites})
	}
	r := &rule{deny: deny, harmless: len(deny) == 0}
	existing := t.cmds[name]
	if len(words) == 1 {
		if existing != nil {
			return fmt.Errorf("shell_read_only: %q is already on the read-only table", name)
		}
		t.cmds[name] = r
		return nil
	}
	sub := words[1]
	if existing == nil {
		t.cmds[name] = &rule{sub: map[string]*rule{sub: r}, subRequired: true}
		return nil
	}
	if existing.sub == nil {
		return fmt.Errorf("shell_read_only: %q is on the table without subcommands; %q cannot be added", name, e.Command)
	}
	if why, ok := existing.never[sub]; ok {
		return fmt.Errorf("shell_read_only: %q %s; it cannot be added to the read-only table", e.Command, why)
	}
	if existing.sub[sub] != nil {
		return fmt.Errorf("shell_read_only: %q is already on the read-only table", e.Command)
	}
	existing.sub[sub] = r
	return nil
}

// Apply adds a config section to t: its commands, its variables, then its
// removals.
func (t *Table) Apply(c Config) error {
	if err := t.Extend(c.Commands...); err != nil {
		return err
	}
	for _, v := range c.Variables {
		if !validName(v) {
			return fmt.Errorf("shell_read_only: variable %q is not a variable name", v)
		}
		switch {
		case v == "PATH" || v == "IFS" || v == "HOME" || v == "ENV" || v == "BASH_ENV" || v == "PS4" || v == "SHELLOPTS" ||
			v == "BASHOPTS" || v == "PROMPT_COMMAND" || v == "CDPATH" || strings.HasPrefix(v, "LD_") || strings.HasPrefix(v, "GIT_") ||
			strings.HasPrefix(v, "DYLD_") || strings.HasSuffix(v, "PAGER") || v == "EDITOR" || v == "VISUAL":
			return fmt.Errorf("shell_read_only: variable %s changes what commands run; it cannot be made safe to assign", v)
		}
		t.safeVars[v] = true
	}
	for _, name := range c.Remove {
		words := strings.Fields(name)
		switch {
		case len(words) == 1 && t.cmds[words[0]] != nil:
			delete(t.cmds, words[0])
		case len(words) == 2 && t.cmds[words[0]] != nil && t.cmds[words[0]].sub[words[1]] != nil:
			delete(t.cmds[words[0]].sub, words[1])
		default:
			return fmt.Errorf("shell_read_only: remove %q: not on the read-only table", name)
		}
	}
	return nil
}

// Commands lists the table's command names, sorted (for documentation
// and tests).
func (t *Table) Commands() []string {
	names := make([]string, 0, len(t.cmds))
	for n := range t.cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// LoadFile returns the default table extended by the shell_read_only
// section of the YAML (or JSON) file at path. An empty path is the
// default table.
func LoadFile(path string) (*Table, error) {
	t := DefaultTable()
	if path == "" {
		return t, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("shell read-only table: %w", err)
	}
	var file struct {
		ShellReadOnly *Config `yaml:"shell_read_only"`
	}
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	dec.KnownFields(true)
	if err := dec.Decode(&file); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("shell read-only table %s: %w", path, err)
	}
	if file.ShellReadOnly == nil {
		return nil, fmt.Errorf("shell read-only table %s: no shell_read_only section", path)
	}
	if err := t.Apply(*file.ShellReadOnly); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}
