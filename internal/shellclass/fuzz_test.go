package shellclass

import (
	"fmt"
	"strings"
	"testing"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/pattern"
	"mvdan.cc/sh/v3/syntax"
)

// FuzzStrict runs both jobs over any command text and over random
// compositions of words, quotes, operators, redirections and expansions
// (built from recipe). For each it checks: no panic, the same answer
// twice, a reason with every refusal and with every writer; when Strict
// allows a command, that the command really is plain (strictOracle, which
// re-derives the rules from the syntax tree with mvdan's own expander,
// not with Strict's code); and that a command Writes calls a writer is
// never allowed. The corpus and the seeds run in make test; make fuzz
// explores further.
func FuzzStrict(f *testing.F) {
	for _, tc := range readCorpus(f, "testdata/corpus.txt") {
		f.Add(tc.command, []byte(nil))
	}
	for _, seed := range []string{
		"", " ", "#", "ls > /dev/null", `ls > "/dev/null"`, `ls > \/dev/null`, "ls >& 2", "ls >& f", "ls 2>&1 >x",
		"ls {fd}> /dev/null", "ls <> /dev/null", "ls > /dev/nul", "ls > /dev/null/x", "a | b > c",
		strings.Repeat("(", 200) + "ls" + strings.Repeat(")", 200), strings.Repeat("$(", 100) + "ls" + strings.Repeat(")", 100),
		strings.Repeat("ls | ", 2000) + "ls", "ls\x00rm x", "ls \\\n -la", "ls {,}", "ls {a..c}", "ls {}", "[ ]",
	} {
		f.Add(seed, []byte(nil))
	}
	for _, recipe := range [][]byte{{0, 1, 2, 3}, {7, 40, 13, 99, 5}, {200, 17, 3, 3, 3, 250}, []byte("sort -o out f")} {
		f.Add("", recipe)
	}
	table := DefaultTable()
	f.Fuzz(func(t *testing.T, raw string, recipe []byte) {
		for _, command := range []string{raw, compose(recipe)} {
			checkJobs(t, command, table)
		}
	})
}

func checkJobs(t *testing.T, command string, table *Table) {
	v := Strict(command, table)
	if v.Reason == "" || strings.Contains(v.Reason, "the strict judge failed") {
		t.Fatalf("Strict(%q) = %+v", command, v)
	}
	if again := Strict(command, table); again != v {
		t.Fatalf("Strict(%q) is not deterministic: %+v, then %+v", command, v, again)
	}
	// writesIn, unlike Writes, lets a panic through to the fuzzer.
	why := writesIn(command, 0)
	if again := writesIn(command, 0); again != why {
		t.Fatalf("Writes(%q) is not deterministic: %q, then %q", command, why, again)
	}
	if v.Allowed != (v.Reason == StrictReason) {
		t.Fatalf("Strict(%q): allowed=%v with reason %q", command, v.Allowed, v.Reason)
	}
	if !v.Allowed {
		return
	}
	if why != "" {
		t.Fatalf("Strict allows %q, which Writes says %s", command, why)
	}
	if bad := strictOracle(command, table); bad != "" {
		t.Fatalf("Strict allows %q, but %s", shorten(command), bad)
	}
}

// strictOracle says what makes command not a plain command on the table
// (no expansion of any kind, no redirection but to /dev/null or between
// descriptors, only table commands, and only harmless commands with
// pathname patterns), or "". It is written apart from Strict: it asks
// mvdan's expander what each word becomes.
func strictOracle(command string, table *Table) string {
	file, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(command), "")
	if err != nil {
		return "it does not parse: " + err.Error()
	}
	var bad string
	fail := func(format string, a ...any) {
		if bad == "" {
			bad = fmt.Sprintf(format, a...)
		}
	}
	syntax.Walk(file, func(n syntax.Node) bool {
		switch x := n.(type) {
		case *syntax.Stmt:
			if x.Background || x.Coprocess || x.Disown || x.Negated {
				fail("a statement is backgrounded, a coprocess or negated")
			}
		case *syntax.BinaryCmd:
			if x.Op != syntax.AndStmt && x.Op != syntax.OrStmt && x.Op != syntax.Pipe {
				fail("commands are joined by %s", x.Op)
			}
		case *syntax.CallExpr:
			fail("%s", oracleCall(x, table))
		case *syntax.Redirect:
			fail("%s", oracleRedirect(x))
		case nil: // Walk's signal that a node's children are done
		case *syntax.File, *syntax.Comment, *syntax.Word, *syntax.Lit, *syntax.SglQuoted, *syntax.DblQuoted, *syntax.Assign:
		default:
			fail("it holds a %T", n)
		}
		return true
	})
	return bad
}

func oracleCall(x *syntax.CallExpr, table *Table) string {
	for _, as := range x.Assigns {
		name := as.Name.Value
		if !(strings.HasPrefix(name, "LC_") || DefaultTable().vars[name] || table.vars[name]) || as.Append || as.Index != nil || as.Array != nil {
			return "it assigns " + name
		}
		if as.Value != nil {
			if _, why := oracleWord(as.Value); why != "" {
				return why
			}
		}
	}
	if len(x.Args) == 0 {
		return ""
	}
	name, why := oracleWord(x.Args[0])
	if why != "" {
		return why
	}
	if globbed(x.Args[0]) {
		return "its command name is a pattern"
	}
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		if dir := name[:i]; dir != "/bin" && dir != "/usr/bin" && dir != "/usr/local/bin" {
			return "it runs " + name + " by path"
		}
		name = name[i+1:]
	}
	rule, ok := table.cmds[name]
	if !ok {
		return name + " is not on the table"
	}
	for _, w := range x.Args[1:] {
		if _, why := oracleWord(w); why != "" {
			return why
		}
		if globbed(w) && (len(rule.deny) > 0 || rule.check != nil || rule.sub != nil) {
			return fmt.Sprintf("%s, which has writing flags, gets a pattern", name)
		}
	}
	return ""
}

func oracleRedirect(rd *syntax.Redirect) string {
	if rd.N != nil && strings.Trim(rd.N.Value, "0123456789") != "" {
		return "a redirection names its descriptor " + rd.N.Value
	}
	target, why := oracleWord(rd.Word)
	if why != "" {
		return why
	}
	switch rd.Op {
	case syntax.RdrOut, syntax.AppOut, syntax.RdrClob, syntax.RdrAll, syntax.AppAll:
		if target == "/dev/null" {
			return ""
		}
	case syntax.DplOut:
		if strings.Trim(strings.TrimSuffix(target, "-"), "0123456789") == "" || target == "/dev/null" {
			return ""
		}
	}
	return fmt.Sprintf("it redirects %s %s", rd.Op, target)
}

// oracleWord returns what w expands to when it is plain text in quotes or
// not: it must have no expansion part and become exactly one field, the
// same whatever HOME is (no tilde expansion).
func oracleWord(w *syntax.Word) (string, string) {
	for _, p := range w.Parts {
		switch x := p.(type) {
		case *syntax.Lit:
		case *syntax.SglQuoted:
			if x.Dollar {
				return "", "a word has $'…'"
			}
		case *syntax.DblQuoted:
			if x.Dollar {
				return "", `a word has $"…"`
			}
			for _, q := range x.Parts {
				if _, ok := q.(*syntax.Lit); !ok {
					return "", fmt.Sprintf("a word has a %T", q)
				}
			}
		default:
			return "", fmt.Sprintf("a word has a %T", p)
		}
	}
	var got [2][]string
	for i, home := range []string{"/oracle-home-1", "/oracle-home-2"} {
		fields, err := expand.Fields(&expand.Config{Env: expand.ListEnviron("HOME=" + home)}, w)
		if err != nil {
			return "", "a word does not expand: " + err.Error()
		}
		got[i] = fields
	}
	if len(got[0]) != 1 || len(got[1]) != 1 || got[0][0] != got[1][0] {
		return "", fmt.Sprintf("a word expands to %q", got[0])
	}
	return got[0][0], ""
}

// globbed reports whether an unquoted part of w is a pathname pattern.
func globbed(w *syntax.Word) bool {
	for _, p := range w.Parts {
		if lit, ok := p.(*syntax.Lit); ok && pattern.HasMeta(lit.Value, 0) {
			return true
		}
	}
	return false
}

// TestOracle checks that the fuzz oracle is not empty: each command here
// runs something Strict must refuse, and the oracle must say so.
func TestOracle(t *testing.T) {
	table := DefaultTable()
	for _, command := range []string{
		"rm x", "ls > f", "ls < f", "cat <<EOF\nx\nEOF", "ls $x", `ls "$x"`, "ls $(id)", "ls <(id)", "ls $'x'", "ls ~",
		"ls ~/x", `find . {"-delete",-print}`, "ls {a,b}", "ls {1..2}", "sort *.go", "./cat f", "/tmp/ls", "ls &",
		"! ls", "(ls)", "{ ls; }", "f() { ls; }", "PATH=/x ls", "x=1", "a[0]=1 ls", "ls |& cat", "if ls; then ls; fi",
		"*.sh", "ls {fd}>/dev/null", "ls >&f", "time ls", "declare x=1", "ls $((1))", `ls $"x"`, "ls @(a|b)",
	} {
		if bad := strictOracle(command, table); bad == "" {
			t.Errorf("the oracle finds nothing wrong with %q", command)
		}
	}
	for _, command := range []string{"ls -la", "grep 'a b' f 2>/dev/null", "LANG=C sort f | uniq -c", "ls *.go", "ls {}",
		`grep "a\"b" f`, "cd x && ls", "/bin/ls", "ls 2>&1 >/dev/null", "ls \\\n -la"} {
		if bad := strictOracle(command, table); bad != "" {
			t.Errorf("the oracle refuses the plain command %q: %s", command, bad)
		}
	}
}

// compose builds a command line from recipe: each byte picks a piece
// (a command, an argument, a quoted or expanding word, an operator, a
// redirection, a compound command), so that the fuzzer explores
// combinations of the shapes Strict must refuse.
func compose(recipe []byte) string {
	pieces := [][]string{
		{"ls", "cat", "grep", "find", "sort", "rg", "rm", "echo", "git", "xargs", "env", "tee", "date", "uniq", "xxd",
			"printf", "cd", "./cat", "/bin/ls", "python3", "sed", "awk", "tree", "file", "diff", "nice", "timeout", "touch"},
		{"-la", "-o", "--out", "--output=x", "-delete", "-exec", "-fprint", "out", "x", "-n", "-i", "-s", "--pre", "-z",
			"-T", "--compress-program=x", "-v", "+%s", "010203042025", "--", "-", ";", "\\;", "{}", "-name", "-print", "a=b"},
		{`"a b"`, "'q'", "*.go", "{a,b}", `{"-x",-y}`, "~", "~/x", "$x", `"$x"`, `-"$x"`, "$(rm f)", "`id`", "<(ls)",
			`$'\x2d'`, `$"x"`, "${IFS}", "$((1))", "@(a|b)", "[ab]", "?", `\*`, `"*"`, "a~b", "{,}", "{1..2}"},
		{" | ", " && ", " || ", "; ", " & ", " |& ", "\n", " ! ", " ;; "},
		{" >f", " >/dev/null", " 2>&1", " 2>/dev/null", " <f", " <<<x", " >&2", " &>/dev/null", " <>f",
			" >/dev/tcp/h/1", " <<EOF\nx\nEOF\n", " >>/dev/null", " 3>&-", " {fd}>/dev/null", " >|f"},
		{"( ", " )", "{ ", "; }", "f() { ", "if ", "; then ", "; fi", "for i in a; do ", "; done", "[[ ", " ]]", "(( ", " ))"},
		{"LANG=C ", "PATH=/x ", "IFS=, ", "x=1 ", "LC_ALL=C ", "TZ=UTC ", "GIT_PAGER=x "},
	}
	var b strings.Builder
	for i := 0; i+1 < len(recipe); i += 2 {
		group := pieces[int(recipe[i])%len(pieces)]
		piece := group[int(recipe[i+1])%len(group)]
		if b.Len() > 0 && !strings.HasPrefix(piece, " ") && !strings.HasSuffix(b.String(), " ") {
			b.WriteByte(' ')
		}
		b.WriteString(piece)
	}
	return b.String()
}
