package shellclass

import (
	"strings"
	"unicode/utf8"

	"mvdan.cc/sh/v3/syntax"
)

// word is what the classifier knows about one shell word without running
// anything: its value when it is literal, and otherwise the first
// expansion in it and the fixed text around the expansions.
type word struct {
	// val is the value with quotes and escapes removed. For a pattern it
	// holds the pattern characters as they are; for a word with another
	// expansion it is not meaningful.
	val string
	// literal: the word means exactly val (no expansion of any kind).
	literal bool
	// glob: the word has an unquoted *, ? or [ (a pathname pattern) and
	// no other expansion.
	glob bool
	// expansion names the first expansion other than a pattern ("a
	// parameter expansion", "tilde expansion", …); "" when none.
	expansion string
	// splits: an unquoted expansion or a brace expansion, which can turn
	// one word into several.
	splits bool
	// prefix and suffix are the fixed text before the first and after the
	// last expansion or pattern character (for words that are not literal).
	prefix, suffix string
	node           *syntax.Word
}

// src is the word as written, shortened, for reasons.
func (w word) src() string { return printWord(w.node) }

// evalWord works out what is known about w.
func evalWord(w *syntax.Word) word {
	r := word{node: w}
	var val, run strings.Builder
	varying := false // something in the word is not fixed text
	vary := func() {
		if !varying {
			r.prefix = run.String()
		}
		varying = true
		run.Reset()
	}
	expand := func(what string, unquoted bool) {
		if r.expansion == "" {
			r.expansion = what
		}
		if unquoted {
			r.splits = true
		}
		vary()
	}
	fixed := func(s string) {
		val.WriteString(s)
		run.WriteString(s)
	}
	// Brace expansion ({a,b}, {1..3}) needs an unquoted {, then an
	// unquoted , or .., then an unquoted }; the alternatives may be quoted
	// ({"-delete",-print}). Any such sequence is taken for one.
	braceOpen, braceSep := false, false
	// closeAfter[k] says a ] appears in part k or a later one: with the
	// last ] of the current part, whether a [ is closed later is a
	// lookup, so a word of many [ costs no more than its length (the red
	// team's 64 KiB word of unclosed [ took seconds when each [ searched
	// the rest of the word).
	closeAfter := make([]bool, len(w.Parts)+1)
	for k := len(w.Parts) - 1; k >= 0; k-- {
		closeAfter[k] = closeAfter[k+1] || hasClose(w.Parts[k])
	}
	for pi, p := range w.Parts {
		switch x := p.(type) {
		case *syntax.Lit:
			v := x.Value
			lastClose := strings.LastIndexByte(v, ']')
			for i := 0; i < len(v); i++ {
				switch c := v[i]; c {
				case '\\':
					if i+1 < len(v) {
						i++
						if v[i] != '\n' {
							fixed(v[i : i+1])
						}
					}
				case '[':
					if lastClose <= i && !closeAfter[pi+1] {
						fixed("[") // no ] after it: not a pattern
						continue
					}
					fallthrough
				case '*', '?':
					// The glob's own characters stay in val, for reasons.
					r.glob = true
					val.WriteByte(c)
					vary()
				case '{':
					braceOpen = true
					fixed("{")
				case ',', '.':
					if braceOpen && (c == ',' || i+1 < len(v) && v[i+1] == '.') {
						braceSep = true
					}
					fixed(v[i : i+1])
				case '}':
					if braceOpen && braceSep {
						val.WriteByte(c)
						expand("a brace expansion", true)
						continue
					}
					fixed("}")
				case '~':
					val.WriteByte(c)
					expand("tilde expansion", false)
				default:
					fixed(v[i : i+1])
				}
			}
		case *syntax.SglQuoted:
			if x.Dollar {
				expand("ANSI-C quoting ($'…')", false)
				continue
			}
			fixed(x.Value)
		case *syntax.DblQuoted:
			if x.Dollar {
				expand("locale quoting ($\"…\")", false)
				continue
			}
			for _, q := range x.Parts {
				if lit, ok := q.(*syntax.Lit); ok {
					fixed(unescapeDbl(lit.Value))
					continue
				}
				expand(partName(q), false)
			}
		default:
			expand(partName(p), true)
		}
	}
	r.val = val.String()
	if varying {
		r.suffix = run.String()
	}
	if r.expansion != "" {
		r.glob = false
	}
	r.literal = !varying
	return r
}

// hasClose reports whether a word part holds a ], quoted or not.
func hasClose(p syntax.WordPart) bool {
	switch x := p.(type) {
	case *syntax.Lit:
		return strings.IndexByte(x.Value, ']') >= 0
	case *syntax.SglQuoted:
		return strings.IndexByte(x.Value, ']') >= 0
	case *syntax.DblQuoted:
		for _, q := range x.Parts {
			if l, ok := q.(*syntax.Lit); ok && strings.IndexByte(l.Value, ']') >= 0 {
				return true
			}
		}
	}
	return false
}

// partName names a word part that is an expansion.
func partName(p syntax.WordPart) string {
	switch p.(type) {
	case *syntax.ParamExp:
		return "a parameter expansion"
	case *syntax.CmdSubst:
		return "a command substitution"
	case *syntax.ArithmExp:
		return "an arithmetic expansion"
	case *syntax.ProcSubst:
		return "a process substitution"
	case *syntax.ExtGlob:
		return "an extended pattern"
	case *syntax.BraceExp:
		return "a brace expansion"
	}
	return "an expansion"
}

// couldBe reports whether the word could expand to exactly s (as one of
// the words it becomes).
func (w word) couldBe(s string) bool {
	switch {
	case w.literal:
		return w.val == s
	case w.splits:
		return true
	}
	return len(w.prefix)+len(w.suffix) <= len(s) && strings.HasPrefix(s, w.prefix) && strings.HasSuffix(s, w.suffix)
}

// unescapeDbl removes the backslashes that escape $ ` " \ and newline
// inside double quotes; other backslashes stay.
func unescapeDbl(v string) string {
	if !strings.Contains(v, "\\") {
		return v
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		if v[i] == '\\' && i+1 < len(v) && strings.IndexByte("$`\"\\\n", v[i+1]) >= 0 {
			i++
			if v[i] == '\n' {
				continue
			}
		}
		b.WriteByte(v[i])
	}
	return b.String()
}

// printWord is the word as written, shortened, for reasons.
func printWord(w *syntax.Word) string {
	var b strings.Builder
	if err := syntax.NewPrinter().Print(&b, w); err != nil {
		return "a word"
	}
	return shorten(b.String())
}

// shorten cuts s to about 60 bytes, at a character boundary.
func shorten(s string) string {
	if len(s) <= 60 {
		return s
	}
	cut := 57
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}
