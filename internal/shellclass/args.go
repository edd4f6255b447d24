package shellclass

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// arg is what the classifier knows about one word of a command: its value
// when the word is a plain literal (quotes and escapes removed), and
// otherwise whether it could expand to something starting with "-" (or to
// several words), which is what decides whether it could be a flag.
type arg struct {
	val      string // the value, when known
	known    bool
	flagLike bool   // unknown, and could start with "-" or split into several words
	hasParam bool   // contains a parameter or arithmetic expansion
	hasSubst bool   // contains a command or process substitution
	hasGlob  bool   // contains an unquoted pattern or brace expansion
	split    bool   // contains an unquoted expansion or pattern: it can become several words
	prefix   string // unknown words: the literal text before the first expansion
	src      string
}

func (a arg) show() string {
	if a.known {
		return a.val
	}
	return a.src
}

// unknownArg stands for words the classifier cannot see, such as the
// input lines xargs appends.
func unknownArg(src string) arg {
	return arg{flagLike: true, src: src}
}

// wordArg works out what is known about w without running anything.
func wordArg(w *syntax.Word) arg {
	a := arg{src: printWord(w)}
	var b strings.Builder
	known := true
	// unknown marks the value unknown from here on; at the very start of
	// the word, the word can start with "-".
	unknown := func() {
		if known {
			a.prefix = b.String()
			if a.prefix == "" {
				a.flagLike = true
			}
		}
		known = false
	}
	for _, p := range w.Parts {
		switch x := p.(type) {
		case *syntax.Lit:
			v := x.Value
			i := globIndex(v)
			if j := strings.IndexByte(v, '['); i < 0 && j >= 0 && len(w.Parts) > 1 {
				// [ with its ] in another part of the word ([$x]) is a pattern too.
				i = j
			}
			if i >= 0 {
				b.WriteString(unescapeLit(v[:i]))
				a.hasGlob, a.split = true, true
				unknown()
				continue
			}
			if strings.Contains(v, "{") && (strings.Contains(v, ",") || strings.Contains(v, "..")) {
				// Brace expansion: {-delete,} expands to -delete.
				a.hasGlob, a.split, a.flagLike = true, true, true
				unknown()
				continue
			}
			if strings.HasPrefix(v, "~") && known && b.Len() == 0 {
				// Tilde expansion: a path, never a flag.
				a.prefix = "/"
				known = false
				continue
			}
			b.WriteString(unescapeLit(v))
		case *syntax.SglQuoted:
			if x.Dollar {
				// $'\x2d' is "-": the value is not worked out here.
				unknown()
				continue
			}
			b.WriteString(x.Value)
		case *syntax.DblQuoted:
			if x.Dollar {
				unknown()
				continue
			}
			for _, q := range x.Parts {
				if lit, ok := q.(*syntax.Lit); ok {
					b.WriteString(unescapeDbl(lit.Value))
					continue
				}
				markExpansion(&a, q)
				unknown() // "$x" can start with "-", though it stays one word
			}
		default:
			markExpansion(&a, p)
			// Unquoted expansions split into several words: any of them
			// can be a flag, wherever in the word the expansion is.
			a.split, a.flagLike = true, true
			unknown()
		}
	}
	if known {
		a.val, a.known = b.String(), true
		a.flagLike = false
	}
	return a
}

func markExpansion(a *arg, p syntax.WordPart) {
	switch p.(type) {
	case *syntax.CmdSubst, *syntax.ProcSubst:
		a.hasSubst = true
	case *syntax.ExtGlob, *syntax.BraceExp:
		a.hasGlob = true
	default:
		a.hasParam = true
	}
}

// globIndex is the index of the first unescaped pattern character of an
// unquoted literal (*, ?, or [ with a ] after it), or -1.
func globIndex(v string) int {
	for i := 0; i < len(v); i++ {
		switch v[i] {
		case '\\':
			i++
		case '*', '?':
			return i
		case '[':
			if strings.IndexByte(v[i+1:], ']') >= 0 {
				return i
			}
		}
	}
	return -1
}

// unescapeLit removes the backslashes of an unquoted literal (a
// backslash-newline joins lines).
func unescapeLit(v string) string {
	if !strings.Contains(v, "\\") {
		return v
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		if v[i] == '\\' && i+1 < len(v) {
			i++
			if v[i] == '\n' {
				continue
			}
		}
		b.WriteByte(v[i])
	}
	return b.String()
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

// printWord is the word as written, for reasons.
func printWord(w *syntax.Word) string {
	var b strings.Builder
	if err := syntax.NewPrinter().Print(&b, w); err != nil {
		return "a word"
	}
	s := b.String()
	if len(s) > 60 {
		s = s[:57] + "..."
	}
	return s
}
