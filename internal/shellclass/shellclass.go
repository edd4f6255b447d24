// Package shellclass reads plan mode's shell commands before they run. It
// parses a command line with mvdan.cc/sh (bash syntax, never regular
// expressions over the text) and has two jobs:
//
//   - Writes names, with a reason a model can act on, a command line that
//     certainly writes or reaches the network ("`>` writes notes.txt"), so
//     that plan mode can deny it early instead of letting the sandbox
//     answer "Permission denied". It only says yes for literal, certain
//     cases and is never the only protection: a miss runs the command in
//     the sandbox, which refuses the write.
//   - Strict is the only judge where no sandbox runs (a host event that
//     cannot rewrite its input, a kernel without the sandbox): what it
//     allows runs unconfined. It is an allowlist of plain commands on a
//     table (ls, cat, grep, find without -exec, ...) with literal words,
//     and refuses everything else with a reason.
//
// The package owns the strict table (DefaultTable, extended by the
// operator's shell_read_only file) and the list of certain writers.
package shellclass

import (
	"fmt"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// MaxCommandBytes bounds the command text either job parses: Writes says
// nothing about a longer command and Strict refuses it.
const MaxCommandBytes = 64 << 10

// maxDepth bounds the bracket nesting of a command parsed at all, so that
// pathological input never reaches the parser's recursion.
const maxDepth = 64

// parse parses command as bash, or says why it will not.
func parse(command string) (*syntax.File, string) {
	if len(command) > MaxCommandBytes {
		return nil, fmt.Sprintf("the command is longer than %d bytes", MaxCommandBytes)
	}
	if strings.IndexByte(command, 0) >= 0 {
		return nil, "the command contains a NUL byte"
	}
	if nestingDepth(command) > maxDepth {
		return nil, fmt.Sprintf("the command nests deeper than %d levels", maxDepth)
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(command), "")
	if err != nil {
		return nil, "the command does not parse as bash (" + err.Error() + ")"
	}
	return f, ""
}

// readsOtherwise says why bash would read command otherwise than the
// parser does, for the judges whose answer is only what the parse shows
// (Strict, Argv); "" when it would not. A carriage return is a blank to
// the parser and part of a word to bash, so "ls \r# ; touch x" is one ls
// and a comment to the one, an ls and a touch to the other (a red team
// ran it past the allowlist); a backslash that ends the command bash
// keeps as a character, and the parser drops.
func readsOtherwise(command string) string {
	if strings.IndexByte(command, '\r') >= 0 {
		return "the command has a carriage return, which bash reads as part of a word and this parser as a blank"
	}
	if n := len(command) - len(strings.TrimRight(command, `\`)); n%2 == 1 {
		return "the command ends in a backslash, which bash keeps and this parser drops"
	}
	return ""
}

// nestingDepth is a cheap upper bound on the bracket nesting of s.
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
