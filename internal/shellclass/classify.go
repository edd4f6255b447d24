// Package shellclass decides whether a shell command line only reads: the
// classifier behind plan mode's "a read-only command runs as it is". It
// parses the command with mvdan.cc/sh (bash syntax) and walks every
// command in it — pipelines, lists, subshells, command and process
// substitutions, function bodies — against a table of read-only commands,
// their subcommands and their writing flags. Anything it cannot prove
// read-only is not read-only (fail closed), and the answer always says why.
//
// The classifier is a policy, not a sandbox: it proves what the text of a
// command does, assuming the programs on the table behave as documented.
// Commands it cannot prove read-only go to the kernel sandbox
// (internal/sandbox) or are denied.
package shellclass

import (
	"fmt"
	"strings"
	"sync"

	"mvdan.cc/sh/v3/syntax"
)

// Verdict is the classifier's answer. Reason is always set: for a
// read-only command it says so, otherwise it names the first cause found,
// in words a model can act on ("`>` writes marker.txt").
type Verdict struct {
	ReadOnly bool
	Reason   string
}

// ReadOnlyReason is the Reason of every read-only verdict.
const ReadOnlyReason = "every command is on the read-only table"

// MaxCommandBytes bounds the command text the classifier parses; a longer
// command is not proven read-only.
const MaxCommandBytes = 64 << 10

// maxDepth bounds how deep the classifier follows nesting (substitutions
// inside substitutions, blocks inside functions); deeper input is not
// proven read-only rather than walked at the cost of a deep stack.
const maxDepth = 64

// Classify reports whether command, as bash would run it, only reads,
// judged against t (DefaultTable when nil). It never panics: an internal
// failure is a not-read-only verdict.
func Classify(command string, t *Table) (v Verdict) {
	if t == nil {
		t = sharedDefault()
	}
	defer func() {
		if r := recover(); r != nil {
			v = Verdict{Reason: fmt.Sprintf("the classifier failed on this command (%v), so it is not proven read-only", r)}
		}
	}()
	if len(command) > MaxCommandBytes {
		return Verdict{Reason: fmt.Sprintf("the command is longer than %d bytes, too long to be proven read-only", MaxCommandBytes)}
	}
	if strings.IndexByte(command, 0) >= 0 {
		return Verdict{Reason: "the command contains a NUL byte"}
	}
	if depth := nestingDepth(command); depth > maxDepth {
		return Verdict{Reason: fmt.Sprintf("the command nests deeper than %d levels, too deep to be proven read-only", maxDepth)}
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(command), "")
	if err != nil {
		return Verdict{Reason: "the command does not parse as bash (" + err.Error() + "), so it is not proven read-only"}
	}
	c := &classifier{t: t, funcs: map[string]bool{}}
	syntax.Walk(f, func(n syntax.Node) bool {
		if fd, ok := n.(*syntax.FuncDecl); ok && fd.Name != nil {
			c.funcs[fd.Name.Value] = true
		}
		return true
	})
	if reason := c.stmts(f.Stmts); reason != "" {
		return Verdict{Reason: reason}
	}
	return Verdict{ReadOnly: true, Reason: ReadOnlyReason}
}

// sharedDefault is the default table Classify uses when given none,
// built once: Classify only reads a table.
var sharedDefault = sync.OnceValue(DefaultTable)

// nestingDepth is a cheap upper bound on the bracket nesting of s, checked
// before parsing so that pathological input never reaches the parser's
// recursion.
func nestingDepth(s string) int {
	depth, most := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(', '{', '[':
			depth++
			most = max(most, depth)
		case ')', '}', ']':
			depth = max(depth-1, 0)
		}
	}
	return most
}

// classifier walks one parsed command. A method returns "" when its part
// is proven read-only, otherwise the reason it is not.
type classifier struct {
	t     *Table
	funcs map[string]bool // functions the command defines (their bodies are checked where defined)
	depth int
}

func (c *classifier) enter() string {
	c.depth++
	if c.depth > maxDepth {
		return fmt.Sprintf("the command nests deeper than %d levels, too deep to be proven read-only", maxDepth)
	}
	return ""
}

func (c *classifier) leave() { c.depth-- }

func (c *classifier) stmts(ss []*syntax.Stmt) string {
	for _, s := range ss {
		if r := c.stmt(s); r != "" {
			return r
		}
	}
	return ""
}

func (c *classifier) stmt(s *syntax.Stmt) string {
	if r := c.enter(); r != "" {
		return r
	}
	defer c.leave()
	for _, rd := range s.Redirs {
		if r := c.redirect(rd); r != "" {
			return r
		}
	}
	if s.Cmd == nil {
		return ""
	}
	return c.command(s.Cmd)
}

// redirect allows input, here-documents and here-strings, duplication
// between descriptors, and output to /dev/null (and the process's own
// stdout and stderr). Any other output redirection writes a file.
func (c *classifier) redirect(rd *syntax.Redirect) string {
	if rd.Hdoc != nil {
		if r := c.word(rd.Hdoc); r != "" {
			return r
		}
	}
	if rd.Word != nil {
		if r := c.word(rd.Word); r != "" {
			return r
		}
	}
	switch rd.Op {
	case syntax.RdrIn, syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc:
		return ""
	case syntax.DplIn, syntax.DplOut:
		a := wordArg(rd.Word)
		if a.known && isDescriptor(a.val) {
			return ""
		}
		if rd.Op == syntax.DplIn {
			return fmt.Sprintf("`%s` takes a descriptor, and %s is not one", rd.Op, a.show())
		}
		// `>& word` with a word that is not a descriptor is `&> word`.
		return writesReason(rd.Op.String(), a)
	}
	// >, >>, >|, <>, &>, &>> and the zsh clobber forms all open the target for writing.
	a := wordArg(rd.Word)
	if a.known && harmlessSink[a.val] {
		return ""
	}
	return writesReason(rd.Op.String(), a)
}

// harmlessSink lists the only targets an output redirection may name.
var harmlessSink = map[string]bool{"/dev/null": true, "/dev/stdout": true, "/dev/stderr": true}

func writesReason(op string, a arg) string {
	if !a.known {
		return fmt.Sprintf("`%s` writes to a file named by an expansion (%s)", op, a.src)
	}
	return fmt.Sprintf("`%s` writes %s", op, a.val)
}

// isDescriptor reports whether s is a duplication target: a descriptor
// number, optionally moved (3-), or - to close.
func isDescriptor(s string) bool {
	s = strings.TrimSuffix(s, "-")
	if s == "" {
		return true
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func (c *classifier) command(cmd syntax.Command) string {
	switch x := cmd.(type) {
	case *syntax.CallExpr:
		return c.call(x)
	case *syntax.BinaryCmd:
		if r := c.stmt(x.X); r != "" {
			return r
		}
		return c.stmt(x.Y)
	case *syntax.Subshell:
		return c.stmts(x.Stmts)
	case *syntax.Block:
		return c.stmts(x.Stmts)
	case *syntax.IfClause:
		for ic := x; ic != nil; ic = ic.Else {
			if r := c.stmts(ic.Cond); r != "" {
				return r
			}
			if r := c.stmts(ic.Then); r != "" {
				return r
			}
		}
		return ""
	case *syntax.WhileClause:
		if r := c.stmts(x.Cond); r != "" {
			return r
		}
		return c.stmts(x.Do)
	case *syntax.ForClause:
		switch l := x.Loop.(type) {
		case *syntax.WordIter:
			if l.Name != nil {
				if r := c.assignName(l.Name.Value); r != "" {
					return r
				}
			}
			for _, w := range l.Items {
				if r := c.word(w); r != "" {
					return r
				}
			}
		case *syntax.CStyleLoop:
			for _, e := range []syntax.ArithmExpr{l.Init, l.Cond, l.Post} {
				if r := c.arith(e); r != "" {
					return r
				}
			}
		default:
			return "an unknown kind of loop cannot be proven read-only"
		}
		return c.stmts(x.Do)
	case *syntax.CaseClause:
		if r := c.word(x.Word); r != "" {
			return r
		}
		for _, item := range x.Items {
			for _, p := range item.Patterns {
				if r := c.word(p); r != "" {
					return r
				}
			}
			if r := c.stmts(item.Stmts); r != "" {
				return r
			}
		}
		return ""
	case *syntax.FuncDecl:
		if x.Body == nil {
			return ""
		}
		if r := c.stmt(x.Body); r != "" {
			return r
		}
		return ""
	case *syntax.ArithmCmd:
		return c.arith(x.X)
	case *syntax.LetClause:
		for _, e := range x.Exprs {
			if r := c.arith(e); r != "" {
				return r
			}
		}
		return ""
	case *syntax.TestClause:
		return c.test(x.X)
	case *syntax.DeclClause:
		return c.decl(x)
	case *syntax.TimeClause:
		if x.Stmt == nil {
			return ""
		}
		return c.stmt(x.Stmt)
	case *syntax.CoprocClause:
		if x.Name != nil {
			if r := c.word(x.Name); r != "" {
				return r
			}
		}
		return c.stmt(x.Stmt)
	}
	return fmt.Sprintf("a %T cannot be proven read-only", cmd)
}

// call judges a simple command: its assignments, every word's expansions,
// then the command itself against the table.
func (c *classifier) call(x *syntax.CallExpr) string {
	for _, w := range x.Args {
		if r := c.word(w); r != "" {
			return r
		}
	}
	if len(x.Args) > 0 {
		args := make([]arg, len(x.Args))
		for i, w := range x.Args {
			args[i] = wordArg(w)
		}
		if r := c.run(args, true); r != "" {
			return r
		}
	}
	// The command comes first so that the reason names it (env X=1 rm:
	// rm), then what its assignments would change.
	for _, as := range x.Assigns {
		if len(x.Args) > 0 && as.Name != nil && as.Name.Value == "IFS" && as.Index == nil {
			// IFS=… before a command changes only how that command
			// (read, in while IFS= read -r line) splits its input.
			if r := c.word(as.Value); r != "" {
				return r
			}
			continue
		}
		if r := c.assign(as); r != "" {
			return r
		}
	}
	return ""
}

// run judges the command args[0] with arguments args[1:]. funcs says
// whether a shell function of that name would run (not under env, xargs
// or command, which run programs).
func (c *classifier) run(args []arg, funcs bool) string {
	if r := c.enter(); r != "" {
		return r
	}
	defer c.leave()
	head := args[0]
	if !head.known {
		return commandPositionReason(head)
	}
	name := head.val
	if funcs && c.funcs[name] {
		return ""
	}
	if strings.Contains(name, "/") {
		dir, base := name[:strings.LastIndex(name, "/")], name[strings.LastIndex(name, "/")+1:]
		if !systemDirs[dir] {
			return fmt.Sprintf("`%s` runs a program by path, which is not on the read-only table", name)
		}
		name = base
	}
	rule, ok := c.t.cmds[name]
	if !ok {
		return c.t.notOnTable(name, args[1:])
	}
	return c.rule(name, rule, args[1:])
}

// systemDirs are the directories a command may be named in by path and
// still be looked up on the table by its base name.
var systemDirs = map[string]bool{"/bin": true, "/usr/bin": true, "/usr/local/bin": true, "/sbin": true, "/usr/sbin": true}

func commandPositionReason(a arg) string {
	switch {
	case a.hasSubst:
		return "command substitutions in command position cannot be proven read-only"
	case a.hasParam:
		return "variables in command position cannot be proven read-only"
	case a.hasGlob:
		return fmt.Sprintf("a pattern in command position (%s) cannot be proven read-only", a.src)
	}
	return fmt.Sprintf("the command name %s cannot be proven read-only", a.src)
}

// rule applies a table rule to the arguments of name.
func (c *classifier) rule(name string, r *rule, args []arg) string {
	if r.pre != nil {
		rest, reason := r.pre(c, name, args)
		if reason != "" {
			return reason
		}
		args = rest
	}
	if r.sub != nil {
		if len(args) == 0 {
			if r.subRequired {
				return fmt.Sprintf("`%s` without a subcommand is not on the read-only table", name)
			}
			return ""
		}
		first := args[0]
		if !first.known {
			return fmt.Sprintf("`%s` with a subcommand from an expansion (%s) cannot be proven read-only", name, first.src)
		}
		sub, ok := r.sub[first.val]
		full := name + " " + first.val
		if !ok {
			if why, net := r.never[first.val]; net {
				return fmt.Sprintf("`%s` %s", full, why)
			}
			return fmt.Sprintf("`%s` is not on the read-only table", full)
		}
		return c.rule(full, sub, args[1:])
	}
	if reason := scanFlags(name, r, args); reason != "" {
		return reason
	}
	if r.check != nil {
		return r.check(c, name, args)
	}
	return ""
}

// scanFlags refuses a writing flag, and (unless every argument of the
// command is harmless) an argument whose value the classifier cannot know
// and that could turn out to be a flag.
func scanFlags(name string, r *rule, args []arg) string {
	for _, a := range args {
		if !a.known {
			if a.flagLike && !r.harmless {
				return fmt.Sprintf("`%s` gets an argument from an expansion or pattern (%s) that could be a writing flag", name, a.src)
			}
			continue
		}
		if a.val == "--" && !r.noDashDash {
			return ""
		}
		if len(a.val) < 2 || a.val[0] != '-' {
			continue
		}
		if f, ok := r.deniedFlag(a.val); ok {
			return fmt.Sprintf("`%s %s` %s", name, f.name, f.why)
		}
	}
	return ""
}

func (c *classifier) assign(as *syntax.Assign) string {
	if as.Name != nil {
		if r := c.assignName(as.Name.Value); r != "" {
			return r
		}
	}
	if as.Index != nil {
		if r := c.arith(as.Index); r != "" {
			return r
		}
	}
	if as.Value != nil {
		if r := c.word(as.Value); r != "" {
			return r
		}
	}
	if as.Array != nil {
		for _, el := range as.Array.Elems {
			if el.Index != nil {
				if r := c.arith(el.Index); r != "" {
					return r
				}
			}
			if el.Value != nil {
				if r := c.word(el.Value); r != "" {
					return r
				}
			}
		}
	}
	return ""
}

// assignName refuses assignments to variables that change what commands
// do (PATH, IFS, GIT_*, LD_PRELOAD, …): only lower-case names and the
// table's harmless upper-case ones may be set.
func (c *classifier) assignName(name string) string {
	if c.t.safeVar(name) {
		return ""
	}
	return fmt.Sprintf("assigning %s can change what commands do, so it cannot be proven read-only", name)
}

// decl judges declare, local, export, readonly and typeset.
func (c *classifier) decl(x *syntax.DeclClause) string {
	variant := ""
	if x.Variant != nil {
		variant = x.Variant.Value
	}
	if variant == "nameref" {
		return "`nameref` cannot be proven read-only"
	}
	for _, as := range x.Args {
		if as.Naked && as.Name == nil && as.Value != nil {
			if r := c.word(as.Value); r != "" {
				return r
			}
			a := wordArg(as.Value)
			if !a.known {
				return fmt.Sprintf("`%s` with an argument from an expansion (%s) cannot be proven read-only", variant, a.src)
			}
			if strings.HasPrefix(a.val, "-") || strings.HasPrefix(a.val, "+") {
				for _, ch := range a.val[1:] {
					if !strings.ContainsRune("pfFxrgaAlut", ch) {
						return fmt.Sprintf("`%s %s` cannot be proven read-only (-n makes a name reference, -i evaluates arithmetic)", variant, a.val)
					}
				}
				continue
			}
			return fmt.Sprintf("`%s %s` cannot be proven read-only", variant, a.val)
		}
		if r := c.assign(as); r != "" {
			return r
		}
	}
	return ""
}

// arith allows arithmetic on constants only. Bash evaluates a variable's
// value as an arithmetic expression, and an array subscript in that value
// runs command substitutions: x='a[$(rm -rf ~)]'; (( x )) removes a home.
func (c *classifier) arith(e syntax.ArithmExpr) string {
	if e == nil {
		return ""
	}
	switch x := e.(type) {
	case *syntax.BinaryArithm:
		if r := c.arith(x.X); r != "" {
			return r
		}
		return c.arith(x.Y)
	case *syntax.UnaryArithm:
		return c.arith(x.X)
	case *syntax.ParenArithm:
		return c.arith(x.X)
	case *syntax.Word:
		if isNumber(x.Lit()) {
			return ""
		}
		if r := c.word(x); r != "" {
			return r
		}
	}
	return "arithmetic on variables can run commands (a[$(cmd)] in a value), so it cannot be proven read-only"
}

// isNumber reports whether s is an integer constant bash reads without
// looking anything up: decimal, 0x hex, octal, or base#digits.
func isNumber(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if !(ch >= '0' && ch <= '9' || ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch == '#' || ch == '@' || ch == '_') {
			return false
		}
	}
	return s[0] >= '0' && s[0] <= '9'
}

// test judges [[ ]]: its words, no -v or -R (a subscript in the name runs
// commands) and arithmetic comparisons on constants only.
func (c *classifier) test(e syntax.TestExpr) string {
	switch x := e.(type) {
	case *syntax.BinaryTest:
		switch x.Op {
		case syntax.TsEql, syntax.TsNeq, syntax.TsLeq, syntax.TsGeq, syntax.TsLss, syntax.TsGtr:
			for _, side := range []syntax.TestExpr{x.X, x.Y} {
				w, ok := side.(*syntax.Word)
				if !ok || !isNumber(w.Lit()) {
					return fmt.Sprintf("`[[ … %s … ]]` evaluates its operands as arithmetic, which can run commands", x.Op)
				}
			}
			return ""
		}
		if r := c.test(x.X); r != "" {
			return r
		}
		return c.test(x.Y)
	case *syntax.UnaryTest:
		if x.Op == syntax.TsVarSet || x.Op == syntax.TsRefVar {
			return fmt.Sprintf("`[[ %s ]]` evaluates a subscript, which can run commands", x.Op)
		}
		return c.test(x.X)
	case *syntax.ParenTest:
		return c.test(x.X)
	case *syntax.Word:
		return c.word(x)
	}
	return fmt.Sprintf("a %T in [[ ]] cannot be proven read-only", e)
}

// word judges the expansions inside a word: command and process
// substitutions are classified like any command; parameter expansions
// that run code (${!x}, ${x@P}, subscripts and offsets on variables) are
// not read-only.
func (c *classifier) word(w *syntax.Word) string {
	if w == nil {
		return ""
	}
	if r := c.enter(); r != "" {
		return r
	}
	defer c.leave()
	return c.parts(w.Parts)
}

func (c *classifier) parts(parts []syntax.WordPart) string {
	for _, p := range parts {
		if r := c.part(p); r != "" {
			return r
		}
	}
	return ""
}

func (c *classifier) part(p syntax.WordPart) string {
	switch x := p.(type) {
	case *syntax.Lit, *syntax.SglQuoted:
		return ""
	case *syntax.DblQuoted:
		return c.parts(x.Parts)
	case *syntax.CmdSubst:
		return c.stmts(x.Stmts)
	case *syntax.ProcSubst:
		return c.stmts(x.Stmts)
	case *syntax.ArithmExp:
		return c.arith(x.X)
	case *syntax.ExtGlob:
		// Harmless in bash, but the same text is a glob qualifier that
		// runs code in zsh, a shell agent hosts also use.
		return fmt.Sprintf("the extended pattern %s%s) cannot be proven read-only (in zsh it can run code)", x.Op, x.Pattern.Value)
	case *syntax.BraceExp:
		for _, el := range x.Elems {
			if r := c.word(el); r != "" {
				return r
			}
		}
		return ""
	case *syntax.ParamExp:
		return c.param(x)
	}
	return fmt.Sprintf("a %T cannot be proven read-only", p)
}

func (c *classifier) param(x *syntax.ParamExp) string {
	name := ""
	if x.Param != nil {
		name = x.Param.Value
	}
	if x.Flags != nil || x.NestedParam != nil || len(x.Modifiers) > 0 || x.Width || x.IsSet ||
		x.Split != syntax.OptUnset || x.GlobSubst != syntax.OptUnset || x.RcExpand != syntax.OptUnset {
		return "this parameter expansion cannot be proven read-only"
	}
	if x.Excl && x.Names == 0 && !allIndex(x.Index) {
		return fmt.Sprintf("the indirect expansion ${!%s} can run commands, so it cannot be proven read-only", name)
	}
	if x.Index != nil && !allIndex(x.Index) {
		if r := c.arith(x.Index); r != "" {
			return r
		}
	}
	if x.Slice != nil {
		if r := c.arith(x.Slice.Offset); r != "" {
			return r
		}
		if r := c.arith(x.Slice.Length); r != "" {
			return r
		}
	}
	if x.Repl != nil {
		if r := c.word(x.Repl.Orig); r != "" {
			return r
		}
		if r := c.word(x.Repl.With); r != "" {
			return r
		}
	}
	if x.Exp != nil {
		switch x.Exp.Op {
		case syntax.OtherParamOps:
			if x.Exp.Word != nil && strings.Contains(x.Exp.Word.Lit(), "P") {
				return fmt.Sprintf("${%s@P} expands prompt escapes, which run commands", name)
			}
		case syntax.AssignUnset, syntax.AssignUnsetOrNull:
			if r := c.assignName(name); r != "" {
				return r
			}
		}
		if r := c.word(x.Exp.Word); r != "" {
			return r
		}
	}
	return ""
}

// allIndex reports whether a subscript is [@] or [*]: every element, no
// arithmetic.
func allIndex(e syntax.ArithmExpr) bool {
	w, ok := e.(*syntax.Word)
	return ok && (w.Lit() == "@" || w.Lit() == "*")
}
