package shellclass

import (
	"fmt"
	"path"
	"sort"
	"strings"
	"sync"

	"mvdan.cc/sh/v3/syntax"
)

// Verdict is Strict's answer. Reason is always set: for an allowed command
// it is StrictReason, otherwise the first cause found, in words a model
// can act on ("`sort -o` writes a file").
type Verdict struct {
	Allowed bool
	Reason  string
}

// StrictReason is the Reason of every allowed verdict.
const StrictReason = "every command is a plain command on the strict table"

// Strict reports whether command may run unconfined where no sandbox can
// contain it, judged against t (DefaultTable when nil). It allows only
// plain commands on the table, with literal words, joined by |, &&, || or
// ;, with no redirection but output to /dev/null and descriptor
// duplication; it refuses everything else. It never panics: an internal
// failure is a refusal.
func Strict(command string, t *Table) (v Verdict) {
	if t == nil {
		t = sharedDefault()
	}
	defer func() {
		if r := recover(); r != nil {
			v = Verdict{Reason: fmt.Sprintf("the strict judge failed on this command (%v)", r)}
		}
	}()
	if why := readsOtherwise(command); why != "" {
		return Verdict{Reason: why}
	}
	f, why := parse(command)
	if why != "" {
		return Verdict{Reason: why}
	}
	if len(f.Stmts) == 0 {
		return Verdict{Reason: "the command is empty"}
	}
	s := strict{t: t}
	for _, st := range f.Stmts {
		if r := s.stmt(st); r != "" {
			return Verdict{Reason: r}
		}
	}
	return Verdict{Allowed: true, Reason: StrictReason}
}

// sharedDefault is the table Strict uses when given none, built once.
var sharedDefault = sync.OnceValue(DefaultTable)

// strict judges one parsed command line. A method returns "" when its
// part is allowed, otherwise the reason it is not.
type strict struct{ t *Table }

func (s strict) stmt(st *syntax.Stmt) string {
	switch {
	case st.Background:
		return "`&` runs a command in the background; only plain commands joined by |, &&, || and ; are allowed"
	case st.Coprocess, st.Disown:
		return "a coprocess or a disowned job is not allowed"
	case st.Negated:
		return "`!` is not allowed; only plain commands joined by |, &&, || and ; are"
	}
	for _, rd := range st.Redirs {
		if r := redirect(rd); r != "" {
			return r
		}
	}
	if st.Cmd == nil {
		return "a redirection without a command is not allowed"
	}
	switch x := st.Cmd.(type) {
	case *syntax.CallExpr:
		return s.call(x)
	case *syntax.BinaryCmd:
		switch x.Op {
		case syntax.AndStmt, syntax.OrStmt, syntax.Pipe:
		default:
			return fmt.Sprintf("`%s` is not allowed; only |, &&, || and ; join commands", x.Op)
		}
		if r := s.stmt(x.X); r != "" {
			return r
		}
		return s.stmt(x.Y)
	}
	return compoundReason(st.Cmd)
}

// compoundReason names a command that is not a simple one.
func compoundReason(c syntax.Command) string {
	what := "this kind of command"
	switch x := c.(type) {
	case *syntax.FuncDecl:
		what = "a function definition"
		if x.Name != nil {
			what = fmt.Sprintf("a function definition (%s)", x.Name.Value)
		}
	case *syntax.Subshell:
		what = "a subshell ( … )"
	case *syntax.Block:
		what = "a block { … }"
	case *syntax.IfClause:
		what = "if"
	case *syntax.WhileClause:
		what = "while or until"
	case *syntax.ForClause:
		what = "for"
	case *syntax.CaseClause:
		what = "case"
	case *syntax.TestClause:
		what = "[[ … ]]"
	case *syntax.ArithmCmd:
		what = "(( … ))"
	case *syntax.LetClause:
		what = "let"
	case *syntax.DeclClause:
		what = "declare, local, export, readonly or typeset"
		if x.Variant != nil {
			what = fmt.Sprintf("`%s`", x.Variant.Value)
		}
	case *syntax.TimeClause:
		what = "time"
	case *syntax.CoprocClause:
		what = "coproc"
	}
	return what + " is not allowed; only plain commands joined by |, &&, || and ; are"
}

// redirect allows output to /dev/null and duplication of a descriptor
// onto another (2>&1), nothing else.
func redirect(rd *syntax.Redirect) string {
	if rd.N != nil && strings.Trim(rd.N.Value, "0123456789") != "" {
		return fmt.Sprintf("the redirection %s%s names its descriptor with a variable", rd.N.Value, rd.Op)
	}
	switch rd.Op {
	case syntax.RdrOut, syntax.AppOut, syntax.RdrClob, syntax.RdrAll, syntax.AppAll, syntax.DplOut:
	case syntax.Hdoc, syntax.DashHdoc:
		return "a here-document is not allowed"
	case syntax.WordHdoc:
		return "a here-string (<<<) is not allowed"
	default:
		return fmt.Sprintf("the input redirection `%s` is not allowed", rd.Op)
	}
	w := evalWord(rd.Word)
	if !w.literal {
		return fmt.Sprintf("`%s %s` writes to a target named by %s", rd.Op, w.src(), wordExpansion(w))
	}
	if w.val == "/dev/null" {
		return ""
	}
	if rd.Op == syntax.DplOut && isDescriptor(w.val) {
		return ""
	}
	return fmt.Sprintf("`%s` writes %s; only output to /dev/null and 2>&1 are allowed", rd.Op, w.val)
}

// isDescriptor reports whether s is a duplication target: a descriptor
// number, optionally moved (3-), or - to close.
func isDescriptor(s string) bool {
	s = strings.TrimSuffix(s, "-")
	return strings.Trim(s, "0123456789") == ""
}

func wordExpansion(w word) string {
	if w.expansion != "" {
		return w.expansion
	}
	return "a pathname pattern"
}

// call judges a simple command: its assignments, its words, then the
// command against the table.
func (s strict) call(x *syntax.CallExpr) string {
	for _, as := range x.Assigns {
		if r := s.assign(as); r != "" {
			return r
		}
	}
	if len(x.Args) == 0 {
		return ""
	}
	words := make([]word, len(x.Args))
	for i, w := range x.Args {
		words[i] = evalWord(w)
		if words[i].expansion != "" {
			return fmt.Sprintf("%s has %s; only literal words are allowed", quoteSrc(words[i].src()), words[i].expansion)
		}
	}
	head := words[0]
	if !head.literal {
		return fmt.Sprintf("the command name %s is a pathname pattern", head.src())
	}
	name := head.val
	if strings.Contains(name, "/") {
		i := strings.LastIndexByte(name, '/')
		if !strictDirs[name[:i]] {
			return fmt.Sprintf("`%s` runs a program by path; only /bin, /usr/bin and /usr/local/bin may be named", name)
		}
		name = name[i+1:]
	}
	r, ok := s.t.cmds[name]
	if !ok {
		return notOnTable(name)
	}
	args := words[1:]
	if r.sub != nil {
		if len(args) == 0 || !args[0].literal {
			return fmt.Sprintf("`%s` is on the strict table only with a subcommand (%s)", name, subList(r))
		}
		sub, ok := r.sub[args[0].val]
		if !ok {
			return fmt.Sprintf("`%s %s` is not on the strict table", name, args[0].val)
		}
		name, r, args = name+" "+args[0].val, sub, args[1:]
	}
	vals := make([]string, len(args))
	for i, a := range args {
		if !a.literal && !r.harmless() {
			return fmt.Sprintf("`%s` gets the pathname pattern %s, which could expand to an option that writes or runs a program; "+
				"name the files", name, a.src())
		}
		if why := kernelPath(a.val, name == "cd"); why != "" {
			return fmt.Sprintf("`%s %s`: %s", name, a.val, why)
		}
		vals[i] = a.val
	}
	if r.check != nil {
		return r.check(name, vals)
	}
	return scanDeny(name, r.deny, vals)
}

func quoteSrc(s string) string { return "`" + s + "`" }

// kernelPath says why an argument may not be named where the allowlist
// alone decides, or "": a device or kernel file (/dev, /proc, /sys), since
// opening one can change the machine even to read it (a watchdog arms
// when opened, /proc/kmsg consumes the kernel's log); and for cd, any
// absolute path or "..", since a relative path after it could then name
// those files too. /dev/null, /dev/stdin and the standard streams are
// fine. A glob argument is judged by its literal text.
func kernelPath(arg string, cd bool) string {
	clean := path.Clean(arg)
	if cd && (strings.HasPrefix(arg, "/") || strings.HasPrefix(arg, "~") || clean == ".." || strings.HasPrefix(clean, "../") ||
		strings.Contains(clean, "/../")) {
		return "cd may only go into the project (a relative path without ..) where the allowlist alone decides"
	}
	switch clean {
	case "/dev/null", "/dev/stdin", "/dev/stdout", "/dev/stderr", "/dev/zero":
		return ""
	}
	for _, root := range []string{"/dev", "/proc", "/sys"} {
		if clean == root || strings.HasPrefix(clean, root+"/") {
			return fmt.Sprintf("files under %s are the kernel's and devices: opening one can change the machine", root)
		}
	}
	return ""
}

func subList(r *rule) string {
	var subs []string
	for s := range r.sub {
		subs = append(subs, s)
	}
	sort.Strings(subs)
	return strings.Join(subs, ", ")
}

// strictDirs are the directories a command may be named in by path.
var strictDirs = map[string]bool{"/bin": true, "/usr/bin": true, "/usr/local/bin": true}

func (s strict) assign(as *syntax.Assign) string {
	name := ""
	if as.Name != nil {
		name = as.Name.Value
	}
	switch {
	case as.Index != nil || as.Array != nil:
		return fmt.Sprintf("the array assignment to %s is not allowed", name)
	case as.Append:
		return fmt.Sprintf("`%s+=` is not allowed", name)
	case !s.t.safeVar(name):
		return fmt.Sprintf("assigning %s is not allowed: only LC_*, LANG, TZ, NO_COLOR, COLUMNS and the like may be set", name)
	}
	if as.Value != nil {
		if w := evalWord(as.Value); !w.literal {
			return fmt.Sprintf("the value of %s has %s; only literal words are allowed", name, wordExpansion(w))
		}
	}
	return ""
}

// scanDeny refuses an option of deny the way getopt would read it: a
// short one anywhere in a cluster (-rno is -o; it may also be the value
// of an option before it, which refuses a read and never lets a write
// through), a long one with =value or abbreviated (--out). "--" ends the
// options only when the word before it is not an option, which could
// take "--" as its value.
func scanDeny(name string, deny []flag, args []string) string {
	if len(deny) == 0 {
		return ""
	}
	prevOption := false
	for _, v := range args {
		if v == "--" && !prevOption {
			return ""
		}
		prevOption = len(v) > 1 && v[0] == '-'
		if !prevOption {
			continue
		}
		if f, ok := deniedFlag(deny, v); ok {
			return fmt.Sprintf("`%s %s` %s", name, f.name, f.why)
		}
	}
	return ""
}

func deniedFlag(deny []flag, v string) (flag, bool) {
	long := strings.HasPrefix(v, "--")
	key, _, _ := strings.Cut(v, "=")
	for _, f := range deny {
		if strings.HasPrefix(f.name, "--") {
			// getopt_long takes any unambiguous prefix.
			if long && (key == f.name || len(key) > 2 && strings.HasPrefix(f.name, key)) {
				return f, true
			}
			continue
		}
		if !long && strings.IndexByte(v[1:], f.name[1]) >= 0 {
			return f, true
		}
	}
	return flag{}, false
}

// arity is how many values an option takes.
type arity int

const (
	noValue  arity = iota
	value          // required: the rest of the cluster, =value, or the next word
	optValue       // optional: only the rest of the cluster or =value
)

// getopt is the option grammar of a GNU getopt_long program: the options
// a strict command may use, and those it refuses with a reason. Anything
// else is refused too, so a program's option missing here refuses a read
// and never lets a write through.
type getopt struct {
	short  map[byte]arity
	long   map[string]arity
	refuse map[string]string // "-s", "--set": why
}

// operands parses args as the program would, except that the first
// operand ends the options (GNU programs take options after operands too;
// reading those as operands makes Strict refuse more, never less), and
// returns the operands.
func (g getopt) operands(name string, args []string) ([]string, string) {
	for i := 0; i < len(args); i++ {
		v := args[i]
		switch {
		case v == "--":
			return args[i+1:], ""
		case len(v) < 2 || v[0] != '-':
			return args[i:], ""
		case strings.HasPrefix(v, "--"):
			key, _, hasValue := strings.Cut(v, "=")
			full, why := g.longName(key)
			if why != "" {
				return nil, fmt.Sprintf("`%s %s` %s", name, full, why)
			}
			switch a := g.long[full]; {
			case a == noValue && hasValue:
				return nil, fmt.Sprintf("`%s %s` takes no value", name, full)
			case a == value && !hasValue:
				if i+1 >= len(args) {
					return nil, fmt.Sprintf("`%s %s` needs a value", name, full)
				}
				i++
			}
		default:
			for j := 1; j < len(v); j++ {
				if why, ok := g.refuse["-"+v[j:j+1]]; ok {
					return nil, fmt.Sprintf("`%s -%c` %s", name, v[j], why)
				}
				a, ok := g.short[v[j]]
				if !ok {
					return nil, fmt.Sprintf("`%s -%c` is an option the strict table does not allow", name, v[j])
				}
				if a == noValue {
					continue
				}
				if a == value && j == len(v)-1 {
					if i+1 >= len(args) {
						return nil, fmt.Sprintf("`%s -%c` needs a value", name, v[j])
					}
					i++
				}
				break
			}
		}
	}
	return nil, ""
}

// longName resolves a long option as getopt_long does, exactly or as the
// only option it abbreviates, and says why it is refused: refused itself,
// possibly a refused one, unknown or ambiguous.
func (g getopt) longName(key string) (string, string) {
	if why, ok := g.refuse[key]; ok {
		return key, why
	}
	if _, ok := g.long[key]; ok {
		return key, ""
	}
	var found []string
	for l := range g.long {
		if strings.HasPrefix(l, key) {
			found = append(found, l)
		}
	}
	for l, why := range g.refuse {
		if strings.HasPrefix(l, key) && len(key) > 2 {
			return l, why
		}
	}
	switch {
	case len(found) == 1 && len(key) > 2:
		return found[0], ""
	case len(found) > 1:
		return key, "is ambiguous"
	}
	return key, "is an option the strict table does not allow"
}

var dateOpts = getopt{
	refuse: map[string]string{"-s": "sets the clock", "--set": "sets the clock"},
	short:  map[byte]arity{'d': value, 'f': value, 'I': optValue, 'r': value, 'R': noValue, 'u': noValue},
	long: map[string]arity{"--date": value, "--file": value, "--iso-8601": optValue, "--reference": value,
		"--rfc-email": noValue, "--rfc-3339": value, "--utc": noValue, "--universal": noValue, "--debug": noValue,
		"--resolution": noValue, "--help": noValue, "--version": noValue},
}

// checkDate allows date's reading options and at most one operand, a
// +FORMAT: -s, --set and an operand such as 010203042025 set the clock.
func checkDate(name string, args []string) string {
	ops, why := dateOpts.operands(name, args)
	if why != "" {
		return why
	}
	switch {
	case len(ops) > 1:
		return fmt.Sprintf("`%s` takes at most one operand, a +FORMAT", name)
	case len(ops) == 1 && !strings.HasPrefix(ops[0], "+"):
		return fmt.Sprintf("`%s %s`: an operand other than +FORMAT sets the clock", name, ops[0])
	}
	return ""
}

var uniqOpts = getopt{
	short: map[byte]arity{'c': noValue, 'd': noValue, 'D': noValue, 'f': value, 'i': noValue, 's': value, 'u': noValue,
		'w': value, 'z': noValue, '0': noValue, '1': noValue, '2': noValue, '3': noValue, '4': noValue, '5': noValue,
		'6': noValue, '7': noValue, '8': noValue, '9': noValue},
	long: map[string]arity{"--count": noValue, "--repeated": noValue, "--all-repeated": optValue, "--skip-fields": value,
		"--group": optValue, "--ignore-case": noValue, "--skip-chars": value, "--unique": noValue, "--zero-terminated": noValue,
		"--check-chars": value, "--help": noValue, "--version": noValue},
}

// checkUniq allows at most one operand: uniq IN OUT writes OUT.
func checkUniq(name string, args []string) string {
	ops, why := uniqOpts.operands(name, args)
	if why != "" {
		return why
	}
	if len(ops) > 1 {
		return fmt.Sprintf("`%s %s %s` writes %s", name, ops[0], ops[1], ops[1])
	}
	return ""
}

// checkXxd allows at most one operand (xxd IN OUT writes OUT). xxd reads
// its options by prefix and only before the first operand; only the
// spellings below are allowed, and a valued option either has its number
// attached (-c16) or takes the next word.
func checkXxd(name string, args []string) string {
	flags := map[string]bool{"-a": true, "-autoskip": true, "-b": true, "-bits": true, "-C": true, "-capitalize": true,
		"-d": true, "-e": true, "-E": true, "-EBCDIC": true, "-h": true, "-help": true, "-i": true, "-include": true,
		"-p": true, "-ps": true, "-postscript": true, "-plain": true, "-r": true, "-revert": true, "-u": true,
		"-v": true, "-version": true}
	valued := map[string]bool{"-c": true, "-cols": true, "-g": true, "-groupsize": true, "-l": true, "-len": true,
		"-s": true, "-seek": true, "-o": true, "-offset": true, "-n": true, "-name": true}
	i := 0
	for ; i < len(args); i++ {
		v := args[i]
		if v == "--" {
			i++
			break
		}
		if len(v) < 2 || v[0] != '-' {
			break
		}
		switch {
		case flags[v]:
		case valued[v]:
			if i+1 >= len(args) {
				return fmt.Sprintf("`%s %s` needs a value", name, v)
			}
			i++
		case len(v) > 2 && strings.IndexByte("cglso", v[1]) >= 0 && isNumberish(v[2:]):
		default:
			return fmt.Sprintf("`%s %s` is an option the strict table does not allow", name, v)
		}
	}
	if ops := args[i:]; len(ops) > 1 {
		return fmt.Sprintf("`%s %s %s` writes %s", name, ops[0], ops[1], ops[1])
	}
	return ""
}

// isNumberish reports whether s is a number as xxd reads one: digits,
// optionally signed, or 0x hex.
func isNumberish(s string) bool {
	s = strings.TrimLeft(s, "+-")
	if h, ok := strings.CutPrefix(strings.ToLower(s), "0x"); ok {
		return h != "" && strings.Trim(h, "0123456789abcdef") == ""
	}
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// checkPrintf refuses an option: bash's printf -v 'a[$(cmd)]' runs cmd.
func checkPrintf(name string, args []string) string {
	if len(args) > 0 && len(args[0]) > 1 && args[0][0] == '-' && args[0] != "--" {
		return fmt.Sprintf("`%s %s`: printf -v assigns a variable, which can run commands", name, args[0])
	}
	return ""
}

// findArity lists the find primaries Strict allows with how many
// arguments each takes (GNU findutils). -exec, -execdir, -ok, -okdir,
// -delete, -fprint, -fprint0, -fprintf and -fls are refused by name;
// anything else unknown is refused too.
var findArity = map[string]int{
	"-name": 1, "-iname": 1, "-path": 1, "-ipath": 1, "-wholename": 1, "-iwholename": 1, "-regex": 1, "-iregex": 1,
	"-regextype": 1, "-type": 1, "-xtype": 1, "-size": 1, "-perm": 1, "-user": 1, "-group": 1, "-uid": 1, "-gid": 1,
	"-mtime": 1, "-mmin": 1, "-atime": 1, "-amin": 1, "-ctime": 1, "-cmin": 1, "-newer": 1, "-anewer": 1, "-cnewer": 1,
	"-used": 1, "-links": 1, "-inum": 1, "-samefile": 1, "-lname": 1, "-ilname": 1, "-fstype": 1, "-maxdepth": 1,
	"-mindepth": 1, "-printf": 1, "-context": 1,
	"-nouser": 0, "-nogroup": 0, "-empty": 0, "-executable": 0, "-readable": 0, "-writable": 0, "-depth": 0, "-d": 0,
	"-mount": 0, "-xdev": 0, "-noleaf": 0, "-follow": 0, "-ignore_readdir_race": 0, "-noignore_readdir_race": 0,
	"-daystart": 0, "-warn": 0, "-nowarn": 0, "-true": 0, "-false": 0, "-prune": 0, "-quit": 0, "-print": 0,
	"-print0": 0, "-ls": 0, "-not": 0, "-a": 0, "-and": 0, "-o": 0, "-or": 0, "(": 0, ")": 0, "!": 0, ",": 0,
	"-help": 0, "--help": 0, "-version": 0, "--version": 0,
}

// findRefused are the find primaries that write or run, with why.
var findRefused = map[string]string{
	"-exec": "runs a command", "-execdir": "runs a command", "-ok": "runs a command", "-okdir": "runs a command",
	"-delete": "deletes files", "-fprint": whyWritesFile, "-fprint0": whyWritesFile, "-fprintf": whyWritesFile,
	"-fls": whyWritesFile,
}

// checkFind reads find's command line: the options -H -L -P (and -D, -O),
// the starting points, then an expression of allowed primaries, each
// with its arguments.
func checkFind(name string, args []string) string {
	i := 0
	for ; i < len(args); i++ {
		v := args[i]
		switch {
		case v == "-H" || v == "-L" || v == "-P":
			continue
		case v == "-D":
			i++
			continue
		case strings.HasPrefix(v, "-O") && len(v) > 2 && isNumberish(v[2:]):
			continue
		}
		break
	}
	// Starting points: up to the first word that begins the expression.
	for ; i < len(args); i++ {
		v := args[i]
		if strings.HasPrefix(v, "-") || v == "(" || v == "!" || v == ")" || v == "," {
			break
		}
	}
	for ; i < len(args); i++ {
		v := args[i]
		if why, ok := findRefused[v]; ok {
			return fmt.Sprintf("`%s %s` %s", name, v, why)
		}
		n, ok := findArity[v]
		if !ok {
			n, ok = newerArity(v)
		}
		if !ok {
			return fmt.Sprintf("`%s %s` is not a primary the strict table allows", name, v)
		}
		if i+n >= len(args) && n > 0 {
			return fmt.Sprintf("`%s %s` needs an argument", name, v)
		}
		i += n
	}
	return ""
}

// newerArity allows -newerXY (X, Y among a B c m, Y also t) with its one
// argument.
func newerArity(v string) (int, bool) {
	xy, ok := strings.CutPrefix(v, "-newer")
	if ok && len(xy) == 2 && strings.IndexByte("aBcm", xy[0]) >= 0 && strings.IndexByte("aBcmt", xy[1]) >= 0 {
		return 1, true
	}
	return 0, false
}

// StrictJudge is Strict over table t (nil: the default table) as a
// question of the command alone, the shape the hooks' decision takes.
func StrictJudge(t *Table) func(command string) (bool, string) {
	return func(command string) (bool, string) {
		v := Strict(command, t)
		return v.Allowed, v.Reason
	}
}
