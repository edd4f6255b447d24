package shellclass

import (
	"fmt"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Writes reports whether command, as bash would run it, certainly writes a
// file or reaches the network, and why, in words a model can act on:
// "`>` writes notes.txt", "`rm` removes files", "`git commit` records a
// commit". It looks everywhere in the line (pipelines, lists, subshells,
// substitutions, function bodies, bash -c strings) but says yes only for
// literal, certain cases: a command named by an expansion, a command the
// line redefines as a function, a writer asked for --help or a dry run,
// or a command it does not know says nothing. It is never the only
// protection: a miss runs the command in the sandbox, which refuses the
// write, or goes to Strict, which refuses anything not plain. It never
// panics.
func Writes(command string) (writes bool, reason string) {
	defer func() {
		if r := recover(); r != nil {
			writes, reason = false, ""
		}
	}()
	reason = writesIn(command, 0)
	return reason != "", reason
}

// maxInner bounds how deep Writes follows command strings (bash -c 'bash
// -c …', eval).
const maxInner = 4

func writesIn(command string, depth int) string {
	f, why := parse(command)
	if why != "" || depth > maxInner {
		return ""
	}
	w := &writesWalker{depth: depth, defs: map[string][]uint{}}
	syntax.Walk(f, func(n syntax.Node) bool {
		switch x := n.(type) {
		case *syntax.FuncDecl:
			if x.Name != nil {
				w.defs[x.Name.Value] = append(w.defs[x.Name.Value], x.Pos().Offset())
			}
			w.repeats = append(w.repeats, [2]uint{x.Pos().Offset(), x.End().Offset()})
		case *syntax.WhileClause, *syntax.ForClause:
			w.repeats = append(w.repeats, [2]uint{n.Pos().Offset(), n.End().Offset()})
		case *syntax.CallExpr:
			// alias NAME=… can change what NAME runs anywhere after it.
			if len(x.Args) > 1 && x.Args[0].Lit() == "alias" {
				for _, a := range x.Args[1:] {
					if name, _, ok := strings.Cut(evalWord(a).val, "="); ok {
						w.defs[name] = append(w.defs[name], 0)
					}
				}
			}
		}
		return true
	})
	var reason string
	syntax.Walk(f, func(n syntax.Node) bool {
		if reason != "" {
			return false
		}
		switch x := n.(type) {
		case *syntax.Redirect:
			reason = redirectWrites(x)
		case *syntax.CallExpr:
			reason = w.call(x)
		}
		return reason == ""
	})
	return reason
}

type writesWalker struct {
	depth int
	// defs are where the line defines each function (and, at 0, alias).
	defs map[string][]uint
	// repeats are the spans of loops and function bodies: code in them
	// may run again after a definition that comes later in the text.
	repeats [][2]uint
}

// shadowed reports whether a call of name at offset may run a function
// (or alias) of the line instead of the program: a definition comes
// before it, or the call is in a loop or a function body and the line
// defines name anywhere.
func (w *writesWalker) shadowed(name string, at uint) bool {
	defs := w.defs[name]
	for _, d := range defs {
		if d <= at {
			return true
		}
	}
	if len(defs) == 0 {
		return false
	}
	for _, r := range w.repeats {
		if r[0] <= at && at < r[1] {
			return true
		}
	}
	return false
}

// redirectWrites names an output redirection to a file, or any
// redirection to /dev/tcp or /dev/udp.
func redirectWrites(rd *syntax.Redirect) string {
	if rd.Word == nil {
		return ""
	}
	w := evalWord(rd.Word)
	if !w.literal {
		return ""
	}
	switch rd.Op {
	case syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc:
		return "" // the word is a delimiter or a string, not a file
	}
	if strings.HasPrefix(w.val, "/dev/tcp/") || strings.HasPrefix(w.val, "/dev/udp/") {
		return fmt.Sprintf("`%s %s` opens a network connection, which plan mode refuses", rd.Op, w.val)
	}
	switch rd.Op {
	case syntax.RdrOut, syntax.AppOut, syntax.RdrClob, syntax.AppClob, syntax.RdrAll, syntax.AppAll,
		syntax.RdrAllClob, syntax.AppAllClob, syntax.RdrInOut:
	case syntax.DplOut:
		if isDescriptor(w.val) {
			return ""
		}
	default:
		return ""
	}
	if isSink(w.val) {
		return ""
	}
	return fmt.Sprintf("`%s` writes %s", rd.Op, w.val)
}

// isSink reports whether writing to path writes no file: /dev/null, the
// process's own streams and terminal.
func isSink(path string) bool {
	switch path {
	case "/dev/null", "/dev/stdout", "/dev/stderr", "/dev/stdin", "/dev/tty", "-":
		return true
	}
	for _, dir := range []string{"/dev/fd/", "/proc/self/fd/", "/dev/pts/"} {
		if n, ok := strings.CutPrefix(path, dir); ok && n != "" && strings.Trim(n, "0123456789") == "" {
			return true
		}
	}
	return false
}

// call judges one simple command.
func (w *writesWalker) call(x *syntax.CallExpr) string {
	if len(x.Args) == 0 {
		return ""
	}
	args := make([]word, len(x.Args))
	for i, a := range x.Args {
		args[i] = evalWord(a)
	}
	return w.run(args, x.Pos().Offset())
}

// run judges args[0] run with args[1:], a call at offset at (where a
// function or alias of the line may run instead; not under env, sudo, …).
func (w *writesWalker) run(args []word, at uint) string {
	shellLookup := true
	for range 8 { // wrappers around wrappers
		if len(args) == 0 || !args[0].literal {
			return ""
		}
		name := args[0].val
		if shellLookup && w.shadowed(name, at) {
			return ""
		}
		if strings.Contains(name, "/") {
			i := strings.LastIndexByte(name, '/')
			if !systemDirs[name[:i]] {
				return ""
			}
			name = name[i+1:]
		}
		rest := args[1:]
		if unwrap, ok := wrappers[name]; ok {
			inner, why := unwrap(name, rest)
			if why != "" {
				return why
			}
			if inner < 0 {
				return ""
			}
			// A wrapper runs a program: no function or alias of the line.
			args, shellLookup = rest[inner:], false
			continue
		}
		return w.judge(name, rest)
	}
	return ""
}

// systemDirs are the directories a command may be named in by path and
// still be taken for the program of its base name.
var systemDirs = map[string]bool{"/bin": true, "/usr/bin": true, "/usr/local/bin": true, "/sbin": true, "/usr/sbin": true}

// judge names what the command name certainly does with args, or "".
func (w *writesWalker) judge(name string, args []word) string {
	if mayAskHelp(args) {
		return ""
	}
	if check, ok := writeChecks[name]; ok {
		return check(w, name, args)
	}
	if readSwitch(name, args) {
		return ""
	}
	if why, ok := writers[name]; ok {
		return fmt.Sprintf("`%s` %s", name, why)
	}
	if isNetworkClient[name] {
		return fmt.Sprintf("`%s` %s", name, whyNetwork)
	}
	return ""
}

// mayAskHelp reports whether an argument (before --) could be --help,
// --version or the like, which makes a writer print and exit.
func mayAskHelp(args []word) bool {
	for _, a := range args {
		if a.literal && a.val == "--" {
			return false
		}
		if a.literal && strings.HasPrefix(a.val, "--") && len(a.val) > 3 {
			key, _, _ := strings.Cut(a.val, "=")
			for _, h := range []string{"--help", "--version", "--usage"} {
				if strings.HasPrefix(h, key) {
					return true
				}
			}
			continue
		}
		for _, h := range []string{"--help", "--version", "--usage", "-h", "-V", "-?", "help"} {
			if h == "help" && a.literal {
				continue // a subcommand's help is judged by its command
			}
			if a.couldBe(h) {
				return true
			}
		}
	}
	return false
}

const whyNetwork = "talks to the network, which plan mode refuses"

// networkClients certainly reach the network (or another machine's files).
var networkClients = []string{"curl", "wget", "nc", "ncat", "netcat", "socat", "ssh", "scp", "sftp", "rsync", "telnet",
	"ftp", "tftp", "http", "https", "xh", "aria2c", "ping", "ping6", "dig", "nslookup", "host", "whois", "gh", "mosh",
	"traceroute", "tracepath", "nmap"}

var isNetworkClient = func() map[string]bool {
	m := map[string]bool{}
	for _, n := range networkClients {
		m[n] = true
	}
	return m
}()

// writers are the commands that write whenever they do anything at all;
// Strict refuses them with the same reason and Extend will not add them.
var writers = map[string]string{
	"rm": "removes files", "rmdir": "removes directories", "unlink": "removes a file", "mv": "moves files",
	"cp": "copies files (it writes the copies)", "mkdir": "creates directories", "touch": "creates files or changes their times",
	"ln": "creates links", "link": "creates a link", "chmod": "changes file modes", "chown": "changes file owners",
	"chgrp": "changes file groups", "truncate": "changes file sizes", "shred": "overwrites files",
	"install": "copies files into place", "mkfifo": "creates a named pipe", "mknod": "creates a special file",
	"patch": "changes files", "chattr": "changes file attributes", "setfattr": "changes extended attributes",
	"setfacl": "changes access control lists", "rename": "renames files", "tee": "writes the files it names",
	"kill": "signals other processes", "pkill": "signals other processes", "killall": "signals other processes",
	"dd": "writes the file of= names", "gofmt": "rewrites files with -w", "goimports": "rewrites files with -w",
	"zip": "writes an archive", "unzip": "extracts files", "gzip": "compresses files in place",
	"gunzip": "decompresses files in place", "bzip2": "compresses files in place", "bunzip2": "decompresses files in place",
	"xz": "compresses files in place", "unxz": "decompresses files in place", "zstd": "compresses files",
}

// readSwitches are the options that make a writer only show what it would
// do (a dry run, a test).
var readSwitches = map[string][]string{
	"patch":   {"--dry-run", "--check"},
	"rename":  {"-n", "--no-act", "--nono", "--dry-run"},
	"setfacl": {"--test"},
}

// readSwitch reports whether args hold one of name's read switches.
func readSwitch(name string, args []word) bool {
	for _, r := range readSwitches[name] {
		if len(r) == 2 && hasOption(args, r[1:]) || len(r) > 2 && hasOption(args, "", r) {
			return true
		}
	}
	return false
}

// writeChecks judge the commands that write only with some arguments. It
// is built in init because some checks (bash -c, eval) call Writes again,
// which a variable's initializer cannot.
var writeChecks map[string]func(w *writesWalker, name string, args []word) string

func init() {
	writeChecks = map[string]func(*writesWalker, string, []word) string{
		"tee": teeWrites, "dd": ddWrites, "sed": sedWrites, "perl": perlWrites, "yq": yqWrites, "sort": sortWrites,
		"find": findWrites, "git": gitWrites, "go": goWrites, "kill": killWrites, "pkill": killWrites,
		"killall": killWrites, "gofmt": gofmtWrites, "goimports": gofmtWrites, "socat": socatWrites,
		"rsync": rsyncWrites, "curl": curlWrites, "wget": curlWrites, "ssh": sshWrites, "gh": ghWrites,
		"bash": shellWrites, "sh": shellWrites, "dash": shellWrites, "zsh": shellWrites, "ksh": shellWrites,
		"eval": evalWrites, "tar": tarWrites, "unzip": unzipWrites, "zip": zipWrites,
	}
	for _, n := range []string{"gzip", "gunzip", "bzip2", "bunzip2", "xz", "unxz", "zstd"} {
		writeChecks[n] = compressWrites
	}
	for _, n := range []string{"python", "python3", "python2"} {
		writeChecks[n] = pythonWrites
	}
	for n := range installers {
		writeChecks[n] = installWrites
	}
}

// literals returns the values of args when every one is literal.
func literals(args []word) ([]string, bool) {
	out := make([]string, len(args))
	for i, a := range args {
		if !a.literal {
			return nil, false
		}
		out[i] = a.val
	}
	return out, true
}

// shortHas reports whether v is a cluster of short options (-abc) that
// holds c.
func shortHas(v string, c byte) bool {
	return len(v) > 1 && v[0] == '-' && v[1] != '-' && strings.IndexByte(v[1:], c) >= 0
}

// longIs reports whether v (with any =value) names the long option full,
// written out or abbreviated to at least min characters.
func longIs(v, full string, min int) bool {
	key, _, _ := strings.Cut(v, "=")
	return strings.HasPrefix(key, "--") && len(key) >= min && strings.HasPrefix(full, key)
}

// hasOption reports whether a literal argument before -- is one of the
// short options in shorts (in a cluster) or the long ones (abbreviated
// to at least their first three letters).
func hasOption(args []word, shorts string, longs ...string) bool {
	for _, a := range args {
		if !a.literal {
			continue
		}
		if a.val == "--" {
			return false
		}
		for i := 0; i < len(shorts); i++ {
			if shortHas(a.val, shorts[i]) {
				return true
			}
		}
		for _, l := range longs {
			if longIs(a.val, l, min(len(l), 5)) {
				return true
			}
		}
	}
	return false
}

func teeWrites(_ *writesWalker, name string, args []word) string {
	end := false
	for _, a := range args {
		if !a.literal {
			continue
		}
		if !end && a.val == "--" {
			end = true
			continue
		}
		if !end && strings.HasPrefix(a.val, "-") && a.val != "-" {
			continue
		}
		if !isSink(a.val) {
			return fmt.Sprintf("`%s` writes %s", name, a.val)
		}
	}
	return ""
}

func ddWrites(_ *writesWalker, name string, args []word) string {
	for _, a := range args {
		if out, ok := strings.CutPrefix(a.val, "of="); ok && a.literal && !isSink(out) {
			return fmt.Sprintf("`%s of=` writes %s", name, out)
		}
	}
	return ""
}

// sedWrites finds -i and --in-place. sed's scripts are not read here: a
// w inside a regular expression must never be taken for the w command.
func sedWrites(_ *writesWalker, name string, args []word) string {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !a.literal {
			continue
		}
		v := a.val
		switch {
		case v == "--":
			return ""
		case longIs(v, "--in-place", 3):
			return fmt.Sprintf("`%s --in-place` edits files in place", name)
		case strings.HasPrefix(v, "--"):
			if !strings.Contains(v, "=") && (longIs(v, "--expression", 3) || longIs(v, "--file", 3) || longIs(v, "--line-length", 3)) {
				i++
			}
		case len(v) > 1 && v[0] == '-':
			inPlace, valueNext := clusterHas(v, 'i', "nrEsuz", "efl")
			if inPlace {
				return fmt.Sprintf("`%s -i` edits files in place", name)
			}
			if valueNext {
				i++
			}
		}
	}
	return ""
}

// perlWrites finds -i among perl's switches, which come before the
// program's own arguments.
func perlWrites(_ *writesWalker, name string, args []word) string {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !a.literal || len(a.val) < 2 || a.val[0] != '-' || a.val == "--" {
			return ""
		}
		inPlace, valueNext := clusterHas(a.val, 'i', "npaswctTuUWXS", "eE")
		if inPlace {
			return fmt.Sprintf("`%s -i` edits files in place", name)
		}
		if valueNext {
			i++
		}
	}
	return ""
}

// clusterHas reads a cluster of short options, v ("-ne", "-i.bak"), as
// sed and perl do, and reports whether it holds want. Options in flags
// take no value and the cluster goes on after them; one in valued takes
// the rest of the cluster as its value, or the next word when it ends the
// cluster (valueNext); any other option ends what is read of it, since
// its value cannot be told apart from options. want counts only before
// the first of those.
func clusterHas(v string, want byte, flags, valued string) (found, valueNext bool) {
	for j := 1; j < len(v); j++ {
		switch c := v[j]; {
		case c == want:
			return true, false
		case strings.IndexByte(flags, c) >= 0:
		case strings.IndexByte(valued, c) >= 0:
			return false, j == len(v)-1
		default:
			return false, false
		}
	}
	return false, false
}

func yqWrites(_ *writesWalker, name string, args []word) string {
	for _, a := range args {
		if !a.literal {
			continue
		}
		v := a.val
		if v == "--" {
			return ""
		}
		key, val, hasVal := strings.Cut(v, "=")
		if hasVal && (val == "false" || val == "0") {
			continue
		}
		if v == "-i" || key == "--inplace" || longIs(key, "--in-place", 5) {
			return fmt.Sprintf("`%s %s` edits files in place", name, key)
		}
	}
	return ""
}

// sortWrites finds -o and --output with the file they name.
func sortWrites(_ *writesWalker, name string, args []word) string {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !a.literal {
			continue
		}
		v := a.val
		target := ""
		switch {
		case v == "--":
			return ""
		case longIs(v, "--output", 4):
			if _, val, ok := strings.Cut(v, "="); ok {
				target = val
			} else if i+1 < len(args) && args[i+1].literal {
				target = args[i+1].val
			} else {
				return ""
			}
		case strings.HasPrefix(v, "--"):
			continue
		case len(v) > 1 && v[0] == '-':
		cluster:
			for j := 1; j < len(v); j++ {
				switch c := v[j]; {
				case c == 'o':
					if j < len(v)-1 {
						target = v[j+1:]
					} else if i+1 < len(args) && args[i+1].literal {
						target = args[i+1].val
					} else {
						return ""
					}
					break cluster
				case strings.IndexByte("bdfgiMhnRrVcCmsuz", c) >= 0:
				case strings.IndexByte("ktST", c) >= 0:
					if j == len(v)-1 {
						i++
					}
					break cluster
				default:
					break cluster
				}
			}
		}
		if target != "" && !isSink(target) {
			return fmt.Sprintf("`%s -o` writes %s", name, target)
		}
	}
	return ""
}

// findWrites walks find's expression with the arities Strict knows and
// names -delete and -fprint* (which create their file even when nothing
// matches).
func findWrites(_ *writesWalker, name string, args []word) string {
	vals, ok := literals(args)
	if !ok {
		return ""
	}
	i := 0
	for i < len(vals) && !strings.HasPrefix(vals[i], "-") && vals[i] != "(" && vals[i] != "!" {
		i++
	}
	for ; i < len(vals); i++ {
		v := vals[i]
		switch v {
		case "-delete":
			return fmt.Sprintf("`%s -delete` deletes files", name)
		case "-fprint", "-fprint0", "-fprintf", "-fls":
			if i+1 < len(vals) && !isSink(vals[i+1]) {
				return fmt.Sprintf("`%s %s` writes %s", name, v, vals[i+1])
			}
			return ""
		case "-exec", "-execdir", "-ok", "-okdir":
			for i++; i < len(vals) && vals[i] != ";" && vals[i] != "+"; i++ {
			}
			continue
		}
		n, ok := findArity[v]
		if !ok {
			n, ok = newerArity(v)
		}
		if !ok {
			return ""
		}
		i += n
	}
	return ""
}

// killWrites: kill -l lists signals and signal 0 only checks that a
// process exists; anything else signals.
func killWrites(_ *writesWalker, name string, args []word) string {
	for i, a := range args {
		if !a.literal {
			return "" // kill "$sig" could be -l or -0
		}
		v := a.val
		if v == "--" {
			break
		}
		if v == "-l" || v == "-L" || longIs(v, "--list", 4) || longIs(v, "--table", 4) {
			return ""
		}
		if v == "-0" || v == "-SIG0" || (v == "-s" || v == "-n") && i+1 < len(args) && args[i+1].val == "0" {
			return ""
		}
	}
	if len(args) == 0 {
		return "" // kill alone prints its usage; pkill alone refuses to run
	}
	return fmt.Sprintf("`%s` %s", name, writers[name])
}

// gofmtWrites finds -w (Go's flag package: -w, --w, -w=true).
func gofmtWrites(_ *writesWalker, name string, args []word) string {
	for _, a := range args {
		if !a.literal {
			continue
		}
		v := strings.TrimPrefix(a.val, "-")
		if v == a.val {
			continue
		}
		v = strings.TrimPrefix(v, "-")
		if v == "w" || v == "w=true" || v == "w=1" {
			return fmt.Sprintf("`%s -w` rewrites files", name)
		}
	}
	return ""
}

func rsyncWrites(_ *writesWalker, name string, args []word) string {
	if hasOption(args, "n", "--dry-run") || hasOption(args, "", "--list-only") {
		return ""
	}
	return fmt.Sprintf("`%s` copies files, often over the network, which plan mode refuses", name)
}

// curlWrites: curl and wget reach the network unless every URL could be
// a file: URL.
func curlWrites(_ *writesWalker, name string, args []word) string {
	if hasOption(args, "M", "--manual") {
		return "" // prints the manual
	}
	for _, a := range args {
		switch {
		case a.literal && strings.HasPrefix(strings.ToLower(a.val), "file:"):
			return ""
		case !a.literal && (a.splits || strings.HasPrefix("file:", strings.ToLower(a.prefix)) ||
			strings.HasPrefix(strings.ToLower(a.prefix), "file:")):
			return ""
		}
	}
	return fmt.Sprintf("`%s` %s", name, whyNetwork)
}

// socatWrites: socat reaches the network when an address is of a network
// type (TCP:host:port, OPENSSL:…); FILE:, PIPE:, - and the like are local.
func socatWrites(_ *writesWalker, name string, args []word) string {
	for _, a := range args {
		if !a.literal {
			continue
		}
		kind := strings.ToLower(a.val)
		if i := strings.IndexAny(kind, ":,"); i >= 0 {
			kind = kind[:i]
		}
		for _, n := range []string{"tcp", "udp", "openssl", "ssl", "sctp", "ip4", "ip6", "ip-", "socks", "proxy", "dccp", "vsock"} {
			if strings.HasPrefix(kind, n) {
				return fmt.Sprintf("`%s` %s", name, whyNetwork)
			}
		}
	}
	return ""
}

func sshWrites(_ *writesWalker, name string, args []word) string {
	if hasOption(args, "GQ") {
		return "" // -G prints the configuration, -Q lists algorithms
	}
	return fmt.Sprintf("`%s` %s", name, whyNetwork)
}

func ghWrites(_ *writesWalker, name string, args []word) string {
	if len(args) == 0 || !args[0].literal {
		return ""
	}
	switch args[0].val {
	case "help", "completion", "version", "config", "alias", "extension":
		return ""
	}
	return fmt.Sprintf("`%s` %s", name, whyNetwork)
}

// shellWrites judges the command string of bash -c 'STRING'.
func shellWrites(w *writesWalker, _ string, args []word) string {
	sawC := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !a.literal {
			return ""
		}
		v := a.val
		switch {
		case v == "--rcfile" || v == "--init-file":
			i++
		case v == "--" || v == "-":
			if sawC && i+1 < len(args) && args[i+1].literal {
				return writesIn(args[i+1].val, w.depth+1)
			}
			return ""
		case strings.HasPrefix(v, "--"):
		case len(v) > 1 && (v[0] == '-' || v[0] == '+'):
			for j := 1; j < len(v); j++ {
				switch v[j] {
				case 'n':
					if v[0] == '-' {
						return "" // -n reads the commands without running them
					}
				case 'c':
					sawC = true
				case 'o', 'O':
					i++
				}
			}
		default:
			if sawC {
				return writesIn(v, w.depth+1)
			}
			return ""
		}
	}
	return ""
}

// evalWrites judges eval's literal string.
func evalWrites(w *writesWalker, _ string, args []word) string {
	vals, ok := literals(args)
	if !ok || len(vals) == 0 {
		return ""
	}
	return writesIn(strings.Join(vals, " "), w.depth+1)
}

// pythonWrites names python -m pip install.
func pythonWrites(w *writesWalker, _ string, args []word) string {
	if len(args) >= 2 && args[0].literal && args[0].val == "-m" && args[1].literal && (args[1].val == "pip" || args[1].val == "pip3") {
		return installWrites(w, "pip", args[2:])
	}
	return ""
}

// tarValued are tar's short options that take a value.
const tarValued = "fCbKNgLTXVHIF"

// tarWrites names extraction (unless to standard output or a command)
// and creating or changing an archive file. An option it does not know
// leaves it uncertain.
func tarWrites(_ *writesWalker, name string, args []word) string {
	vals, ok := literals(args)
	if !ok || len(vals) == 0 {
		return ""
	}
	mode, file, toStdout := byte(0), "", false
	letter := func(c byte) {
		switch c {
		case 'c', 'x', 'r', 'u', 'A', 't', 'd':
			mode = c
		case 'O':
			toStdout = true
		}
	}
	i := 0
	if !strings.HasPrefix(vals[0], "-") {
		// Old style, tar xzf FILE: each valued letter takes the next word.
		i = 1
		for j := 0; j < len(vals[0]); j++ {
			c := vals[0][j]
			letter(c)
			if strings.IndexByte(tarValued, c) >= 0 {
				if i >= len(vals) {
					return ""
				}
				if c == 'f' {
					file = vals[i]
				}
				i++
			}
		}
	}
	for ; i < len(vals); i++ {
		v := vals[i]
		switch {
		case v == "--":
			i = len(vals)
		case strings.HasPrefix(v, "--"):
			key, val, hasVal := strings.Cut(v, "=")
			switch key {
			case "--create":
				mode = 'c'
			case "--extract", "--get":
				mode = 'x'
			case "--append", "--update", "--concatenate", "--catenate", "--delete":
				mode = 'r'
			case "--list", "--diff", "--compare":
				mode = 't'
			case "--to-stdout", "--to-command":
				toStdout = true
			case "--file":
				if !hasVal {
					if i+1 >= len(vals) {
						return ""
					}
					i++
					val = vals[i]
				}
				file = val
			case "--gzip", "--gunzip", "--bzip2", "--xz", "--zstd", "--auto-compress", "--verbose", "--wildcards",
				"--no-same-owner", "--no-same-permissions", "--keep-old-files", "--overwrite", "--strip-components":
			default:
				return ""
			}
		case len(v) > 1 && v[0] == '-':
			for j := 1; j < len(v); j++ {
				c := v[j]
				letter(c)
				if strings.IndexByte(tarValued, c) < 0 {
					continue
				}
				val := v[j+1:]
				if val == "" {
					if i+1 >= len(vals) {
						return ""
					}
					i++
					val = vals[i]
				}
				if c == 'f' {
					file = val
				}
				break
			}
		}
	}
	switch {
	case mode == 'x' && !toStdout:
		return fmt.Sprintf("`%s` extracts files", name)
	case (mode == 'c' || mode == 'r' || mode == 'u' || mode == 'A') && file != "" && !isSink(file):
		return fmt.Sprintf("`%s` writes the archive %s", name, file)
	}
	return ""
}

func unzipWrites(_ *writesWalker, name string, args []word) string {
	if len(args) == 0 || hasOption(args, "ltvpczZh") {
		return ""
	}
	return fmt.Sprintf("`%s` %s", name, writers[name])
}

func zipWrites(_ *writesWalker, name string, args []word) string {
	if len(args) < 2 || hasOption(args, "hvsT") {
		return ""
	}
	return fmt.Sprintf("`%s` %s", name, writers[name])
}

// compressWrites: gzip FILE replaces FILE; with no file, -c, -t or -l it
// is a filter or a check.
func compressWrites(_ *writesWalker, name string, args []word) string {
	if hasOption(args, "ctlb", "--stdout", "--to-stdout", "--test", "--list") {
		return ""
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !a.literal {
			continue
		}
		switch {
		case a.val == "-S" || a.val == "--suffix" || a.val == "-D" || a.val == "-o":
			i++ // a value, not a file
		case a.val != "-" && !strings.HasPrefix(a.val, "-"):
			return fmt.Sprintf("`%s` %s", name, writers[name])
		}
	}
	return ""
}

// installers name, for each package manager, the subcommands that install,
// remove or publish packages.
var installers = map[string][]string{
	"npm": {"install", "i", "in", "ins", "inst", "insta", "instal", "isnt", "isnta", "isntal", "isntall", "add", "ci",
		"clean-install", "install-test", "it", "install-ci-test", "cit", "uninstall", "un", "unlink", "remove", "rm", "r",
		"update", "up", "upgrade", "udpate", "link", "ln", "publish", "unpublish", "dedupe", "ddp", "prune", "rebuild",
		"rb", "init", "create"},
	"pnpm":     {"add", "install", "i", "remove", "rm", "uninstall", "un", "update", "up", "upgrade", "link", "ln", "unlink", "prune", "rebuild", "publish", "import"},
	"yarn":     {"", "add", "install", "remove", "upgrade", "up", "link", "unlink", "publish", "init"},
	"bun":      {"add", "install", "i", "remove", "rm", "update", "upgrade", "link", "unlink", "publish", "init", "create"},
	"pip":      {"install", "uninstall", "download"},
	"pip3":     {"install", "uninstall", "download"},
	"pipx":     {"install", "uninstall", "upgrade", "reinstall", "inject"},
	"gem":      {"install", "uninstall", "update"},
	"cargo":    {"install", "uninstall", "add", "remove", "rm", "update", "publish", "new", "init", "fetch", "clean", "build", "b", "check", "c", "run", "r", "test", "t", "bench", "doc", "fix"},
	"apt":      {"install", "remove", "purge", "update", "upgrade", "dist-upgrade", "full-upgrade", "autoremove"},
	"apt-get":  {"install", "remove", "purge", "update", "upgrade", "dist-upgrade", "autoremove"},
	"brew":     {"install", "uninstall", "remove", "rm", "upgrade", "update", "tap", "untap", "link", "unlink", "reinstall", "cleanup"},
	"bundle":   {"install", "update", "add"},
	"composer": {"install", "require", "update", "remove"},
	"poetry":   {"add", "install", "remove", "update", "lock"},
	"uv":       {"add", "remove", "sync", "lock"},
	"conda":    {"install", "create", "remove", "update"},
}

// cargoBuilds are cargo's subcommands that write the target directory or
// the sources rather than install.
var cargoBuilds = map[string]bool{"new": true, "init": true, "clean": true, "build": true, "b": true, "check": true,
	"c": true, "run": true, "r": true, "test": true, "t": true, "bench": true, "doc": true, "fix": true}

// installWrites names a package manager's writing subcommand: the first
// word that is not an option must be one, and a dry run is a read.
func installWrites(_ *writesWalker, name string, args []word) string {
	sub := ""
	for i, a := range args {
		if !a.literal {
			return ""
		}
		if strings.HasPrefix(a.val, "-") {
			continue
		}
		sub = a.val
		if name == "uv" && sub == "pip" && i+1 < len(args) && args[i+1].literal {
			switch args[i+1].val {
			case "install", "uninstall", "sync":
				return fmt.Sprintf("`uv pip %s` installs packages: it writes files and talks to the network", args[i+1].val)
			}
			return ""
		}
		break
	}
	found := false
	for _, s := range installers[name] {
		found = found || s == sub
	}
	if !found || hasOption(args, "", "--dry-run", "--check") || (strings.HasPrefix(name, "apt") && hasOption(args, "s", "--simulate", "--just-print", "--no-act", "--recon")) {
		return ""
	}
	if sub == "" {
		return fmt.Sprintf("`%s` installs packages: it writes files and talks to the network", name)
	}
	if name == "cargo" && cargoBuilds[sub] {
		return fmt.Sprintf("`%s %s` writes files (the target directory or the project)", name, sub)
	}
	return fmt.Sprintf("`%s %s` changes installed packages: it writes files and talks to the network", name, sub)
}

// goWrites names the go subcommands that write or download.
func goWrites(_ *writesWalker, name string, args []word) string {
	vals, ok := literals(args)
	if !ok || len(vals) == 0 {
		return ""
	}
	rest := vals[1:]
	has := func(opts ...string) bool {
		for _, v := range rest {
			for _, o := range opts {
				if v == o || v == "-"+o || strings.HasPrefix(v, o+"=") || strings.HasPrefix(v, "-"+o+"=") {
					return true
				}
			}
		}
		return false
	}
	switch sub := vals[0]; sub {
	case "get", "install":
		if has("-n") {
			return "" // prints the commands only
		}
		return fmt.Sprintf("`%s %s` downloads and installs modules", name, sub)
	case "mod", "work":
		if len(rest) == 0 {
			return ""
		}
		switch op := rest[0]; op {
		case "tidy":
			if has("-diff") {
				return ""
			}
			return fmt.Sprintf("`%s %s %s` rewrites go.mod and go.sum", name, sub, op)
		case "download", "vendor", "init", "use", "sync":
			return fmt.Sprintf("`%s %s %s` writes files", name, sub, op)
		case "edit":
			if has("-json", "-print") {
				return ""
			}
			return fmt.Sprintf("`%s %s edit` rewrites %s.mod", name, sub, sub)
		}
	case "env":
		if has("-w", "-u") {
			return fmt.Sprintf("`%s env -w` changes go's settings file", name)
		}
	case "fmt", "clean":
		if has("-n") {
			return ""
		}
		return fmt.Sprintf("`%s %s` %s", name, sub, map[string]string{"fmt": "rewrites files", "clean": "removes files"}[sub])
	}
	return ""
}

// gitGlobalValued are git's options that take the next word as their
// value; gitGlobalFlags take none.
var (
	gitGlobalValued = map[string]bool{"-C": true, "-c": true, "--git-dir": true, "--work-tree": true, "--namespace": true,
		"--super-prefix": true, "--config-env": true}
	gitGlobalFlags = map[string]bool{"--no-pager": true, "-p": true, "-P": true, "--paginate": true, "--bare": true,
		"--no-replace-objects": true, "--literal-pathspecs": true, "--glob-pathspecs": true, "--noglob-pathspecs": true,
		"--icase-pathspecs": true, "--no-optional-locks": true, "--no-lazy-fetch": true, "--no-advice": true}
)

// gitWrite is what a git subcommand certainly does.
var gitWrite = map[string]string{
	"commit": "records a commit", "add": "stages changes in the index", "rm": "removes files from the index and the work tree",
	"mv": "moves files", "reset": "moves HEAD or resets the index", "restore": "restores files in the work tree",
	"switch": "switches branches", "merge": "merges into the current branch", "rebase": "rewrites history",
	"cherry-pick": "applies commits", "revert": "records reverting commits", "am": "applies patches as commits",
	"apply": "applies a patch to the work tree", "clean": "deletes untracked files", "init": "creates a repository",
	"gc": "rewrites the repository's storage", "prune": "deletes unreachable objects", "repack": "rewrites the repository's storage",
	"pack-refs": "rewrites the repository's refs", "update-index": "writes the index", "update-ref": "changes a ref",
	"read-tree": "writes the index", "checkout-index": "writes files from the index", "commit-tree": "writes a commit object",
	"filter-branch": "rewrites history", "fast-import": "writes objects", "mktag": "writes a tag object",
	"mktree": "writes a tree object", "write-tree": "writes a tree object",
	"push": whyNetwork, "pull": whyNetwork, "fetch": whyNetwork, "ls-remote": whyNetwork, "send-email": whyNetwork,
	"request-pull": whyNetwork, "clone": "copies a repository: it writes files and usually talks to the network",
}

// gitSubWrite lists, for git subcommands with subcommands of their own,
// the ones that write.
var gitSubWrite = map[string]map[string]bool{
	"stash":           {"push": true, "pop": true, "drop": true, "apply": true, "clear": true, "save": true, "store": true, "create": true, "branch": true},
	"remote":          {"add": true, "remove": true, "rm": true, "rename": true, "set-url": true, "set-head": true, "set-branches": true, "prune": true, "update": true},
	"notes":           {"add": true, "append": true, "copy": true, "edit": true, "merge": true, "prune": true, "remove": true},
	"worktree":        {"add": true, "remove": true, "move": true, "prune": true, "lock": true, "unlock": true, "repair": true},
	"submodule":       {"add": true, "update": true, "init": true, "deinit": true, "sync": true, "set-branch": true, "set-url": true, "absorbgitdirs": true},
	"sparse-checkout": {"set": true, "add": true, "init": true, "disable": true, "reapply": true},
	"bisect":          {"start": true, "good": true, "bad": true, "new": true, "old": true, "skip": true, "reset": true, "replay": true, "run": true, "terminate": true},
	"reflog":          {"expire": true, "delete": true, "drop": true},
	"maintenance":     {"run": true, "start": true, "stop": true, "register": true, "unregister": true},
}

// gitWrites names what a git command line certainly changes.
func gitWrites(_ *writesWalker, name string, args []word) string {
	i := 0
	for ; i < len(args); i++ {
		a := args[i]
		if !a.literal {
			return ""
		}
		v := a.val
		key, _, hasVal := strings.Cut(v, "=")
		if !strings.HasPrefix(v, "-") {
			break
		}
		switch {
		case gitGlobalValued[v]:
			i++
		case hasVal && (gitGlobalValued[key] || key == "--exec-path"):
		case gitGlobalFlags[v]:
		default:
			return "" // --version, --help, -h, or an option not read here
		}
	}
	if i >= len(args) {
		return ""
	}
	sub, rest := args[i].val, args[i+1:]
	full := name + " " + sub
	says := func(why string) string { return fmt.Sprintf("`%s` %s", full, why) }
	dryRun := func(shorts string) bool { return hasOption(rest, shorts, "--dry-run") }
	vals, allLiteral := literals(rest)
	switch sub {
	case "add", "rm", "mv", "clean", "prune":
		if dryRun("n") {
			return ""
		}
	case "am", "rebase":
		if hasOption(rest, "", "--show-current-patch") {
			return ""
		}
	case "ls-remote":
		for _, a := range rest {
			if !a.literal || strings.HasPrefix(a.val, ".") || strings.HasPrefix(a.val, "/") || strings.HasPrefix(a.val, "file:") {
				return "" // a repository on this machine
			}
		}
	case "commit":
		if hasOption(rest, "", "--dry-run") {
			return ""
		}
	case "apply":
		if hasOption(rest, "", "--check", "--stat", "--numstat", "--summary") && !hasOption(rest, "", "--apply") {
			return ""
		}
	case "checkout":
		if len(rest) == 0 {
			return "" // prints where HEAD is
		}
		return says("switches branches or restores files")
	case "diff", "log", "show", "format-patch", "archive":
		for j, v := range vals {
			if (v == "--output" || sub == "archive" && v == "-o") && j+1 < len(vals) && !isSink(vals[j+1]) {
				return fmt.Sprintf("`%s --output` writes %s", full, vals[j+1])
			}
			if out, ok := strings.CutPrefix(v, "--output="); ok && !isSink(out) {
				return fmt.Sprintf("`%s --output` writes %s", full, out)
			}
		}
		if sub == "format-patch" && allLiteral && !hasOption(rest, "", "--stdout") {
			return says("writes patch files")
		}
		return ""
	case "branch", "tag":
		return gitRefWrites(full, sub, rest)
	case "config":
		return gitConfigWrites(full, rest)
	case "stash":
		// Options before any subcommand make it git stash push.
		op := "push"
		if len(rest) > 0 && !rest[0].literal {
			return ""
		}
		if len(rest) > 0 && !strings.HasPrefix(rest[0].val, "-") {
			op = rest[0].val
		}
		if gitSubWrite["stash"][op] {
			return fmt.Sprintf("`%s %s` saves or restores changes (it rewrites the work tree)", full, op)
		}
		return ""
	}
	if why, ok := gitWrite[sub]; ok {
		return says(why)
	}
	if ops, ok := gitSubWrite[sub]; ok && len(rest) > 0 && rest[0].literal && ops[rest[0].val] {
		return fmt.Sprintf("`%s %s` changes the repository", full, rest[0].val)
	}
	return ""
}

// gitRefWrites: git branch and git tag write with a writing option, or
// with plain names and no option (which create them); any other option
// may be a listing one whose value looks like a name.
func gitRefWrites(full, sub string, args []word) string {
	vals, ok := literals(args)
	if !ok || len(vals) == 0 {
		return ""
	}
	writing := map[string]bool{"-d": true, "-D": true, "--delete": true, "-m": true, "-M": true, "--move": true, "-c": true,
		"-C": true, "--copy": true, "--set-upstream-to": true, "-u": true, "--unset-upstream": true, "--edit-description": true}
	if sub == "tag" {
		writing = map[string]bool{"-d": true, "--delete": true, "-a": true, "--annotate": true, "-s": true, "--sign": true,
			"-m": true, "--message": true, "-F": true, "--file": true, "-f": true, "--force": true}
	}
	listing := map[string]bool{"-l": true, "--list": true, "-v": true, "--verify": true, "-a": sub == "branch", "-r": sub == "branch",
		"--all": true, "--remotes": true, "--show-current": true}
	plain := true
	for _, v := range vals {
		key, _, _ := strings.Cut(v, "=")
		if listing[key] {
			return ""
		}
		if strings.HasPrefix(v, "-") {
			plain = false
		}
	}
	for _, v := range vals {
		key, _, _ := strings.Cut(v, "=")
		if writing[key] {
			return fmt.Sprintf("`%s %s` changes the repository's %s", full, key, map[string]string{"branch": "branches", "tag": "tags"}[sub])
		}
	}
	if plain && len(vals) <= 2 {
		return fmt.Sprintf("`%s %s` creates a %s", full, vals[0], sub)
	}
	return ""
}

// gitConfigWrites: git config sets with a writing option or subcommand,
// or with exactly KEY VALUE and no option that takes a value.
func gitConfigWrites(full string, args []word) string {
	vals, ok := literals(args)
	if !ok {
		return ""
	}
	var ops []string
	for _, v := range vals {
		key, _, _ := strings.Cut(v, "=")
		switch key {
		case "--unset", "--unset-all", "--add", "--replace-all", "--rename-section", "--remove-section", "-e", "--edit":
			return fmt.Sprintf("`%s %s` changes git's configuration", full, key)
		case "--global", "--local", "--system", "--worktree":
		default:
			if strings.HasPrefix(v, "-") {
				return "" // --get, --list, --file F, --type …: not read here
			}
			ops = append(ops, v)
		}
	}
	switch {
	case len(ops) > 0 && (ops[0] == "set" || ops[0] == "unset" || ops[0] == "rename-section" || ops[0] == "remove-section" || ops[0] == "edit"):
		return fmt.Sprintf("`%s %s` changes git's configuration", full, ops[0])
	case len(ops) == 2 && ops[0] != "get" && ops[0] != "list" && strings.Contains(ops[0], "."):
		return fmt.Sprintf("`%s %s` sets a value in git's configuration", full, ops[0])
	}
	return ""
}

// wrappers run another command after options and operands of their own:
// each returns the index in args of the command it runs, -1 when it is
// not certain (an option not read here, a lookup such as command -v), or
// a reason when the wrapper itself certainly writes (time -o).
var wrappers = map[string]func(name string, args []word) (int, string){
	"command": func(_ string, args []word) (int, string) {
		return skipOptions(args, "p", "", "")
	},
	"exec": func(_ string, args []word) (int, string) {
		return skipOptions(args, "cl", "a", "")
	},
	"nohup": func(_ string, args []word) (int, string) {
		return skipOptions(args, "", "", "")
	},
	"sudo": func(_ string, args []word) (int, string) {
		return skipOptions(args, "AbEHiknPSs", "ugCDhprtTUR", "")
	},
	"doas": func(_ string, args []word) (int, string) {
		return skipOptions(args, "ns", "u", "")
	},
	"nice": func(_ string, args []word) (int, string) {
		return skipOptions(args, "0123456789", "n", "")
	},
	"stdbuf": func(_ string, args []word) (int, string) {
		return skipOptions(args, "", "ioe", "")
	},
	"timeout": func(_ string, args []word) (int, string) {
		i, why := skipOptions(args, "v", "sk", "--preserve-status --foreground --verbose")
		if i < 0 || why != "" || i+1 >= len(args) {
			return -1, why
		}
		return i + 1, "" // the duration
	},
	"env": func(_ string, args []word) (int, string) {
		i, why := skipOptions(args, "i0v", "uC", "--ignore-environment --null --debug")
		if i < 0 || why != "" {
			return -1, why
		}
		for ; i < len(args); i++ {
			if !args[i].literal {
				return -1, ""
			}
			if name, _, ok := strings.Cut(args[i].val, "="); !ok || !validName(name) {
				break
			}
		}
		return i, ""
	},
	"time": func(name string, args []word) (int, string) {
		for j, a := range args {
			if !a.literal || !strings.HasPrefix(a.val, "-") {
				break // the command time runs
			}
			out, ok := "", false
			if _, val, hasVal := strings.Cut(a.val, "="); hasVal && longIs(a.val, "--output", 3) {
				out, ok = val, true
			} else if (a.val == "-o" || longIs(a.val, "--output", 3)) && j+1 < len(args) && args[j+1].literal {
				out, ok = args[j+1].val, true
			}
			if ok && !isSink(out) {
				return -1, fmt.Sprintf("`%s -o` writes %s", name, out)
			}
		}
		return skipOptions(args, "pvqa", "fo", "--portability --verbose --quiet --append")
	},
	"jobs": func(_ string, args []word) (int, string) {
		if len(args) > 1 && args[0].literal && args[0].val == "-x" {
			return 1, "" // jobs -x CMD runs CMD
		}
		return -1, ""
	},
}

// skipOptions returns the index of the first operand after a wrapper's
// options: flags are short options without a value, valued those that
// take one (attached or the next word), longs the long options allowed
// (space-separated, no value). Anything else is not certain: -1.
func skipOptions(args []word, flags, valued, longs string) (int, string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !a.literal {
			return -1, ""
		}
		v := a.val
		switch {
		case v == "--":
			return i + 1, ""
		case len(v) < 2 || v[0] != '-':
			return i, ""
		case strings.HasPrefix(v, "--"):
			if !strings.Contains(" "+longs+" ", " "+v+" ") {
				return -1, ""
			}
			continue
		}
		for j := 1; j < len(v); j++ {
			c := v[j]
			if strings.IndexByte(valued, c) >= 0 {
				if j == len(v)-1 {
					i++
				}
				break
			}
			if strings.IndexByte(flags, c) < 0 {
				return -1, ""
			}
		}
	}
	return -1, ""
}
