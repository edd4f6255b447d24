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

// Table is the strict table: the commands Strict allows, each with the
// options it refuses, and the variables a command line may set. Build one
// with DefaultTable, extend it with Extend or Apply, then share it: Strict
// only reads a table, so concurrent use is safe.
type Table struct {
	cmds map[string]*rule
	vars map[string]bool // variables assignments may set, besides LC_*
}

// rule is one command (or an operator's subcommand) on the table.
type rule struct {
	// deny lists the options that write or run a program, matched the way
	// getopt reads them (see scanDeny).
	deny []flag
	// check judges the arguments with a parser of its own, for commands
	// whose operands or option values matter (find, date, uniq, xxd).
	check func(name string, args []string) string
	// sub, for an operator's "kubectl get", lists the subcommands allowed:
	// the first argument must be one of them.
	sub map[string]*rule
}

// harmless reports whether no argument can make the command write or run
// anything: then a pathname pattern among its arguments (which could
// expand to any file name, "-o" included) is allowed too.
func (r *rule) harmless() bool { return len(r.deny) == 0 && r.check == nil && r.sub == nil }

// flag is a refused option: "-o" a short one, matched anywhere in a
// cluster (-no); "--output" a long one, matched with =value and as an
// abbreviation (--out).
type flag struct {
	name string
	why  string
}

const (
	whyWritesFile = "writes a file"
	whyRunsProg   = "runs a program"
)

// DefaultTable returns a new copy of the built-in strict table.
//
// Every command on it is a program (or bash builtin) that, as its
// documentation and source say, cannot write a file, run another program
// or reach the network with the options left to it. Left off on purpose,
// so refused: git (a repository's own configuration runs programs:
// core.pager, core.fsmonitor, textconv, gpg.program; status and diff
// rewrite the index), go (go version may download a toolchain), getent
// (DNS), sed and awk (their programs are languages that write and run
// commands; refusing a read beats letting a write through), man, less,
// more (pagers run commands), tar, make, npm, every interpreter and every
// command that runs another one (xargs, env, nice, timeout, stdbuf, time,
// command, exec, sudo, watch). Also left off, in doubt: test and [ (-v
// evaluates a subscript, which runs commands), read, set, zcat (runs
// gzip), fd (-x), shuf (-o), yq (-i), hostname (sets the name), sleep and
// yes (harmless but never needed to read), b2sum and the like (not asked
// for).
func DefaultTable() *Table {
	t := &Table{cmds: map[string]*rule{}, vars: map[string]bool{}}
	// Commands no option of which writes, runs a program or reaches the
	// network (GNU coreutils, grep, util-linux, procps, jq, bash builtins).
	for _, n := range []string{
		"ls", "cat", "head", "tail", "wc", "stat", "du", "df", "realpath", "readlink", "basename", "dirname", "pwd",
		"cmp", "comm", "strings", "od", "hexdump", "grep", "egrep", "fgrep",
		"cut", "tr", "paste", "join", "nl", "rev", "tac", "fold", "fmt", "column", "expand", "unexpand", "jq",
		"base64", "md5sum", "sha1sum", "sha224sum", "sha256sum", "sha384sum", "sha512sum", "cksum", "seq", "echo",
		"true", "false", "whoami", "id", "uname", "nproc", "printenv", "ps", "pgrep", "which", "type", "cd",
	} {
		t.cmds[n] = &rule{}
	}
	deny := func(name string, flags ...flag) { t.cmds[name] = &rule{deny: flags} }
	deny("sort", flag{"-o", whyWritesFile}, flag{"--output", whyWritesFile}, flag{"--compress-program", whyRunsProg},
		flag{"-T", "writes temporary files in a directory it names"}, flag{"--temporary-directory", "writes temporary files in a directory it names"})
	deny("rg", flag{"--pre", whyRunsProg}, flag{"--pre-glob", "chooses the files --pre runs a program on"},
		flag{"-z", "runs decompression programs"}, flag{"--search-zip", "runs decompression programs"}, flag{"--hostname-bin", whyRunsProg})
	deny("tree", flag{"-o", whyWritesFile}, flag{"--output", whyWritesFile}, flag{"-R", "writes 00Tree.html in every directory"})
	deny("file", flag{"-C", "writes a compiled magic file"}, flag{"--compile", "writes a compiled magic file"},
		flag{"-p", "restores access times, which writes them"}, flag{"--preserve-date", "restores access times, which writes them"},
		flag{"-z", "may run decompression programs"}, flag{"-Z", "may run decompression programs"},
		flag{"--uncompress", "may run decompression programs"}, flag{"--uncompress-noreport", "may run decompression programs"},
		flag{"-S", "turns off file's own sandbox"}, flag{"--no-sandbox", "turns off file's own sandbox"})
	deny("diff", flag{"-l", "runs pr"}, flag{"--paginate", "runs pr"})
	t.cmds["find"] = &rule{check: checkFind}
	t.cmds["date"] = &rule{check: checkDate}
	t.cmds["uniq"] = &rule{check: checkUniq}
	t.cmds["xxd"] = &rule{check: checkXxd}
	t.cmds["printf"] = &rule{check: checkPrintf}
	for _, v := range []string{"LANG", "LANGUAGE", "TZ", "NO_COLOR", "CLICOLOR", "COLUMNS", "LINES", "GREP_COLOR",
		"GREP_COLORS", "LS_COLORS", "TIME_STYLE", "QUOTING_STYLE", "BLOCK_SIZE", "DU_BLOCK_SIZE", "DF_BLOCK_SIZE",
		"LS_BLOCK_SIZE", "TABSIZE"} {
		t.vars[v] = true
	}
	return t
}

// safeVar reports whether a command line may set name: LC_* and the
// table's variables. Every other name (PATH, IFS, HOME, LD_PRELOAD,
// BASH_ENV, GIT_*, PAGER, a lower-case shell variable read by nothing
// here) is refused.
func (t *Table) safeVar(name string) bool {
	return t.vars[name] || (strings.HasPrefix(name, "LC_") && validName(name))
}

func validName(s string) bool {
	for i, ch := range s {
		if !(ch == '_' || ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || i > 0 && ch >= '0' && ch <= '9') {
			return false
		}
	}
	return s != ""
}

// neverStrict names commands that can never be on the strict table, with
// the reason: Strict says it, and Extend refuses to add them. Commands
// that certainly write are in writers (writes.go) and refused the same way.
var neverStrict = func() map[string]string {
	m := map[string]string{
		"git":    "is not on the strict table: a repository's own configuration (core.pager, core.fsmonitor, textconv, gpg.program) makes it run programs, and status and diff rewrite the index",
		"go":     "is not on the strict table: it may download a toolchain or modules and run programs (go version included)",
		"getent": "is not on the strict table: it looks names up through DNS, which reaches the network",
		"man":    "is not on the strict table: it runs a pager and formatters (man -P names a program)",
		"tar":    "is not on the strict table: it writes files and can run programs (--to-command, -I)",
		"make":   "runs the commands of a makefile",
		"eval":   "runs a string as a command",
		"source": "runs a file as commands",
		".":      "runs a file as commands",
		"exec":   "replaces the shell with another command",
		"trap":   "sets a command to run later",
		"alias":  "changes what a name runs",
		"test":   "is not on the strict table: -v evaluates a subscript, which can run commands",
		"[":      "is not on the strict table: -v evaluates a subscript, which can run commands",
	}
	for _, n := range []string{"xargs", "env", "nice", "timeout", "stdbuf", "time", "command", "builtin", "sudo", "doas",
		"su", "watch", "nohup", "setsid", "flock", "chroot", "unshare", "nsenter", "ionice", "taskset", "chrt", "strace",
		"ltrace", "gdb", "script", "parallel", "run-parts", "busybox", "systemd-run", "coproc", "fd", "fdfind", "runuser",
		"pkexec", "sg", "firejail", "bwrap", "at", "batch", "crontab"} {
		m[n] = "runs another command, which only the sandbox can contain"
	}
	for _, n := range []string{"bash", "sh", "dash", "zsh", "ksh", "mksh", "fish", "csh", "tcsh", "python", "python2",
		"python3", "node", "nodejs", "deno", "bun", "perl", "ruby", "php", "lua", "tclsh", "Rscript", "osascript", "pwsh",
		"irb", "jshell", "java", "kotlin", "scala", "groovy", "swift", "julia", "R", "luajit", "guile", "racket", "wish",
		"expect", "elixir", "erl", "xonsh", "nu", "elvish", "toybox"} {
		m[n] = "is an interpreter: its program can do anything"
	}
	for _, n := range []string{"sed", "awk", "gawk", "mawk", "nawk", "yq", "vim", "ex"} {
		m[n] = "is not on the strict table: its script is a language that can write files and run commands"
	}
	for _, n := range []string{"less", "more", "most", "pg", "vi", "nvim", "view", "emacs", "nano", "ed"} {
		m[n] = "is a pager or an editor, which can write files and run commands"
	}
	for _, n := range []string{"npm", "npx", "yarn", "pnpm", "pip", "pip3", "cargo", "gem", "bundle", "composer",
		"poetry", "uv", "pipx", "apt", "apt-get", "brew", "mvn", "gradle", "ninja", "cmake"} {
		m[n] = "is not on the strict table: it runs build rules or package scripts, and installs"
	}
	for _, n := range networkClients {
		m[n] = whyNetwork
	}
	return m
}()

// notOnTable is the reason Strict refuses a command that is not on t.
func notOnTable(name string) string {
	if why, ok := writers[name]; ok {
		return fmt.Sprintf("`%s` %s", name, why)
	}
	if why, ok := neverStrict[name]; ok {
		return fmt.Sprintf("`%s` %s", name, why)
	}
	return fmt.Sprintf("`%s` is not on the strict table", name)
}

// Entry adds one command to a table. Command is a command name ("kubectl")
// or a command and its subcommand ("kubectl get"); DenyFlags lists the
// flags that make it write or run a program (-o, --output), and with none
// every argument is harmless (a pattern such as *.yaml is then allowed).
type Entry struct {
	Command   string   `yaml:"command" json:"command"`
	DenyFlags []string `yaml:"deny_flags,omitempty" json:"deny_flags,omitempty"`
}

// Config is the shell_read_only section of a config file: commands added
// to the strict table, variables a command line may set, and commands (or
// "kubectl get") taken off it.
type Config struct {
	Commands  []Entry  `yaml:"commands,omitempty" json:"commands,omitempty"`
	Variables []string `yaml:"variables,omitempty" json:"variables,omitempty"`
	Remove    []string `yaml:"remove,omitempty" json:"remove,omitempty"`
}

// Extend adds entries to t. It refuses what can never be strict (an
// interpreter, a command that runs another, a network client, git, a
// writer) and what is on the table already (a second rule would loosen
// the first).
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
		if strings.ContainsAny(word, "/=$`'\"\\*?[]{}()<>|&;~") || strings.HasPrefix(word, "-") {
			return fmt.Errorf("shell_read_only: command %q: %q is not a plain command name", e.Command, word)
		}
	}
	name := words[0]
	if why, ok := neverStrict[name]; ok {
		return fmt.Errorf("shell_read_only: %q %s; it cannot be added to the strict table", name, strings.TrimPrefix(why, "is not on the strict table: "))
	}
	if why, ok := writers[name]; ok {
		return fmt.Errorf("shell_read_only: %q %s; it cannot be added to the strict table", name, why)
	}
	var deny []flag
	for _, f := range e.DenyFlags {
		if len(f) < 2 || f[0] != '-' || f == "--" || strings.ContainsAny(f, " =") || (!strings.HasPrefix(f, "--") && len(f) != 2) {
			return fmt.Errorf("shell_read_only: command %q: deny flag %q: want -x or --long", e.Command, f)
		}
		deny = append(deny, flag{f, "is refused by the operator's table"})
	}
	r := &rule{deny: deny}
	existing := t.cmds[name]
	if len(words) == 1 {
		if existing != nil {
			return fmt.Errorf("shell_read_only: %q is already on the strict table", name)
		}
		t.cmds[name] = r
		return nil
	}
	sub := words[1]
	if existing == nil {
		t.cmds[name] = &rule{sub: map[string]*rule{sub: r}}
		return nil
	}
	if existing.sub == nil {
		return fmt.Errorf("shell_read_only: %q is on the strict table without subcommands; %q cannot be added", name, e.Command)
	}
	if existing.sub[sub] != nil {
		return fmt.Errorf("shell_read_only: %q is already on the strict table", e.Command)
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
		if why := unsafeVar(v); why != "" {
			return fmt.Errorf("shell_read_only: variable %s %s; it cannot be made safe to assign", v, why)
		}
		t.vars[v] = true
	}
	for _, name := range c.Remove {
		words := strings.Fields(name)
		switch {
		case len(words) == 1 && t.cmds[words[0]] != nil:
			delete(t.cmds, words[0])
		case len(words) == 2 && t.cmds[words[0]] != nil && t.cmds[words[0]].sub[words[1]] != nil:
			delete(t.cmds[words[0]].sub, words[1])
			if len(t.cmds[words[0]].sub) == 0 {
				delete(t.cmds, words[0])
			}
		default:
			return fmt.Errorf("shell_read_only: remove %q: not on the strict table", name)
		}
	}
	return nil
}

// unsafeVar says why assigning v can change what a command runs or
// loads, or "".
func unsafeVar(v string) string {
	switch v {
	case "PATH", "IFS", "HOME", "ENV", "BASH_ENV", "PS4", "SHELLOPTS", "BASHOPTS", "PROMPT_COMMAND", "CDPATH",
		"GLOBIGNORE", "SHELL", "TMPDIR", "EDITOR", "VISUAL", "BROWSER", "GCONV_PATH", "LOCPATH", "NLSPATH",
		"GLIBC_TUNABLES", "HOSTALIASES", "RES_OPTIONS", "LOCALDOMAIN", "RIPGREP_CONFIG_PATH", "GREP_OPTIONS",
		"POSIXLY_CORRECT", "TERMINFO", "TERMINFO_DIRS", "MAGIC":
		return "changes what commands run, load or parse"
	}
	for _, p := range []string{"LD_", "DYLD_", "GIT_", "BASH_", "PYTHON", "PERL", "RUBY", "NODE_", "MALLOC_", "LC_"} {
		if strings.HasPrefix(v, p) {
			if p == "LC_" {
				return "is allowed already (every LC_* is)"
			}
			return "changes what commands run, load or parse"
		}
	}
	if strings.HasSuffix(v, "PAGER") || strings.HasSuffix(v, "EDITOR") {
		return "names a program to run"
	}
	return ""
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
