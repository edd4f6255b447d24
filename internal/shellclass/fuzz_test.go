package shellclass

import (
	"strings"
	"testing"

	"mvdan.cc/sh/v3/syntax"
)

// FuzzClassify checks, for any input, that the classifier answers with a
// reason and without failing inside, and that no command with an output
// redirection to a file is ever read-only. The oracle for "to a file" is
// written here independently of the classifier. The corpus and the seeds
// below run in make test; make fuzz explores further.
func FuzzClassify(f *testing.F) {
	for _, tc := range readCorpus(f, "testdata/corpus.txt") {
		f.Add(tc.command)
	}
	for _, seed := range []string{
		"ls > /dev/null", `ls > "/dev/null"`, `ls > \/dev/null`, "ls >& 2", "ls >& f", "ls 2>&1 >x",
		"cat <<EOF > f\nx\nEOF", "{ ls; } 3> f", "ls {fd}> f", "x=$(ls > f)", "f() { ls > f; }", "ls > $'f'",
		"ls >> ''", "echo > /dev/stdout", "ls <> /dev/null", "ls > /dev/nul", "ls > /dev/null/x", "a | b > c",
		strings.Repeat("(", 200) + "ls" + strings.Repeat(")", 200), strings.Repeat("$(", 100) + "ls" + strings.Repeat(")", 100),
	} {
		f.Add(seed)
	}
	table := DefaultTable()
	f.Fuzz(func(t *testing.T, command string) {
		v := Classify(command, table)
		if v.Reason == "" {
			t.Fatalf("%q: no reason", command)
		}
		if strings.Contains(v.Reason, "the classifier failed") {
			t.Fatalf("%q: %s", command, v.Reason)
		}
		if v.ReadOnly != (v.Reason == ReadOnlyReason) {
			t.Fatalf("%q: read-only=%v with reason %q", command, v.ReadOnly, v.Reason)
		}
		if !v.ReadOnly {
			return
		}
		file, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(command), "")
		if err != nil {
			t.Fatalf("%q: read-only although it does not parse: %v", command, err)
		}
		syntax.Walk(file, func(n syntax.Node) bool {
			if rd, ok := n.(*syntax.Redirect); ok && redirectsToFile(rd) {
				t.Fatalf("%q: read-only with a redirection to a file (%s)", command, rd.Op)
			}
			return true
		})
	})
}

// redirectsToFile is the fuzz oracle: an output redirection whose target
// is not /dev/null, /dev/stdout or /dev/stderr, or a >& whose target is
// not a descriptor.
func redirectsToFile(rd *syntax.Redirect) bool {
	target, known := literal(rd.Word)
	switch rd.Op {
	case syntax.RdrIn, syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc, syntax.DplIn:
		return false
	case syntax.DplOut:
		if !known {
			return true
		}
		target = strings.TrimSuffix(target, "-")
		return strings.Trim(target, "0123456789") != ""
	}
	return !known || (target != "/dev/null" && target != "/dev/stdout" && target != "/dev/stderr")
}

// literal is the value of a word made only of quoted or unquoted text.
func literal(w *syntax.Word) (string, bool) {
	if w == nil {
		return "", false
	}
	var b strings.Builder
	for _, p := range w.Parts {
		switch x := p.(type) {
		case *syntax.Lit:
			for i := 0; i < len(x.Value); i++ {
				if x.Value[i] == '\\' && i+1 < len(x.Value) {
					i++
				}
				b.WriteByte(x.Value[i])
			}
		case *syntax.SglQuoted:
			if x.Dollar {
				return "", false
			}
			b.WriteString(x.Value)
		case *syntax.DblQuoted:
			for _, q := range x.Parts {
				lit, ok := q.(*syntax.Lit)
				if !ok || strings.Contains(lit.Value, "\\") {
					return "", false
				}
				b.WriteString(lit.Value)
			}
		default:
			return "", false
		}
	}
	return b.String(), true
}
